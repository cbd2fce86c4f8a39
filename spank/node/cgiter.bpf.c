// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The --sync-monitor batch source's walk of the job cgroup's tasks
 * only (node/taskiter.h): a cgroup iterator over the job cgroup and its
 * descendants (the steps' and tasks' cgroups) that walks each one's
 * tasks with the css_task open-coded iterator, Linux 6.7 and later.
 * Its cost follows the job's threads, not the node's (node/taskiter.bpf.c
 * passes every task of the node); a kernel without the iterator refuses
 * to load it and the sampler walks every task.
 *
 * The records go to a memory-mapped array (.bss), not to the read()'s
 * seq_file: one cgroup is one object of that file, and the kernel
 * fails a read with E2BIG when one object writes more than its 32 KiB
 * buffer (500 records).  A job of more threads than the array holds
 * sets overflow, and node/taskiter.c reads that tick through the task
 * walk instead.  One reader: the sampler's one thread.
 *
 * Built with clang -target bpf -O2 -g.
 */
#include "node/taskrec.bpf.h"

#define LWK_CGITER_RECS 8192 /* 512 KiB: 64 ranks of 128 threads */

struct cgroup_subsys_state {
	int unused; /* only its address is taken */
} __attribute__((preserve_access_index));

struct cgroup {
	struct cgroup_subsys_state self;
} __attribute__((preserve_access_index));

struct bpf_iter__cgroup {
	struct bpf_iter_meta *meta;
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

/* The kernel's open-coded css_task iterator (kernel/bpf/task_iter.c):
 * its state is 8 bytes on the program's stack. */
struct bpf_iter_css_task {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css,
				 unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __ksym;

/* Userspace zeroes nrecs and overflow before each read. */
struct lwk_taskiter_rec recs[LWK_CGITER_RECS];
__u32 nrecs;
__u32 overflow;

SEC("iter/cgroup")
int job_cgroup(struct bpf_iter__cgroup *ctx)
{
	struct cgroup *cg = ctx->cgroup;
	struct bpf_iter_css_task it;
	struct task_struct *t;

	if (!cg)
		return 0;
	/* Flags 0: every thread of the cgroup, not only group leaders. */
	bpf_iter_css_task_new(&it, &cg->self, 0);
	while ((t = bpf_iter_css_task_next(&it))) {
		__u32 n = nrecs;

		if (t->flags & PF_KTHREAD)
			continue;
		if (n >= LWK_CGITER_RECS) {
			overflow = 1;
			break;
		}
		recs[n] = (struct lwk_taskiter_rec){};
		lwk_fill_rec(t, &recs[n]);
		nrecs = n + 1;
	}
	bpf_iter_css_task_destroy(&it);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
