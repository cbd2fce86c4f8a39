/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The probe (spank/casas/probe.c): a probe that never began, or whose
 * process is gone, gives the job's hold back; one fits the node's
 * budget; a job waits held no longer than its own probe would take. */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "casas/internal.h"
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

/* The node's budget cuts a probe's windows, then its points, and leaves
 * a short one as it is. */
START_TEST(a_probe_fits_the_node_budget)
{
	const uint64_t B = 120ULL * 1000000, S = 1000000;
	uint64_t w, total;

	/* probe=60s on 16 dies: 25 minutes asked; one point of 48 s. */
	ck_assert_uint_eq(lwk_casas_probe_plan(60 * S, 16, B, &w, &total), 1);
	ck_assert_uint_eq(w, 48 * S);
	ck_assert_uint_le(total, B);
	/* probe=10s: as many points of 10 s as fit (15 s each after 10). */
	ck_assert_uint_eq(lwk_casas_probe_plan(10 * S, 16, B, &w, &total), 7);
	ck_assert_uint_eq(w, 10 * S);
	ck_assert_uint_le(total, B);
	/* The default, 500 ms: every die, untouched. */
	ck_assert_uint_eq(lwk_casas_probe_plan(500000, 16, B, &w, &total), 16);
	ck_assert_uint_eq(w, 500000);
	ck_assert_uint_eq(total, 500000 + 16 * 750000);
	/* Nothing to probe: no point; windows of 10 ms settle 50 ms. */
	ck_assert_uint_eq(lwk_casas_probe_plan(500000, 0, B, &w, &total), 0);
	ck_assert_uint_eq(lwk_casas_probe_plan(10000, 2, B, &w, &total), 2);
	ck_assert_uint_eq(total, 10000 + 2 * 60000);
	/* The budget the plugin uses. */
	ck_assert_uint_eq(lwk_casas_probe_plan(60 * S, 1024, LWK_CASAS_PROBE_BUDGET_US, &w, &total), 1);
	ck_assert_uint_le(total, LWK_CASAS_PROBE_BUDGET_US);
}
END_TEST

/* A fresh node, and job a joined with probe=10ms (about 0.3 s of probe
 * on its 4 dies). */
static void joined_to_probe(struct lwk_casas_record *a)
{
	node_tree();
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, "event=task-clock,probe=10ms", &a->opts,
					  err, sizeof(err)),
			 0);
	ck_assert_int_eq(lwk_casas_join(&roots, a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
}

static volatile int waiter_stop;
static int waiter_rc = -7;

static void *waiter(void *arg)
{
	static char wlog[16384];

	(void)arg;
	waiter_rc = lwk_casas_probe(&roots, 41, &waiter_stop, all_alive, wlog, sizeof(wlog), NULL);
	return NULL;
}

/* Another job's probe outlasts this job's own (probe=10ms on 4 dies:
 * about 0.3 s): the job is let go from its one die while it waits, and
 * still probes once its turn comes. */
START_TEST(a_waiting_job_is_released_after_its_own_probe_time)
{
	struct lwk_casas_record a = arriving(41);
	struct timespec second = { 1, 0 };
	pthread_t th;
	int lock;

	joined_to_probe(&a);
	ck_assert_uint_eq(load(41).probing, 1);
	ck_assert_uint_eq(ndies(41), 1);
	lock = take(".probe.lock");
	waiter_stop = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, waiter, NULL), 0);
	nanosleep(&second, NULL);
	/* Still waiting for the lock, no longer held. */
	ck_assert_uint_eq(load(41).probing, 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	close(lock);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(waiter_rc, 0);
	/* Its turn came: it tried to count (the fake tree has no counter). */
	ck_assert_ptr_nonnull(strstr(load(41).counters, "none:"));
	ck_assert_uint_eq(load(41).probing, 0);
	tree_remove();
}
END_TEST

/* Probes run in the order their jobs came: a job that finds the probe
 * lock free still waits while one that came before it (an earlier
 * ticket, its prober alive) has not probed; once that one is done, it
 * probes, and gives its ticket back. */
START_TEST(probes_run_in_the_order_their_jobs_came)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	struct timespec half = { 0, 500 * 1000 * 1000 };
	char extra[96];
	pthread_t th;

	joined_to_probe(&a);
	/* Job 42 came first and waits for its probe (this process). */
	snprintf(extra, sizeof(extra), "prober=%d:%llu\nticket=1\n", (int)getpid(),
		 lwk_casas_proc_start("/proc", (unsigned int)getpid()));
	put_record(&b, extra);
	waiter_stop = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, waiter, NULL), 0);
	nanosleep(&half, NULL);
	r = load(41);
	ck_assert_uint_eq(r.ticket, 2);
	ck_assert_str_eq(r.counters, "");
	/* 42 probed: 41's turn. */
	r = load(42);
	r.ticket = 0;
	r.prober_pid = 0;
	put_record(&r, "");
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(waiter_rc, 0);
	r = load(41);
	ck_assert_ptr_nonnull(strstr(r.counters, "none:"));
	ck_assert_uint_eq(r.ticket, 0);
	tree_remove();
}
END_TEST

/* A job let go while it waits for its probe still holds memory moves
 * back (its probe is to come); once its process is gone, it no longer
 * does and the others' memory follows their dies. */
START_TEST(a_waiting_job_holds_memory_moves_until_its_process_is_gone)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	char extra[64];
	pid_t child;

	alone_on_the_node(&a);
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.mems), "0-1");
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	/* 42 waits for its turn: no hold, its prober (this process) kept. */
	r = load(42);
	r.probing = 0;
	put_record(&r, "");
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(ndies(41), 2);
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.mems), "0-1");
	ck_assert_uint_gt(r.mems_held, 0);
	/* Held back for longer than the most a job's memory waits: it
	 * follows its dies although 42 still waits. */
	r.mems_held = (unsigned long long)time(NULL) - LWK_CASAS_MEMS_HELD_MAX_S - 1;
	put_record(&r, "");
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	ck_assert_uint_eq(lwk_cpuset_count(&r.mems), 1);
	ck_assert_uint_eq(r.mems_held, 0);
	/* Back as it was for what follows: held again. */
	r.mems = cpus_of("0-1");
	put_record(&r, "");
	r = load(42);
	/* Its slurmstepd killed while it waited. */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child)
		_exit(0);
	waitpid(child, NULL, 0);
	snprintf(extra, sizeof(extra), "prober=%d:12345\n", (int)child);
	put_record(&r, extra);
	logbuf[0] = '\0';
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(load(42).prober_pid, 0);
	ck_assert_ptr_nonnull(strstr(logbuf, "job 42: its probe (process"));
	r = load(41);
	ck_assert_uint_eq(lwk_cpuset_count(&r.mems), 1);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casas_probe_root_suite(void)
{
	Suite *s = suite_create("casas probe (root)");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, a_probe_that_never_began_gives_the_hold_back);
	tcase_add_test(tc, a_probe_fits_the_node_budget);
	tcase_add_test(tc, a_waiting_job_is_released_after_its_own_probe_time);
	tcase_add_test(tc, probes_run_in_the_order_their_jobs_came);
	tcase_add_test(tc, a_waiting_job_holds_memory_moves_until_its_process_is_gone);
	suite_add_tcase(s, tc);
	return s;
}
