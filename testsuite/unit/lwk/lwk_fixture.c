/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fixture of the --lwk partition's tests: see lwk_fixture.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/options.h"
#include "common/topology.h"
#include "lwk_fixture.h"

char err[1024];
struct lwk_node_roots roots;
static char sysfs[300], proc[300], cgroot[300], state[300];

#define HP "sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages"

/* A node of the guest cluster: 8 CPUs, NUMA nodes 0 (0-3) and 1 (4-7),
 * three IRQs, 10 hugepages on each node, a cgroup v2 tree with Slurm's
 * step cgroups of job 42, named job_42 (up to 25.11) and by its SLUID
 * (26.05). */
void node_tree(void)
{
	char p[200];

	tree_make("part");
	for (int n = 0; n < 2; n++) {
		snprintf(p, sizeof(p), "sys/devices/system/node/node%d/hugepages/hugepages-2048kB", n);
		tree_mkdir(p);
		snprintf(p, sizeof(p), HP, n);
		tree_put(p, "10\n");
		snprintf(p, sizeof(p), "sys/devices/system/node/node%d/compact", n);
		tree_put(p, "");
	}
	tree_mkdir("proc/irq/1");
	tree_mkdir("proc/irq/24");
	tree_mkdir("proc/irq/30");
	tree_put("proc/irq/1/smp_affinity_list", "0-7\n");
	tree_put("proc/irq/24/smp_affinity_list", "5\n");
	tree_put("proc/irq/30/smp_affinity_list", "0\n");
	tree_mkdir("cg/s.slice/n1.scope/job_42/step_0/user/task_0");
	tree_mkdir("cg/s.slice/n1.scope/job_42/step_batch/user/task_0");
	/* 26.05's name of the same job's cgroup (its SLUID, LWK_FX_SLUID). */
	tree_mkdir("cg/s.slice/n1.scope/" LWK_FX_SLUID "/step_0/user/task_0");
	tree_put("cg/cgroup.controllers", "cpuset cpu memory\n");
	for (int i = 0; i < 3; i++) {
		const char *step = i == 2 ? "step_0" : i ? "step_batch" : "step_0";
		const char *job = i == 2 ? LWK_FX_SLUID : "job_42";
		static const char *const files[] = { "cpuset.cpus", "cpuset.mems", "cpuset.cpus.partition",
						     "memory.max", "cpu.max", NULL };

		snprintf(p, sizeof(p), "cg/s.slice/n1.scope/%s/%s/cgroup.controllers", job, step);
		tree_put(p, "cpuset cpu memory\n");
		snprintf(p, sizeof(p), "cg/s.slice/n1.scope/%s/%s/cgroup.subtree_control", job, step);
		tree_put(p, "cpuset cpu memory\n");
		for (int f = 0; files[f]; f++) {
			snprintf(p, sizeof(p), "cg/s.slice/n1.scope/%s/%s/user/%s", job, step, files[f]);
			tree_put(p, "");
		}
	}
	tree_mkdir("state");
	chmod(tree_root, 0755);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", tree_root);
	snprintf(proc, sizeof(proc), "%s/proc", tree_root);
	snprintf(cgroot, sizeof(cgroot), "%s/cg", tree_root);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ sysfs, proc, cgroot, state, "n1", "/nonexistent-ihk", 0, 0, NULL, false };
}

void chmod_tree(const char *rel, mode_t mode)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	ck_assert_int_eq(chmod(p, mode), 0);
}

/* The absolute path of rel in the tree (one buffer per call site's
 * use at a time: two calls in one expression use two of them). */
const char *tree_path(const char *rel)
{
	static char bufs[4][600];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tree_root, rel);
	return b;
}

long hugepages(int node)
{
	char p[200];

	snprintf(p, sizeof(p), HP, node);
	return atol(tree_get(p));
}

bool all_alive(uint32_t job)
{
	(void)job;
	return true;
}

int setup(const char *arg, struct lwk_part *p)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of(arg);
	struct lwk_cpuset all = cpus_of("0-7");
	int rc = lwk_part_setup(&roots, 42, t, &all, &o, false, all_alive, lwk_sweep_gone, p, err, sizeof(err));

	lwk_topology_free(t);
	return rc;
}

/* tree_put with the parent directories made. */
void put(const char *rel, const char *text)
{
	char dir[600];

	snprintf(dir, sizeof(dir), "%s", rel);
	*strrchr(dir, '/') = '\0';
	tree_mkdir(dir);
	tree_put(rel, text);
}

bool only_42_alive(uint32_t job)
{
	return job == 42;
}
