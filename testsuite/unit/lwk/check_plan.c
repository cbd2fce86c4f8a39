/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk plan over every topology fixture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_lwk.h"
#include "lwk/plan.h"
#include "common/options.h"
#include "common/topology.h"

static char err[1024];
static const char *const machines[] = { "opteron6172", "xeon2s-ht", "epyc7702", "vm2", "guest8",
					NULL };

static void assert_set(const struct lwk_cpuset *s, const char *expect)
{
	char buf[1024];

	lwk_cpulist_format(s, buf, sizeof(buf));
	ck_assert_str_eq(buf, expect);
}

/* The first n cores of the machine, all their threads. */
static struct lwk_cpuset first_cores(const struct lwk_topology *t, unsigned int n)
{
	struct lwk_cpuset s;

	lwk_cpuset_zero(&s);
	for (unsigned int i = 0; i < n && i < t->ncores; i++)
		lwk_cpuset_or(&s, &t->cores[i].cpus);
	return s;
}

START_TEST(os_cores_come_first_from_the_lowest_numa_node)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=1");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0");
	assert_set(&p.app_cpus, "1-7");
	assert_set(&p.app_nodes, "0-1");
	ck_assert_uint_eq(p.os_cores, 1);
	ck_assert_uint_eq(p.app_cores, 7);
	/* A job with cores on node 1 only: its OS core is there. */
	job = cpus_of("4-7");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "4");
	assert_set(&p.app_cpus, "5-7");
	assert_set(&p.app_nodes, "1");
	lwk_topology_free(t);
}
END_TEST

START_TEST(whole_dies_round_os_cores_up)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=1");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, true, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0-1");
	assert_set(&p.app_cpus, "2-7");
	o = opts_of("os=3");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, true, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0-3");
	assert_set(&p.app_cpus, "4-7");
	lwk_topology_free(t);
}
END_TEST

START_TEST(numa_list_keeps_the_partition_on_its_nodes)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=1,numa=1");
	struct lwk_plan p;
	char map[256];

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	/* Node 0's cores are Linux's: the OS core and the rest of node 0. */
	assert_set(&p.os_cpus, "0-3");
	assert_set(&p.app_cpus, "4-7");
	assert_set(&p.app_nodes, "1");
	ck_assert_int_eq(lwk_plan_ikc_map(t, &p, map, sizeof(map)), 0);
	ck_assert_str_eq(map, "4-7:0");
	/* Asked for a node the job has no core on, or that does not exist. */
	job = cpus_of("0-3");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "numa=1: the job has no core on that NUMA node here"));
	o = opts_of("numa=5");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "numa=5: this node has no such NUMA node"));
	lwk_topology_free(t);
}
END_TEST

START_TEST(impossible_requests_say_what_to_change)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-1");
	struct lwk_opts o = opts_of("os=2");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "os=2 leaves no App core: the job has 2 core(s)"));
	o = opts_of("os=1");
	/* Rounded up to the whole die, one OS core takes both. */
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, true, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "rounded up to whole dies leaves no App core"));
	/* Node 1 has 460M free of 512M: 2G over two nodes does not fit. */
	job = cpus_of("0-7");
	o = opts_of("os=1,mem=2G");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "ask for less memory (mem=)"));
	lwk_topology_free(t);
}
END_TEST

START_TEST(memory_follows_the_app_cores_in_whole_hugepages)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=1,mem=700M,hugepage=2M");
	struct lwk_plan p;
	char arg[128];

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	/* 3 App cores on node 0, 4 on node 1: 300M and 400M. */
	ck_assert_uint_eq(p.node_mem[0], 300ULL << 20);
	ck_assert_uint_eq(p.node_mem[1], 400ULL << 20);
	ck_assert_uint_eq(p.page_kb, 2048);
	ck_assert_int_eq(lwk_plan_mem_arg(&p, arg, sizeof(arg)), 0);
	ck_assert_str_eq(arg, "300M@0,400M@1");
	/* Shares are rounded up to whole pages, never down. */
	o = opts_of("os=1,mem=701M,hugepage=2M");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.node_mem[0] % (2 << 20), 0);
	ck_assert_uint_eq(p.node_mem[1] % (2 << 20), 0);
	ck_assert_uint_ge(p.node_mem[0] + p.node_mem[1], 701ULL << 20);
	lwk_topology_free(t);
}
END_TEST

START_TEST(hyperthreads_stay_with_their_core)
{
	struct lwk_topology *t = fixture_load("xeon2s-ht");
	struct lwk_cpuset job = first_cores(t, 4), one_thread;
	struct lwk_opts o = opts_of("os=1");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	ck_assert(lwk_cpuset_equal(&p.os_cpus, &t->cores[0].cpus));
	ck_assert_uint_eq(lwk_cpuset_count(&p.os_cpus), 2);
	ck_assert_uint_eq(lwk_cpuset_count(&p.app_cpus), 6);
	/* Half a core is not the job's core: it is used for nothing. */
	lwk_cpuset_zero(&one_thread);
	lwk_cpuset_set(&one_thread, (unsigned)lwk_cpuset_first(&t->cores[4].cpus));
	lwk_cpuset_or(&job, &one_thread);
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.app_cores, 3);
	lwk_topology_free(t);
}
END_TEST

START_TEST(delegation_quota_is_a_share_of_one_core)
{
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=2,deleg_cpu=150%,deleg_mem=256M");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.deleg_quota_us, 150000);
	ck_assert_uint_eq(p.deleg_period_us, 100000);
	ck_assert_uint_eq(p.deleg_mem, 256ULL << 20);
	o = opts_of("os=1");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.deleg_quota_us, 100000); /* the default: one core */
	lwk_topology_free(t);
}
END_TEST

/* guest8 (NUMA node 0: CPUs 0-3, node 1: 4-7; dies of 2 CPUs) booted
 * with nohz_full= and isolcpus= lists ("" for none). */
static struct lwk_topology *guest8_booted(const char *nohz_full, const char *isolated)
{
	struct lwk_topology *t = fixture_load("guest8");

	t->nohz_full = cpus_of(nohz_full);
	t->isolated = cpus_of(isolated);
	return t;
}

/* The plan of job on t with --lwk=arg: its OS CPUs, and App ones. */
static void assert_plan(const struct lwk_topology *t, const char *job_cpus, const char *arg,
			bool whole_dies, const char *os, const char *app)
{
	struct lwk_cpuset job = cpus_of(job_cpus);
	struct lwk_opts o = opts_of(arg);
	struct lwk_plan p;

	ck_assert_msg(lwk_plan_make(t, &job, &o, whole_dies, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(!strcmp(cpus_text(&p.os_cpus), os) && !strcmp(cpus_text(&p.app_cpus), app),
		      "%s%s: OS %s App %s, expected OS %s App %s", arg, whole_dies ? " whole dies" : "",
		      cpus_text(&p.os_cpus), cpus_text(&p.app_cpus), os, app);
}

START_TEST(app_cores_come_from_boot_isolated_cpus)
{
	struct lwk_topology *t = guest8_booted("4-7", "");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=2");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0-1");
	assert_set(&p.boot_isolated_app, "4-7");
	ck_assert_uint_eq(lwk_cpuset_count(&p.boot_isolated_os), 0);
	ck_assert_uint_eq(p.app_cpus_not_boot, 2);
	/* More OS cores than CPUs outside nohz_full=: the rest from it. */
	o = opts_of("os=5");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0-4");
	assert_set(&p.boot_isolated_app, "5-7");
	assert_set(&p.boot_isolated_os, "4");
	ck_assert_uint_eq(p.app_cpus_not_boot, 0);
	lwk_topology_free(t);
	/* Spread over both nodes: the CPUs outside it first, node 0 first
	 * among them. */
	t = guest8_booted("0,2,4,6", "");
	assert_plan(t, "0-7", "os=2", false, "1,3", "0,2,4-7");
	assert_plan(t, "0-7", "os=3", false, "1,3,5", "0,2,4,6-7");
	lwk_topology_free(t);
	/* isolcpus= counts as nohz_full= does, and so do both together. */
	t = guest8_booted("", "0-2");
	assert_plan(t, "0-7", "os=1", false, "3", "0-2,4-7");
	lwk_topology_free(t);
	t = guest8_booted("0-1", "2-4");
	assert_plan(t, "0-7", "os=2", false, "5-6", "0-4,7");
	lwk_topology_free(t);
}
END_TEST

/* Node 0 holds system memory, but the admin booted its CPUs with
 * nohz_full=: the OS cores go to node 1. */
START_TEST(boot_isolation_wins_over_the_numa_preference)
{
	struct lwk_topology *t = guest8_booted("0-3", "");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=1");
	struct lwk_plan p;

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "4");
	assert_set(&p.app_cpus, "0-3,5-7");
	assert_set(&p.app_nodes, "0-1");
	assert_set(&p.boot_isolated_app, "0-3");
	ck_assert_uint_eq(p.app_cpus_not_boot, 3);
	/* numa= still decides where the partition is: node 1's cores are
	 * the App cores, node 0's Linux's, nohz_full= or not; the OS core
	 * is one of node 0's, which Linux keeps anyway. */
	o = opts_of("os=1,numa=1");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	assert_set(&p.os_cpus, "0-3");
	assert_set(&p.app_cpus, "4-7");
	assert_set(&p.boot_isolated_os, "0-3");
	ck_assert_uint_eq(lwk_cpuset_count(&p.boot_isolated_app), 0);
	lwk_topology_free(t);
}
END_TEST

START_TEST(whole_dies_with_boot_isolation)
{
	struct lwk_topology *t = guest8_booted("0-1,4-7", "");

	/* The one die outside nohz_full=. */
	assert_plan(t, "0-7", "os=1", true, "2-3", "0-1,4-7");
	lwk_topology_free(t);
	/* A die with no boot-isolated CPU beats a lower one with some. */
	t = guest8_booted("1,4-7", "");
	assert_plan(t, "0-7", "os=1", true, "2-3", "0-1,4-7");
	assert_plan(t, "0-7", "os=3", true, "0-3", "4-7");
	lwk_topology_free(t);
	/* No die is free of it: a die with a CPU outside it, rounded up. */
	t = guest8_booted("0-1,3-7", "");
	assert_plan(t, "0-7", "os=1", true, "2-3", "0-1,4-7");
	lwk_topology_free(t);
	t = guest8_booted("1,3,5,7", "");
	assert_plan(t, "0-7", "os=1", true, "0-1", "2-7");
	lwk_topology_free(t);
	/* All of the node: whole dies from node 0 up, as without it. */
	t = guest8_booted("0-7", "");
	assert_plan(t, "0-7", "os=1", true, "0-1", "2-7");
	lwk_topology_free(t);
	/* Preferring dies without boot-isolated cores would take 6 OS
	 * cores for os=4 (found by the review): the NUMA rule's 4 stand. */
	t = guest8_booted("3", "");
	assert_plan(t, "0,2-4,7", "os=4", true, "0,2-4", "7");
	lwk_topology_free(t);
}
END_TEST

/* Boot isolation that does not tell the job's cores apart (none, all of
 * them, none of them) leaves the plan as the NUMA rule alone makes it;
 * where it does, OS cores take boot-isolated cores only when the others
 * run out (no whole dies, no numa=). */
START_TEST(boot_isolation_changes_only_the_order)
{
	srand(17);
	for (const char *const *m = machines; *m; m++) {
		struct lwk_topology *t = fixture_load(*m);

		for (int round = 0; round < 100; round++) {
			struct lwk_cpuset job, outside, boot;
			struct lwk_plan plain, booted;
			struct lwk_opts o;
			char arg[32];
			bool whole = rand() % 2;
			unsigned int free_cores = 0, boot_os_cores = 0;

			lwk_cpuset_zero(&job);
			lwk_cpuset_zero(&outside);
			lwk_cpuset_zero(&boot);
			for (unsigned int i = 0; i < t->ncores; i++) {
				int pick = rand() % 3;

				lwk_cpuset_or(pick ? &job : &outside, &t->cores[i].cpus);
				if (pick == 2)
					lwk_cpuset_or(&boot, &t->cores[i].cpus);
				free_cores += pick == 1;
			}
			snprintf(arg, sizeof(arg), "os=%u", 1 + (unsigned)rand() % 4);
			o = opts_of(arg);
			lwk_cpuset_zero(&t->nohz_full);
			lwk_cpuset_zero(&t->isolated);
			if (lwk_plan_make(t, &job, &o, whole, &plain, err, sizeof(err)))
				continue;
			for (int how = 0; how < 2; how++) {
				/* Outside the job, then all the node. */
				t->nohz_full = outside;
				if (how) {
					lwk_cpuset_or(&t->nohz_full, &job);
					t->isolated = job;
				}
				ck_assert_int_eq(lwk_plan_make(t, &job, &o, whole, &booted, err,
							       sizeof(err)), 0);
				ck_assert_msg(lwk_cpuset_equal(&plain.os_cpus, &booted.os_cpus) &&
						      lwk_cpuset_equal(&plain.app_cpus, &booted.app_cpus),
					      "%s %s: boot isolation %d moved cores", *m, arg, how);
			}
			if (whole)
				continue;
			t->nohz_full = boot;
			lwk_cpuset_zero(&t->isolated);
			ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &booted, err, sizeof(err)), 0);
			ck_assert_uint_eq(booted.os_cores, o.os_cores);
			for (unsigned int i = 0; i < t->ncores; i++) {
				struct lwk_cpuset c = t->cores[i].cpus;

				lwk_cpuset_and(&c, &booted.boot_isolated_os);
				boot_os_cores += lwk_cpuset_count(&c) > 0;
			}
			ck_assert_msg(boot_os_cores == (o.os_cores > free_cores ? o.os_cores - free_cores : 0),
				      "%s %s: %u boot-isolated OS cores, %u cores outside nohz_full", *m,
				      arg, boot_os_cores, free_cores);
			ck_assert_uint_eq(booted.app_cpus_not_boot + lwk_cpuset_count(&booted.boot_isolated_app),
					  lwk_cpuset_count(&booted.app_cpus));
		}
		lwk_topology_free(t);
	}
}
END_TEST

START_TEST(boot_note_says_what_became_of_boot_cpus)
{
	struct lwk_topology *t = guest8_booted("", "");
	struct lwk_cpuset job = cpus_of("0-7");
	struct lwk_opts o = opts_of("os=5");
	struct lwk_plan p;
	char note[512];

	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	lwk_plan_boot_note(&p, note, sizeof(note));
	ck_assert_str_eq(note, "");
	lwk_topology_free(t);
	t = guest8_booted("4-7", "");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	lwk_plan_boot_note(&p, note, sizeof(note));
	ck_assert_str_eq(note, ", boot-isolated (nohz_full/isolcpus) App CPUs 5-7, boot-isolated "
			       "CPUs 4 kept as OS cores: os=, numa= or whole dies needed them");
	o = opts_of("os=1");
	ck_assert_int_eq(lwk_plan_make(t, &job, &o, false, &p, err, sizeof(err)), 0);
	lwk_plan_boot_note(&p, note, sizeof(note));
	ck_assert_str_eq(note, ", boot-isolated (nohz_full/isolcpus) App CPUs 4-7 (3 App CPUs are not)");
	/* Cut short, still a string. */
	lwk_plan_boot_note(&p, note, 10);
	ck_assert_str_eq(note, ", boot-is");
	lwk_topology_free(t);
}
END_TEST

/* Over every fixture and many allocations: never a CPU outside the job,
 * OS and App disjoint, whole cores, App memory only on App nodes. */
START_TEST(never_outside_the_allocation_on_any_machine)
{
	srand(7);
	for (const char *const *m = machines; *m; m++) {
		struct lwk_topology *t = fixture_load(*m);

		for (int round = 0; round < 200; round++) {
			struct lwk_cpuset job, both, inside;
			struct lwk_plan p;
			struct lwk_opts o;
			char arg[64];
			unsigned int ncores = 0;

			lwk_cpuset_zero(&job);
			for (unsigned int i = 0; i < t->ncores; i++)
				if (rand() % 3) {
					lwk_cpuset_or(&job, &t->cores[i].cpus);
					ncores++;
				}
			snprintf(arg, sizeof(arg), "os=%u,mem=%dM", 1 + (unsigned)rand() % 4,
				 rand() % 3 ? 0 : 64);
			o = opts_of(arg);
			if (lwk_plan_make(t, &job, &o, rand() % 2, &p, err, sizeof(err))) {
				ck_assert_msg(strstr(err, "lwk: --lwk: ") == err, "%s: %s", *m, err);
				continue;
			}
			/* os + app inside the job, and disjoint. */
			both = p.os_cpus;
			lwk_cpuset_or(&both, &p.app_cpus);
			inside = both;
			lwk_cpuset_and(&inside, &job);
			ck_assert_msg(lwk_cpuset_equal(&inside, &both), "%s %s: a CPU outside the job",
				      *m, arg);
			ck_assert_uint_eq(lwk_cpuset_count(&both), lwk_cpuset_count(&p.os_cpus) +
									   lwk_cpuset_count(&p.app_cpus));
			ck_assert_uint_ge(p.os_cores, o.os_cores);
			ck_assert_uint_gt(p.app_cores, 0);
			ck_assert_uint_eq(p.os_cores + p.app_cores, ncores);
			for (int n = 0; n < LWK_MAX_NUMA; n++)
				if (p.node_mem[n])
					ck_assert(lwk_cpuset_isset(&p.app_nodes, (unsigned)n));
		}
		lwk_topology_free(t);
	}
}
END_TEST

Suite *lwk_plan_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");

	tcase_add_test(tc, os_cores_come_first_from_the_lowest_numa_node);
	tcase_add_test(tc, whole_dies_round_os_cores_up);
	tcase_add_test(tc, numa_list_keeps_the_partition_on_its_nodes);
	tcase_add_test(tc, impossible_requests_say_what_to_change);
	tcase_add_test(tc, memory_follows_the_app_cores_in_whole_hugepages);
	tcase_add_test(tc, hyperthreads_stay_with_their_core);
	tcase_add_test(tc, delegation_quota_is_a_share_of_one_core);
	tcase_add_test(tc, app_cores_come_from_boot_isolated_cpus);
	tcase_add_test(tc, boot_isolation_wins_over_the_numa_preference);
	tcase_add_test(tc, whole_dies_with_boot_isolation);
	tcase_add_test(tc, boot_isolation_changes_only_the_order);
	tcase_add_test(tc, boot_note_says_what_became_of_boot_cpus);
	tcase_add_test(tc, never_outside_the_allocation_on_any_machine);
	suite_add_tcase(s, tc);
	return s;
}
