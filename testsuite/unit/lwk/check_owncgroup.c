/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The teardown's kill in the plugin's own cgroups and Slurm's cgroup of
 * the job (lwk/owncgroup.c, lwk/teardown.c): whom it kills, for real. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "node/cgroup.h"
#include "lwk_fixture.h"

/* ---- lwkmem (issue 14, 3.6): the teardown's kill ---- */

/* Around the teardown, children are reaped by the kernel as they die
 * (SIGCHLD ignored): the teardown waits for a killed process to leave,
 * and a zombie would look like one still there. */
/* Gone (killed), or still alive (then killed). */
static bool mem_was_killed(pid_t pid)
{
	for (int i = 0; i < 50 && kill(pid, 0) == 0; i++)
		usleep(20 * 1000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		return false;
	}
	return true;
}

static void mem_state(uint32_t job, const char *text)
{
	char p[64];

	snprintf(p, sizeof(p), "state/n1/%u", job);
	tree_mkdir(p);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.state", job);
	tree_put(p, text);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.lock", job);
	tree_put(p, "");
	snprintf(p, sizeof(p), "state/n1/%u", job);
	chmod_tree(p, 0700);
	snprintf(p, sizeof(p), "state/n1/%u/lwk.state", job);
	chmod_tree(p, 0600);
}

/* 3.6: cgroup.procs listed a pid that has left the cgroup since (it
 * exited and the number now names a process of someone else's): the
 * teardown does not kill it; one still in the cgroup it does. */
START_TEST(the_teardown_kills_no_pid_outside_the_cgroup)
{
	pid_t stranger = tree_sleeper(), left = tree_sleeper(), jobs = tree_sleeper();
	char text[128], log[4096];

	node_tree();
	tree_mkdir("cg/slurm-lwk/n1/job_42/app");
	tree_mkdir("cg/s.slice/n1.scope/job_42/step_0/user/task_0");
	snprintf(text, sizeof(text), "%d\n%d\n", (int)stranger, (int)left);
	tree_put("cg/slurm-lwk/n1/job_42/app/cgroup.procs", text);
	snprintf(text, sizeof(text), "%d\n", (int)jobs);
	tree_put("cg/s.slice/n1.scope/job_42/step_0/user/task_0/cgroup.procs", text);
	tree_proc_cgroup(stranger, "0::/user.slice/user-1000.slice/session-3.scope\n");
	tree_proc_cgroup(left, "0::/slurm-lwk/n1/job_42/app\n");
	tree_proc_cgroup(jobs, "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n");
	/* Its name is the user's to choose: an escape sequence in it. */
	snprintf(text, sizeof(text), "proc/%d/stat", (int)jobs);
	tree_put(text, "1 (ev\033[2Jil) D 1 1 1 0 -1\n");
	mem_state(42, "job 42\nbackend linux\npage_kb 2048\ncgroup /slurm-lwk/n1/job_42\n"
		      "cgroup /slurm-lwk/n1/job_42/app\njobcg /s.slice/n1.scope/job_42\n");
	/* A tree of files cannot be removed: the teardown says so (-1);
	 * what matters here is whom it killed. */
	signal(SIGCHLD, SIG_IGN);
	lwk_part_teardown(&roots, 42, log, sizeof(log));
	ck_assert_msg(!mem_was_killed(stranger), "a pid outside the job's cgroups was killed");
	ck_assert(mem_was_killed(left));
	ck_assert(mem_was_killed(jobs));
	/* What is kept for another try is named in the log, with what
	 * holds it (found below the job's level), its name made printable. */
	snprintf(text, sizeof(text), "cannot remove /s.slice/n1.scope/job_42 yet: process %d (ev?[2Jil) in state D still in it",
		 (int)jobs);
	ck_assert_msg(strstr(log, text), "%s", log);
	signal(SIGCHLD, SIG_DFL); /* tree_remove waits for its rm */
	tree_remove();
}
END_TEST

/* 3.6 for real: a process in a real cgroup of the plugin's is killed and
 * the cgroup removed, on this machine's v1 cpuset hierarchy (by pidfd)
 * and on its v2 one (cgroup.kill on 5.14+, else pidfds). */
static void real_teardown(const char *root, bool v1)
{
	char node[64], path[256], dir[512], text[512], log[4096];
	struct lwk_cgroup cg;
	struct lwk_node_roots real;
	pid_t pid;

	snprintf(node, sizeof(node), "lwkmemtest%d", (int)getpid());
	snprintf(path, sizeof(path), "/slurm-lwk/%s/job_42/app", node);
	node_tree();
	real = roots;
	real.cgroup_root = root;
	real.proc = "/proc";
	real.node = node;
	if (v1) {
		char lvl[256];

		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s/job_42", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, "/slurm-lwk", err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, lvl, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		snprintf(lvl, sizeof(lvl), "/slurm-lwk/%s/job_42", node);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, lvl, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, path, err, sizeof(err)), 0);
		ck_assert_msg(lwk_cgroup_create(&cg, err, sizeof(err)) == 0, "%s", err);
	} else {
		/* Plain directories: no controller needed to hold and kill. */
		snprintf(dir, sizeof(dir), "%s/slurm-lwk", root);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/slurm-lwk/%s", root, node);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/slurm-lwk/%s/job_42", root, node);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s%s", root, path);
		ck_assert_int_eq(mkdir(dir, 0755), 0);
		ck_assert_int_eq(lwk_cgroup_init(&cg, root, path, err, sizeof(err)), 0);
	}
	pid = tree_sleeper();
	ck_assert_msg(lwk_cgroup_attach(&cg, pid, err, sizeof(err)) == 0, "%s", err);
	snprintf(text, sizeof(text),
		 "job 42\nbackend linux\npage_kb 2048\ncgroup /slurm-lwk/%s/job_42\ncgroup %s\n", node,
		 path);
	{
		char p[128];

		snprintf(p, sizeof(p), "state/%s/42", node);
		tree_mkdir(p);
		snprintf(p, sizeof(p), "state/%s/42/lwk.state", node);
		tree_put(p, text);
		chmod_tree(p, 0600);
		snprintf(p, sizeof(p), "state/%s/42/lwk.lock", node);
		tree_put(p, "");
	}
	signal(SIGCHLD, SIG_IGN);
	ck_assert_int_eq(lwk_part_teardown(&real, 42, log, sizeof(log)), 1);
	ck_assert_msg(mem_was_killed(pid), "the process in %s%s was not killed: %s", root, path, log);
	signal(SIGCHLD, SIG_DFL);
	snprintf(dir, sizeof(dir), "%s%s%s", root, v1 ? "/cpuset" : "", path);
	ck_assert_msg(access(dir, F_OK) != 0, "%s is still there: %s", dir, log);
	signal(SIGCHLD, SIG_DFL); /* tree_remove waits for rm */
	tree_remove();
}

START_TEST(the_teardown_kills_in_a_real_v1_cgroup)
{
	if (lwk_cgroup_detect("/sys/fs/cgroup") != LWK_CGROUP_V1) {
		printf("SKIP: the_teardown_kills_in_a_real_v1_cgroup: /sys/fs/cgroup is not v1 here "
		       "(check_kpath covers v2 on the guests)\n");
		return;
	}
	real_teardown("/sys/fs/cgroup", true);
}
END_TEST

START_TEST(the_teardown_kills_in_a_real_v2_cgroup)
{
	const char *root = lwk_cgroup_detect("/sys/fs/cgroup") == LWK_CGROUP_V2 ? "/sys/fs/cgroup"
			   : lwk_cgroup_detect("/sys/fs/cgroup/unified") == LWK_CGROUP_V2
				   ? "/sys/fs/cgroup/unified"
				   : NULL;

	if (!root) {
		printf("SKIP: the_teardown_kills_in_a_real_v2_cgroup: no cgroup v2 hierarchy here\n");
		return;
	}
	real_teardown(root, false);
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_owncgroup_suite(void)
{
	Suite *s = suite_create("owncgroup");
	TCase *tc = tcase_create("owncgroup");

	tcase_add_test(tc, the_teardown_kills_no_pid_outside_the_cgroup);
	tcase_add_test(tc, the_teardown_kills_in_a_real_v1_cgroup);
	tcase_add_test(tc, the_teardown_kills_in_a_real_v2_cgroup);
	suite_add_tcase(s, tc);
	return s;
}
