/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The --sync-monitor batch source: a BPF iterator that returns every
 * process of the job in one read(), instead of one system call or more
 * per process as /proc and taskstats need.  Two walks: of the job
 * cgroup's tasks only (node/cgiter.bpf.c, Linux 6.7+, where the job has
 * a cgroup), else of every task on the node, keeping those whose tgid
 * is in a map (node/taskiter.bpf.c).  Loaded once (root: CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN) from light skeletons, relocated in the
 * kernel: about 3x quicker than libbpf's skeletons, which parse the
 * kernel's whole BTF in the sampler and are loaded only where the light
 * ones fail (to say why).  Links created once; each read is
 * bpf_iter_create, read and close.  The job is the set of pids given
 * with lwk_taskiter_set_pids (the task walk's map; both walks return
 * nothing while it is empty).  A build without clang, libbpf and bpftool
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
 * Load the programs for up to max_procs processes and create their
 * links: the task walk, and the walk of cgroup (the job cgroup's
 * directory, or NULL) where the kernel has it.  NULL when the task walk
 * cannot load, with the reason in err ("bpf: not built", "bpf: no BTF
 * at /sys/kernel/btf/vmlinux", "bpf: verifier: ...", "bpf: no
 * permission ...").
 */
struct lwk_taskiter *lwk_taskiter_open(size_t max_procs, const char *cgroup, char *err,
				      size_t errlen);

/* The walk reads use now: "cgroup" or "tasks", and in *why the reason
 * the cgroup walk is not used ("" when it is). */
const char *lwk_taskiter_walk(const struct lwk_taskiter *ti, const char **why);
/* Which skeletons loaded the walks in use: "light", "libbpf" (the light
 * ones did not load) or "light and libbpf". */
const char *lwk_taskiter_loader(const struct lwk_taskiter *ti);

/* Reads the cgroup walk could not give whole, read by the task walk
 * (more processes, cgroups or threads than it takes, a listed process
 * not found in it), and in *why the first one's reason. */
uint64_t lwk_taskiter_fallbacks(const struct lwk_taskiter *ti, const char **why);

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
