/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hugepage reservation over a sysfs-like tree. */
#include <string.h>

#include "check_lwk.h"
#include "node/hugepages.h"

static char err[1024];
#define NR "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"

static void setup_tree(void)
{
	tree_make("hp");
	tree_mkdir("devices/system/node/node1/hugepages/hugepages-2048kB");
	tree_put(NR, "3\n");
	tree_put("devices/system/node/node1/compact", "");
}

START_TEST(reserve_adds_to_what_the_node_has_and_release_gives_it_back)
{
	struct lwk_hugepages r;

	setup_tree();
	ck_assert_int_eq(lwk_hugepages_count(tree_root, 1, 2048), 3);
	ck_assert_int_eq(lwk_hugepages_reserve(tree_root, 1, 2048, 5, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.before, 3);
	ck_assert_int_eq(r.added, 5);
	ck_assert_int_eq(lwk_hugepages_count(tree_root, 1, 2048), 8);
	/* Another job reserved 2 more meanwhile: they stay. */
	tree_put(NR, "10\n");
	ck_assert_int_eq(lwk_hugepages_release(tree_root, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_hugepages_count(tree_root, 1, 2048), 5);
	tree_remove();
}
END_TEST

START_TEST(reserve_names_what_is_missing)
{
	struct lwk_hugepages r;

	setup_tree();
	ck_assert_int_eq(lwk_hugepages_reserve(tree_root, 0, 2048, 1, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no 2048 kB pages on NUMA node 0"));
	ck_assert_int_eq(lwk_hugepages_reserve(tree_root, 1, 1048576, 1, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "hugepages-1048576kB/nr_hugepages"));
	ck_assert_int_eq(lwk_hugepages_reserve(tree_root, 1, 2048, -4, &r, err, sizeof(err)), -1);
	tree_put(NR, "lots\n");
	ck_assert_int_eq(lwk_hugepages_count(tree_root, 1, 2048), -1);
	tree_remove();
}
END_TEST

Suite *hugepages_suite(void)
{
	Suite *s = suite_create("hugepages");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, reserve_adds_to_what_the_node_has_and_release_gives_it_back);
	tcase_add_test(tc, reserve_names_what_is_missing);
	suite_add_tcase(s, tc);
	return s;
}
