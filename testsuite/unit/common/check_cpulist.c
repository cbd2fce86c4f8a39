/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "check_lwk.h"
#include "common/cpulist.h"

static void roundtrip(const char *in, const char *expect)
{
	struct lwk_cpuset s;
	char buf[256];

	ck_assert_int_eq(lwk_cpulist_parse(in, LWK_MAX_CPUS, &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, expect);
}

START_TEST(parses_kernel_forms)
{
	roundtrip("0-3,8", "0-3,8");
	roundtrip("0-3,8\n", "0-3,8");
	roundtrip("5,4,3,2", "2-5");
	roundtrip("0-10:2", "0,2,4,6,8,10");
	roundtrip("7", "7");
	roundtrip("", "");
	roundtrip("\n", "");
	roundtrip("8191", "8191");
}
END_TEST

START_TEST(rejects_malformed)
{
	static const char *const bad[] = {
		"a", "1-", "-1", "3-1", "1,,2", ",1", "1,", "1 2", "0-4:0", "1-2-3",
		"+1", "0x1", "1\n2", "1-3:", " 1", NULL,
	};
	struct lwk_cpuset s;

	for (int i = 0; bad[i]; i++) {
		lwk_cpuset_set(&s, 3);
		errno = 0;
		ck_assert_msg(lwk_cpulist_parse(bad[i], LWK_MAX_CPUS, &s) == -1, "accepted '%s'", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(lwk_cpuset_count(&s), 0);
	}
	ck_assert_int_eq(lwk_cpulist_parse(NULL, 8, &s), -1);
}
END_TEST

START_TEST(enforces_bound)
{
	struct lwk_cpuset s;

	ck_assert_int_eq(lwk_cpulist_parse("0-7", 8, &s), 0);
	ck_assert_int_eq(lwk_cpulist_parse("8", 8, &s), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(lwk_cpulist_parse("0-8192", LWK_MAX_CPUS, &s), -1);
	ck_assert_int_eq(lwk_cpulist_parse("99999999999999999999", LWK_MAX_CPUS, &s), -1);
	/* A max above the bitmap is clamped, never trusted. */
	ck_assert_int_eq(lwk_cpulist_parse("9000", 100000, &s), -1);
}
END_TEST

START_TEST(set_operations)
{
	struct lwk_cpuset a, b;

	lwk_cpulist_parse("0-63,64,200", LWK_MAX_CPUS, &a);
	ck_assert_uint_eq(lwk_cpuset_count(&a), 66);
	ck_assert_int_eq(lwk_cpuset_first(&a), 0);
	ck_assert_int_eq(lwk_cpuset_next(&a, 64), 200);
	ck_assert_int_eq(lwk_cpuset_next(&a, 200), -1);
	lwk_cpulist_parse("60-70", LWK_MAX_CPUS, &b);
	lwk_cpuset_and(&a, &b);
	ck_assert_uint_eq(lwk_cpuset_count(&a), 5);
	lwk_cpuset_zero(&b);
	ck_assert_int_eq(lwk_cpuset_first(&b), -1);
	lwk_cpuset_set(&b, LWK_MAX_CPUS); /* out of range: ignored */
	ck_assert_uint_eq(lwk_cpuset_count(&b), 0);
}
END_TEST

START_TEST(format_truncates_safely)
{
	struct lwk_cpuset s;
	char buf[6];
	size_t need;

	lwk_cpulist_parse("0,2,4,6,8,10", LWK_MAX_CPUS, &s);
	need = lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_uint_eq(need, strlen("0,2,4,6,8,10"));
	ck_assert_uint_lt(strlen(buf), sizeof(buf));
}
END_TEST

Suite *cpulist_suite(void)
{
	Suite *s = suite_create("cpulist");
	TCase *tc = tcase_create("cpulist");

	tcase_add_test(tc, parses_kernel_forms);
	tcase_add_test(tc, rejects_malformed);
	tcase_add_test(tc, enforces_bound);
	tcase_add_test(tc, set_operations);
	tcase_add_test(tc, format_truncates_safely);
	suite_add_tcase(s, tc);
	return s;
}
