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

/* What Slurm's binding becomes on a side, case by case. */
static const struct {
	const char *why, *side, *masks[8], *expect;
} cases[] = {
	/* srun --lwk -n7 --cpu-bind=cores on 8 CPUs, OS CPU 0 (Slurm 24.11 on
	 * the guests): task 0 had CPU 0, the OS's; it gets the one App CPU no
	 * task has, the others keep theirs. */
	{ "an OS CPU's task gets the free App CPU", "1-7", { "0", "4", "1", "5", "2", "6", "3" },
	  "7 / 4 / 1 / 5 / 2 / 6 / 3" },
	/* --cpu-bind=map_cpu:1,0: the second task's CPU is the OS's. */
	{ "map_cpu onto the OS side", "1-7", { "1", "0" }, "1 / 2" },
	/* Unbound tasks (--cpu-bind=none, or Slurm's choice) stay unbound. */
	{ "unbound tasks", "1-7", { "0-7", "0-7", "0-7" }, "1-7 / 1-7 / 1-7" },
	/* A two-CPU task on the OS side gets two CPUs, the least used. */
	{ "a task keeps its width", "2-7", { "0-1", "2-3", "4-5" }, "6-7 / 2-3 / 4-5" },
	/* One wider than the side gets all of it. */
	{ "wider than the side", "6-7", { "0-5" }, "6-7" },
	/* Helpers on one OS CPU: every task there. */
	{ "helpers share the OS CPUs", "0", { "4", "5", "0" }, "0 / 0 / 0" },
	/* More tasks than CPUs on the side: spread, the least used first. */
	{ "more tasks than CPUs", "2-3", { "0", "1", "2", "3" }, "2 / 3 / 2 / 3" },
};

START_TEST(slurms_binding_is_carried_onto_the_side)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t n = 0;

		while (n < 8 && cases[c].masks[n])
			n++;
		ck_assert_msg(!strcmp(carry(cases[c].side, cases[c].masks, n), cases[c].expect),
			      "%s: %s, expected %s", cases[c].why, carry(cases[c].side, cases[c].masks, n),
			      cases[c].expect);
	}
}
END_TEST

Suite *lwk_bind_suite(void)
{
	Suite *s = suite_create("lwk_bind");
	TCase *tc = tcase_create("carry");

	tcase_add_test(tc, slurms_binding_is_carried_onto_the_side);
	suite_add_tcase(s, tc);
	return s;
}
