/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The --lwk plan of one node (pure): from the job's CPUs on the node, the
 * node's topology and the --lwk options, which cores run Linux (OS
 * cores: daemons, IRQs, the delegation cgroup's helpers) and which form
 * the partition (App cores), and how much memory the partition takes on
 * each NUMA node.
 *
 * Rules (seed 003, NUMA from seed 004):
 *  - only the job's own CPUs are ever used, whole cores;
 *  - App cores and their memory on the same NUMA nodes (numa= or, by
 *    default, every node the job has cores on);
 *  - OS cores first where system memory lives: the lowest-numbered NUMA
 *    node the job has cores on, from its first core up, spilling to the
 *    next nodes only when it has too few;
 *  - with whole_dies (die-granular partitions), OS cores are rounded up
 *    to whole dies, so the partition is whole dies too;
 *  - but where the node booted with CPUs set apart (nohz_full=,
 *    isolcpus=: topology's nohz_full and isolated), OS cores come first
 *    from the job's cores that are not boot-isolated (a core is when any
 *    of its CPUs is), by the NUMA rule among those, so that the App
 *    cores are the boot-isolated ones where possible.  This wins over
 *    the NUMA preference: the admin chose those CPUs explicitly, and no
 *    runtime partition does what the boot parameters do (nohz_full=
 *    stops the tick).  With whole_dies: first dies with no
 *    boot-isolated job core, then dies with a job core that is not,
 *    then the rest.  A core on a node outside numa= counts as not
 *    boot-isolated (Linux keeps it anyway).  Boot-isolated cores become
 *    OS cores only when os=, whole dies or numa= need them.  Where boot
 *    isolation does not tell the job's cores apart (none is, or all
 *    are), the plan is the NUMA rule's alone;
 *  - mem= is split over the App nodes in proportion to their App cores,
 *    each share rounded up to the hugepage size, and must fit in what the
 *    node has free;
 *  - job cores on nodes outside numa= and not needed as OS cores go to
 *    Linux too (OS cores): the partition never spans a node it was not
 *    asked to.
 */
#ifndef LWK_PLAN_H
#define LWK_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node/cgroup.h"
#include "common/cpulist.h"
#include "common/options.h"
#include "common/topology.h"

struct lwk_plan {
	struct lwk_cpuset os_cpus;	/* Linux CPUs of the OS cores        */
	struct lwk_cpuset app_cpus;	/* Linux CPUs of the App cores       */
	struct lwk_cpuset app_nodes;	/* NUMA node ids of the partition    */
	unsigned int os_cores, app_cores;
	/* Boot-time isolation (nohz_full=, isolcpus=) of the job's CPUs:
	 * the sets are empty when the node has none. */
	struct lwk_cpuset boot_isolated_app;	/* App CPUs isolated at boot */
	struct lwk_cpuset boot_isolated_os;	/* ... left to Linux as OS CPUs */
	unsigned int app_cpus_not_boot;		/* App CPUs that are not     */
	uint64_t node_mem[LWK_MAX_NUMA]; /* bytes per NUMA node id, App only */
	unsigned long page_kb;		/* hugepage size, 0 = none           */
	/* the delegation cgroup */
	uint64_t deleg_mem;		/* bytes                              */
	uint64_t deleg_quota_us;	/* per deleg_period_us                */
	uint64_t deleg_period_us;
};

/*
 * Plan for the job CPUs `job_cpus` (Linux ids) on topology t.  Returns 0,
 * or -1 with a message for the user naming the option to change.
 */
int lwk_plan_make(const struct lwk_topology *t, const struct lwk_cpuset *job_cpus,
		  const struct lwk_opts *o, bool whole_dies, struct lwk_plan *p, char *err,
		  size_t errlen);

/*
 * McKernel's IKC map (mcreboot.sh -r): each App CPU group to an OS CPU on
 * the same NUMA node (else the first OS CPU), "4-7:0+12-15:8".
 */
int lwk_plan_ikc_map(const struct lwk_topology *t, const struct lwk_plan *p, char *out,
		     size_t len);

/*
 * What the plan did with boot-isolated CPUs, for the log line of the
 * partition: ", boot-isolated (nohz_full/isolcpus) App CPUs 4-7" and/or
 * ", boot-isolated CPUs 3 kept as OS cores: ...", or "" when the job has
 * none.  Always NUL-terminated when len > 0.
 */
void lwk_plan_boot_note(const struct lwk_plan *p, char *out, size_t len);

/* mcreboot.sh -m: "2048M@0,2048M@1" (MiB per App node). */
int lwk_plan_mem_arg(const struct lwk_plan *p, char *out, size_t len);

#endif
