/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The teardown and the sweep (lwk/teardown.c): what the state records
 * given back, what could not be kept for the next. */
#include <stdio.h>
#include <string.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/options.h"
#include "common/topology.h"
#include "lwk_fixture.h"

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

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_teardown_suite(void)
{
	Suite *s = suite_create("teardown");
	TCase *tc = tcase_create("teardown");

	tcase_add_test(tc, a_reservation_cut_short_gives_back_what_was_added);
	tcase_add_test(tc, a_teardown_that_fails_keeps_only_what_failed);
	tcase_add_test(tc, the_sweep_tears_down_only_jobs_that_are_gone);
	suite_add_tcase(s, tc);
	return s;
}
