// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The --sync-monitor batch source (node/taskiter.h): a BPF task
 * iterator that writes, in one read() of its fd, one record per thread
 * of the job's processes (node/taskiter_rec.h); node/taskiter.c sums
 * them by process.  The job is the set of tgids in the job_tgids map,
 * which the sampler fills from the pids it lists (cgroup.procs, or the
 * scan of /proc): that works on cgroup v1 and v2 alike.
 *
 * CO-RE without a generated vmlinux.h: the few kernel fields read are
 * declared below with preserve_access_index, so libbpf relocates them
 * against the running kernel's BTF and the build does not depend on
 * the build host's kernel.  Built with clang -target bpf -O2 -g.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "node/taskiter_rec.h"

#define PF_KTHREAD 0x00200000
#define MM_FILEPAGES 0
#define MM_ANONPAGES 1
#define MM_SHMEMPAGES 3

struct sched_entity {
	__u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct signal_struct {
	int nr_threads;
	__u64 sum_sched_runtime;
} __attribute__((preserve_access_index));

/* 6.2 and later: a percpu_counter per kind of page. */
struct percpu_counter {
	__s64 count;
} __attribute__((preserve_access_index));

struct mm_struct {
	struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

/* Before 6.2: atomic counters in a struct mm_rss_stat. */
typedef struct {
	__s64 counter;
} atomic_long_t___old;

struct mm_rss_stat {
	atomic_long_t___old count[4];
} __attribute__((preserve_access_index));

struct mm_struct___old {
	struct mm_rss_stat rss_stat;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid, tgid;
	unsigned int flags;
	char comm[16];
	__u64 start_boottime;
	struct sched_entity se;
	struct task_struct *group_leader;
	struct signal_struct *signal;
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* The job's processes; userspace sizes it and keeps it in step with
 * the pid list.  Not preallocated: most jobs have few processes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} job_tgids SEC(".maps");

/* One counter, by a constant index (CO-RE relocates constant indices
 * with the kernel's element size, not a variable one).  Direct loads
 * through the task's BTF pointers where the verifier can walk them: no
 * helper call per field.  Before 6.2 it cannot: the counters are
 * atomic_long_t, a typedef, and 6.1's verifier refuses a load through
 * an array of typedefs ("Type 'atomic_long_t' is not a struct"), so
 * those are read with a helper. */
#define RSS_OLD(mm, i) BPF_CORE_READ((struct mm_struct___old *)(mm), rss_stat.count[i].counter)
#define RSS_NEW(mm, i) ((mm)->rss_stat[i].count)
#define POS(v) ((v) > 0 ? (__u64)(v) : 0) /* as get_mm_counter: a per-CPU lag may go below 0 */

/* Resident pages as /proc/<pid>/stat counts them: file, anon, shmem. */
static __u64 rss_pages(struct mm_struct *mm)
{
	if (bpf_core_type_exists(struct mm_rss_stat))
		return POS(RSS_OLD(mm, MM_FILEPAGES)) + POS(RSS_OLD(mm, MM_ANONPAGES)) +
		       POS(RSS_OLD(mm, MM_SHMEMPAGES));
	return POS(RSS_NEW(mm, MM_FILEPAGES)) + POS(RSS_NEW(mm, MM_ANONPAGES)) +
	       POS(RSS_NEW(mm, MM_SHMEMPAGES));
}

SEC("iter/task")
int job_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task, *leader;
	struct signal_struct *sig;
	struct mm_struct *mm;
	struct lwk_taskiter_rec r = {};
	__u32 tgid;

	if (!t)
		return 0;
	tgid = (__u32)t->tgid;
	if (!bpf_map_lookup_elem(&job_tgids, &tgid) || (t->flags & PF_KTHREAD))
		return 0;
	r.tgid = tgid;
	r.tid = (__u32)t->pid;
	r.cpu_ns = t->se.sum_exec_runtime;
	sig = t->signal;
	if (sig) {
		r.dead_cpu_ns = sig->sum_sched_runtime;
		r.threads = (__u32)sig->nr_threads;
	}
	mm = t->mm;
	if (mm)
		r.rss_pages = rss_pages(mm);
	leader = t->group_leader;
	if (leader) {
		r.start_boottime_ns = leader->start_boottime;
		__builtin_memcpy(r.comm, leader->comm, sizeof(r.comm));
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
