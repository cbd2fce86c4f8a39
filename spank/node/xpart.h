/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remote isolated partitions (cgroup v2, Linux 6.7 and later, and RHEL
 * 9's backport): exclusive CPUs handed down from the root through the
 * cpuset.cpus.exclusive of every ancestor of a cgroup, which then becomes
 * cpuset.cpus.partition=isolated without its ancestors being partition
 * roots.  Its CPUs leave every other cgroup's effective CPUs (the node's
 * daemons move off), the scheduler's load-balancing domains and, on
 * newer kernels, the unbound workqueues; the root's cpuset.cpus.isolated
 * lists them.  (Documentation/admin-guide/cgroup-v2.rst, "Cpuset
 * Interface Files".)  On 6.1 a partition needs every ancestor to be a
 * partition root, which Slurm's cgroups never are.
 *
 * What the kernel offers here, and who else holds exclusive CPUs: read
 * only.  The writes, recorded first in the job's state, are the --lwk
 * part's (lwk/isolate.c).  Every path is below a cgroup root the admin
 * configured, read from the kernel (/proc/<pid>/cgroup), never typed by
 * a user.
 */
#ifndef LWK_XPART_H
#define LWK_XPART_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cpulist.h"

/*
 * Can the kernel make the cgroup at path (below root) a remote isolated
 * partition?  1 yes; 0 no, with why ("cgroup v1: ...", "no
 * cpuset.cpus.exclusive in <dir>: Linux 6.7 or later makes remote
 * partitions").  Looks only: nothing is written.
 */
int lwk_xpart_capable(const char *root, const char *path, char *why, size_t len);

/*
 * Which cgroup below root other than those ours() claims holds CPUs of
 * cpus exclusively: a cpuset.cpus.exclusive someone set, or a valid
 * partition root's cpuset.cpus.exclusive.effective.  Walks the tree
 * (at most 16 levels deep, 16384 cgroups).  1: what names the first
 * ("/system.slice (cpuset.cpus.exclusive 4-7)"); 0: none; -1: the
 * tree cannot be read (what says why).
 */
int lwk_xpart_holder(const char *root, const struct lwk_cpuset *cpus,
		     bool (*ours)(const char *path, void *ctx), void *ctx, char *what, size_t len);

/* The cgroup at path holds processes (cgroup.events "populated 1"). */
bool lwk_xpart_populated(const char *root, const char *path);

#endif
