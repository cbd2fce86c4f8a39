/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node/procstat.c: /proc/<pid>/stat, the open-file table, the idle rule. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_lwk.h"
#include "node/procstat.h"

START_TEST(procstat_parses_hostile_comm)
{
	struct lwk_procstat st;
	const char *line = "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
			   "1234 567 0 0 20 0 3 0 987654 12345678 321 18446744073709551615\n";

	ck_assert_int_eq(lwk_procstat_parse(line, strlen(line), &st), 0);
	ck_assert_int_eq(st.pid, 4242);
	ck_assert_str_eq(st.comm, "a) b) (c");
	ck_assert_int_eq(st.state, 'S');
	ck_assert_int_eq(st.ppid, 1);
	ck_assert_uint_eq(st.utime, 1234);
	ck_assert_uint_eq(st.stime, 567);
	ck_assert_uint_eq(st.num_threads, 3);
	ck_assert_uint_eq(st.starttime, 987654);
	ck_assert_uint_eq(st.rss_pages, 321);
	ck_assert_int_eq(lwk_procstat_parse("12 (x) S 1 2", 12, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("12 x S 1", 8, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("(x) S", 5, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("1 ) (x S 1 2 3", 14, &st), -1); /* found by libFuzzer */
	line = "99999999999999999999 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22";
	ck_assert_int_eq(lwk_procstat_parse(line, strlen(line), &st), -1);
}
END_TEST

START_TEST(proctab_keeps_files_open_and_forgets_the_dead)
{
	struct lwk_proctab *t = lwk_proctab_new("/proc", 8);
	struct lwk_procstat st;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lwk_proctab_read(t, getpid(), &st), 0);
	ck_assert_int_eq(st.pid, getpid());
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), 0);
	ck_assert_int_eq(st.ppid, getpid());
	ck_assert_uint_eq(lwk_proctab_count(t), 2);
	/* Re-reading uses the open file: still 2 entries. */
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), 0);
	ck_assert_uint_eq(lwk_proctab_count(t), 2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), -1);
	ck_assert_uint_eq(lwk_proctab_count(t), 1);
	/* Not seen since the last sweep: closed. */
	lwk_proctab_sweep(t);
	lwk_proctab_sweep(t);
	ck_assert_uint_eq(lwk_proctab_count(t), 0);
	/* Sized once: a full table refuses instead of growing. */
	for (int i = 0; i < 8; i++)
		lwk_proctab_read(t, getpid(), &st);
	ck_assert_int_eq(lwk_proctab_read(t, 999999999, &st), -1);
	lwk_proctab_free(t);
}
END_TEST

START_TEST(idle_skip_rule)
{
	/* 1% threshold: 5 ticks of CPU over 1000 ticks of life is idle. */
	ck_assert(lwk_procstat_skip(5, 0, 1000, 100, false));
	ck_assert(!lwk_procstat_skip(10, 0, 1000, 100, false));
	/* A new process appeared: everything is read. */
	ck_assert(!lwk_procstat_skip(0, 0, 1000, 100, true));
	/* Born this tick: read. */
	ck_assert(!lwk_procstat_skip(0, 1000, 1000, 100, false));
	/* Threshold 0 skips nothing. */
	ck_assert(!lwk_procstat_skip(0, 0, 1000, 0, false));
}
END_TEST

Suite *procstat_suite(void)
{
	Suite *s = suite_create("procstat");
	TCase *tc = tcase_create("procstat");

	tcase_add_test(tc, procstat_parses_hostile_comm);
	tcase_add_test(tc, proctab_keeps_files_open_and_forgets_the_dead);
	tcase_add_test(tc, idle_skip_rule);
	suite_add_tcase(s, tc);
	return s;
}
