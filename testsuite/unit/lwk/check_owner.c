/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whose node (lwk/owner.c): another job's trace refuses the partition,
 * what a gone job left is a node problem, and a --contention-aware job
 * sees a --lwk partition. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_lwk.h"
#include "casas/casasnode.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/options.h"
#include "common/topology.h"
#include "lwk_fixture.h"

/* ---- --lwk owns its node (issue 14, 2) ------------------------------- */

/* Job 42's setup while job `other` left `rel` (a file) on the node. */
static void refused_by(const char *rel, const char *content, const char *expect)
{
	struct lwk_part p;
	char what[400];

	node_tree();
	put(rel, content);
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_str_eq(what, expect);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_msg(strstr(err, "lwk: --lwk: n1 is not this job's alone: ") && strstr(err, expect),
		      "%s", err);
	/* Nothing done: IRQs as they were, no state of job 42. */
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-7\n");
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.lock"));
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}

START_TEST(another_jobs_state_or_record_refuses_the_partition)
{
	refused_by("state/n1/7/lwk.state", "job 7\nready\n", "job 7 has a --lwk partition there");
	refused_by("state/n1/8/syncmon.pid", "123\n", "job 8 has a --sync-monitor sampler there");
	refused_by("state/n1/9/other", "", "job 9 has slurm-lwk state there");
	refused_by("state/n1/casas/10", "job 10\n",
		   "job 10 shares it by dies under --contention-aware");
}
END_TEST

START_TEST(only_traces_of_other_jobs_count)
{
	struct lwk_part p;
	char what[400] = "";

	node_tree();
	/* A job waiting for the node lock (its setup's lock only), a casas
	 * record being written, the job's own record and state. */
	put("state/n1/7/lwk.lock", "");
	put("state/n1/casas/10.new", "");
	put("state/n1/casas/42", "job 42\n");
	put("state/n1/42/syncmon.pid", "1\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	ck_assert_int_eq(setup("os=2", &p), 1);
	/* The second job: refused while the first has its partition. */
	ck_assert_int_eq(lwk_node_other_job(&roots, 43, all_alive, what, sizeof(what)), 1);
	ck_assert_str_eq(what, "job 42 has a --lwk partition there");
	tree_remove();
}
END_TEST

/* Job 42's slurmstepd in a cgroup tree: v2 (one hierarchy) or v1
 * (each controller's, jobs under uid_<n>). */
START_TEST(a_busy_job_cgroup_next_to_ours_refuses_the_partition)
{
	char what[400];
	struct lwk_part p;

	node_tree();
	put("proc/self/cgroup", "0::/s.slice/n1.scope/job_42/step_0/slurm\n");
	put("cg/s.slice/n1.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	/* Slurm's own "system" cgroup and a job cgroup left empty are no
	 * job on the node. */
	put("cg/s.slice/n1.scope/system/cgroup.procs", "99\n");
	tree_mkdir("cg/s.slice/n1.scope/job_41/step_0/user/task_0");
	put("cg/s.slice/n1.scope/job_41/step_0/user/task_0/cgroup.procs", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	/* A task of job 43 in a leaf three levels down. */
	put("cg/s.slice/n1.scope/job_43/step_batch/user/task_0/cgroup.procs", "4343\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job 43 runs there (its cgroup ", 30) &&
			      strstr(what, "/cg/s.slice/n1.scope/job_43)"),
		      "%s", what);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_ptr_nonnull(strstr(err, "job 43 runs there"));
	tree_remove();

	/* Jobs named otherwise (Slurm 26.05: by SLUID): ours is the one we
	 * are in, a job is a cgroup with steps. */
	node_tree();
	put("proc/self/cgroup", "0::/s.slice/n1.scope/sXYZ42/step_0/slurm\n");
	put("cg/s.slice/n1.scope/sXYZ42/step_0/slurm/cgroup.procs", "100\n");
	put("cg/s.slice/n1.scope/sABC43/step_extern/cgroup.procs", "77\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job sABC43 runs there", 21), "%s", what);
	/* Named by the id its slurmstepd's title gives, users know jobs
	 * by it; a title that is not a slurmstepd's leaves the name. */
	put("cg/s.slice/n1.scope/sABC43/step_0/slurm/cgroup.procs", "4300\n");
	put("proc/4300/cmdline", "sleep\0002\000");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job sABC43 runs there", 21), "%s", what);
	put("proc/4300/cmdline", "slurmstepd: [43.0]\000");
	/* The same title on a user's process (the pid reused): not
	 * believed. */
	{
		char dir[600];

		snprintf(dir, sizeof(dir), "%s/proc/4300", tree_root);
		ck_assert_int_eq(chown(dir, 1000, 1000), 0);
		ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
		ck_assert_msg(!strncmp(what, "job sABC43 runs there", 21), "%s", what);
		ck_assert_int_eq(chown(dir, 0, 0), 0);
	}
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job 43 runs there (its cgroup ", 30) &&
			      strstr(what, "/cg/s.slice/n1.scope/sABC43)"),
		      "%s", what);
	tree_remove();

	/* v1: the freezer hierarchy (proctrack/cgroup), the other user's
	 * jobs under their uid_<n>; a hierarchy without the job is left
	 * alone. */
	node_tree();
	put("proc/self/cgroup", "12:cpuset:/\n"
				     "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
				     "1:name=systemd:/system.slice/slurmd.service\n");
	put("cg/freezer/slurm_n1/uid_0/job_42/step_batch/cgroup.procs", "100\n");
	put("cg/freezer/slurm_n1/uid_0/job_40/cgroup.procs", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 0);
	put("cg/freezer/slurm_n1/uid_1000/job_44/step_0/cgroup.procs", "4444\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(strstr(what, "job 44 runs there (its cgroup ") &&
			      strstr(what, "/cg/freezer/slurm_n1/uid_1000/job_44)"),
		      "%s", what);
	tree_remove();

	/* A hybrid host: the unified line is under <root>/unified. */
	node_tree();
	put("proc/self/cgroup", "0::/slurmstepd.scope/job_42/step_0/slurm\n");
	put("cg/unified/slurmstepd.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	put("cg/unified/slurmstepd.scope/job_45/step_0/user/cgroup.procs", "45\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 1);
	ck_assert_msg(!strncmp(what, "job 45 runs there", 17), "%s", what);
	tree_remove();
}
END_TEST

/* ---- traces of jobs that are gone (issue 14, review of ce83b42, 1) ----- */

START_TEST(what_a_gone_job_left_and_cannot_be_undone_is_a_node_problem)
{
	struct lwk_part p;
	char what[400];

	node_tree();
	/* Something of gone job 9 no sweep knows how to remove. */
	put("state/n1/9/other", "");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, only_42_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "job 9 is gone and left what could not be undone"), "%s", what);
	{
		struct lwk_topology *t = fixture_load("guest8");
		struct lwk_opts o = opts_of("os=2");
		struct lwk_cpuset all = cpus_of("0-7");

		ck_assert_int_eq(lwk_part_setup(&roots, 42, t, &all, &o, false, only_42_alive, lwk_sweep_gone, &p,
						err, sizeof(err)), -1);
		lwk_topology_free(t);
	}
	ck_assert_msg(strstr(err, "lwk: --lwk: node problem on n1: job 9 is gone") &&
			      !strstr(err, "not this job's alone"),
		      "%s", err);
	ck_assert_ptr_null(tree_get("state/n1/42/lwk.state"));
	tree_remove();
}
END_TEST

/* ---- what cannot be read whole is not passed over (review, 6) --------- */

START_TEST(a_cgroup_file_too_long_to_judge_refuses_as_a_node_problem)
{
	static char text[12000];
	char what[400];
	struct lwk_part p;
	size_t n;

	node_tree();
	/* A hierarchy line longer than the parser takes, before job 42's. */
	n = (size_t)snprintf(text, sizeof(text), "5:cpuset:/");
	memset(text + n, 'x', 5000);
	n += 5000;
	snprintf(text + n, sizeof(text) - n, "\n0::/s.slice/n1.scope/job_42/step_0/slurm\n");
	put("proc/self/cgroup", text);
	put("cg/s.slice/n1.scope/job_42/step_0/slurm/cgroup.procs", "100\n");
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "cannot judge whether another job runs there: a line of "), "%s",
		      what);
	ck_assert_int_eq(setup("os=2", &p), -1);
	ck_assert_msg(strstr(err, "lwk: --lwk: node problem on n1: cannot judge"), "%s", err);
	/* More than the reader takes at all. */
	memset(text, '\n', 10000);
	text[10000] = '\0';
	put("proc/self/cgroup", text);
	ck_assert_int_eq(lwk_node_other_job(&roots, 42, all_alive, what, sizeof(what)), 2);
	ck_assert_msg(strstr(what, "is longer than 8191 bytes"), "%s", what);
	tree_remove();
}
END_TEST

/* ---- a --contention-aware job arriving next to a --lwk one (review, 4) -- */

static struct lwk_casas_record casas_arriving(uint32_t job)
{
	struct lwk_casas_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.job = job;
	snprintf(rec.status, sizeof(rec.status), "probing");
	snprintf(rec.cgroup, sizeof(rec.cgroup), "/s.slice/n1.scope/job_%u", job);
	rec.allowed_cpus = cpus_of("0-7");
	rec.allowed_mems = cpus_of("0-1");
	return rec;
}

START_TEST(casas_is_off_next_to_a_live_lwk_partition)
{
	struct lwk_casas_record rec = casas_arriving(42);
	char log[4096];

	node_tree();
	put("state/n1/7/lwk.state", "job 7\nready\n");
	ck_assert_int_eq(lwk_casas_join(&roots, &rec, all_alive, log, sizeof(log), err, sizeof(err)),
			 1);
	ck_assert_str_eq(rec.status, "off");
	ck_assert_str_eq(rec.why, "job 7 has a --lwk partition on this node");
	tree_remove();
	/* Job 7 gone: its leftover is the sweep's business, not a refusal. */
	node_tree();
	put("state/n1/7/lwk.state", "job 7\nready\n");
	rec = casas_arriving(42);
	lwk_casas_join(&roots, &rec, only_42_alive, log, sizeof(log), err, sizeof(err));
	ck_assert_msg(!strstr(rec.why, "--lwk partition"), "%s: %s", rec.status, rec.why);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_owner_suite(void)
{
	Suite *s = suite_create("owner");
	TCase *tc = tcase_create("owner");

	tcase_add_test(tc, another_jobs_state_or_record_refuses_the_partition);
	tcase_add_test(tc, only_traces_of_other_jobs_count);
	tcase_add_test(tc, a_busy_job_cgroup_next_to_ours_refuses_the_partition);
	tcase_add_test(tc, what_a_gone_job_left_and_cannot_be_undone_is_a_node_problem);
	tcase_add_test(tc, a_cgroup_file_too_long_to_judge_refuses_as_a_node_problem);
	tcase_add_test(tc, casas_is_off_next_to_a_live_lwk_partition);
	suite_add_tcase(s, tc);
	return s;
}
