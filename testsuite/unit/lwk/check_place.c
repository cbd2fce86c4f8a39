/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tasks placed by role in Slurm's step cgroup, and placement judged
 * before the tasks (lwk/place.c). */
#include <string.h>
#include <unistd.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "lwk_fixture.h"

START_TEST(tasks_are_placed_in_slurms_step_cgroup_by_role)
{
	struct lwk_part p;
	char where[800];
	const char *app = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	const char *batch = "0::/s.slice/n1.scope/job_42/step_batch/user/task_0\n";

	node_tree();
	ck_assert_int_eq(setup("os=2,deleg_mem=64M,deleg_cpu=150", &p), 1);
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, app, 4242, where, sizeof(where),
					err, sizeof(err)),
			 0);
	ck_assert_str_eq(where, "/s.slice/n1.scope/job_42/step_0/user");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_0/user/cpuset.cpus"), "2-7");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_0/user/cpuset.mems"), "0-1");
	/* The job's cgroup is remembered (once) for the teardown. */
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "jobcg /s.slice/n1.scope/job_42\n"));
	/* Placement makes no partition: each task does, as it starts
	 * (check_isolate). */
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_0/user/cpuset.cpus.partition"), "");
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_DELEGATION, batch, 4243, where,
					sizeof(where), err, sizeof(err)),
			 0);
	ck_assert_str_eq(where, "/s.slice/n1.scope/job_42/step_batch/user");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/cpuset.cpus"), "0-1");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/memory.max"),
			 "67108864");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/step_batch/user/cpu.max"),
			 "150000 100000");
	/* Slurm's cgroup of the job but no step in it: refused, never a
	 * move out of Slurm's limits. */
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, "0::/s.slice/n1.scope/job_42\n",
					4244, where, sizeof(where), err,
					sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "ConstrainCores=yes"));
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, "", 4244, where, sizeof(where),
					err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read the cgroups of task 4244"));
	/* The job's cgroup cannot be removed in this tree (its knobs are
	 * plain files): kept in the state, alone, for the next teardown. */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, where, sizeof(where)), -1);
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "jobcg /s.slice/n1.scope/job_42\n"));
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "irq "));
	tree_remove();
}
END_TEST

/* 26.05: Slurm's job cgroup named by the job's SLUID, not job_<id>
 * (cgroup_p_step_create, src/plugins/cgroup/v2/cgroup_v2.c,
 * slurm-26-05-3-1): the tasks still go into Slurm's step cgroup, never
 * into the plugin's own; the job's cgroup is remembered for the
 * teardown, which takes it as the job's. */
START_TEST(tasks_are_placed_in_a_sluid_named_step_cgroup)
{
	struct lwk_part p;
	char where[800], log[4096];
	const char *app = "0::/s.slice/n1.scope/" LWK_FX_SLUID "/step_0/user/task_0\n";

	node_tree();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/s.slice/n1.scope/" LWK_FX_SLUID
						"/step_0/slurm\n", err, sizeof(err)),
			 0);
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, app, 4242, where, sizeof(where),
					err, sizeof(err)),
			 0);
	ck_assert_str_eq(where, "/s.slice/n1.scope/" LWK_FX_SLUID "/step_0/user");
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/" LWK_FX_SLUID "/step_0/user/cpuset.cpus"), "2-7");
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"),
				     "jobcg /s.slice/n1.scope/" LWK_FX_SLUID "\n"));
	/* The SLUID's cgroup but no step in it: refused. */
	ck_assert_int_eq(lwk_part_place(&roots, &p, LWK_ROLE_APP, "0::/s.slice/n1.scope/" LWK_FX_SLUID
					"/x\n", 4244, where, sizeof(where), err,
					sizeof(err)),
			 -1);
	/* The teardown takes the recorded cgroup as the job's (it cannot
	 * remove it in this tree: kept for the next one). */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), -1);
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"),
				     "jobcg /s.slice/n1.scope/" LWK_FX_SLUID "\n"));
	tree_remove();
}
END_TEST

/* ---- a placement the node cannot make, found before the tasks -------- */

START_TEST(placement_is_judged_before_the_tasks)
{
	node_tree();
	/* v2 (the tree's cgroup.controllers), slurmstepd in the step. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/s.slice/n1.scope/job_42/step_0/slurm\n",
					    err, sizeof(err)),
			 0);
	/* No Slurm cgroups: the plugin's own. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/user.slice\n", err, sizeof(err)), 0);
	tree_remove();

	/* v1 with proctrack/cgroup and ConstrainCores=no: Slurm's freezer
	 * and memory cgroups of the job, no cpuset one. */
	node_tree();
	ck_assert_int_eq(unlink(tree_path("cg/cgroup.controllers")), 0);
	tree_mkdir("cg/cpuset");
	put("cg/cpuset/cpuset.cpus", "0-7\n");
	ck_assert_int_eq(lwk_part_placeable(&roots, 42,
					    "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
					    "3:cpuset:/\n",
					    err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "lwk: --lwk: Slurm's cgroups of job 42 on n1 have no cpuset of the step "
			      "(cgroup.conf ConstrainCores=no?); --lwk needs ConstrainCores=yes there, "
			      "or no Slurm cgroups at all");
	/* With ConstrainCores=yes slurmstepd is in the step's cpuset too. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42,
					    "6:freezer:/slurm_n1/uid_0/job_42/step_batch\n"
					    "3:cpuset:/slurm_n1/uid_0/job_42/step_batch\n",
					    err, sizeof(err)),
			 0);
	tree_remove();

	/* No cgroup hierarchy at the configured root. */
	tree_make("nocg");
	roots.cgroup_root = tree_root;
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, NULL, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "lwk: --lwk: no cgroup v2 or v1 cpuset hierarchy under "));
	tree_remove();
}
END_TEST

/* cgroup v2 whose tree was not given the cpuset controller (a slurmd
 * unit without Delegate=yes, a container's cgroup without it): the
 * step is refused naming the delegation, before any task. */
START_TEST(a_tree_without_cpuset_is_refused_naming_delegation)
{
	node_tree();
	put("cg/s.slice/n1.scope/job_42/step_0/cgroup.controllers", "cpu memory pids\n");
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/s.slice/n1.scope/job_42/step_0/slurm\n",
					    err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "lwk: --lwk: the cpuset controller is not delegated to "));
	ck_assert_ptr_nonnull(strstr(err, "/cg/s.slice/n1.scope/job_42/step_0 (its cgroup.controllers: "
					  "'cpu memory pids') on n1, so the job cannot have CPUs of "
					  "its own; Slurm's cgroups need the cpuset controller delegated"));
	/* The batch step of the same job still has it. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42,
					    "0::/s.slice/n1.scope/job_42/step_batch/slurm\n", err,
					    sizeof(err)),
			 0);
	/* No Slurm cgroups: the plugin's own tree, made from the root. */
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/user.slice\n", err, sizeof(err)), 0);
	put("cg/cgroup.controllers", "memory\n");
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/user.slice\n", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/cg (its cgroup.controllers: 'memory') on n1"));
	/* "cpusetx" is not cpuset. */
	put("cg/cgroup.controllers", "cpusetx\n");
	ck_assert_int_eq(lwk_part_placeable(&roots, 42, "0::/user.slice\n", err, sizeof(err)), -1);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_place_suite(void)
{
	Suite *s = suite_create("place");
	TCase *tc = tcase_create("place");

	tcase_add_test(tc, tasks_are_placed_in_slurms_step_cgroup_by_role);
	tcase_add_test(tc, tasks_are_placed_in_a_sluid_named_step_cgroup);
	tcase_add_test(tc, placement_is_judged_before_the_tasks);
	tcase_add_test(tc, a_tree_without_cpuset_is_refused_naming_delegation);
	suite_add_tcase(s, tc);
	return s;
}
