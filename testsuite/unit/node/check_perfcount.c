/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Perf counting: the scaling arithmetic, and a real software event on
 * this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "check_lwk.h"
#include "node/perfcount.h"

static char err[1024];

START_TEST(scaling_by_time_enabled_over_running)
{
	ck_assert_uint_eq(lwk_perf_scale(1000, 100, 100), 1000);
	ck_assert_uint_eq(lwk_perf_scale(1000, 100, 25), 4000);
	ck_assert_uint_eq(lwk_perf_scale(1000, 100, 0), 0);
	/* No overflow: 10^18 instructions over 3x multiplexing. */
	ck_assert_uint_eq(lwk_perf_scale(1000000000000000000ULL, 3000000000ULL, 1000000000ULL),
			  3000000000000000000ULL);
}
END_TEST

START_TEST(names_resolve_and_unknown_ones_are_refused)
{
	struct lwk_perf_event ev;

	ck_assert_int_eq(lwk_perf_resolve("task-clock", &ev, err, sizeof(err)), 0);
	ck_assert(ev.generic);
	ck_assert_int_eq(lwk_perf_resolve("instructions", &ev, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_perf_resolve("no_such_event_xyz", &ev, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no_such_event_xyz"));
	ck_assert_int_eq(lwk_perf_resolve("", &ev, err, sizeof(err)), -1);
}
END_TEST

/* Root opens the counters with the user's event: never kernel mode. */
START_TEST(a_hardware_event_counts_user_mode_only)
{
	struct lwk_perf_event ev;
	struct perf_event_attr a;

	ck_assert_int_eq(lwk_perf_resolve("instructions", &ev, err, sizeof(err)), 0);
	lwk_perf_attr(&ev, &a, true);
	ck_assert_uint_eq(a.exclude_kernel, 1);
	ck_assert_uint_eq(a.exclude_hv, 1);
	ck_assert_uint_eq(a.inherit, 1);
	/* A software event counts kernel events too: user mode only. */
	ck_assert_int_eq(lwk_perf_resolve("context-switches", &ev, err, sizeof(err)), 0);
	lwk_perf_attr(&ev, &a, false);
	ck_assert_uint_eq(a.exclude_kernel, 1);
	/* The clocks count time. */
	ck_assert_int_eq(lwk_perf_resolve("task-clock", &ev, err, sizeof(err)), 0);
	lwk_perf_attr(&ev, &a, false);
	ck_assert_uint_eq(a.exclude_kernel, 0);
	ck_assert_int_eq(lwk_perf_resolve("cpu-clock", &ev, err, sizeof(err)), 0);
	lwk_perf_attr(&ev, &a, false);
	ck_assert_uint_eq(a.exclude_kernel, 0);
}
END_TEST

static void spin_ms(int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/* task-clock counts ns of CPU: a child that spins 200 ms is counted
 * through inherit, in the counter opened on its parent. */
START_TEST(a_task_tree_is_counted_with_inherit)
{
	struct lwk_perf_event ev;
	struct lwk_perf_counter c;
	struct lwk_perf_reading r;
	pid_t kid;
	int status;

	ck_assert_int_eq(lwk_perf_resolve("task-clock", &ev, err, sizeof(err)), 0);
	/* Software events on one's own processes need no privilege below
	 * perf_event_paranoid 3 (Debian's default is 2). */
	ck_assert_msg(lwk_perf_open_task(&c, &ev, 0, true, err, sizeof(err)) == 0, "%s", err);
	kid = fork();
	if (kid == 0) {
		spin_ms(200);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert_int_eq(lwk_perf_read(&c, &r), 0);
	lwk_perf_close(&c);
	/* The parent mostly waited: most of the count is the child's. */
	ck_assert_msg(r.scaled >= 190000000ULL, "counted %llu ns", (unsigned long long)r.scaled);
	ck_assert_uint_ge(r.enabled, r.running);
}
END_TEST

Suite *perfcount_suite(void)
{
	Suite *s = suite_create("perfcount");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, scaling_by_time_enabled_over_running);
	tcase_add_test(tc, names_resolve_and_unknown_ones_are_refused);
	tcase_add_test(tc, a_hardware_event_counts_user_mode_only);
	tcase_add_test(tc, a_task_tree_is_counted_with_inherit);
	suite_add_tcase(s, tc);
	return s;
}
