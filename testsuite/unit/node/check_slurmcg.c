/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_lwk.h"
#include "node/slurmcg.h"

static bool here(const char *rel)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	return access(p, F_OK) == 0;
}

/* A killed slurmstepd leaves its job's empty cgroups: the epilog removes
 * those of the job that ended, in every layout, and nothing else. */
START_TEST(a_killed_stepds_empty_job_cgroups_are_removed)
{
	char log[2048] = "", root[300];

	tree_make("slurmcg");
	/* v1, two controllers, two slurmd -N of one host; v2 scope. */
	tree_mkdir("cpuset/slurm_node1/uid_0/job_7/step_0/task_0");
	tree_mkdir("cpuset/slurm_node2/uid_1000/job_7/step_batch");
	tree_mkdir("memory/slurm/uid_0/job_7/step_extern");
	tree_mkdir("system.slice/node1_slurmstepd.scope/job_7/step_0/user/task_0");
	/* Not job 7's: another job, an id that only starts alike. */
	tree_mkdir("cpuset/slurm_node1/uid_0/job_8/step_0");
	tree_mkdir("cpuset/slurm_node1/uid_0/job_70/step_0");
	/* Job 9's cgroup still holds something (a file stands for a
	 * process: rmdir refuses both). */
	tree_mkdir("memory/slurm/uid_0/job_9/step_0");
	tree_put("memory/slurm/uid_0/job_9/step_0/busy", "1\n");
	snprintf(root, sizeof(root), "%s", tree_root);

	ck_assert_int_eq(lwk_slurm_job_cgroups_remove(root, 7, NULL, log, sizeof(log)), 4);
	ck_assert_str_eq(log, "");
	ck_assert(!here("cpuset/slurm_node1/uid_0/job_7/step_0/task_0"));
	ck_assert(!here("cpuset/slurm_node1/uid_0/job_7"));
	ck_assert(!here("cpuset/slurm_node2/uid_1000/job_7"));
	ck_assert(!here("memory/slurm/uid_0/job_7"));
	ck_assert(!here("system.slice/node1_slurmstepd.scope/job_7"));
	ck_assert(here("system.slice/node1_slurmstepd.scope"));
	ck_assert(here("cpuset/slurm_node1/uid_0/job_8/step_0"));
	ck_assert(here("cpuset/slurm_node1/uid_0/job_70/step_0"));

	ck_assert_int_eq(lwk_slurm_job_cgroups_remove(root, 9, NULL, log, sizeof(log)), 0);
	ck_assert_msg(strstr(log, "job_9") && strstr(log, "still holds processes"), "'%s'", log);
	ck_assert(tree_get("memory/slurm/uid_0/job_9/step_0/busy"));
	/* A job that left nothing: nothing to do, nothing said. */
	log[0] = '\0';
	ck_assert_int_eq(lwk_slurm_job_cgroups_remove(root, 11, NULL, log, sizeof(log)), 0);
	ck_assert_str_eq(log, "");
	tree_remove();
}
END_TEST

/* 26.05: the v2 job cgroup is named by the job's SLUID (the epilog has it
 * in SLURM_JOB_SLUID), and 25.11's CgroupSlice puts the scope in another
 * slice than system.slice.  Another job's SLUID is left alone. */
START_TEST(sluid_named_job_cgroups_are_removed)
{
	char log[2048] = "", root[300];

	tree_make("slurmcg");
	tree_mkdir("system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/user/task_0");
	tree_mkdir("system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_extern/slurm");
	tree_mkdir("system.slice/slurmstepd.scope/sEKNKTV3WPV501/step_0/user/task_0");
	tree_mkdir("slurm.slice/n1_slurmstepd.scope/job_7/step_batch/user/task_0");
	snprintf(root, sizeof(root), "%s", tree_root);

	ck_assert_int_eq(lwk_slurm_job_cgroups_remove(root, 7, "sEKNKTV3WPV500", log, sizeof(log)), 2);
	ck_assert_str_eq(log, "");
	ck_assert(!here("system.slice/slurmstepd.scope/sEKNKTV3WPV500"));
	ck_assert(!here("slurm.slice/n1_slurmstepd.scope/job_7"));
	ck_assert(here("system.slice/slurmstepd.scope/sEKNKTV3WPV501/step_0/user/task_0"));
	/* Without the SLUID (22.05 to 25.11): only job_<id>. */
	ck_assert_int_eq(lwk_slurm_job_cgroups_remove(root, 8, NULL, log, sizeof(log)), 0);
	ck_assert(here("system.slice/slurmstepd.scope/sEKNKTV3WPV501"));
	tree_remove();
}
END_TEST

Suite *slurmcg_suite(void)
{
	Suite *s = suite_create("slurmcg");
	TCase *tc = tcase_create("slurmcg");

	tcase_add_test(tc, a_killed_stepds_empty_job_cgroups_are_removed);
	tcase_add_test(tc, sluid_named_job_cgroups_are_removed);
	suite_add_tcase(s, tc);
	return s;
}
