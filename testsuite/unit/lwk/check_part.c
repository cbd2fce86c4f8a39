/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition's life over a temporary tree: setup, its state,
 * placement into Slurm's step cgroup, teardown, a setup cut short, the
 * sweep. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "casas/casasnode.h"
#include "check_lwk.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "lwk/mckernel.h"
#include "common/options.h"
#include "common/topology.h"

static char err[1024], sysfs[300], proc[300], cgroot[300], state[300];
static struct lwk_node_roots roots;

#define HP "sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages"

/* A node of the guest cluster: 8 CPUs, NUMA nodes 0 (0-3) and 1 (4-7),
 * three IRQs, 10 hugepages on each node, a cgroup v2 tree with Slurm's
 * step cgroup of job 42. */
static void node_tree(void)
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
	tree_put("cg/cgroup.controllers", "cpuset cpu memory\n");
	for (int i = 0; i < 2; i++) {
		const char *step = i ? "step_batch" : "step_0";
		static const char *const files[] = { "cpuset.cpus", "cpuset.mems", "cpuset.cpus.partition",
						     "memory.max", "cpu.max", NULL };

		snprintf(p, sizeof(p), "cg/s.slice/n1.scope/job_42/%s/cgroup.controllers", step);
		tree_put(p, "cpuset cpu memory\n");
		snprintf(p, sizeof(p), "cg/s.slice/n1.scope/job_42/%s/cgroup.subtree_control", step);
		tree_put(p, "cpuset cpu memory\n");
		for (int f = 0; files[f]; f++) {
			snprintf(p, sizeof(p), "cg/s.slice/n1.scope/job_42/%s/user/%s", step, files[f]);
			tree_put(p, "");
		}
	}
	tree_mkdir("state");
	chmod(tree_root, 0755);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", tree_root);
	snprintf(proc, sizeof(proc), "%s/proc", tree_root);
	snprintf(cgroot, sizeof(cgroot), "%s/cg", tree_root);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ sysfs, proc, cgroot, state, "n1", "/nonexistent-ihk", 0, 0 };
}

static void chmod_tree(const char *rel, mode_t mode)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	ck_assert_int_eq(chmod(p, mode), 0);
}

/* The absolute path of rel in the tree (one buffer per call site's
 * use at a time: two calls in one expression use two of them). */
static const char *tree_path(const char *rel)
{
	static char bufs[4][600];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tree_root, rel);
	return b;
}

static long hugepages(int node)
{
	char p[200];

	snprintf(p, sizeof(p), HP, node);
	return atol(tree_get(p));
}

static bool all_alive(uint32_t job)
{
	(void)job;
	return true;
}

static int setup(const char *arg, struct lwk_part *p)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of(arg);
	struct lwk_cpuset all = cpus_of("0-7");
	int rc = lwk_part_setup(&roots, 42, t, &all, &o, false, all_alive, lwk_sweep_gone, p, err, sizeof(err));

	lwk_topology_free(t);
	return rc;
}

START_TEST(state_text_reads_back_the_same)
{
	struct lwk_part p, q;
	char text[8192], env[4096];

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	lwk_part_format(&p, text, sizeof(text));
	ck_assert_int_eq(lwk_part_parse(text, &q, err, sizeof(err)), 0);
	ck_assert(lwk_cpuset_equal(&p.plan.app_cpus, &q.plan.app_cpus));
	ck_assert(lwk_cpuset_equal(&p.plan.os_cpus, &q.plan.os_cpus));
	ck_assert(lwk_cpuset_equal(&p.plan.app_nodes, &q.plan.app_nodes));
	ck_assert(memcmp(p.plan.node_mem, q.plan.node_mem, sizeof(p.plan.node_mem)) == 0);
	ck_assert_uint_eq(q.plan.deleg_mem, 128ULL << 20);
	ck_assert_uint_eq(q.plan.deleg_quota_us, 100000);
	ck_assert(!q.ready); /* the plan's lines alone: not a finished setup */
	/* What the tasks see. */
	lwk_part_env(&p, LWK_ROLE_APP, NULL, env, sizeof(env));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_APP_CPUS=2-7\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_OS_CPUS=0-1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_MEM_NODES=0-1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_ROLE=app\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_BACKEND=linux\n"));
	/* 40M over 2 + 4 App cores: 14M (7 pages) on node 0, 28M on node 1. */
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_MEM=14M@0,28M@1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_HUGEPAGES=2048kB:0=7/7,1=14/14\n"));
	lwk_part_env(&p, LWK_ROLE_DELEGATION, NULL, env, sizeof(env));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_ROLE=delegation\n"));
	/* Malformed state is refused, naming the line. */
	ck_assert_int_eq(lwk_part_parse("job 1\nbogus 2\n", &q, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "line 2: unknown key 'bogus'"));
	ck_assert_int_eq(lwk_part_parse("app_cpus 9-x\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("huge 0 3 4\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("huge 64 3 3\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("page_kb 4\n", &q, err, sizeof(err)), -1);
	ck_assert_msg(lwk_part_teardown(&roots, 42, text, sizeof(text)) == 1, "%s", text);
	tree_remove();
}
END_TEST

START_TEST(setup_once_teardown_gives_everything_back)
{
	struct lwk_part p, again;
	char log[4096];

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert(p.ready);
	/* IRQs off the App CPUs 2-7, onto what is left of theirs or the OS CPUs. */
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-1");
	ck_assert_str_eq(tree_get("proc/irq/24/smp_affinity_list"), "0-1");
	ck_assert_str_eq(tree_get("proc/irq/30/smp_affinity_list"), "0\n");
	ck_assert_uint_eq(p.irq_moved, 2);
	ck_assert_int_eq(hugepages(0), 17);
	ck_assert_int_eq(hugepages(1), 24);
	/* A second step of the job: the same partition, nothing redone. */
	ck_assert_int_eq(setup("os=2,mem=40M", &again), 0);
	ck_assert(lwk_cpuset_equal(&again.plan.app_cpus, &p.plan.app_cpus));
	ck_assert_int_eq(again.huge_added[1], 14);
	ck_assert_int_eq(hugepages(1), 24);
	/* Teardown: all back, the state gone; a second one finds nothing. */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7");
	ck_assert_str_eq(tree_get("proc/irq/24/smp_affinity_list"), "5");
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_int_eq(hugepages(1), 10);
	ck_assert_ptr_nonnull(strstr(log, "gave back 14 hugepages of 2048kB on NUMA node 1"));
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 0);
	tree_remove();
}
END_TEST

START_TEST(a_failed_setup_leaves_nothing)
{
	struct lwk_part p;

	node_tree();
	ck_assert_int_eq(setup("os=8", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "os=8 leaves no App core"));
	ck_assert_int_eq(setup("mem=1T", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "ask for less memory (mem=)"));
	ck_assert_int_eq(setup("backend=mckernel", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "IHK/McKernel is not installed on n1"));
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7\n");
	ck_assert_int_eq(hugepages(0), 10);
	tree_remove();
}
END_TEST

START_TEST(a_setup_that_fails_half_way_undoes_what_it_did)
{
	struct lwk_part p;

	node_tree();
	/* Node 1 has no hugepages of this size: found after the IRQs moved
	 * and node 0's pages were reserved. */
	tree_put("sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "x\n");
	ck_assert_int_eq(setup("os=2,mem=40M", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "NUMA node 1 has no 2048kB hugepages"));
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7");
	ck_assert_str_eq(tree_get("proc/irq/24/smp_affinity_list"), "5");
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}
END_TEST

START_TEST(a_reservation_cut_short_gives_back_what_was_added)
{
	char log[2048];

	node_tree();
	/* slurmstepd died after asking for 5 pages on node 0 (it had 10),
	 * before it recorded what it got: 15 are there now. */
	tree_mkdir("state/n1/42");
	tree_put("state/n1/42/lwk.state", "job 42\nbackend linux\npage_kb 2048\nhugeask 0 10 5\n");
	tree_put("state/n1/42/lwk.lock", "");
	chmod_tree("state/n1/42", 0700);
	chmod_tree("state/n1/42/lwk.state", 0600);
	tree_put("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "15\n");
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_int_eq(hugepages(0), 10);
	/* A state anyone could have written is not acted on. */
	tree_mkdir("state/n1/43");
	tree_put("state/n1/43/lwk.state", "job 43\nirq 1 3\n");
	tree_put("state/n1/43/lwk.lock", "");
	chmod_tree("state/n1/43/lwk.state", 0666);
	ck_assert_int_eq(lwk_part_teardown(&roots, 43, log, sizeof(log)), -1);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7\n");
	tree_remove();
}
END_TEST

START_TEST(a_teardown_that_fails_keeps_only_what_failed)
{
	struct lwk_part p, q;
	char log[4096];

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	/* Node 1's count cannot be read at teardown (here: not a number). */
	tree_put("sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "x\n");
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), -1);
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7");
	/* Only node 1's pages are left to give back: once. */
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "huge 1 14 14\n"));
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "huge 0 "));
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "irq "));
	/* Another step of the job sees no finished partition in it. */
	ck_assert_int_eq(lwk_part_load(&roots, 42, &q), 0);
	tree_put("sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "24\n");
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_int_eq(hugepages(1), 10);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}
END_TEST

START_TEST(a_ready_partition_survives_a_damaged_line)
{
	struct lwk_part p, again;

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert_int_eq(lwk_part_load(&roots, 42, &again), 1);
	ck_assert(lwk_cpuset_equal(&again.plan.app_cpus, &p.plan.app_cpus));
	/* A torn line after "ready": still the job's running partition,
	 * never undone by a later step. */
	{
		char path[600];
		FILE *f;

		snprintf(path, sizeof(path), "%s/state/n1/42/lwk.state", tree_root);
		f = fopen(path, "a");
		ck_assert_ptr_nonnull(f);
		fputs("huge 9 x", f);
		fclose(f);
	}
	ck_assert_int_eq(setup("os=2,mem=40M", &again), 0);
	ck_assert(lwk_cpuset_equal(&again.plan.app_cpus, &p.plan.app_cpus));
	ck_assert_int_eq(hugepages(1), 24);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-1");
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, tree_root, 0), 1);
	ck_assert_int_eq(hugepages(1), 10);
	tree_remove();
}
END_TEST

START_TEST(a_setup_cut_short_is_undone_then_redone)
{
	struct lwk_part p;

	node_tree();
	/* slurmstepd died after moving IRQ 1 and reserving 3 pages. */
	tree_mkdir("state/n1/42");
	tree_put("state/n1/42/lwk.state",
		 "job 42\nbackend linux\npage_kb 2048\nirq 1 0-5\nirqs 1 0\nhuge 0 3 3\n");
	chmod_tree("state/n1/42", 0700);
	chmod_tree("state/n1/42/lwk.state", 0600);
	tree_put("proc/irq/1/smp_affinity_list", "0\n");
	tree_put("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "13\n");
	ck_assert_int_eq(setup("os=4", &p), 1);
	/* Undone (IRQ 1 back to 0-5, then off 4-7; the 3 pages given back),
	 * then set up with the new plan (no mem=: no pages). */
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-3");
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "irq 1 0-5\n"));
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "ready\n"));
	tree_remove();
}
END_TEST

static bool only_43_alive(uint32_t job)
{
	return job == 43;
}

START_TEST(the_sweep_tears_down_only_jobs_that_are_gone)
{
	struct lwk_part p;
	char log[4096];
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of("os=4");
	struct lwk_cpuset all = cpus_of("0-7");

	node_tree();
	ck_assert_int_eq(lwk_part_setup(&roots, 42, t, &all, &o, false, all_alive, lwk_sweep_gone, &p, err, sizeof(err)), 1);
	/* Two partitions on one node, which setup now refuses (what an
	 * older plugin left): job 42's state out of sight for job 43's. */
	ck_assert_int_eq(rename(tree_path("state/n1/42"), tree_path("state/n1/hidden")), 0);
	ck_assert_int_eq(lwk_part_setup(&roots, 43, t, &all, &o, false, all_alive, lwk_sweep_gone, &p, err, sizeof(err)), 1);
	ck_assert_int_eq(rename(tree_path("state/n1/hidden"), tree_path("state/n1/42")), 0);
	lwk_topology_free(t);
	ck_assert_int_eq(lwk_part_sweep(&roots, only_43_alive, log, sizeof(log)), 1);
	ck_assert_ptr_nonnull(strstr(log, "swept job 42"));
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	ck_assert_ptr_nonnull(tree_get("state/n1/43/lwk.state"));
	/* Job 42's IRQ 1 is back (0-7), job 43's partition left alone:
	 * two partitions on one node share its IRQs, which is why the
	 * plugin gives one only to a job that has the whole node. */
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7");
	ck_assert_int_eq(lwk_part_teardown(&roots, 43, log, sizeof(log)), 1);
	tree_remove();
}
END_TEST

START_TEST(tasks_are_placed_in_slurms_step_cgroup_by_role)
{
	struct lwk_part p;
	char where[800], iso[64];
	const char *app = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	const char *batch = "0::/s.slice/n1.scope/job_42/step_batch/user/task_0\n";

	node_tree();
	ck_assert_int_eq(setup("os=2,deleg_mem=64M,deleg_cpu=150", &p), 1);
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, app, 4242, where, sizeof(where),
					iso, sizeof(iso), err, sizeof(err)),
			 0);
	ck_assert_str_eq(where, "/s.slice/n1.scope/job_42/step_0/user");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_0/user/cpuset.cpus"), "2-7");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_0/user/cpuset.mems"), "0-1");
	/* The job's cgroup is remembered (once) for the teardown. */
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "jobcg /s.slice/n1.scope/job_42\n"));
	/* A plain file takes "isolated": a real kernel says whether it holds. */
	ck_assert_str_eq(iso, "isolated");
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_DELEGATION, batch, 4243, where,
					sizeof(where), iso, sizeof(iso), err, sizeof(err)),
			 0);
	ck_assert_str_eq(where, "/s.slice/n1.scope/job_42/step_batch/user");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/cpuset.cpus"), "0-1");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/memory.max"),
			 "67108864");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/cpu.max"),
			 "150000 100000");
	/* Slurm's cgroup of the job but no step in it: refused, never a
	 * move out of Slurm's limits. */
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, "0::/s.slice/n1.scope/job_42\n",
					4244, where, sizeof(where), iso, sizeof(iso), err,
					sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "ConstrainCores=yes"));
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, "", 4244, where, sizeof(where),
					iso, sizeof(iso), err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read the cgroups of task 4244"));
	/* The job's cgroup cannot be removed in this tree (its knobs are
	 * plain files): kept in the state, alone, for the next teardown. */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, where, sizeof(where)), -1);
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "jobcg /s.slice/n1.scope/job_42\n"));
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "irq "));
	tree_remove();
}
END_TEST

START_TEST(mckernel_boot_command_line)
{
	static char store[LWK_MCK_ARGS][4096];
	const char *argv[LWK_MCK_ARGS + 1];
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of("os=2,mem=40M");
	struct lwk_cpuset all = cpus_of("0-7");
	struct lwk_plan p;
	char line[1024] = "";

	ck_assert_int_eq(lwk_plan_make(t, &all, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_mck_boot_argv("/opt/mck", t, &p, 1000, 100, store, argv, err,
					   sizeof(err)),
			 0);
	for (int i = 0; argv[i]; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", i ? " " : "", argv[i]);
	/* App CPUs; memory on their nodes; each node's App CPUs send IKC to
	 * an OS CPU of that node, else the first OS CPU; the user owns it. */
	ck_assert_str_eq(line, "/opt/mck/sbin/mcreboot.sh -c 2-7 -m 14M@0,28M@1 -r 2-3:0+4-7:0 "
			       "-o 1000:100");
	o = opts_of("os=2");
	ck_assert_int_eq(lwk_plan_make(t, &all, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_mck_boot_argv("/opt/mck", t, &p, 1000, 100, store, argv, err,
					   sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "backend=mckernel needs memory for McKernel: give mem="));
	lwk_topology_free(t);
}
END_TEST

START_TEST(mckernel_tools_run_only_when_root_owns_them)
{
	const char *echo[] = { "/bin/echo", "booted", NULL };
	const char *sleep5[] = { "/bin/sleep", "5", NULL };
	const char *no[] = { "/bin/false", NULL };
	const char *mine[] = { NULL, NULL };
	char out[256], path[300];

	ck_assert_int_eq(lwk_mck_run(echo, out, sizeof(out), 10), 0);
	ck_assert_str_eq(out, "booted");
	ck_assert_int_eq(lwk_mck_run(no, out, sizeof(out), 10), 1);
	ck_assert_int_ne(lwk_mck_run(sleep5, out, sizeof(out), 1), 0);
	ck_assert_ptr_nonnull(strstr(out, "killed after 1 s"));
	/* A tool others can write is never run as root. */
	tree_make("mck");
	tree_put("tool", "#!/bin/sh\necho ran\n");
	snprintf(path, sizeof(path), "%s/tool", tree_root);
	chmod(path, 0777);
	mine[0] = path;
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), -1);
	ck_assert_ptr_nonnull(strstr(out, "not a root-owned executable that only root can change"));
	/* Nor one in a directory others can change (a sticky one, like
	 * /tmp, is fine: only root may rename root's entries there). */
	chmod(path, 0755);
	chmod(tree_root, 0777);
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), -1);
	ck_assert_ptr_nonnull(strstr(out, "in directories only root can change"));
	chmod(tree_root, 01777);
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), 0);
	ck_assert_str_eq(out, "ran");
	ck_assert(!lwk_mck_installed(tree_root));
	tree_remove();
}
END_TEST

/* ---- --lwk owns its node (issue 14, 2) ------------------------------- */

/* tree_put with the parent directories made. */
static void put(const char *rel, const char *text)
{
	char dir[600];

	snprintf(dir, sizeof(dir), "%s", rel);
	*strrchr(dir, '/') = '\0';
	tree_mkdir(dir);
	tree_put(rel, text);
}

/* Job 42's setup while job `other` left `rel` (a file) on the node. */
static void refused_by(const char *rel, const char *content, const char *expect)
{
	struct lwk_part p;
	char what[400];

	node_tree();
	put(rel, content);
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_str_eq(what, expect);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_msg(strstr(err, "lwk: --lwk: n1 is not this job's alone: ") && strstr(err, expect),
		      "%s", err);
	/* Nothing done: IRQs as they were, no state of job 42. */
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7\n");
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.lock"));
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}

START_TEST(another_jobs_state_or_record_refuses_the_partition)
{
	refused_by("state/n1/7/lwk.state", "job 7\nready\n", "job 7 has a --lwk partition there");
	refused_by("state/n1/8/syncmon.pid", "123\n", "job 8 has a --sync-monitor sampler there");
	refused_by("state/n1/9/other", "", "job 9 has slurm-lwk state there");
	refused_by("state/n1/casas/10", "job 10\n",
		   "job 10 shares it by dies under --contention-aware");
}
END_TEST

START_TEST(only_traces_of_other_jobs_count)
{
	struct lwk_part p;
	char what[400] = "";

	node_tree();
	/* A job waiting for the node lock (its setup's lock only), a casas
	 * record being written, the job's own record and state. */
	put("state/n1/7/lwk.lock", "");
	put("state/n1/casas/10.new", "");
	put("state/n1/casas/42", "job 42\n");
	put("state/n1/42/syncmon.pid", "1\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	ck_assert_int_eq(setup("os=2", &p), 1);
	/* The second job: refused while the first has its partition. */
	ck_assert_int_eq(lwk_node_other_job(&roots, 43, all_alive, what, sizeof(what)), 1);
	ck_assert_str_eq(what, "job 42 has a --lwk partition there");
	tree_remove();
}
END_TEST

/* Job 42's slurmstepd in a cgroup tree: v2 (one hierarchy) or v1
 * (each controller's, jobs under uid_<n>). */
START_TEST(a_busy_job_cgroup_next_to_ours_refuses_the_partition)
{
	char what[400];
	struct lwk_part p;

	node_tree();
	put("proc/self/cgroup", "0::/s.slice/n1.scope/job_42/step_0/slurm\n");
	put("cg/s.slice/n1.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	/* Slurm's own "system" cgroup and a job cgroup left empty are no
	 * job on the node. */
	put("cg/s.slice/n1.scope/system/cgroup.procs", "99\n");
	tree_mkdir("cg/s.slice/n1.scope/job_41/step_0/user/task_0");
	put("cg/s.slice/n1.scope/job_41/step_0/user/task_0/cgroup.procs", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	/* A task of job 43 in a leaf three levels down. */
	put("cg/s.slice/n1.scope/job_43/step_batch/user/task_0/cgroup.procs", "4343\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job 43 runs there (its cgroup ", 30) &&
			      strstr(what, "/cg/s.slice/n1.scope/job_43)"),
		      "%s", what);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "job 43 runs there"));
	tree_remove();

	/* Jobs named otherwise (Slurm 26.05: by SLUID): ours is the one we
	 * are in, a job is a cgroup with steps. */
	node_tree();
	put("proc/self/cgroup", "0::/s.slice/n1.scope/sXYZ42/step_0/slurm\n");
	put("cg/s.slice/n1.scope/sXYZ42/step_0/slurm/cgroup.procs", "100\n");
	put("cg/s.slice/n1.scope/sABC43/step_extern/cgroup.procs", "77\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job sABC43 runs there", 21), "%s", what);
	tree_remove();

	/* v1: the freezer hierarchy (proctrack/cgroup), the other user's
	 * jobs under their uid_<n>; a hierarchy without the job is left
	 * alone. */
	node_tree();
	put("proc/self/cgroup", "12:cpuset:/\n"
				     "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
				     "1:name=systemd:/system.slice/slurmd.service\n");
	put("cg/freezer/slurm_n1/uid_0/job_42/step_batch/cgroup.procs", "100\n");
	put("cg/freezer/slurm_n1/uid_0/job_40/cgroup.procs", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	put("cg/freezer/slurm_n1/uid_1000/job_44/step_0/cgroup.procs", "4444\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(strstr(what, "job 44 runs there (its cgroup ") &&
			      strstr(what, "/cg/freezer/slurm_n1/uid_1000/job_44)"),
		      "%s", what);
	tree_remove();

	/* A hybrid host: the unified line is under <root>/unified. */
	node_tree();
	put("proc/self/cgroup", "0::/slurmstepd.scope/job_42/step_0/slurm\n");
	put("cg/unified/slurmstepd.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	put("cg/unified/slurmstepd.scope/job_45/step_0/user/cgroup.procs", "45\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job 45 runs there", 17), "%s", what);
	tree_remove();
}
END_TEST

/* ---- a placement the node cannot make, found before the tasks -------- */

START_TEST(placement_is_judged_before_the_tasks)
{
	node_tree();
	/* v2 (the tree's cgroup.controllers), slurmstepd in the step. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/s.slice/n1.scope/job_42/step_0/slurm\n",
					    err, sizeof(err)),
			 0);
	/* No Slurm cgroups: the plugin's own. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/user.slice\n", err, sizeof(err)), 0);
	tree_remove();

	/* v1 with proctrack/cgroup and ConstrainCores=no: Slurm's freezer
	 * and memory cgroups of the job, no cpuset one. */
	node_tree();
	ck_assert_int_eq(unlink(tree_path("cg/cgroup.controllers")), 0);
	tree_mkdir("cg/cpuset");
	put("cg/cpuset/cpuset.cpus", "0-7\n");
	ck_assert_int_eq(lwk_part_placeable(&roots, 42,
					    "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
					    "3:cpuset:/\n",
					    err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lwk: --lwk: Slurm's cgroups of job 42 on n1 have no cpuset of the step "
			      "(cgroup.conf ConstrainCores=no?); --lwk needs ConstrainCores=yes there, "
			      "or no Slurm cgroups at all");
	/* With ConstrainCores=yes slurmstepd is in the step's cpuset too. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42,
					    "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
					    "3:cpuset:/slurm_n1/uid_0/job_42/step_batch\n",
					    err, sizeof(err)),
			 0);
	tree_remove();

	/* No cgroup hierarchy at the configured root. */
	tree_make("nocg");
	roots.cgroup_root = tree_root;
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, NULL, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "lwk: --lwk: no cgroup v2 or v1 cpuset hierarchy under "));
	tree_remove();
}
END_TEST

/* ---- traces of jobs that are gone (issue 14, review of ce83b42, 1) ----- */

static bool only_42_alive(uint32_t job)
{
	return job == 42;
}

START_TEST(what_a_gone_job_left_is_swept_not_a_refusal)
{
	struct lwk_part p;
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of("os=4");
	struct lwk_cpuset all = cpus_of("0-7");

	node_tree();
	/* Job 7's partition, a real one (IRQ 1 moved to its OS CPUs). */
	ck_assert_int_eq(lwk_part_setup(&roots, 7, t, &all, &o, false, all_alive, lwk_sweep_gone, &p, err,
					sizeof(err)), 1);
	/* Job 7 alive: job 42 refused, nothing of job 7 touched. */
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_msg(strstr(err, "job 7 has a --lwk partition there"), "%s", err);
	ck_assert_ptr_nonnull(tree_get("state/n1/7/lwk.state"));
	/* Job 7 gone (its teardown never ran): swept, and job 42 gets the
	 * node. */
	ck_assert_int_eq(lwk_part_setup(&roots, 42, t, &all, &o, false, only_42_alive, lwk_sweep_gone, &p, err,
					sizeof(err)), 1);
	ck_assert_ptr_null(tree_get("state/n1/7/lwk.state"));
	ck_assert_ptr_nonnull(tree_get("state/n1/42/lwk.state"));
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, err, sizeof(err)), 1);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7");
	lwk_topology_free(t);
	tree_remove();
}
END_TEST

START_TEST(what_a_gone_job_left_and_cannot_be_undone_is_a_node_problem)
{
	struct lwk_part p;
	char what[400];

	node_tree();
	/* Something of gone job 9 no sweep knows how to remove. */
	put("state/n1/9/other", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, only_42_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "job 9 is gone and left what could not be undone"), "%s", what);
	{
		struct lwk_topology *t = fixture_load("guest8");
		struct lwk_opts o = opts_of("os=2");
		struct lwk_cpuset all = cpus_of("0-7");

		ck_assert_int_eq(lwk_part_setup(&roots, 42, t, &all, &o, false, only_42_alive, lwk_sweep_gone, &p,
						err, sizeof(err)), -1);
		lwk_topology_free(t);
	}
	ck_assert_msg(strstr(err, "lwk: --lwk: node problem on n1: job 9 is gone") &&
			      !strstr(err, "not this job's alone"),
		      "%s", err);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}
END_TEST

/* ---- what cannot be read whole is not passed over (review, 6) --------- */

START_TEST(a_cgroup_file_too_long_to_judge_refuses_as_a_node_problem)
{
	static char text[12000];
	char what[400];
	struct lwk_part p;
	size_t n;

	node_tree();
	/* A hierarchy line longer than the parser takes, before job 42's. */
	n = (size_t)snprintf(text, sizeof(text), "5:cpuset:/");
	memset(text + n, 'x', 5000);
	n += 5000;
	snprintf(text + n, sizeof(text) - n, "\n0::/s.slice/n1.scope/job_42/step_0/slurm\n");
	put("proc/self/cgroup", text);
	put("cg/s.slice/n1.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "cannot judge whether another job runs there: a line of "), "%s",
		      what);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_msg(strstr(err, "lwk: --lwk: node problem on n1: cannot judge"), "%s", err);
	/* More than the reader takes at all. */
	memset(text, '\n', 10000);
	text[10000] = '\0';
	put("proc/self/cgroup", text);
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "is longer than 8191 bytes"), "%s", what);
	tree_remove();
}
END_TEST

/* ---- a --contention-aware job arriving next to a --lwk one (review, 4) -- */

static struct lwk_casas_record casas_arriving(uint32_t job)
{
	struct lwk_casas_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.job = job;
	snprintf(rec.status, sizeof(rec.status), "probing");
	snprintf(rec.cgroup, sizeof(rec.cgroup), "/s.slice/n1.scope/job_%u", job);
	rec.allowed_cpus = cpus_of("0-7");
	rec.allowed_mems = cpus_of("0-1");
	return rec;
}

START_TEST(casas_is_off_next_to_a_live_lwk_partition)
{
	struct lwk_casas_record rec = casas_arriving(42);
	char log[4096];

	node_tree();
	put("state/n1/7/lwk.state", "job 7\nready\n");
	ck_assert_int_eq(lwk_casas_join(&roots, &rec, all_alive, log, sizeof(log), err, sizeof(err)),
			 1);
	ck_assert_str_eq(rec.status, "off");
	ck_assert_str_eq(rec.why, "job 7 has a --lwk partition on this node");
	tree_remove();
	/* Job 7 gone: its leftover is the sweep's business, not a refusal. */
	node_tree();
	put("state/n1/7/lwk.state", "job 7\nready\n");
	rec = casas_arriving(42);
	lwk_casas_join(&roots, &rec, only_42_alive, log, sizeof(log), err, sizeof(err));
	ck_assert_msg(!strstr(rec.why, "--lwk partition"), "%s: %s", rec.status, rec.why);
	tree_remove();
}
END_TEST

/* ---- lwkmem (issue 14, 3.6 and 3.7): the teardown's kill, mem= ---- */

/* Around the teardown, children are reaped by the kernel as they die
 * (SIGCHLD ignored): the teardown waits for a killed process to leave,
 * and a zombie would look like one still there. */
/* Gone (killed), or still alive (then killed). */
static bool mem_was_killed(pid_t pid)
{
	for (int i = 0; i < 50 && kill(pid, 0) == 0; i++)
		usleep(20 * 1000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		return false;
	}
	return true;
}

static void mem_state(uint32_t job, const char *text)
{
	char p[64];

	snprintf(p, sizeof(p), "state/n1/%u", job);
	tree_mkdir(p);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.state", job);
	tree_put(p, text);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.lock", job);
	tree_put(p, "");
	snprintf(p, sizeof(p), "state/n1/%u", job);
	chmod_tree(p, 0700);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.state", job);
	chmod_tree(p, 0600);
}

/* 3.6: cgroup.procs listed a pid that has left the cgroup since (it
 * exited and the number now names a process of someone else's): the
 * teardown does not kill it; one still in the cgroup it does. */
START_TEST(the_teardown_kills_no_pid_outside_the_cgroup)
{
	pid_t stranger = tree_sleeper(), left = tree_sleeper(), jobs = tree_sleeper();
	char text[128], log[4096];

	node_tree();
	tree_mkdir("cg/slurm-lwk/n1/job_42/app");
	tree_mkdir("cg/s.slice/n1.scope/job_42/step_0/user/task_0");
	snprintf(text, sizeof(text), "%d\n%d\n", (int)stranger, (int)left);
	tree_put("cg/slurm-lwk/n1/job_42/app/cgroup.procs", text);
	snprintf(text, sizeof(text), "%d\n", (int)jobs);
	tree_put("cg/s.slice/n1.scope/job_42/step_0/user/task_0/cgroup.procs", text);
	tree_proc_cgroup(stranger, "0::/user.slice/user-1000.slice/session-3.scope\n");
	tree_proc_cgroup(left, "0::/slurm-lwk/n1/job_42/app\n");
	tree_proc_cgroup(jobs, "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n");
	mem_state(42, "job 42\nbackend linux\npage_kb 2048\ncgroup /slurm-lwk/n1/job_42\n"
		      "cgroup /slurm-lwk/n1/job_42/app\njobcg /s.slice/n1.scope/job_42\n");
	/* A tree of files cannot be removed: the teardown says so (-1);
	 * what matters here is whom it killed. */
	signal(SIGCHLD, SIG_IGN);
	lwk_part_teardown(&roots, 42, log, sizeof(log));
	ck_assert_msg(!mem_was_killed(stranger), "a pid outside the job's cgroups was killed");
	ck_assert(mem_was_killed(left));
	ck_assert(mem_was_killed(jobs));
	signal(SIGCHLD, SIG_DFL); /* tree_remove waits for its rm */
	tree_remove();
}
END_TEST

/* 3.6 for real: a process in a real cgroup of the plugin's is killed and
 * the cgroup removed, on this machine's v1 cpuset hierarchy (by pidfd)
 * and on its v2 one (cgroup.kill on 5.14+, else pidfds). */
static void real_teardown(const char *root, bool v1)
{
	char node[64], path[256], dir[512], text[512], log[4096];
	struct lwk_cgroup cg;
	struct lwk_node_roots real;
	pid_t pid;

	snprintf(node, sizeof(node), "lwkmemtest%d", (int)getpid());
	snprintf(path, sizeof(path), "/slurm-lwk/%s/job_42/app", node);
	node_tree();
	real = roots;
	real.cgroup_root = root;
	real.proc = "/proc";
	real.node = node;
	if (v1) {
		char lvl[256];

		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s/job_42", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, "/slurm-lwk", err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, lvl, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s/job_42", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, lvl, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, path, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
	} else {
		/* Plain directories: no controller needed to hold and kill. */
		snprintf(dir, sizeof(dir), "%s/slurm-lwk", root);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/slurm-lwk/%s", root, node);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/slurm-lwk/%s/job_42", root, node);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s%s", root, path);
		ck_assert_int_eq(mkdir(dir, 0755), 0);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, path, err, sizeof(err)), 0);
	}
	pid = tree_sleeper();
	ck_assert_msg(lwk_cgroup_attach(&cg, pid, err, sizeof(err)) == 0, "%s", err);
	snprintf(text, sizeof(text),
		 "job 42\nbackend linux\npage_kb 2048\ncgroup /slurm-lwk/%s/job_42\ncgroup %s\n", node,
		 path);
	{
		char p[128];

		snprintf(p, sizeof(p), "state/%s/42", node);
		tree_mkdir(p);
		snprintf(p, sizeof(p), "state/%s/42/lwk.state", node);
		tree_put(p, text);
		chmod_tree(p, 0600);
		snprintf(p, sizeof(p), "state/%s/42/lwk.lock", node);
		tree_put(p, "");
	}
	signal(SIGCHLD, SIG_IGN);
	ck_assert_int_eq(lwk_part_teardown(&real, 42, log, sizeof(log)), 1);
	ck_assert_msg(mem_was_killed(pid), "the process in %s%s was not killed: %s", root, path, log);
	signal(SIGCHLD, SIG_DFL);
	snprintf(dir, sizeof(dir), "%s%s%s", root, v1 ? "/cpuset" : "", path);
	ck_assert_msg(access(dir, F_OK) != 0, "%s is still there: %s", dir, log);
	signal(SIGCHLD, SIG_DFL); /* tree_remove waits for rm */
	tree_remove();
}

START_TEST(the_teardown_kills_in_a_real_v1_cgroup)
{
	if (lwk_cgroup_detect("/sys/fs/cgroup") != LWK_CGROUP_V1) {
		printf("SKIP: the_teardown_kills_in_a_real_v1_cgroup: /sys/fs/cgroup is not v1 here "
		       "(check_kpath covers v2 on the guests)\n");
		return;
	}
	real_teardown("/sys/fs/cgroup", true);
}
END_TEST

START_TEST(the_teardown_kills_in_a_real_v2_cgroup)
{
	const char *root = lwk_cgroup_detect("/sys/fs/cgroup") == LWK_CGROUP_V2 ? "/sys/fs/cgroup"
			   : lwk_cgroup_detect("/sys/fs/cgroup/unified") == LWK_CGROUP_V2
				   ? "/sys/fs/cgroup/unified"
				   : NULL;

	if (!root) {
		printf("SKIP: the_teardown_kills_in_a_real_v2_cgroup: no cgroup v2 hierarchy here\n");
		return;
	}
	real_teardown(root, false);
}
END_TEST

/* The guest8 node's NUMA nodes as sysfs shows them: CPUs and memory. */
static void mem_nodes(unsigned long long free0_mb, unsigned long long free1_mb)
{
	char text[256];

	tree_put("sys/devices/system/node/node0/cpulist", "0-3\n");
	tree_put("sys/devices/system/node/node1/cpulist", "4-7\n");
	snprintf(text, sizeof(text), "Node 0 MemTotal:        4194304 kB\nNode 0 MemFree:   %llu kB\n"
		 "Node 0 MemUsed:   1 kB\n", free0_mb * 1024);
	tree_put("sys/devices/system/node/node0/meminfo", text);
	snprintf(text, sizeof(text), "Node 1 MemTotal:        4194304 kB\nNode 1 MemFree:   %llu kB\n",
		 free1_mb * 1024);
	tree_put("sys/devices/system/node/node1/meminfo", text);
}

/* 3.7: os=2,mem=40M puts 14M of hugepages on node 0, where the OS cores
 * are, and 28M on node 1.  Node 0 keeps 256M free for the system: with
 * 260M free the request is refused with the numbers, before anything
 * is done; with 300M it fits. */
START_TEST(mem_keeps_a_floor_free_on_the_os_node)
{
	struct lwk_part p;
	char log[4096];

	node_tree();
	mem_nodes(260, 4000);
	ck_assert_int_eq(setup("os=2,mem=40M", &p), -1);
	ck_assert_msg(strstr(err, "mem= asks 14M of hugepages on NUMA node 0, where the OS runs: it "
				  "has 260M free and keeps 256M of it for the system, so 4M is available; "
				  "ask for less memory (mem=)"), "%s", err);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7\n");
	ck_assert_int_eq(hugepages(0), 10);
	ck_assert_int_eq(hugepages(1), 10);
	/* An App-only node gives what it has free, no floor. */
	mem_nodes(4000, 20);
	ck_assert_int_eq(setup("os=2,mem=40M", &p), -1);
	ck_assert_msg(strstr(err, "mem= asks 28M of hugepages on NUMA node 1, which has 20M free"),
		      "%s", err);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	ck_assert_int_eq(hugepages(0), 10);
	mem_nodes(300, 28);
	ck_assert_msg(setup("os=2,mem=40M", &p) == 1, "%s", err);
	ck_assert_int_eq(hugepages(0), 17);
	ck_assert_int_eq(hugepages(1), 24);
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_int_eq(hugepages(0), 10);
	tree_remove();
}
END_TEST

#define JOBMEM "cg/s.slice/n1.scope/job_42/memory.max"

/* 3.7: mem= hugepages are not counted by the job's memory cgroup: the
 * job's limit (Slurm's, 1G) is lowered by the 42M reserved, recorded
 * first, set again after Slurm rewrites it for a new step, and given
 * back at the teardown. */
START_TEST(mem_is_charged_to_the_jobs_memory_limit)
{
	const char *task = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	struct lwk_part p;
	char what[1024], log[4096];

	node_tree();
	tree_put(JOBMEM, "1073741824\n");
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert_msg(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(tree_get(JOBMEM), "1029701632");
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"),
				     "memcharge /s.slice/n1.scope/job_42 1073741824 1029701632\n"));
	ck_assert_msg(strstr(what, "mem= holds 42M outside the job's memory: its limit in "
				   "/s.slice/n1.scope/job_42 is 982M, not 1024M"), "%s", what);
	/* Another task: nothing more.  A new step: Slurm wrote its limit
	 * again, lowered again, recorded once. */
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(what, "");
	tree_put(JOBMEM, "1073741824\n");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "1029701632");
	ck_assert_ptr_null(strstr(strstr(tree_get("state/n1/42/lwk.state"), "memcharge") + 1,
				  "memcharge"));
	/* The state still reads as a finished partition. */
	ck_assert_int_eq(lwk_part_load(&roots, 42, &p), 1);
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(JOBMEM), "1073741824");
	ck_assert_int_eq(hugepages(1), 10);
	tree_remove();
}
END_TEST

/* Never below deleg_mem (the job's helpers need it); nothing where
 * Slurm limits no memory, or the task is in no cgroup of the job. */
START_TEST(mem_charge_keeps_deleg_mem_and_needs_a_limit)
{
	const char *task = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	struct lwk_part p;
	char what[1024], log[4096];

	node_tree();
	tree_put(JOBMEM, "157286400\n"); /* 150M */
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "134217728");
	ck_assert_ptr_nonnull(strstr(what, "(kept at deleg_mem"));
	tree_put(JOBMEM, "max\n");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "max\n");
	ck_assert_str_eq(what, "");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, "0::/user.slice/x\n", what, sizeof(what), err,
					 sizeof(err)), 0);
	ck_assert_str_eq(what, "");
	/* The job's limit is not ours to change any more: left alone. */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(JOBMEM), "max\n");
	tree_remove();
}
END_TEST

/* v1: the job's cgroup of the memory hierarchy (Slurm's layout there),
 * not the cpuset one, and its memory.limit_in_bytes. */
START_TEST(mem_charge_on_v1_uses_the_memory_hierarchy)
{
	const char *task = "7:cpuset:/slurm_n1/uid_0/job_42/step_0\n"
			   "4:memory:/slurm_n1/uid_0/job_42/step_0/task_0\n";
	const char *lim = "cg1/memory/slurm_n1/uid_0/job_42/memory.limit_in_bytes";
	struct lwk_part p;
	struct lwk_node_roots v1;
	char what[1024], log[4096], root[300];

	node_tree();
	tree_mkdir("cg1/cpuset/slurm_n1/uid_0/job_42");
	tree_mkdir("cg1/memory/slurm_n1/uid_0/job_42");
	tree_put("cg1/cpuset/cpuset.cpus", "0-7\n");
	tree_put(lim, "1073741824\n");
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	snprintf(root, sizeof(root), "%s/cg1", tree_root);
	v1 = roots;
	v1.cgroup_root = root;
	ck_assert_msg(lwk_part_charge(&v1, &p, task, what, sizeof(what), err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_str_eq(tree_get(lim), "1029701632");
	ck_assert_int_eq(lwk_part_teardown(&v1, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(lim), "1073741824");
	tree_remove();
}
END_TEST

static void lwkmem_tests(TCase *tc)
{
	tcase_add_test(tc, the_teardown_kills_no_pid_outside_the_cgroup);
	tcase_add_test(tc, the_teardown_kills_in_a_real_v1_cgroup);
	tcase_add_test(tc, the_teardown_kills_in_a_real_v2_cgroup);
	tcase_add_test(tc, mem_keeps_a_floor_free_on_the_os_node);
	tcase_add_test(tc, mem_is_charged_to_the_jobs_memory_limit);
	tcase_add_test(tc, mem_charge_keeps_deleg_mem_and_needs_a_limit);
	tcase_add_test(tc, mem_charge_on_v1_uses_the_memory_hierarchy);
}

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwkpart_suite(void)
{
	Suite *s = suite_create("lwkpart");
	TCase *tc = tcase_create("partition");

	tcase_add_test(tc, state_text_reads_back_the_same);
	tcase_add_test(tc, setup_once_teardown_gives_everything_back);
	tcase_add_test(tc, a_failed_setup_leaves_nothing);
	tcase_add_test(tc, a_setup_that_fails_half_way_undoes_what_it_did);
	tcase_add_test(tc, a_reservation_cut_short_gives_back_what_was_added);
	tcase_add_test(tc, a_teardown_that_fails_keeps_only_what_failed);
	tcase_add_test(tc, a_ready_partition_survives_a_damaged_line);
	tcase_add_test(tc, a_setup_cut_short_is_undone_then_redone);
	tcase_add_test(tc, the_sweep_tears_down_only_jobs_that_are_gone);
	tcase_add_test(tc, tasks_are_placed_in_slurms_step_cgroup_by_role);
	tcase_add_test(tc, mckernel_boot_command_line);
	tcase_add_test(tc, mckernel_tools_run_only_when_root_owns_them);
	tcase_add_test(tc, another_jobs_state_or_record_refuses_the_partition);
	tcase_add_test(tc, only_traces_of_other_jobs_count);
	tcase_add_test(tc, a_busy_job_cgroup_next_to_ours_refuses_the_partition);
	tcase_add_test(tc, placement_is_judged_before_the_tasks);
	tcase_add_test(tc, what_a_gone_job_left_is_swept_not_a_refusal);
	tcase_add_test(tc, what_a_gone_job_left_and_cannot_be_undone_is_a_node_problem);
	tcase_add_test(tc, a_cgroup_file_too_long_to_judge_refuses_as_a_node_problem);
	tcase_add_test(tc, casas_is_off_next_to_a_live_lwk_partition);
	lwkmem_tests(tc);
	suite_add_tcase(s, tc);
	return s;
}
