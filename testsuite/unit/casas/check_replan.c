/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The node's re-plan (spank/casas/replan.c) as jobs arrive, leave and
 * crash: dies move between them, decided from their curves and written
 * to each job's cgroup tree. */
#include <signal.h>
#include <sys/wait.h>

#include "node_tree.h"

static char rec_path[700];

static uint32_t gone_job;
static bool alive_but_one(uint32_t job)
{
	return job != gone_job;
}


/* A record as a probe would have left it: curve shape over 1..4 dies. */
static void put_probed(uint32_t job, const double *rel)
{
	struct lwk_casas_record r = load(job);
	char text[8192], p[300];

	r.probing = 0;
	r.curve.n = 4;
	for (int k = 1; k <= 4; k++)
		r.curve.ips[k] = rel[k - 1] * 1e9;
	lwk_casas_record_format(&r, text, sizeof(text));
	snprintf(p, sizeof(p), "state/n1/casas/%u", job);
	tree_put(p, text);
}

START_TEST(arrivals_departures_and_a_crash_move_dies_between_jobs)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), c = arriving(43), r;

	node_tree();
	/* The first job is held on one die for its probe, the node's first. */
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(a.status, "probing");
	ck_assert_str_eq(cpus_text(&a.dies), "0");
	assert_cgroup_matches(41);
	/* A second step of the same job finds the record. */
	r = arriving(41);
	ck_assert_int_eq(lwk_casas_join(&roots, &r, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 0);
	ck_assert_str_eq(cpus_text(&r.dies), "0");
	/* No counters: no curve, an equal split; alone, all four dies. */
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	ck_assert_str_eq(r.status, "equal");
	ck_assert_str_eq(cpus_text(&r.dies), "0-3");
	assert_cgroup_matches(41);
	/* A second job: held on one die, the first keeps the rest. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(lwk_cpuset_count(&b.dies), 1);
	ck_assert_uint_eq(ndies(41), 3);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(ndies(41), 2);
	ck_assert_uint_eq(ndies(42), 2);
	assert_cgroup_matches(41);
	assert_cgroup_matches(42);
	/* Curves decide: 41 scales, 42 does not. */
	{
		static const double scales[] = { 1, 2, 3, 4 }, flat[] = { 1, 1.01, 1.01, 1.01 };

		put_probed(41, scales);
		put_probed(42, flat);
	}
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	ck_assert_str_eq(r.status, "placed");
	ck_assert_uint_eq(lwk_cpuset_count(&r.dies), 3);
	ck_assert_uint_eq(ndies(42), 1);
	assert_cgroup_matches(41);
	assert_cgroup_matches(42);
	/* Job 42 leaves: 41 gets the node. */
	ck_assert_int_eq(lwk_casas_leave(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_eq(lwk_casas_load(&roots, 42, &r), 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	assert_cgroup_matches(41);
	/* Job 43 arrives, then its slurmstepd is killed: the next re-plan
	 * (here a sweep) drops it and 41 gets its die back. */
	ck_assert_int_eq(lwk_casas_join(&roots, &c, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(ndies(41), 3);
	gone_job = 43;
	/* 1: what it says is worth logging (the epilog logs it then). */
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, alive_but_one, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_eq(lwk_casas_load(&roots, 43, &r), 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	ck_assert_ptr_nonnull(strstr(logbuf, "job 43 is gone: its dies return to the others"));
	/* The record is for the job's user to read. */
	{
		struct stat st;

		snprintf(rec_path, sizeof(rec_path), "%s/n1/casas/41", state);
		ck_assert_int_eq(stat(rec_path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0644);
	}
	tree_remove();
}
END_TEST

/* A job whose CPUs cannot be narrowed to its share (a cgroup below its
 * own refuses the write) keeps no record of CPUs it was not written: it
 * is refused, its record keeps the CPUs last written, and the next
 * re-plan tries again. */
START_TEST(a_job_whose_cpus_cannot_be_narrowed_is_refused_not_recorded)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	pid_t task = tree_sleeper();
	int status = 0;
	char p[700], fake[300], text[600];
	FILE *f;

	alone_on_the_node(&a);
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.cpus), "0-7");
	/* A cgroup of Slurm's in job 41 whose CPUs cannot be written (the
	 * kernel refuses), and a task of job 41 in it. */
	snprintf(p, sizeof(p), "%s/" JOBCG "/step_0/user/task_0/cpuset.cpus", tree_root, 41);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink("/dev/null", p), 0); /* opened O_NOFOLLOW: refused */
	snprintf(p, sizeof(p), JOBCG "/step_0/user/task_0/cgroup.procs", 41);
	snprintf(text, sizeof(text), "%d\n", (int)task);
	tree_put(p, text);
	logbuf[0] = '\0';
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	r = load(41);
	ck_assert_str_eq(r.status, "refused");
	ck_assert_str_eq(cpus_text(&r.cpus), "0-7");
	ck_assert_msg(strstr(r.why, "its CPUs could not be narrowed"), "%s", r.why);
	ck_assert_msg(strstr(logbuf, "job 41: its CPUs cannot be narrowed to its share: "),
		      "%s", logbuf);
	/* Slurm's cgroups only: not its user's doing, nothing killed. */
	ck_assert_msg(!strstr(logbuf, "killed"), "%s", logbuf);
	ck_assert_int_eq(waitpid(task, &status, WNOHANG), 0);
	/* The other job got its die all the same. */
	ck_assert_uint_eq(ndies(42), 1);
	/* Now a cgroup its user made below its task's, which cannot be
	 * written, with the task in it (what /proc says, in a /proc of the
	 * test's with this process's own stat for the liveness checks). */
	snprintf(p, sizeof(p), "%s/" JOBCG "/step_0/user/task_0/cpuset.cpus", tree_root, 41);
	ck_assert_int_eq(unlink(p), 0);
	snprintf(p, sizeof(p), JOBCG "/step_0/user/task_0/cpuset.cpus", 41);
	tree_put(p, "0-7\n");
	snprintf(p, sizeof(p), "%s/" JOBCG "/step_0/user/task_0/mine/cpuset.cpus", tree_root, 41);
	tree_mkdir(p + strlen(tree_root) + 1);
	snprintf(p, sizeof(p), JOBCG "/step_0/user/task_0/mine/cgroup.procs", 41);
	tree_put(p, text);
	snprintf(p, sizeof(p), "proc/%d/task/%d", (int)task, (int)task);
	tree_mkdir(p);
	snprintf(p, sizeof(p), "proc/%d/task/%d/cgroup", (int)task, (int)task);
	snprintf(text, sizeof(text), "0::/s.slice/n1.scope/job_%u/step_0/user/task_0/mine\n", 41);
	tree_put(p, text);
	snprintf(p, sizeof(p), "proc/%d/status", (int)task);
	tree_put(p, "Name:\tsleep\nUid:\t1000\t1000\t1000\t1000\n");
	snprintf(p, sizeof(p), "proc/%d", (int)getpid());
	tree_mkdir(p);
	f = fopen("/proc/self/stat", "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
	fclose(f);
	snprintf(p, sizeof(p), "proc/%d/stat", (int)getpid());
	tree_put(p, text);
	snprintf(fake, sizeof(fake), "%s/proc", tree_root);
	roots.proc = fake;
	logbuf[0] = '\0';
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_str_eq(load(41).status, "refused");
	ck_assert_msg(strstr(logbuf, "job 41: its user's cgroups keep CPUs that are others': "
				     "its processes killed ("),
		      "%s", logbuf);
	ck_assert_int_eq(waitpid(task, &status, 0), task);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Its cgroup gone and the rest writable: the next re-plan narrows it. */
	snprintf(p, sizeof(p), "%s/" JOBCG "/step_0/user/task_0/mine", tree_root, 41);
	ck_assert_int_eq(system(strcat(strcpy(text, "rm -r "), p)), 0);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	roots.proc = "/proc";
	r = load(41);
	ck_assert_str_ne(r.status, "refused");
	ck_assert_uint_eq(ndies(41), 2);
	assert_cgroup_matches(41);
	assert_cgroup_matches(42);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casas_replan_root_suite(void)
{
	Suite *s = suite_create("casas replan (root)");
	TCase *tc = tcase_create("replan");

	tcase_add_test(tc, arrivals_departures_and_a_crash_move_dies_between_jobs);
	tcase_add_test(tc, a_job_whose_cpus_cannot_be_narrowed_is_refused_not_recorded);
	suite_add_tcase(s, tc);
	return s;
}
