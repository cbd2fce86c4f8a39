/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The probe (spank/casas/probe.c): a probe that never began, or whose
 * process is gone, gives the job's hold back. */
#include <sys/wait.h>

#include "node_tree.h"

START_TEST(a_probe_that_never_began_gives_the_hold_back)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	volatile int stop = 1;
	int lock;

	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(a.probing, 1);
	/* Another job probes; this job's step ends while it waits. */
	lock = take(".probe.lock");
	ck_assert_int_eq(lwk_casas_probe(&roots, 41, &stop, all_alive, logbuf, sizeof(logbuf), NULL),
			 0);
	close(lock);
	r = load(41);
	ck_assert_uint_eq(r.probing, 0);
	ck_assert_str_ne(r.status, "probing");
	ck_assert_str_eq(dies_of(41), "0-3");
	/* A probe killed with its slurmstepd (the process that holds the
	 * job is gone): the next re-plan gives the hold back. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	{
		pid_t child = fork();
		char extra[64];

		ck_assert_int_ge(child, 0);
		if (!child)
			_exit(0);
		waitpid(child, NULL, 0);
		r = load(42);
		ck_assert_uint_eq(r.probing, 1);
		snprintf(extra, sizeof(extra), "prober=%d:12345\n", (int)child);
		put_record(&r, extra);
	}
	/* A next step of the job finds it so and re-plans. */
	logbuf[0] = '\0';
	b = arriving(42);
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(b.probing, 0);
	r = load(42);
	ck_assert_uint_eq(r.probing, 0);
	ck_assert_str_ne(r.status, "probing");
	ck_assert_ptr_nonnull(strstr(logbuf, "job 42: its probe (process"));
	/* While its prober lives, the hold stands. */
	r = load(41);
	r.probing = 2;
	put_record(&r, "");
	{
		char extra[64];
		struct lwk_casas_record me = arriving(43);

		ck_assert_int_eq(lwk_casas_join(&roots, &me, all_alive, logbuf, sizeof(logbuf), err,
						sizeof(err)),
				 1);
		/* 43's prober is this process: put it on 41 too. */
		snprintf(extra, sizeof(extra), "prober=%u:%llu\n", me.prober_pid, me.prober_start);
		put_record(&r, extra);
	}
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(load(41).probing, 2);
	ck_assert_uint_eq(load(43).probing, 1);
	/* A live process with the pid but another start time (the pid was
	 * reused): that probe is gone. */
	{
		char extra[64];

		r = load(41);
		snprintf(extra, sizeof(extra), "prober=%u:%llu\n", r.prober_pid, r.prober_start - 1);
		put_record(&r, extra);
		ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
		ck_assert_uint_eq(load(41).probing, 0);
		ck_assert_uint_eq(load(43).probing, 1);
	}
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casas_probe_root_suite(void)
{
	Suite *s = suite_create("casas probe (root)");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, a_probe_that_never_began_gives_the_hold_back);
	suite_add_tcase(s, tc);
	return s;
}
