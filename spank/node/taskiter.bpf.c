// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The --sync-monitor batch source's walk of every task on the node
 * (node/taskiter.h): a BPF task iterator that writes, in one read() of
 * its fd, one record per thread of the job's processes
 * (node/taskiter_rec.h); node/taskiter.c sums them by process.  The job
 * is the set of tgids in the job_tgids map, which the sampler fills
 * from the pids it lists (cgroup.procs, or the scan of /proc): that
 * works on cgroup v1 and v2 alike, with or without a job cgroup, on
 * every kernel since 5.8.  Where the kernel can walk one cgroup's
 * tasks, node/cgiter.bpf.c walks only the job's.
 *
 * Built with clang -target bpf -O2 -g.
 */
#include "node/taskrec.bpf.h"

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* The job's processes; userspace sizes it and keeps it in step with
 * the pid list.  Not preallocated: most jobs have few processes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LWK_TASKITER_MAP_MAX);
	__type(key, __u32);
	__type(value, __u8);
} job_tgids SEC(".maps");

SEC("iter/task")
int job_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct lwk_taskiter_rec r = {};
	__u32 tgid;

	if (!t)
		return 0;
	tgid = (__u32)t->tgid;
	if (!bpf_map_lookup_elem(&job_tgids, &tgid) || (t->flags & PF_KTHREAD))
		return 0;
	lwk_fill_rec(t, &r);
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
