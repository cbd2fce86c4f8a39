/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Node topology read from sysfs: CPUs -> cores -> dies -> NUMA nodes ->
 * packages.
 *
 * A "die" here is the unit the CaSAS paper allocates: the CPUs that
 * share one L3 cache AND one NUMA node (one last-level cache and one
 * memory controller).  On the Opteron 6172 that is each half of a
 * package; on an EPYC it is one CCX; on a monolithic Xeon it is the
 * package.  Where sysfs has no L3 information (many VMs), the kernel's
 * die (die_cpus_list) stands in for the L3 domain, then the package.
 *
 * The sysfs root is a parameter so tests read fixture trees.
 */
#ifndef LWK_TOPOLOGY_H
#define LWK_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "common/cpulist.h"

struct lwk_topo_cpu {
	int cpu;	/* Linux CPU id                                */
	int package;	/* physical_package_id                         */
	int core;	/* index into topology.cores                   */
	int die;	/* index into topology.dies                    */
	int numa;	/* index into topology.numa                    */
	int l3;		/* first CPU of its L3 domain                  */
};

struct lwk_topo_core {
	int package;
	int die;
	struct lwk_cpuset cpus;	/* its hardware threads                */
};

struct lwk_topo_die {
	int package;
	int numa;		/* index into topology.numa            */
	unsigned int ncores;
	struct lwk_cpuset cpus;
};

struct lwk_topo_numa {
	int node;		/* Linux NUMA node id                  */
	struct lwk_cpuset cpus;
	uint64_t mem_total;	/* bytes, 0 when sysfs does not say    */
	uint64_t mem_free;
};

struct lwk_topology {
	unsigned int ncpus, ncores, ndies, nnuma, npackages;
	unsigned int threads_per_core;	/* the most any core has       */
	struct lwk_topo_cpu *cpus;	/* by ascending Linux CPU id    */
	struct lwk_topo_core *cores;	/* by first CPU                 */
	struct lwk_topo_die *dies;	/* by first CPU                 */
	struct lwk_topo_numa *numa;	/* by node id                   */
	struct lwk_cpuset online;
	/*
	 * CPUs the kernel set apart at boot, online ones only; empty when
	 * the node booted without them or sysfs does not say:
	 * nohz_full= (devices/system/cpu/nohz_full: the scheduler tick
	 * stops there while one task runs) and isolcpus= of the scheduler
	 * domains (devices/system/cpu/isolated: no load balancing there).
	 */
	struct lwk_cpuset nohz_full, isolated;
	char source[32];		/* which L3 information was used */
};

/*
 * Read the topology under sysfs_root (normally "/sys").  Returns a
 * topology to free with lwk_topology_free(), or NULL with a message.
 */
struct lwk_topology *lwk_topology_read(const char *sysfs_root, char *err, size_t errlen);
void lwk_topology_free(struct lwk_topology *t);

/* The CPUs isolated at boot: nohz_full and isolated together. */
void lwk_topology_boot_isolated(const struct lwk_topology *t, struct lwk_cpuset *out);

/* What Slurm calls a socket (SlurmdParameters). */
enum lwk_slurm_socket {
	LWK_SOCKET_PACKAGE,	/* the default                          */
	LWK_SOCKET_L3CACHE,	/* SlurmdParameters=l3cache_as_socket   */
	LWK_SOCKET_NUMA,	/* SlurmdParameters=numa_node_as_socket */
};

int lwk_slurm_socket_parse(const char *s, enum lwk_slurm_socket *out);

/*
 * Map Slurm's abstract core indices (S_JOB_ALLOC_CORES, "0-3,8") to the
 * Linux CPUs of those cores, all hardware threads included.  Slurm
 * numbers cores socket by socket: sockets in order of their first CPU,
 * cores within a socket in order of their first CPU.  An index past the
 * node's cores is an error: it means Slurm's idea of the node differs
 * from the hardware, and guessing would hand out CPUs the job does not
 * own.  Returns 0 or -1 with a message.
 */
int lwk_topology_map_slurm_cores(const struct lwk_topology *t, enum lwk_slurm_socket kind,
				 const char *alloc_cores, struct lwk_cpuset *cpus,
				 char *err, size_t errlen);

/* Number of Slurm sockets for kind, and cores in the largest one. */
void lwk_topology_slurm_shape(const struct lwk_topology *t, enum lwk_slurm_socket kind,
			      unsigned int *sockets, unsigned int *cores_per_socket);

#endif
