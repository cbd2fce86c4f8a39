/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What both of the sampler's BPF walks (node/taskiter.bpf.c over every
 * task of the node, node/cgiter.bpf.c over the job cgroup's) read of a
 * task, and how: the few kernel fields, declared with
 * preserve_access_index so that libbpf relocates them against the
 * running kernel's BTF (CO-RE without a generated vmlinux.h: nothing of
 * the build host's kernel in the package), and lwk_fill_rec, one
 * record of node/taskiter_rec.h per thread.
 */
#ifndef LWK_TASKREC_BPF_H
#define LWK_TASKREC_BPF_H

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

/* One thread's record; the group's numbers (exited threads' run time,
 * thread count, memory, start, name) ride on every thread's. */
static __always_inline void lwk_fill_rec(struct task_struct *t, struct lwk_taskiter_rec *r)
{
	struct task_struct *leader;
	struct signal_struct *sig;
	struct mm_struct *mm;

	r->tgid = (__u32)t->tgid;
	r->tid = (__u32)t->pid;
	r->cpu_ns = t->se.sum_exec_runtime;
	sig = t->signal;
	if (sig) {
		r->dead_cpu_ns = sig->sum_sched_runtime;
		r->threads = (__u32)sig->nr_threads;
	}
	mm = t->mm;
	if (mm)
		r->rss_pages = rss_pages(mm);
	leader = t->group_leader;
	if (leader) {
		r->start_boottime_ns = leader->start_boottime;
		__builtin_memcpy(r->comm, leader->comm, sizeof(r->comm));
	}
}

#endif
