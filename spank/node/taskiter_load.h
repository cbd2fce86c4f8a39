/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The programs of node/taskiter.c's two walks, loaded as root.  Each
 * from bpftool's light skeleton first: its loader, itself a BPF
 * program, relocates the walk in the kernel against the kernel's own
 * BTF, where libbpf's skeleton parses the whole of
 * /sys/kernel/btf/vmlinux (5.5 MB on 6.18) in the sampler for each
 * object: 6-10 ms against 23-25 ms a walk on an idle 2-CPU host.  Where
 * the light one fails, libbpf's, which then says why if it fails too
 * (before 6.7 the cgroup walk's kfuncs are missing; the verifier's last
 * word).  Both lay the cgroup walk's records out alike.
 */
#ifndef LWK_TASKITER_LOAD_H
#define LWK_TASKITER_LOAD_H

#include <stddef.h>

struct lwk_taskiter_lbpf;
struct lwk_taskiter_bpf;
struct lwk_cgiter_lbpf;
struct lwk_cgiter_bpf;
struct lwk_cgiter_bpf__bss;

struct lwk_taskiter_progs {
	struct lwk_taskiter_lbpf *light; /* the task walk, from one of the two */
	struct lwk_taskiter_bpf *skel;
	int task_link;			 /* its link, -1 none */
	int map_fd;			 /* its job_tgids map */
	struct lwk_cgiter_lbpf *cg_light; /* the cgroup walk, from one of the two */
	struct lwk_cgiter_bpf *cg;
	int cg_prog;			 /* its program, -1 none: linked per cgroup */
	struct lwk_cgiter_bpf__bss *bss; /* its records */
};

void lwk_taskiter_progs_init(struct lwk_taskiter_progs *p);
/* The task walk for up to max processes, attached: 0, or -1 with the
 * reason in err ("bpf: ..."). */
int lwk_taskiter_load_tasks(struct lwk_taskiter_progs *p, size_t max, char *err, size_t errlen);
/* The cgroup walk's program (its link is the caller's): 0, or -1 with
 * the reason in why. */
int lwk_taskiter_load_cgroup(struct lwk_taskiter_progs *p, char *why, size_t len);
void lwk_taskiter_unload_cgroup(struct lwk_taskiter_progs *p);
/* Both walks, their links, programs and maps. */
void lwk_taskiter_unload(struct lwk_taskiter_progs *p);

#endif
