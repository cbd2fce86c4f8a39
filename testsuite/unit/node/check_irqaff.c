/* SPDX-License-Identifier: GPL-2.0-or-later */
/* IRQ affinity off the App cores and back, over a /proc-like tree. */
#include <string.h>

#include "check_lwk.h"
#include "node/irqaff.h"

static char err[1024];

START_TEST(new_affinity_avoids_app_cpus)
{
	struct lwk_cpuset app = cpus_of("4-7"), os = cpus_of("0"), out, cur;
	char buf[64];

	cur = cpus_of("0-7");
	ck_assert(lwk_irq_new_affinity(&cur, &app, &os, &out));
	lwk_cpulist_format(&out, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0-3");
	/* Only App CPUs: to the OS CPUs. */
	cur = cpus_of("5");
	ck_assert(lwk_irq_new_affinity(&cur, &app, &os, &out));
	lwk_cpulist_format(&out, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0");
	/* Already off the App CPUs: left alone. */
	cur = cpus_of("1-2");
	ck_assert(!lwk_irq_new_affinity(&cur, &app, &os, &out));
}
END_TEST

START_TEST(move_saves_what_it_changed_and_restore_puts_it_back)
{
	struct lwk_cpuset app = cpus_of("4-7"), os = cpus_of("0");
	struct lwk_irq_result r;
	char save[4096] = "";

	tree_make("irq");
	tree_mkdir("irq/1");
	tree_mkdir("irq/24");
	tree_mkdir("irq/25");
	tree_mkdir("irq/default_smp_affinity_dir");
	tree_put("irq/1/smp_affinity_list", "0-7\n");
	tree_put("irq/24/smp_affinity_list", "6\n");
	tree_put("irq/25/smp_affinity_list", "1\n");
	ck_assert_int_eq(lwk_irq_move_off(tree_root, &app, &os, save, sizeof(save), &r, err,
					  sizeof(err)),
			 0);
	ck_assert_uint_eq(r.moved, 2);
	ck_assert_uint_eq(r.untouched, 1);
	ck_assert_str_eq(tree_get("irq/1/smp_affinity_list"), "0-3");
	ck_assert_str_eq(tree_get("irq/24/smp_affinity_list"), "0");
	ck_assert_str_eq(tree_get("irq/25/smp_affinity_list"), "1\n");
	ck_assert_ptr_nonnull(strstr(save, "1 0-7 0-3\n"));
	ck_assert_ptr_nonnull(strstr(save, "24 6 0\n"));
	ck_assert_ptr_null(strstr(save, "25 "));
	/* One moved meanwhile by someone else (irqbalance, an admin) keeps
	 * theirs; the other goes back. */
	tree_put("irq/24/smp_affinity_list", "5\n");
	ck_assert_int_eq(lwk_irq_restore(tree_root, save, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("irq/1/smp_affinity_list"), "0-7");
	ck_assert_str_eq(tree_get("irq/24/smp_affinity_list"), "5\n");
	tree_put("irq/24/smp_affinity_list", "0\n");
	ck_assert_int_eq(lwk_irq_restore(tree_root, save, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("irq/24/smp_affinity_list"), "6");
	/* An IRQ gone meanwhile is counted, the others still restored. */
	ck_assert_int_eq(lwk_irq_restore(tree_root, "99 0-7\n1 2\n", err, sizeof(err)), 1);
	ck_assert_str_eq(tree_get("irq/1/smp_affinity_list"), "2");
	/* Only the module's own format is used; a torn line is counted and
	 * skipped, the lines after it still restored. */
	ck_assert_int_eq(lwk_irq_restore(tree_root, "1 ../../x\nx 0-1\n24 7\n", err, sizeof(err)), 2);
	ck_assert_ptr_nonnull(strstr(err, "malformed saved line '1 ../../x'"));
	ck_assert_str_eq(tree_get("irq/24/smp_affinity_list"), "7");
	ck_assert_str_eq(tree_get("irq/1/smp_affinity_list"), "2");
	ck_assert_int_eq(lwk_irq_restore(tree_root, "24 6\n", err, sizeof(err)), 0);
	/* No room to remember: refused before moving what it cannot save. */
	ck_assert_int_eq(lwk_irq_move_off(tree_root, &app, &os, save, 8, &r, err, sizeof(err)), -1);
	save[0] = '\0';
	ck_assert_int_eq(lwk_irq_move_off(tree_root, &app, &os, save, 4, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "too many IRQs to remember"));
	ck_assert_str_eq(tree_get("irq/24/smp_affinity_list"), "6");
	tree_remove();
}
END_TEST

Suite *irqaff_suite(void)
{
	Suite *s = suite_create("irqaff");
	TCase *tc = tcase_create("irq");

	tcase_add_test(tc, new_affinity_avoids_app_cpus);
	tcase_add_test(tc, move_saves_what_it_changed_and_restore_puts_it_back);
	suite_add_tcase(s, tc);
	return s;
}
