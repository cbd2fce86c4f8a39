/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A finished setup read back from its state (lwk/state.c). */
#include <stdio.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "lwk_fixture.h"

START_TEST(a_ready_partition_survives_a_damaged_line)
{
	struct lwk_part p, again;

	node_tree();
	ck_assert_int_eq(setup("os=2,mem=40M", &p), 1);
	ck_assert_int_eq(lwk_part_load(&roots, 42, &again), 1);
	ck_assert(lwk_cpuset_equal(&again.plan.app_cpus, &p.plan.app_cpus));
	/* A torn line after "ready": still the job's running partition,
	 * never undone by a later step. */
	{
		char path[600];
		FILE *f;

		snprintf(path, sizeof(path), "%s/state/n1/42/lwk.state", tree_root);
		f = fopen(path, "a");
		ck_assert_ptr_nonnull(f);
		fputs("huge 9 x", f);
		fclose(f);
	}
	ck_assert_int_eq(setup("os=2,mem=40M", &again), 0);
	ck_assert(lwk_cpuset_equal(&again.plan.app_cpus, &p.plan.app_cpus));
	ck_assert_int_eq(hugepages(1), 24);
	ck_assert_str_eq(tree_get("proc/irq/1/smp_affinity_list"), "0-1");
	ck_assert_int_eq(lwk_part_teardown(&roots, 42, tree_root, 0), 1);
	ck_assert_int_eq(hugepages(1), 10);
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("state");

	tcase_add_test(tc, a_ready_partition_survives_a_damaged_line);
	suite_add_tcase(s, tc);
	return s;
}
