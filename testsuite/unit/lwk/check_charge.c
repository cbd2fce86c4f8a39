/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mem= charged to the job's memory limit, and given back (lwk/charge.c). */
#include <stdio.h>
#include <string.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "lwk_fixture.h"

#define JOBMEM "cg/s.slice/n1.scope/job_42/memory.max"

/* A node whose job cgroup LEVEL has Slurm's 1G limit, a partition with
 * mem=40M, and TASK's first charge: the limit lowered by the 42M of
 * hugepages and the charge recorded in the state first. */
static void charge_once(const char *level, const char *task, struct lwk_part *p, char *what,
			size_t whatlen)
{
	char mem[256], line[512];

	snprintf(mem, sizeof(mem), "cg%s/memory.max", level);
	snprintf(line, sizeof(line), "memcharge %s 1073741824 1029701632\n", level);
	node_tree();
	tree_put(mem, "1073741824\n");
	ck_assert_int_eq(setup("os=2,mem=40M", p), 1);
	ck_assert_msg(lwk_part_charge(&roots, p, task, what, whatlen, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_str_eq(tree_get(mem), "1029701632");
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), line));
}

/* 3.7: mem= hugepages are not counted by the job's memory cgroup: the
 * job's limit (Slurm's, 1G) is lowered by the 42M reserved, recorded
 * first, set again after Slurm rewrites it for a new step, and given
 * back at the teardown. */
START_TEST(mem_is_charged_to_the_jobs_memory_limit)
{
	const char *task = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	struct lwk_part p;
	char what[1024], log[4096];

	charge_once("/s.slice/n1.scope/job_42", task, &p, what, sizeof(what));
	ck_assert_msg(strstr(what, "mem= holds 42M outside the job's memory: its limit in "
				   "/s.slice/n1.scope/job_42 is 982M, not 1024M"), "%s", what);
	/* Another task: nothing more.  A new step: Slurm wrote its limit
	 * again, lowered again, recorded once. */
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(what, "");
	tree_put(JOBMEM, "1073741824\n");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "1029701632");
	ck_assert_ptr_null(strstr(strstr(tree_get("state/n1/42/lwk.state"), "memcharge") + 1,
				  "memcharge"));
	/* The state still reads as a finished partition. */
	ck_assert_int_eq(lwk_part_load(&roots, 42, &p), 1);
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(JOBMEM), "1073741824");
	ck_assert_int_eq(hugepages(1), 10);
	tree_remove();
}
END_TEST

/* Never below deleg_mem (the job's helpers need it); nothing where
 * Slurm limits no memory, or the task is in no cgroup of the job. */
START_TEST(mem_charge_keeps_deleg_mem_and_needs_a_limit)
{
	const char *task = "0::/s.slice/n1.scope/job_42/step_0/user/task_0\n";
	struct lwk_part p;
	char what[1024], log[4096];

	node_tree();
	tree_put(JOBMEM, "157286400\n"); /* 150M */
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "134217728");
	ck_assert_ptr_nonnull(strstr(what, "(kept at deleg_mem"));
	tree_put(JOBMEM, "max\n");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, task, what, sizeof(what), err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get(JOBMEM), "max\n");
	ck_assert_str_eq(what, "");
	ck_assert_int_eq(lwk_part_charge(&roots, &p, "0::/user.slice/x\n", what, sizeof(what), err,
					 sizeof(err)), 0);
	ck_assert_str_eq(what, "");
	/* The job's limit is not ours to change any more: left alone. */
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(JOBMEM), "max\n");
	tree_remove();
}
END_TEST

/* 26.05: the job's memory cgroup is the SLUID-named one (the job level
 * of the task's own cgroup), charged and given back the same way. */
START_TEST(mem_is_charged_to_a_sluid_named_job_cgroup)
{
	const char *task = "0::/s.slice/n1.scope/" LWK_FX_SLUID "/step_0/user/task_0\n";
	const char *jobmem = "cg/s.slice/n1.scope/" LWK_FX_SLUID "/memory.max";
	struct lwk_part p;
	char what[1024], log[4096];

	charge_once("/s.slice/n1.scope/" LWK_FX_SLUID, task, &p, what, sizeof(what));
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(jobmem), "1073741824");
	tree_remove();
}
END_TEST

/* v1: the job's cgroup of the memory hierarchy (Slurm's layout there),
 * not the cpuset one, and its memory.limit_in_bytes. */
START_TEST(mem_charge_on_v1_uses_the_memory_hierarchy)
{
	const char *task = "7:cpuset:/slurm_n1/uid_0/job_42/step_0\n"
			   "4:memory:/slurm_n1/uid_0/job_42/step_0/task_0\n";
	const char *lim = "cg1/memory/slurm_n1/uid_0/job_42/memory.limit_in_bytes";
	struct lwk_part p;
	struct lwk_node_roots v1;
	char what[1024], log[4096], root[300];

	node_tree();
	tree_mkdir("cg1/cpuset/slurm_n1/uid_0/job_42");
	tree_mkdir("cg1/memory/slurm_n1/uid_0/job_42");
	tree_put("cg1/cpuset/cpuset.cpus", "0-7\n");
	tree_put(lim, "1073741824\n");
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	snprintf(root, sizeof(root), "%s/cg1", tree_root);
	v1 = roots;
	v1.cgroup_root = root;
	ck_assert_msg(lwk_part_charge(&v1, &p, task, what, sizeof(what), err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_str_eq(tree_get(lim), "1029701632");
	ck_assert_int_eq(lwk_part_teardown(&v1, 42, log, sizeof(log)), 1);
	ck_assert_str_eq(tree_get(lim), "1073741824");
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_charge_suite(void)
{
	Suite *s = suite_create("charge");
	TCase *tc = tcase_create("charge");

	tcase_add_test(tc, mem_is_charged_to_the_jobs_memory_limit);
	tcase_add_test(tc, mem_charge_keeps_deleg_mem_and_needs_a_limit);
	tcase_add_test(tc, mem_charge_on_v1_uses_the_memory_hierarchy);
	tcase_add_test(tc, mem_is_charged_to_a_sluid_named_job_cgroup);
	suite_add_tcase(s, tc);
	return s;
}
