/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kill of a cgroup tree over temporary trees laid out like cgroupfs
 * and /proc: only the processes /proc still places in the tree are
 * signalled.  The kernel's own cgroup.kill is checked for real by
 * testsuite/kernel/check_kpath on the guests. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

/* What <proc>/<pid> says of a process: each thread's cgroup file (the
 * main thread's, and another thread's when other is set), its real uid
 * in status, its executable. */
static void proc_is(pid_t pid, const char *cgroup, const char *other, const char *exe, int uid)
{
	char rel[96], text[96];

	snprintf(rel, sizeof(rel), "proc/%d/task/%d", (int)pid, (int)pid);
	tree_mkdir(rel);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/cgroup", (int)pid, (int)pid);
	tree_put(rel, cgroup);
	if (other) {
		snprintf(rel, sizeof(rel), "proc/%d/task/%d", (int)pid, (int)pid + 100000);
		tree_mkdir(rel);
		snprintf(rel, sizeof(rel), "proc/%d/task/%d/cgroup", (int)pid, (int)pid + 100000);
		tree_put(rel, other);
	}
	snprintf(rel, sizeof(rel), "proc/%d/status", (int)pid);
	snprintf(text, sizeof(text), "Name:\tx\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid);
	tree_put(rel, text);
	snprintf(rel, sizeof(rel), "%s/proc/%d/exe", tree_root, (int)pid);
	ck_assert_int_eq(symlink(exe, rel), 0);
}

/* A job that keeps CPUs it was not given is stopped: its processes at
 * any depth below it, under names no path buffer holds, are killed, a
 * root one too (a job of root's), one named slurmstepd that is not
 * root's, one with only a thread left in the job, and one deeper than
 * the kernel prints a path (found in the tree's lists); slurmstepd
 * (root's, Debian's name too), a gone pid and another job's are not. */
START_TEST(kill_users_reaches_every_depth_and_spares_slurmstepd)
{
	pid_t deep = tree_sleeper(), stepd = tree_sleeper(), gone = tree_sleeper(),
	      other = tree_sleeper(), roots = tree_sleeper(), named = tree_sleeper(),
	      thread = tree_sleeper(), bottom = tree_sleeper(), hidden = tree_sleeper(),
	      untold = tree_sleeper();
	char rel[3000], text[3000], name[201], proc[300], chain[1000], *deepcg;
	struct lwk_cgroup cg = { .version = LWK_CGROUP_V1 };
	struct lwk_kill kl = { .deadline = lwk_cgroup_clock() + 30 };
	size_t len, clen;

	tree_make("killusers");
	memset(name, 'n', 200);
	name[200] = '\0';
	len = (size_t)snprintf(rel, sizeof(rel), "cg/cpuset/slurm/uid_1000/job_7/step_0");
	for (int i = 0; i < 10; i++)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/%s", name);
	tree_mkdir(rel);
	deepcg = strdup(rel + strlen("cg/cpuset"));
	/* The deep cgroup lists a gone pid and the process whose path the
	 * kernel cannot print. */
	snprintf(text, sizeof(text), "%d\n%d\n", (int)gone, (int)hidden);
	snprintf(rel + len, sizeof(rel) - len, "/cgroup.procs");
	tree_put(rel, text);
	tree_mkdir("cg/cpuset/slurm/uid_1000/job_8");
	/* 300 levels of one-letter names (a path the narrowing still takes). */
	clen = (size_t)snprintf(chain, sizeof(chain), "/slurm/uid_1000/job_7/step_0");
	for (int i = 0; i < 300; i++)
		clen += (size_t)snprintf(chain + clen, sizeof(chain) - clen, "/c");
	snprintf(text, sizeof(text), "4:memory:/x\n3:cpuset:%s\n", deepcg);
	proc_is(deep, text, NULL, "/usr/bin/sleep", 1000);
	proc_is(stepd, "3:cpuset:/slurm/uid_1000/job_7/step_0\n", NULL, "/usr/sbin/slurmstepd-wlm", 0);
	proc_is(roots, "3:cpuset:/slurm/uid_1000/job_7/step_0\n", NULL, "/usr/bin/sleep", 0);
	proc_is(named, "3:cpuset:/slurm/uid_1000/job_7/step_0\n", NULL, "/usr/sbin/slurmstepd", 1000);
	proc_is(thread, "3:cpuset:/slurm/uid_1000/job_8\n", "3:cpuset:/slurm/uid_1000/job_7\n",
		"/usr/bin/sleep", 1000);
	snprintf(text, sizeof(text), "3:cpuset:%s\n", chain);
	proc_is(bottom, text, NULL, "/usr/bin/sleep", 1000);
	proc_is(other, "3:cpuset:/slurm/uid_1000/job_8\n", NULL, "/usr/bin/sleep", 1000);
	/* In the job, its status unreadable (out of fds, reaped meanwhile):
	 * it could be slurmstepd, so it is not signalled, and the round
	 * says it is not whole. */
	proc_is(untold, "3:cpuset:/slurm/uid_1000/job_7/step_0\n", NULL, "/usr/sbin/slurmstepd-wlm", 0);
	snprintf(rel, sizeof(rel), "%s/proc/%d/status", tree_root, (int)untold);
	ck_assert_int_eq(unlink(rel), 0);
	/* Its thread's cgroup file cannot be opened: ENAMETOOLONG. */
	proc_is(hidden, "3:cpuset:/elsewhere\n", NULL, "/usr/bin/sleep", 1000);
	snprintf(rel, sizeof(rel), "%s/proc/%d/task/%d", tree_root, (int)hidden, (int)hidden);
	ck_assert_int_eq(system(strcat(strcpy(text, "rm -r "), rel)), 0);
	memset(text, 'a', 300);
	text[0] = '/';
	text[300] = '\0';
	ck_assert_int_eq(symlink(text, rel), 0);
	snprintf(cg.root, sizeof(cg.root), "%s/cg", tree_root);
	snprintf(cg.path, sizeof(cg.path), "/slurm/uid_1000/job_7");
	snprintf(proc, sizeof(proc), "%s/proc", tree_root);
	/* A round cut at once (its deadline gone) judges nothing and says
	 * it is not whole. */
	kl.deadline = lwk_cgroup_clock() - 1;
	ck_assert_int_eq(lwk_cgroup_kill_users(&cg, proc, &kl), 0);
	ck_assert(!kl.whole);
	ck_assert_int_eq(kl.signalled, 0);
	kl.deadline = lwk_cgroup_clock() + 30;
	ck_assert_int_eq(lwk_cgroup_kill_users(&cg, proc, &kl), 6);
	ck_assert_int_eq(kl.signalled, 6);
	ck_assert(!kl.whole);
	usleep(100 * 1000);
	ck_assert(was_killed(deep));
	ck_assert(was_killed(roots));
	ck_assert(was_killed(named));
	ck_assert(was_killed(thread));
	ck_assert(was_killed(bottom));
	ck_assert(was_killed(hidden));
	ck_assert(!was_killed(stepd));
	ck_assert(!was_killed(gone));
	ck_assert(!was_killed(other));
	/* Its status readable again (root's slurmstepd): spared, and the
	 * round whole. */
	{
		char st[96];

		snprintf(st, sizeof(st), "proc/%d/status", (int)untold);
		tree_put(st, "Name:\tx\nUid:\t0\t0\t0\t0\n");
	}
	kl.signalled = 0;
	lwk_cgroup_kill_users(&cg, proc, &kl);
	ck_assert(kl.whole);
	ck_assert(!was_killed(untold));
	/* A job already gone: nothing to kill, nothing unsure. */
	snprintf(cg.path, sizeof(cg.path), "/slurm/uid_1000/job_9");
	ck_assert_int_eq(lwk_cgroup_kill_users(&cg, proc, &kl), 0);
	ck_assert(kl.whole);
	free(deepcg);
	tree_remove();
}
END_TEST

/* Slurm's own names where Slurm puts them below a job (v1 and v2
 * layouts) are not foreign; a cgroup of any other name anywhere below,
 * however deep, is, and so is one of Slurm's names elsewhere. */
START_TEST(foreign_cgroups_are_told_from_slurms)
{
	struct lwk_cgroup cg = { .version = LWK_CGROUP_V2 };

	tree_make("foreign");
	tree_mkdir("cg/job_7/step_batch/user/task_0");
	tree_mkdir("cg/job_7/step_batch/slurm");
	tree_mkdir("cg/job_7/step_extern/user/task_special");
	tree_mkdir("cg/job_7/step_12/user/task_3");
	tree_mkdir("cg/job_8/step_0/task_0/.hidden");
	tree_mkdir("cg/job_9/step_0/step_x");
	/* Slurm's names in places Slurm does not put them. */
	tree_mkdir("cg/job_11/step_0/user/task_0/task_1");
	tree_mkdir("cg/job_12/step_1/step_2");
	tree_mkdir("cg/job_13/task_0");
	tree_mkdir("cg/job_14/step_3+1/user/task_0");
	snprintf(cg.root, sizeof(cg.root), "%s/cg", tree_root);
	snprintf(cg.path, sizeof(cg.path), "/job_7");
	ck_assert(!lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	snprintf(cg.path, sizeof(cg.path), "/job_8");
	ck_assert(lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	snprintf(cg.path, sizeof(cg.path), "/job_9");
	ck_assert(lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	snprintf(cg.path, sizeof(cg.path), "/job_14"); /* a heterogeneous job's step */
	ck_assert(!lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	for (int j = 11; j <= 13; j++) {
		snprintf(cg.path, sizeof(cg.path), "/job_%d", j);
		ck_assert_msg(lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30), "job_%d", j);
	}
	/* Gone: nothing below it. */
	snprintf(cg.path, sizeof(cg.path), "/job_10");
	ck_assert(!lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	/* v1: Slurm's steps, and below them its tasks (24.11.3 and later:
	 * root's files); any other name, anything deeper, a task_N whose
	 * files are the user's (they made it) or one a take-back marked is
	 * the user's. */
	cg.version = LWK_CGROUP_V1;
	tree_mkdir("cg/cpuset/job_15/step_0/task_0");
	tree_put("cg/cpuset/job_15/step_0/task_0/cgroup.procs", "");
	tree_mkdir("cg/cpuset/job_15/step_batch");
	tree_mkdir("cg/cpuset/job_16/step_0/mine");
	tree_mkdir("cg/cpuset/job_17/step_0/task_0/deeper");
	tree_mkdir("cg/cpuset/job_18/step_0/task_1");
	tree_put("cg/cpuset/job_18/step_0/task_1/cgroup.procs", "");
	tree_mkdir("cg/cpuset/job_19/step_0/task_2");
	tree_mkdir("cg/cpuset/job_20/step_0/user");
	{
		char p[600];

		snprintf(p, sizeof(p), "%s/cg/cpuset/job_18/step_0/task_1/cgroup.procs", tree_root);
		ck_assert_int_eq(chown(p, 1000, 1000), 0);
		snprintf(p, sizeof(p), "%s/cg/cpuset/job_19/step_0/task_2", tree_root);
		ck_assert_int_eq(chmod(p, 0700), 0);
	}
	snprintf(cg.path, sizeof(cg.path), "/job_15");
	ck_assert(!lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30));
	for (int j = 16; j <= 20; j++) {
		snprintf(cg.path, sizeof(cg.path), "/job_%d", j);
		ck_assert_msg(lwk_cgroup_foreign(&cg, lwk_cgroup_clock() + 30), "v1 job_%d", j);
	}
	/* A deadline gone before the look: half a second all the same. */
	snprintf(cg.path, sizeof(cg.path), "/job_15");
	ck_assert(!lwk_cgroup_foreign(&cg, lwk_cgroup_clock() - 10));
	tree_remove();
}
END_TEST

/* A v1 job tree its user owns (Slurm 22.05 gives them the step's
 * directories; cgroups they made below) is taken back: every directory
 * and file root's; a link in it is not followed, nothing outside is
 * touched. */
START_TEST(a_users_tree_is_taken_back)
{
	struct lwk_cgroup cg = { .version = LWK_CGROUP_V1 };
	const char *owned[] = { "cg/cpuset/slurm/uid_1000/job_7/step_0",
				"cg/cpuset/slurm/uid_1000/job_7/step_0/tasks",
				"cg/cpuset/slurm/uid_1000/job_7/step_0/mine",
				"cg/cpuset/slurm/uid_1000/job_7/step_0/mine/cpuset.cpus",
				"cg/cpuset/slurm/uid_1000/job_8/tasks", NULL };
	char p[600], outside[600], procs[600];
	struct lwk_take_back tb;
	struct stat st;

	tree_make("takeback");
	tree_mkdir("cg/cpuset/slurm/uid_1000/job_7/step_0/mine");
	tree_mkdir("cg/cpuset/slurm/uid_1000/job_8");
	tree_put("cg/cpuset/slurm/uid_1000/job_7/step_0/tasks", "");
	tree_put("cg/cpuset/slurm/uid_1000/job_7/step_0/mine/cpuset.cpus", "0-7\n");
	tree_put("cg/cpuset/slurm/uid_1000/job_8/tasks", "");
	for (int i = 0; owned[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", tree_root, owned[i]);
		ck_assert_int_eq(chown(p, 1000, 1000), 0);
	}
	/* Root's already, but writable by all (its owner chmod-ed it before
	 * losing it). */
	tree_put("cg/cpuset/slurm/uid_1000/job_7/step_0/cgroup.procs", "");
	snprintf(procs, sizeof(procs), "%s/cg/cpuset/slurm/uid_1000/job_7/step_0/cgroup.procs",
		 tree_root);
	ck_assert_int_eq(chmod(procs, 0666), 0);
	snprintf(outside, sizeof(outside), "%s/cg/cpuset/slurm/uid_1000/job_8/tasks", tree_root);
	snprintf(p, sizeof(p), "%s/cg/cpuset/slurm/uid_1000/job_7/step_0/link", tree_root);
	ck_assert_int_eq(symlink(outside, p), 0);
	snprintf(cg.root, sizeof(cg.root), "%s/cg", tree_root);
	snprintf(cg.path, sizeof(cg.path), "/slurm/uid_1000/job_7");
	ck_assert_int_eq(lwk_cgroup_take_back(&cg, "/proc", lwk_cgroup_clock() + 30, &tb), 5);
	ck_assert(tb.whole);
	ck_assert_int_eq(tb.changed, 5);
	/* mine is the user's (Slurm makes no cpuset below a step); a plain
	 * directory with files in it cannot be removed as a cgroup can
	 * (the real one is removed in a_users_cgroups_are_removed). */
	ck_assert_int_eq(tb.removed, 0);
	ck_assert_int_eq(tb.left, 1);
	ck_assert_int_eq(stat(procs, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", tree_root, owned[i]);
		ck_assert_int_eq(stat(p, &st), 0);
		ck_assert_msg(st.st_uid == 0 && st.st_gid == 0, "%s is %d:%d", owned[i], (int)st.st_uid,
			      (int)st.st_gid);
	}
	ck_assert_int_eq(stat(outside, &st), 0);
	ck_assert_int_eq(st.st_uid, 1000);
	/* Nothing left to take. */
	ck_assert_int_eq(lwk_cgroup_take_back(&cg, "/proc", lwk_cgroup_clock() + 30, &tb), 0);
	tree_remove();
}
END_TEST

/* Write text into a cgroup file; the errno of the write, 0 when it took. */
static int put(const char *dir, const char *file, const char *text)
{
	char p[600];
	int fd, e = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return errno;
	if (write(fd, text, strlen(text)) < 0)
		e = errno;
	close(fd);
	return e;
}

/* A v1 cpuset with its parent's CPUs and memory (v1 starts it empty):
 * the errno that stopped it, or 0. */
static int made_cpuset(const char *dir, const char *cpus, const char *mems)
{
	int e;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return errno;
	if ((e = put(dir, "cpuset.cpus", cpus)))
		return e;
	return put(dir, "cpuset.mems", mems);
}

static void cpuset_at(const char *dir, const char *cpus, const char *mems)
{
	int e = made_cpuset(dir, cpus, mems);

	ck_assert_msg(e == 0, "%s: %s", dir, strerror(e));
}

static int rm_dir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	return 0;
}

/* What a run of the test below that failed left in the host's v1
 * cpuset (its processes died with it: PR_SET_PDEATHSIG), removed. */
static void sweep_left(void)
{
	DIR *d = opendir("/sys/fs/cgroup/cpuset");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[300];

		const char *n = e->d_name + 10;

		/* Its test process's pid, gone. */
		if (strncmp(e->d_name, "lwk-check-", 10) || !lwk_cgroup_numbered(n, "") ||
		    atoi(n) <= 0 || kill((pid_t)atoi(n), 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "/sys/fs/cgroup/cpuset/%s", e->d_name);
		nftw(p, rm_dir, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (d)
		closedir(d);
}

static bool listed(const char *dir, pid_t pid)
{
	char p[600], line[32];
	bool found = false;
	FILE *f;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	if (!(f = fopen(p, "r")))
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strtol(line, NULL, 10) == pid;
	fclose(f);
	return found;
}

/* On a real cgroup v1 cpuset, laid out as Slurm lays out a job (the
 * step's directory its user's; a task's cpuset below it, as 24.11.3 and
 * later make): the user makes two cgroups below the step and a third
 * named as Slurm names a task's, moves a process of theirs into the
 * deeper and keeps their cpuset.cpus and cgroup.procs open.  The
 * take-back kills that process and removes the three, never Slurm's,
 * and the files the user kept open fail from then on; the user's
 * process outside them lives on. */
START_TEST(a_users_cgroups_are_removed_in_a_real_v1_cpuset)
{
	char top[200], job[300], step[400], mine[500], deeper[600], task[500], slurms[500];
	char cpus[64] = "", mems[64] = "";
	struct lwk_cgroup cg = { .version = LWK_CGROUP_V1 };
	struct lwk_take_back tb;
	int ready[2], go[2], told[2], res[3] = { -1, -1, -1 };
	struct stat st;
	pid_t user, inside = 0, test = getpid();
	FILE *f;

	if (geteuid() != 0 || lwk_cgroup_detect("/sys/fs/cgroup") != LWK_CGROUP_V1 ||
	    access("/sys/fs/cgroup/cpuset/cpuset.cpus", F_OK)) {
		printf("SKIP: a_users_cgroups_are_removed_in_a_real_v1_cpuset: needs root and a "
		       "cgroup v1 cpuset at /sys/fs/cgroup/cpuset\n");
		return;
	}
	f = fopen("/sys/fs/cgroup/cpuset/cpuset.cpus", "r");
	ck_assert(f && fgets(cpus, sizeof(cpus), f));
	fclose(f);
	f = fopen("/sys/fs/cgroup/cpuset/cpuset.mems", "r");
	ck_assert(f && fgets(mems, sizeof(mems), f));
	fclose(f);
	cpus[strcspn(cpus, "\n")] = mems[strcspn(mems, "\n")] = '\0';
	sweep_left();
	snprintf(top, sizeof(top), "/sys/fs/cgroup/cpuset/lwk-check-%d", (int)getpid());
	snprintf(job, sizeof(job), "%s/uid_65534/job_7", top);
	snprintf(step, sizeof(step), "%s/step_0", job);
	snprintf(mine, sizeof(mine), "%s/mine", step);
	snprintf(deeper, sizeof(deeper), "%s/deeper", mine);
	snprintf(task, sizeof(task), "%s/task_9", step);
	snprintf(slurms, sizeof(slurms), "%s/task_0", step);
	cpuset_at(top, cpus, mems);
	snprintf(deeper, sizeof(deeper), "%s/uid_65534", top);
	cpuset_at(deeper, cpus, mems);
	cpuset_at(job, cpus, mems);
	cpuset_at(step, cpus, mems);
	ck_assert_int_eq(chown(step, 65534, 65534), 0); /* as Slurm 22.05 does */
	/* A task's cpuset as Slurm makes it (24.11.3 and later; root's
	 * files), its directory given to the user as 22.05 gives a step's:
	 * Slurm's either way. */
	cpuset_at(slurms, cpus, mems);
	ck_assert_int_eq(chown(slurms, 65534, 65534), 0);
	snprintf(deeper, sizeof(deeper), "%s/deeper", mine);
	ck_assert(!pipe(ready) && !pipe(go) && !pipe(told));
	user = fork();
	ck_assert(user >= 0);
	if (user == 0) {
		char procs[700], own[24], c;
		int fcpus, fprocs, status = 0;
		pid_t self;

		close(go[1]);
		close(ready[0]);
		close(told[0]);
		/* Gone with the test, whatever stops it (set after the ids
		 * change, which clears it). */
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != test)
			_exit(1);
		if (made_cpuset(mine, cpus, mems) || made_cpuset(deeper, cpus, mems) ||
		    made_cpuset(task, cpus, mems)) /* task_9: named as Slurm names its own */
			_exit(4);
		snprintf(procs, sizeof(procs), "%s/cpuset.cpus", mine);
		fcpus = open(procs, O_WRONLY | O_CLOEXEC);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", mine);
		fprocs = open(procs, O_WRONLY | O_CLOEXEC);
		if (fcpus < 0 || fprocs < 0)
			_exit(2);
		self = getpid();
		if ((inside = fork()) == 0) {
			close(ready[1]);
			close(told[1]);
			close(go[0]);
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != self)
				_exit(1);
			pause();
			_exit(0);
		}
		snprintf(own, sizeof(own), "%d", (int)inside);
		if (put(deeper, "cgroup.procs", own))
			_exit(2);
		(void)!write(ready[1], &inside, sizeof(inside));
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		/* Through the files opened before: the CPUs, then itself in. */
		res[0] = write(fcpus, cpus, strlen(cpus)) < 0 ? errno : 0;
		snprintf(own, sizeof(own), "%d", (int)getpid());
		res[1] = write(fprocs, own, strlen(own)) < 0 ? errno : 0;
		res[2] = waitpid(inside, &status, WNOHANG) == inside && WIFSIGNALED(status) &&
			 WTERMSIG(status) == SIGKILL;
		(void)!write(told[1], res, sizeof(res));
		pause();
		_exit(0);
	}
	/* The child's ends only: a child gone early reads as end of file. */
	close(ready[1]);
	close(told[1]);
	close(go[0]);
	ck_assert_msg(read(ready[0], &inside, sizeof(inside)) == (ssize_t)sizeof(inside),
		      "the user's process stopped before it was ready");
	ck_assert(listed(deeper, inside));
	snprintf(cg.root, sizeof(cg.root), "/sys/fs/cgroup");
	snprintf(cg.path, sizeof(cg.path), "/lwk-check-%d/uid_65534/job_7", (int)getpid());
	lwk_cgroup_take_back(&cg, "/proc", lwk_cgroup_clock() + 30, &tb);
	ck_assert_int_eq(tb.removed, 3);
	ck_assert_int_eq(tb.left, 0);
	ck_assert_int_ge(tb.killed, 1); /* again while it exits */
	ck_assert(tb.whole);
	ck_assert_msg(access(mine, F_OK) != 0, "%s is still there", mine);
	ck_assert_msg(access(task, F_OK) != 0, "%s is still there", task);
	ck_assert_msg(access(slurms, F_OK) == 0, "Slurm's %s was removed", slurms);
	ck_assert_int_eq(stat(step, &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	ck_assert_int_eq(read(told[0], res, sizeof(res)), (ssize_t)sizeof(res));
	ck_assert_msg(res[0] != 0, "the CPUs were written through a file kept open");
	ck_assert_msg(res[1] != 0, "a process was moved in through a file kept open");
	ck_assert_msg(res[2] == 1, "the process in the user's cgroup was not killed");
	ck_assert_int_eq(kill(user, 0), 0);
	kill(user, SIGKILL);
	waitpid(user, NULL, 0);
	rmdir(deeper);
	rmdir(mine);
	rmdir(task);
	rmdir(slurms);
	rmdir(step);
	rmdir(job);
	snprintf(deeper, sizeof(deeper), "%s/uid_65534", top);
	rmdir(deeper);
	ck_assert_msg(rmdir(top) == 0, "%s: %s", top, strerror(errno));
}
END_TEST

Suite *cgroup_kill_suite(void)
{
	Suite *s = suite_create("cgroup_kill");
	TCase *tc = tcase_create("kill");

	tcase_add_test(tc, kill_tree_signals_only_processes_still_in_the_cgroup);
	tcase_add_test(tc, kill_tree_v1_reads_the_controllers_line);
	tcase_add_test(tc, kill_users_reaches_every_depth_and_spares_slurmstepd);
	tcase_add_test(tc, foreign_cgroups_are_told_from_slurms);
	tcase_add_test(tc, a_users_tree_is_taken_back);
	tcase_add_test(tc, a_users_cgroups_are_removed_in_a_real_v1_cpuset);
	suite_add_tcase(s, tc);
	return s;
}
