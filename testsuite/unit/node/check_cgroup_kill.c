/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kill of a cgroup tree over temporary trees laid out like cgroupfs
 * and /proc: only the processes /proc still places in the tree are
 * signalled.  The kernel's own cgroup.kill is checked for real by
 * testsuite/kernel/check_kpath on the guests. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/cgroup.h"
#include "check_lwk.h"

/* Whether a sleeper (check_tree.c) was killed. */
static bool was_killed(pid_t pid)
{
	int status = 0;

	if (waitpid(pid, &status, WNOHANG) != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return false;
	}
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* The teardown's kill: a pid that cgroup.procs listed but that is no
 * longer in the cgroup (exited, and the number reused by a process
 * elsewhere) is never signalled; one that is, in the tree, is. */
START_TEST(kill_tree_signals_only_processes_still_in_the_cgroup)
{
	pid_t other = tree_sleeper(), mine = tree_sleeper(), below = tree_sleeper();
	char p[300], text[300];

	tree_make("kill");
	tree_mkdir("cg/slurm-lwk/n1/job_42/app/task_0");
	snprintf(text, sizeof(text), "%d\n%d\n", (int)other, (int)mine);
	tree_put("cg/slurm-lwk/n1/job_42/app/cgroup.procs", text);
	snprintf(text, sizeof(text), "%d\n", (int)below);
	tree_put("cg/slurm-lwk/n1/job_42/app/task_0/cgroup.procs", text);
	/* What /proc says of each pid now. */
	tree_proc_cgroup(other, "0::/user.slice/user-1000.slice/session-3.scope\n");
	tree_proc_cgroup(mine, "0::/slurm-lwk/n1/job_42/app\n");
	tree_proc_cgroup(below, "0::/slurm-lwk/n1/job_42/app/task_0\n");
	snprintf(p, sizeof(p), "%s/cg", tree_root);
	snprintf(text, sizeof(text), "%s/proc", tree_root);
	ck_assert_int_eq(lwk_cgroup_kill_tree(p, NULL, "/slurm-lwk/n1/job_42/app", text), 2);
	usleep(100 * 1000);
	ck_assert(!was_killed(other));
	ck_assert(was_killed(mine));
	ck_assert(was_killed(below));
	tree_remove();
}
END_TEST

/* v1: the line of the hierarchy's own controller decides; a path that
 * only starts like the cgroup's (app2) is another cgroup. */
START_TEST(kill_tree_v1_reads_the_controllers_line)
{
	pid_t a = tree_sleeper(), b = tree_sleeper(), c = tree_sleeper();
	char p[300], text[64], proc[300];

	tree_make("kill1");
	tree_mkdir("cg/cpuset/slurm-lwk/n1/job_42/app");
	snprintf(text, sizeof(text), "%d\n%d\n%d\n", (int)a, (int)b, (int)c);
	tree_put("cg/cpuset/slurm-lwk/n1/job_42/app/cgroup.procs", text);
	tree_proc_cgroup(a, "5:memory:/slurm-lwk/n1/job_42/app\n3:cpuset:/other\n");
	tree_proc_cgroup(b, "6:cpu,cpuacct:/x\n3:cpuset:/slurm-lwk/n1/job_42/app\n0::/y\n");
	tree_proc_cgroup(c, "3:cpuset:/slurm-lwk/n1/job_42/app2\n");
	snprintf(p, sizeof(p), "%s/cg/cpuset", tree_root);
	snprintf(proc, sizeof(proc), "%s/proc", tree_root);
	ck_assert_int_eq(lwk_cgroup_kill_tree(p, "cpuset", "/slurm-lwk/n1/job_42/app", proc), 1);
	/* Never the hierarchy's root, never a path that climbs. */
	ck_assert_int_eq(lwk_cgroup_kill_tree(p, "cpuset", "/", proc), 0);
	ck_assert_int_eq(lwk_cgroup_kill_tree(p, "cpuset", "/slurm-lwk/../x", proc), 0);
	usleep(100 * 1000);
	ck_assert(!was_killed(a));
	ck_assert(was_killed(b));
	ck_assert(!was_killed(c));
	tree_remove();
}
END_TEST

Suite *cgroup_kill_suite(void)
{
	Suite *s = suite_create("cgroup_kill");
	TCase *tc = tcase_create("kill");

	tcase_add_test(tc, kill_tree_signals_only_processes_still_in_the_cgroup);
	tcase_add_test(tc, kill_tree_v1_reads_the_controllers_line);
	suite_add_tcase(s, tc);
	return s;
}
