/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm's task binding carried onto a side of the --lwk partition. */
#include <stdio.h>
#include <string.h>

#include "check_lwk.h"
#include "lwk/bind.h"

/* carry SIDE over the masks in lists[] (n of them); the results joined
 * by " / ". */
static const char *carry(const char *side, const char *const *lists, size_t n)
{
	static char joined[1024];
	struct lwk_cpuset s = cpus_of(side), masks[16], out[16];
	char one[128];

	for (size_t i = 0; i < n; i++)
		masks[i] = cpus_of(lists[i]);
	lwk_bind_carry(&s, masks, n, out);
	joined[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		lwk_cpulist_format(&out[i], one, sizeof(one));
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? " / " : "", one);
	}
	return joined;
}

/* srun --lwk -n7 --cpu-bind=cores on 8 CPUs, OS CPU 0 (what Slurm 24.11
 * chose on the guests): task 0 had CPU 0, the OS's; it gets the one App
 * CPU no task has, the others keep theirs. */
START_TEST(a_task_bound_to_an_os_cpu_gets_the_free_app_cpu)
{
	static const char *const m[] = { "0", "4", "1", "5", "2", "6", "3" };

	ck_assert_str_eq(carry("1-7", m, 7), "7 / 4 / 1 / 5 / 2 / 6 / 3");
}
END_TEST

/* --cpu-bind=map_cpu:1,0: the second task's CPU is the OS's. */
START_TEST(map_cpu_onto_the_os_side_moves_to_an_unused_app_cpu)
{
	static const char *const m[] = { "1", "0" };

	ck_assert_str_eq(carry("1-7", m, 2), "1 / 2");
}
END_TEST

/* Unbound tasks (--cpu-bind=none, or Slurm's choice) stay unbound. */
START_TEST(unbound_tasks_get_the_whole_side)
{
	static const char *const m[] = { "0-7", "0-7", "0-7" };

	ck_assert_str_eq(carry("1-7", m, 3), "1-7 / 1-7 / 1-7");
}
END_TEST

/* A two-CPU task on the OS side gets two CPUs, the least used; one
 * wider than the side gets all of it. */
START_TEST(a_task_keeps_its_width)
{
	static const char *const m[] = { "0-1", "2-3", "4-5" };
	static const char *const wide[] = { "0-5" };

	ck_assert_str_eq(carry("2-7", m, 3), "6-7 / 2-3 / 4-5");
	ck_assert_str_eq(carry("6-7", wide, 1), "6-7");
}
END_TEST

/* Helpers on one OS CPU: every task there. */
START_TEST(helpers_share_the_os_cpus)
{
	static const char *const m[] = { "4", "5", "0" };

	ck_assert_str_eq(carry("0", m, 3), "0 / 0 / 0");
}
END_TEST

/* More tasks than CPUs on the side: spread, the least used first. */
START_TEST(more_tasks_than_cpus_are_spread)
{
	static const char *const m[] = { "0", "1", "2", "3" };

	ck_assert_str_eq(carry("2-3", m, 4), "2 / 3 / 2 / 3");
}
END_TEST

Suite *lwk_bind_suite(void)
{
	Suite *s = suite_create("lwk_bind");
	TCase *tc = tcase_create("carry");

	tcase_add_test(tc, a_task_bound_to_an_os_cpu_gets_the_free_app_cpu);
	tcase_add_test(tc, map_cpu_onto_the_os_side_moves_to_an_unused_app_cpu);
	tcase_add_test(tc, unbound_tasks_get_the_whole_side);
	tcase_add_test(tc, a_task_keeps_its_width);
	tcase_add_test(tc, helpers_share_the_os_cpus);
	tcase_add_test(tc, more_tasks_than_cpus_are_spread);
	suite_add_tcase(s, tc);
	return s;
}
