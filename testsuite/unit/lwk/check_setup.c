/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition's setup (lwk/setup.c): done once, refused or undone
 * when it cannot be done whole, redone after one cut short. */
#include <stdio.h>
#include <string.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/options.h"
#include "common/topology.h"
#include "lwk_fixture.h"

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
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "irq 1 0-5 0-3\n"));
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "ready\n"));
	tree_remove();
}
END_TEST

/* ---- traces of jobs that are gone (issue 14, review of ce83b42, 1) ----- */

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

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_setup_suite(void)
{
	Suite *s = suite_create("setup");
	TCase *tc = tcase_create("setup");

	tcase_add_test(tc, setup_once_teardown_gives_everything_back);
	tcase_add_test(tc, a_failed_setup_leaves_nothing);
	tcase_add_test(tc, a_setup_that_fails_half_way_undoes_what_it_did);
	tcase_add_test(tc, a_setup_cut_short_is_undone_then_redone);
	tcase_add_test(tc, what_a_gone_job_left_is_swept_not_a_refusal);
	tcase_add_test(tc, mem_keeps_a_floor_free_on_the_os_node);
	suite_add_tcase(s, tc);
	return s;
}
