/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node/statedir.c: the per-node, per-job state directories. */
#include "check_lwk.h"
#include "node/statedir.h"

START_TEST(state_dir_refuses_odd_names)
{
	char out[512], err[256];

	ck_assert_int_eq(lwk_state_dir("relative", "n", 1, out, sizeof(out), err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_state_dir("/tmp", "../etc", 1, out, sizeof(out), err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_state_dir("/tmp", "", 1, out, sizeof(out), err, sizeof(err)), -1);
}
END_TEST

Suite *statedir_suite(void)
{
	Suite *s = suite_create("statedir");
	TCase *tc = tcase_create("statedir");

	tcase_add_test(tc, state_dir_refuses_odd_names);
	suite_add_tcase(s, tc);
	return s;
}
