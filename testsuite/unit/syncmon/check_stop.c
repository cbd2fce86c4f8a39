/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncmon/stop.c: the sweep of state whose sampler is gone (and the
 * job cgroup's CPU time it is tested with). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_lwk.h"
#include "node/procfs.h"
#include "syncmon/control.h"

START_TEST(cgroup_cpu_stat_and_sweep)
{
	uint64_t us = 0;
	char tmpl[] = "/tmp/lwk-sweep.XXXXXX", path[512];
	char *root = mkdtemp(tmpl);
	int fd;

	ck_assert_int_eq(lwk_parse_cpu_stat("usage_usec 123456\nuser_usec 1\n", &us), 0);
	ck_assert_uint_eq(us, 123456);
	ck_assert_int_eq(lwk_parse_cpu_stat("xusage_usec 5\n", &us), -1);
	ck_assert_int_eq(lwk_cgroup_cpu_us("/nonexistent", &us), -1);

	/* Two jobs' state: one whose sampler (the lock holder) is gone, one
	 * whose lock is held.  The sweep removes only the first. */
	ck_assert_ptr_nonnull(root);
	chmod(root, 0755);
	for (int job = 1; job <= 2; job++) {
		snprintf(path, sizeof(path), "%s/n1", root);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/n1/%d", root, job);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/n1/%d/syncmon.lock", root, job);
		fd = open(path, O_CREAT | O_RDWR, 0600);
		ck_assert_int_ge(fd, 0);
		if (job == 2)
			ck_assert_int_eq(flock(fd, LOCK_EX), 0); /* kept open: held */
		else
			close(fd);
	}
	ck_assert_int_eq(lwk_syncmon_sweep(root, "n1"), 1);
	snprintf(path, sizeof(path), "%s/n1/1", root);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/n1/2/syncmon.lock", root);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

/* A stop that finds the lock taken (a new start, after the sampler it
 * looked for was gone) leaves that start's files: removing its lock
 * file would let a third start take another and run a second sampler. */
START_TEST(a_stop_leaves_the_files_of_a_start_holding_the_lock)
{
	char tmpl[] = "/tmp/lwk-stop.XXXXXX", path[512];
	char *root = mkdtemp(tmpl);
	int fd;

	ck_assert_ptr_nonnull(root);
	snprintf(path, sizeof(path), "%s/n1", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/n1/7", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/n1/7/syncmon.log", root);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	snprintf(path, sizeof(path), "%s/n1/7/syncmon.lock", root);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	ck_assert_int_eq(lwk_syncmon_stop(root, "n1", 7, 0, NULL, 0), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/n1/7/syncmon.log", root);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* Released: the next stop removes them. */
	close(fd);
	ck_assert_int_eq(lwk_syncmon_stop(root, "n1", 7, 0, NULL, 0), 0);
	snprintf(path, sizeof(path), "%s/n1/7", root);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

Suite *stop_suite(void)
{
	Suite *s = suite_create("stop");
	TCase *tc = tcase_create("stop");

	tcase_add_test(tc, cgroup_cpu_stat_and_sweep);
	tcase_add_test(tc, a_stop_leaves_the_files_of_a_start_holding_the_lock);
	suite_add_tcase(s, tc);
	return s;
}
