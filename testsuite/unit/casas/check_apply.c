/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job's cgroup (spank/casas/apply.c): found in /proc/<pid>/cgroup. */
#include "casas/casasnode.h"
#include "check_lwk.h"

START_TEST(the_jobs_cgroup_is_found_in_proc_cgroup)
{
	char path[768];

	ck_assert_int_eq(lwk_casas_job_cgroup("0::/system.slice/n2_slurmstepd.scope/job_42/step_0/user/task_1\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/system.slice/n2_slurmstepd.scope/job_42");
	/* v1: the cpuset line, whatever else the hierarchy holds. */
	ck_assert_int_eq(lwk_casas_job_cgroup("12:memory:/slurm_n1/uid_0/job_42/step_batch\n"
					      "4:cpuset,cpu:/slurm_n1/uid_0/job_42/step_batch\n"
					      "0::/init.scope\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/slurm_n1/uid_0/job_42");
	/* Not another job's, not a prefix of one. */
	ck_assert_int_eq(lwk_casas_job_cgroup("0::/s/job_420/step_0\n", 42, path, sizeof(path)), -1);
	ck_assert_int_eq(lwk_casas_job_cgroup("0::/s/job_43/step_0\n", 42, path, sizeof(path)), -1);
	/* v1 before slurmstepd joined the cpuset hierarchy: the same path
	 * from another one. */
	ck_assert_int_eq(lwk_casas_job_cgroup("4:cpuset:/\n3:freezer:/slurm_n1/uid_0/job_42/step_0\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/slurm_n1/uid_0/job_42");
	ck_assert_int_eq(lwk_casas_job_cgroup("", 42, path, sizeof(path)), -1);
}
END_TEST

/* 26.05: the job level named by the job's SLUID (cgroup_p_step_create,
 * src/plugins/cgroup/v2/cgroup_v2.c, slurm-26-05-3-1). */
START_TEST(the_jobs_sluid_cgroup_is_found_in_proc_cgroup)
{
	char path[768];

	ck_assert_int_eq(lwk_casas_job_cgroup("0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_0/slurm\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/system.slice/slurmstepd.scope/sEKNKTV3WPV500");
	ck_assert_int_eq(lwk_casas_job_cgroup("0::/system.slice/slurmstepd.scope/system\n", 42, path,
					      sizeof(path)),
			 -1);
}
END_TEST

Suite *casas_apply_suite(void)
{
	Suite *s = suite_create("casas apply");
	TCase *tc = tcase_create("apply");

	tcase_add_test(tc, the_jobs_cgroup_is_found_in_proc_cgroup);
	tcase_add_test(tc, the_jobs_sluid_cgroup_is_found_in_proc_cgroup);
	suite_add_tcase(s, tc);
	return s;
}
