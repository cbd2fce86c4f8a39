/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition's state as text, read back, and what the tasks see
 * (lwk/record.c). */
#include <string.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "lwk_fixture.h"

START_TEST(state_text_reads_back_the_same)
{
	struct lwk_part p, q;
	char text[8192], env[4096];

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	lwk_part_format(&p, text, sizeof(text));
	ck_assert_int_eq(lwk_part_parse(text, &q, err, sizeof(err)), 0);
	ck_assert(lwk_cpuset_equal(&p.plan.app_cpus, &q.plan.app_cpus));
	ck_assert(lwk_cpuset_equal(&p.plan.os_cpus, &q.plan.os_cpus));
	ck_assert(lwk_cpuset_equal(&p.plan.app_nodes, &q.plan.app_nodes));
	ck_assert(memcmp(p.plan.node_mem, q.plan.node_mem, sizeof(p.plan.node_mem)) == 0);
	ck_assert_uint_eq(q.plan.deleg_mem, 128ULL << 20);
	ck_assert_uint_eq(q.plan.deleg_quota_us, 100000);
	ck_assert(!q.ready); /* the plan's lines alone: not a finished setup */
	/* What the tasks see. */
	lwk_part_env(&p, LWK_ROLE_APP, NULL, env, sizeof(env));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_APP_CPUS=2-7\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_OS_CPUS=0-1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_MEM_NODES=0-1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_ROLE=app\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_BACKEND=linux\n"));
	/* 40M over 2 + 4 App cores: 14M (7 pages) on node 0, 28M on node 1. */
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_MEM=14M@0,28M@1\n"));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_HUGEPAGES=2048kB:0=7/7,1=14/14\n"));
	lwk_part_env(&p, LWK_ROLE_DELEGATION, NULL, env, sizeof(env));
	ck_assert_ptr_nonnull(strstr(env, "SLURM_LWK_ROLE=delegation\n"));
	/* Malformed state is refused, naming the line. */
	ck_assert_int_eq(lwk_part_parse("job 1\nbogus 2\n", &q, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "line 2: unknown key 'bogus'"));
	ck_assert_int_eq(lwk_part_parse("app_cpus 9-x\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("huge 0 3 4\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("huge 64 3 3\n", &q, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_part_parse("page_kb 4\n", &q, err, sizeof(err)), -1);
	ck_assert_msg(lwk_part_teardown(&roots, 42, text, sizeof(text)) == 1, "%s", text);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");

	tcase_add_test(tc, state_text_reads_back_the_same);
	suite_add_tcase(s, tc);
	return s;
}
