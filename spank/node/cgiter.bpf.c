// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The --sync-monitor batch source's walk of the job cgroup only
 * (node/taskiter.h): a cgroup iterator over the job cgroup and its
 * descendants (the steps' and tasks' cgroups) that walks each one's
 * processes with the css_task open-coded iterator, and each process's
 * threads with the task one (both Linux 6.7 and later).  Its cost
 * follows the job, not the node (node/taskiter.bpf.c passes every task
 * of the node); a kernel without the iterators refuses to load it and
 * the sampler walks every task.
 *
 * One record per process, its live threads' run time summed here: the
 * whole process, as /proc/<pid>/stat counts it, wherever its threads
 * are (cgroup v1 can move one thread alone).  A process is found by its
 * group leader's cgroup, as cgroup v2's cgroup.procs lists it; v1 also
 * lists a process by a thread in the cgroup whose leader is not, and
 * node/taskiter.c reads a tick whose listed processes this walk did not
 * find through the task walk.
 *
 * The kernel holds cgroup_mutex for the whole walk (no process changes
 * cgroup meanwhile, so none is counted twice, but every cgroup
 * operation on the node waits): the walk stops past LWK_CGITER_CGROUPS
 * cgroups (a job user may make sub-cgroups where Slurm or --lwk gives
 * it one), LWK_CGITER_RECS processes or LWK_CGITER_THREADS threads, and
 * says so in stopped; node/taskiter.c then reads that tick through the
 * task walk.
 *
 * The records go to a memory-mapped array (.bss), not to the read()'s
 * seq_file: one cgroup is one object of that file, and the kernel fails
 * a read with E2BIG when one object writes more than its 32 KiB buffer
 * (500 records).  One reader: the sampler's one thread.
 *
 * Built with clang -target bpf -O2 -g.
 */
#include "node/taskrec.bpf.h"

#define LWK_CGITER_RECS 8192	  /* processes: 512 KiB of records */
#define LWK_CGITER_CGROUPS 1024
#define LWK_CGITER_THREADS 32768

#define CSS_TASK_ITER_PROCS 1	  /* include/linux/cgroup.h */
#define BPF_TASK_ITER_PROC_THREADS 2 /* kernel/bpf/task_iter.c */

/* Why a walk stopped (stopped): node/taskiter.c names them. */
#define LWK_CGITER_TOO_MANY_PROCS 1
#define LWK_CGITER_TOO_MANY_CGROUPS 2
#define LWK_CGITER_TOO_MANY_THREADS 3
#define LWK_CGITER_REFUSED 4

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

/* The kernel's open-coded iterators (kernel/bpf/task_iter.c): their
 * states live on the program's stack, sized as the kernel's. */
struct bpf_iter_css_task {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));

extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css,
				 unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __ksym;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

/* Userspace zeroes the counters before each read. */
struct lwk_taskiter_rec recs[LWK_CGITER_RECS];
__u32 nrecs, ncgroups, nthreads;
__u32 stopped;

/* The live threads' run time of process p; 0 with stopped set when the
 * walk must stop.  A process of one thread (an MPI rank without
 * OpenMP) is its leader's alone: no thread walk, which costs as much as
 * the rest of its record. */
static __always_inline __u64 live_cpu_ns(struct task_struct *p)
{
	struct signal_struct *sig = p->signal;
	struct bpf_iter_task it;
	struct task_struct *t;
	__u64 sum = 0;

	if (sig && sig->nr_threads == 1) {
		nthreads++;
		return p->se.sum_exec_runtime;
	}
	if (bpf_iter_task_new(&it, p, BPF_TASK_ITER_PROC_THREADS))
		stopped = LWK_CGITER_REFUSED;
	while (!stopped && (t = bpf_iter_task_next(&it))) {
		if (++nthreads > LWK_CGITER_THREADS) {
			stopped = LWK_CGITER_TOO_MANY_THREADS;
			break;
		}
		sum += t->se.sum_exec_runtime;
	}
	bpf_iter_task_destroy(&it);
	return sum;
}

SEC("iter/cgroup")
int job_cgroup(struct bpf_iter__cgroup *ctx)
{
	struct cgroup *cg = ctx->cgroup;
	struct bpf_iter_css_task it;
	struct task_struct *p;

	if (!cg || stopped)
		return stopped ? 1 : 0;
	if (++ncgroups > LWK_CGITER_CGROUPS) {
		stopped = LWK_CGITER_TOO_MANY_CGROUPS;
		return 1; /* ends the cgroup iterator */
	}
	if (bpf_iter_css_task_new(&it, &cg->self, CSS_TASK_ITER_PROCS))
		stopped = LWK_CGITER_REFUSED;
	while (!stopped && (p = bpf_iter_css_task_next(&it))) {
		__u32 n = nrecs;
		__u64 live;

		if (p->flags & PF_KTHREAD)
			continue;
		if (n >= LWK_CGITER_RECS) {
			stopped = LWK_CGITER_TOO_MANY_PROCS;
			break;
		}
		live = live_cpu_ns(p);
		recs[n] = (struct lwk_taskiter_rec){};
		lwk_fill_rec(p, &recs[n]);
		recs[n].cpu_ns = live;
		nrecs = n + 1;
	}
	bpf_iter_css_task_destroy(&it);
	return stopped ? 1 : 0;
}

char LICENSE[] SEC("license") = "GPL";
