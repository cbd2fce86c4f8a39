/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The --sync-monitor batch source: a BPF task iterator
 * (node/taskiter.bpf.c) that returns every process of the job in one
 * read(), instead of one system call or more per process as /proc and
 * taskstats need.  Loaded once (root: CAP_BPF and CAP_PERFMON, or
 * CAP_SYS_ADMIN), its link created once; each read is bpf_iter_create,
 * read and close.  The job is the set of pids given with
 * lwk_taskiter_set_pids.  A build without clang, libbpf and bpftool
 * has no such source: opening it fails with "bpf: not built", and
 * source=auto uses taskstats or /proc (t50 and check_start test it).
 */
#ifndef LWK_TASKITER_H
#define LWK_TASKITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One process as the iterator saw it, its threads summed. */
struct lwk_taskiter_proc {
	pid_t pid;
	char comm[16];
	uint64_t cpu_ns;		/* run time of all its threads, live and exited:
					 * what /proc/<pid>/stat's utime + stime add up to */
	uint64_t threads;
	uint64_t rss_pages;
	uint64_t start_boottime_ns;	/* /proc/<pid>/stat's starttime, in ns */
};

struct lwk_taskiter;

/* Was the batch source built in (clang, libbpf, bpftool)? */
bool lwk_taskiter_built(void);

/*
 * Load the program for up to max_procs processes and create its link.
 * NULL when it cannot, with the reason in err ("bpf: not built",
 * "bpf: no BTF at /sys/kernel/btf/vmlinux", "bpf: verifier: ...",
 * "bpf: no permission ...").
 */
struct lwk_taskiter *lwk_taskiter_open(size_t max_procs, char *err, size_t errlen);

/* Unload: closes every fd, so nothing stays in the kernel. */
void lwk_taskiter_close(struct lwk_taskiter *ti);

/* The job's processes from now on (the map follows the list: only
 * the pids that came or went cost a system call).  0, or -1 when the
 * map refused a pid: that one is tried again at the next call. */
int lwk_taskiter_set_pids(struct lwk_taskiter *ti, const pid_t *pids, size_t n);

/* One read of the iterator.  Returns how many processes it found, or
 * -1 with errno. */
int lwk_taskiter_read(struct lwk_taskiter *ti);

/* A process of the last read, or NULL when it was not there. */
const struct lwk_taskiter_proc *lwk_taskiter_find(const struct lwk_taskiter *ti, pid_t pid);

#endif
