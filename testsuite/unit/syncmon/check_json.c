/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncmon/json.c: JSON strings of the sampler's output. */
#include "check_lwk.h"
#include "syncmon/json.h"

START_TEST(json_strings_stay_valid)
{
	char buf[64];

	lwk_json_string("a\"b\\c\n\x01\xe9", buf, sizeof(buf));
	ck_assert_str_eq(buf, "\"a\\\"b\\\\c\\u000a\\u0001\\u00e9\"");
	/* Too long: cut between characters, still a closed string. */
	ck_assert_uint_eq(lwk_json_string("abcdef", buf, 4), 3);
	ck_assert_str_eq(buf, "\"a\"");
	lwk_json_string("\xe9\xe9", buf, 10);
	ck_assert_str_eq(buf, "\"\\u00e9\"");
	{
		/* The worst comm the kernel gives (15 bytes to escape) fits
		 * the sampler's 128-byte buffer whole. */
		char comm[128];

		ck_assert_uint_eq(lwk_json_string("\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e",
						  comm, sizeof(comm)), 92);
	}
}
END_TEST

Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, json_strings_stay_valid);
	suite_add_tcase(s, tc);
	return s;
}
