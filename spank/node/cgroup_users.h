/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared by the take-back (node/cgroup_takeback.c) and the kill
 * (node/cgroup_killusers.c) of a job whose CPUs cannot be narrowed:
 * the walk of its cpuset tree (node/cgroup_walk.c) and the kill of what
 * one cgroup lists.
 */
#ifndef LWK_CGROUP_USERS_H
#define LWK_CGROUP_USERS_H

#include "node/cgroup.h"

#include <stdbool.h>

/* Past this many cgroups the walk stops and says so (whole false): it
 * runs under the node lock.  It has no depth limit: it holds one
 * directory open, climbing back through "..", and keeps the names left
 * to visit at each level. */
#define WALK_MAX_CGROUPS 65536

struct level {
	char (*names)[256]; /* the subdirectories left to visit, from next */
	int n, next;
};

struct walk {
	struct level *lv; /* from the top down to the current directory */
	int depth, cap, seen;
	bool whole;
	bool cut; /* stopped at the deadline */
	double deadline; /* CLOCK_MONOTONIC seconds: the walk stops there, unsure */
	/* Called on every directory below the top once all below it was
	 * walked, with its parent's fd (children first: it may remove it). */
	void (*leave)(int parentfd, const char *name, int level, void *arg);
};

/* Call visit on the directory of cg's cpuset tree (name NULL, level 0)
 * and on every directory below it (level 1 for a child of cg's),
 * parents first (fd -1: listed, gone when opened), and leave (when set)
 * on each below the top after all below it; stop early when visit
 * returns true or at the deadline (w->cut).  Returns what the last
 * visit returned; w->whole false when some directory could not be
 * walked. */
bool lwk_cgroup_walk(const struct lwk_cgroup *cg, struct walk *w, double deadline,
		     bool (*visit)(int dirfd, const char *name, int level, void *arg),
		     void (*leave)(int parentfd, const char *name, int level, void *arg), void *arg);

/* A kill's state: the job's cgroup, <proc>, a deadline (CLOCK_MONOTONIC
 * seconds). */
struct lwk_killer;
struct lwk_killer *lwk_killer_open(const struct lwk_cgroup *cg, const char *proc, double deadline);
/* Frees it; how many signals it sent. */
int lwk_killer_close(struct lwk_killer *k);
/* Every process the cgroup dirfd lists, pinned with a pidfd, then
 * listed again, then signalled through the pidfd unless it is
 * slurmstepd.  A lwk_cgroup_walk visit (arg the killer): true past the
 * deadline. */
bool lwk_killer_listed(int dirfd, const char *name, int level, void *arg);

#endif
