/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin's state on a node, shared by every part: where it lives
 * (struct lwk_node_roots, every root path redirectable for tests), the
 * directory of each job (<state_root>/<node>/<job>/, root's), the
 * --contention-aware records (<state_root>/<node>/casas/), the node's
 * lock, and the log lines the parts hand back to the glue.
 */
#ifndef LWK_STATEDIR_H
#define LWK_STATEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a node's kernel interfaces and the plugin's state are. */
struct lwk_node_roots {
	const char *sysfs;	 /* /sys */
	const char *proc;	 /* /proc */
	const char *cgroup_root; /* /sys/fs/cgroup */
	const char *state_root;	 /* /run/slurm-lwk */
	const char *node;	 /* this node's name */
	const char *mck_prefix;	 /* IHK/McKernel's install prefix */
	uid_t uid;		 /* the job's user (owns McKernel's devices) */
	gid_t gid;
	const char *irqbalance_dir; /* irqbalance's socket's (NULL: none)  */
	bool irqbalance_ban;	 /* --lwk setups tell it (teardowns give
				  * back whatever this says)           */
};


/* mkdir path (mode) if missing; what is there must be a root-owned
 * directory that only root can write, not a link.  0 or -1 (errno). */
int lwk_mkdir_root(const char *path, mode_t mode);

/* <state_root>/<node>/<job>, made if missing.  0 or -1 with a message. */
int lwk_state_dir(const char *state_root, const char *node, uint32_t job, char *out, size_t len,
		  char *err, size_t errlen);

/* The jobs with a state directory on this node (<state_root>/<node>/<job>),
 * at most max of them; how many. */
int lwk_state_jobs(const char *state_root, const char *node, uint32_t *jobs, int max);

/* <state_root>/<node>/casas: the --contention-aware records, one file
 * a job named by its id (no job directory: lwk_state_jobs skips it). */
void lwk_state_casas_dir(const char *state_root, const char *node, char *out, size_t len);

/* The node's lock (<state_root>/.node.lock), taken, blocking: what the
 * node shares between jobs (IRQs, hugepages, IHK, the contention-aware
 * die split) changes under it.  The fd to close, or -1. */
int lwk_node_lock(const char *state_root);

/* Append one line (fmt, no newline) to a log buffer, cut at loglen. */
void lwk_log_append(char *log, size_t loglen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
