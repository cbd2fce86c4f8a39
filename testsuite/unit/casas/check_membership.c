/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job on the node (spank/casas/membership.c): a step launching its
 * tasks, a job that is off, a reapply writing memory nodes. */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "node_tree.h"

/* What the cgroup file of job (below its cgroup) holds, as a cpulist. */
static const char *cg_cpus(uint32_t job, const char *below)
{
	struct lwk_cpuset have;
	char p[300];

	snprintf(p, sizeof(p), JOBCG "%s/cpuset.cpus", job, below);
	ck_assert_ptr_nonnull(tree_get(p));
	ck_assert_int_eq(lwk_cpulist_parse(tree_get(p), LWK_MAX_CPUS, &have), 0);
	return cpus_text(&have);
}

/* Slurm binds a step's tasks to its CPUs after forking them: while a
 * step starts them, the job's cgroups keep all of Slurm's CPUs, whatever
 * a re-plan decides meanwhile; its last task bound, the decision. */
START_TEST(a_step_starting_its_tasks_has_all_of_slurms_cpus)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42);

	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(cpus_text(&a.cpus), "0-1"); /* held on one die */
	ck_assert_int_eq(lwk_casas_launch(&roots, 41, "step_0", err, sizeof(err)), 0);
	ck_assert_str_eq(cg_cpus(41, ""), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-7");
	ck_assert_uint_eq(load(41).nlaunchers, 1);
	ck_assert_uint_eq(load(41).launchers[0].pid, (unsigned int)getpid());
	/* Another job arrives: the re-plan leaves the launch alone. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-7");
	ck_assert_uint_gt(ndies(41), 0);
	/* Its tasks are bound: the decision. */
	ck_assert_int_eq(lwk_casas_reapply(&roots, 41, err, sizeof(err)), 0);
	ck_assert_uint_eq(load(41).nlaunchers, 0);
	assert_cgroup_matches(41);
	/* A step that died while starting its tasks: the next re-plan
	 * narrows the job again. */
	{
		pid_t child = fork();

		ck_assert_int_ge(child, 0);
		if (!child)
			_exit(lwk_casas_launch(&roots, 42, "step_0", err, sizeof(err)) ? 1 : 0);
		ck_assert_int_eq(waitpid(child, NULL, 0), child);
	}
	ck_assert_str_eq(cg_cpus(42, "/step_0"), "0-7");
	ck_assert_uint_eq(load(42).nlaunchers, 1);
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(load(42).nlaunchers, 0);
	assert_cgroup_matches(42);
	ck_assert_str_ne(cg_cpus(42, "/step_0"), "0-7");
	tree_remove();
}
END_TEST

/* The node's tree, job 41 with a second step (step_1, all the CPUs)
 * beside step_0, and job a (41) joined. */
static void tree_with_a_second_step(struct lwk_casas_record *a)
{
	char p[300];

	node_tree();
	snprintf(p, sizeof(p), JOBCG "/step_1", 41);
	tree_mkdir(p);
	snprintf(p, sizeof(p), JOBCG "/step_1/cpuset.cpus", 41);
	tree_put(p, "0-7\n");
	snprintf(p, sizeof(p), JOBCG "/step_1/cpuset.mems", 41);
	tree_put(p, "0-1\n");
	ck_assert_int_eq(lwk_casas_join(&roots, a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
}

/* A second step launching next to a running one: the job level and the
 * new step get Slurm's CPUs, the running step keeps its dies, and a new
 * decision meanwhile reaches it. */
START_TEST(a_launch_widens_only_its_own_step)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42);

	tree_with_a_second_step(&a);
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-1"); /* held on one die */
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-7"); /* alone: the node */
	ck_assert_str_eq(cg_cpus(41, "/step_1"), "0-7");
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(ndies(41), 2);
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-3");
	ck_assert_int_eq(lwk_casas_launch(&roots, 41, "step_1", err, sizeof(err)), 0);
	ck_assert_str_eq(load(41).launchers[0].step, "step_1");
	ck_assert_str_eq(cg_cpus(41, ""), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_1"), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-3");
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-3");
	/* Job 42 leaves: the launching step stays wide, the running one
	 * gets the new decision (the whole node). */
	ck_assert_int_eq(lwk_casas_leave(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 1);
	ck_assert_uint_eq(ndies(41), 4);
	ck_assert_str_eq(cg_cpus(41, "/step_1"), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-7");
	/* A third arrives: the running step narrowed to the new decision. */
	{
		struct lwk_casas_record c = arriving(43), now;
		char want[64];

		ck_assert_int_eq(lwk_casas_join(&roots, &c, all_alive, logbuf, sizeof(logbuf), err,
						sizeof(err)),
				 1);
		now = load(41);
		snprintf(want, sizeof(want), "%s", cpus_text(&now.cpus));
		ck_assert_str_ne(want, "0-7");
		ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), want);
		ck_assert_str_eq(cg_cpus(41, "/step_1"), "0-7");
	}
	/* Its tasks are bound: every cgroup of the job the decision. */
	ck_assert_int_eq(lwk_casas_reapply(&roots, 41, err, sizeof(err)), 0);
	ck_assert_uint_eq(load(41).nlaunchers, 0);
	assert_cgroup_matches(41);
	{
		struct lwk_casas_record now = load(41);
		char want[64];

		snprintf(want, sizeof(want), "%s", cpus_text(&now.cpus));
		ck_assert_str_eq(cg_cpus(41, "/step_1"), want);
	}
	tree_remove();
}
END_TEST

/* Two steps launching at once (srun & srun &): each keeps its step wide
 * until its own tasks are bound, whichever finishes first; the job is
 * narrowed once both are. */
START_TEST(two_launches_at_once_each_keep_their_step_until_bound)
{
	struct lwk_casas_record a = arriving(41);
	int ready[2], go[2];
	pid_t child;
	char c = 0;

	tree_with_a_second_step(&a);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	{
		struct lwk_casas_record b = arriving(42);

		ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
						sizeof(err)),
				 1);
		ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	}
	ck_assert_uint_eq(ndies(41), 2);
	ck_assert_int_eq(lwk_casas_launch(&roots, 41, "step_1", err, sizeof(err)), 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		int rc = lwk_casas_launch(&roots, 41, "step_0", err, sizeof(err));

		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(rc || lwk_casas_reapply(&roots, 41, err, sizeof(err)) ? 1 : 0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_uint_eq(load(41).nlaunchers, 2);
	ck_assert_str_eq(cg_cpus(41, ""), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_1"), "0-7");
	/* This step's tasks are bound first: its step the decision, the
	 * other still wide. */
	ck_assert_int_eq(lwk_casas_reapply(&roots, 41, err, sizeof(err)), 0);
	ck_assert_uint_eq(load(41).nlaunchers, 1);
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-7");
	ck_assert_str_eq(cg_cpus(41, ""), "0-7");
	{
		struct lwk_casas_record now = load(41);
		char want[64];
		int status = -1;

		snprintf(want, sizeof(want), "%s", cpus_text(&now.cpus));
		ck_assert_str_eq(cg_cpus(41, "/step_1"), want);
		/* The other's are bound: the whole job the decision. */
		ck_assert_int_eq(write(go[1], "g", 1), 1);
		ck_assert_int_eq(waitpid(child, &status, 0), child);
		ck_assert_int_eq(status, 0);
		ck_assert_uint_eq(load(41).nlaunchers, 0);
		assert_cgroup_matches(41);
		ck_assert_str_eq(cg_cpus(41, "/step_1"), want);
	}
	tree_remove();
}
END_TEST

START_TEST(an_epilog_does_not_wait_for_the_others_memory)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	struct timespec tenth = { 0, 100000000 };
	int lock, status = -1, i;
	pid_t child;

	alone_on_the_node(&a);
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(ndies(41), 2);
	lock = take(".mems.lock");
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child)
		_exit(lwk_casas_leave_apart(&roots, 42, all_alive, logbuf, sizeof(logbuf)) == 1 ? 0 : 1);
	for (i = 0; i < 50 && waitpid(child, &status, WNOHANG) == 0; i++)
		nanosleep(&tenth, NULL);
	if (i == 50) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	ck_assert_msg(i < 50, "the leave waited for the memory lock");
	ck_assert_int_eq(status, 0);
	/* The CPUs are the job's at once; its memory once the lock is free. */
	ck_assert_str_eq(dies_of(41), "0-3");
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.mems), "0-1");
	close(lock);
	for (i = 0; i < 50; i++) {
		char p[300];

		/* The deepest level: the binder's last write. */
		snprintf(p, sizeof(p), JOBCG "/step_0/user/task_0/cpuset.mems", 41);
		if (!strcmp(tree_get(p), "0-1\n"))
			break;
		nanosleep(&tenth, NULL);
	}
	assert_cgroup_matches(41);
	tree_remove();
}
END_TEST

/* cgroup v1: Slurm makes the job's cpuset as its first step starts,
 * after the step joined: a decision for a cgroup not made yet is kept,
 * not a refusal (which would fail the job's steps). */
START_TEST(a_cgroup_not_made_yet_is_no_refusal)
{
	struct lwk_casas_record a = arriving(41), late = arriving(44);

	alone_on_the_node(&a);
	ck_assert_int_eq(lwk_casas_join(&roots, &late, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_ne(load(44).status, "refused");
	ck_assert_str_ne(load(41).status, "refused");
	ck_assert_uint_gt(ndies(44), 0);
	/* Its first step launches before Slurm made the cgroup: nothing to
	 * widen, no error (which would fail the step). */
	ck_assert_int_eq(lwk_casas_launch(&roots, 44, "step_batch", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_casas_reapply(&roots, 44, err, sizeof(err)), 0);
	tree_remove();
}
END_TEST

START_TEST(a_job_without_a_cgroup_is_off_and_never_touched)
{
	struct lwk_casas_record a = arriving(41), off = arriving(42), r;

	node_tree();
	snprintf(off.status, sizeof(off.status), "off");
	snprintf(off.why, sizeof(off.why), "no job cgroup");
	off.cgroup[0] = '\0';
	ck_assert_int_eq(lwk_casas_join(&roots, &off, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(off.status, "off");
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	/* The job that is off takes no die from the others. */
	ck_assert_str_eq(dies_of(41), "0-3");
	r = load(42);
	ck_assert_str_eq(r.status, "off");
	ck_assert_uint_eq(lwk_cpuset_count(&r.dies), 0);
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/cpuset.cpus"), "0-7\n");
	tree_remove();
}
END_TEST

struct reapplier {
	int rc;
	char e[512];
};

static void *reapply_41(void *arg)
{
	struct reapplier *ra = arg;

	ra->rc = lwk_casas_reapply(&roots, 41, ra->e, sizeof(ra->e));
	return NULL;
}

START_TEST(reapply_writes_memory_nodes_under_the_memory_lock)
{
	struct lwk_casas_record a = arriving(41), r;
	struct reapplier ra = { 0, "" };
	struct timespec ms300 = { 0, 300000000 };
	pthread_t t;
	int lock;

	alone_on_the_node(&a);
	r = load(41);
	r.mems = cpus_of("1");
	put_record(&r, "");
	/* A bind_memory of another thread is writing memory nodes. */
	lock = take(".mems.lock");
	ck_assert_int_eq(pthread_create(&t, NULL, reapply_41, &ra), 0);
	nanosleep(&ms300, NULL);
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_41/cpuset.mems"), "0-1\n");
	close(lock);
	pthread_join(t, NULL);
	ck_assert_msg(ra.rc == 0, "%s", ra.e);
	assert_cgroup_matches(41);
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.mems), "1");
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casas_membership_root_suite(void)
{
	Suite *s = suite_create("casas membership (root)");
	TCase *tc = tcase_create("membership");

	tcase_add_test(tc, a_step_starting_its_tasks_has_all_of_slurms_cpus);
	tcase_add_test(tc, a_launch_widens_only_its_own_step);
	tcase_add_test(tc, two_launches_at_once_each_keep_their_step_until_bound);
	tcase_add_test(tc, an_epilog_does_not_wait_for_the_others_memory);
	tcase_add_test(tc, a_cgroup_not_made_yet_is_no_refusal);
	tcase_add_test(tc, a_job_without_a_cgroup_is_off_and_never_touched);
	tcase_add_test(tc, reapply_writes_memory_nodes_under_the_memory_lock);
	suite_add_tcase(s, tc);
	return s;
}
