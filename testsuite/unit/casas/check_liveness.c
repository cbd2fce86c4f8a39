/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What is gone (spank/casas/liveness.c): a job's liveness is asked
 * before the node lock, and gone jobs' dies go to the others. */
#include "node_tree.h"

static uint32_t gone_job;

/* An alive() that notes whether the node lock was held when it was
 * asked (a second open file of the lock cannot take it then): it may
 * wait on slurmctld for seconds, and everything on the node waits for
 * that lock. */
static int asked_under_lock, asked;
static bool alive_lock_free(uint32_t job)
{
	char p[400];
	int fd;

	asked++;
	snprintf(p, sizeof(p), "%s/.node.lock", state);
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		if (flock(fd, LOCK_EX | LOCK_NB))
			asked_under_lock++;
		close(fd);
	}
	return job != gone_job;
}

START_TEST(job_liveness_is_asked_without_the_node_lock)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), c = arriving(43);
	volatile int stop = 1;

	node_tree();
	gone_job = 0;
	asked = asked_under_lock = 0;
	ck_assert_int_eq(lwk_casas_join(&roots, &a, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_join(&roots, &b, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, alive_lock_free, logbuf, sizeof(logbuf)), 0);
	ck_assert_int_eq(lwk_casas_probe(&roots, 42, &stop, alive_lock_free, logbuf, sizeof(logbuf),
					 NULL),
			 0);
	ck_assert_int_eq(lwk_casas_join(&roots, &c, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	/* Gone jobs are still dropped, and their dies go to the others
	 * (1: said in the log). */
	gone_job = 42;
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, alive_lock_free, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_eq(lwk_casas_load(&roots, 42, &b), 0);
	ck_assert_int_eq(lwk_casas_leave(&roots, 43, alive_lock_free, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_gt(asked, 0);
	ck_assert_int_eq(asked_under_lock, 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	gone_job = 0;
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casas_liveness_root_suite(void)
{
	Suite *s = suite_create("casas liveness (root)");
	TCase *tc = tcase_create("liveness");

	tcase_add_test(tc, job_liveness_is_asked_without_the_node_lock);
	suite_add_tcase(s, tc);
	return s;
}
