/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One record of the task iterator (node/taskiter.bpf.c), as the kernel
 * writes it and node/taskiter.c reads it: one per thread of a job
 * process.  Shared by both sides, so only fixed-width types.
 */
#ifndef LWK_TASKITER_REC_H
#define LWK_TASKITER_REC_H

#define LWK_TASKITER_COMM 16
/* The task walk's job_tgids map: processes of one job on one node. */
#define LWK_TASKITER_MAP_MAX 65536

struct lwk_taskiter_rec {
	__u32 tgid, tid;
	__u64 cpu_ns;			/* this thread: se.sum_exec_runtime */
	__u64 dead_cpu_ns;		/* the group's exited threads (signal_struct) */
	__u64 rss_pages;		/* file + anon + shmem, as /proc/<pid>/stat */
	__u64 start_boottime_ns;	/* the group leader's */
	__u32 threads;			/* signal->nr_threads */
	__u32 pad;
	char comm[LWK_TASKITER_COMM];	/* the group leader's */
};

#endif
