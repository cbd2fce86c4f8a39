/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "check_lwk.h"
#include "common/config.h"

static char err[512];

START_TEST(defaults)
{
	struct lwk_config c;

	ck_assert_int_eq(lwk_config_parse(0, NULL, &c, err, sizeof(err)), 0);
	ck_assert(c.offer_lwk && c.offer_syncmon && c.offer_casas);
	ck_assert_int_eq(c.on_error, LWK_ON_ERROR_FAIL_JOB);
	ck_assert_int_eq(c.lwk_isolate, LWK_ISOLATE_AUTO);
}
END_TEST

START_TEST(isolate_values)
{
	char *part[] = { "lwk_isolate=partition" }, *cpuset[] = { "lwk_isolate=cpuset" };
	struct lwk_config c;

	ck_assert_int_eq(lwk_config_parse(1, part, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.lwk_isolate, LWK_ISOLATE_PARTITION);
	ck_assert_int_eq(lwk_config_parse(1, cpuset, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.lwk_isolate, LWK_ISOLATE_CPUSET);
}
END_TEST

START_TEST(values)
{
	char *argv[] = { "lwk=no", "contention_aware=false", "on_error=drain_node" };
	struct lwk_config c;
	char buf[5 * PATH_MAX];

	ck_assert_int_eq(lwk_config_parse(3, argv, &c, err, sizeof(err)), 0);
	ck_assert(!c.offer_lwk && c.offer_syncmon && !c.offer_casas);
	ck_assert_int_eq(c.on_error, LWK_ON_ERROR_DRAIN_NODE);
	lwk_config_format(&c, buf, sizeof(buf));
	ck_assert_str_eq(buf, "lwk=no,sync_monitor=yes,contention_aware=no,on_error=drain_node,"
			      "state_dir=/run/slurm-lwk,syncmon=" LWK_SYNCMON_PATH ",cgroup_root=/sys/fs/cgroup,mckernel=/opt/mckernel,lwk_whole_dies=no,"
			      "lwk_isolate=auto,lwk_irqbalance=yes,syncmon_memory=128M,syncmon_cpu=10%,"
			      "syncmon_fifo=0");
}
END_TEST

/* The site's bounds on the sampler: a size and a share of one CPU. */
START_TEST(sampler_bounds)
{
	char *argv[] = { "syncmon_memory=1G", "syncmon_cpu=0.5%", "syncmon_fifo=49" };
	struct lwk_config c;

	lwk_config_defaults(&c);
	ck_assert_uint_eq(c.syncmon_memory, 128ULL << 20);
	ck_assert_uint_eq(c.syncmon_cpu, 1000);
	/* The normal class unless the site asks. */
	ck_assert_uint_eq(c.syncmon_fifo, 0);
	/* The default holds the largest buffer= beside the sampler's own. */
	ck_assert_uint_ge(c.syncmon_memory, (64ULL << 20) + LWK_SYNCMON_OWN_BYTES);
	ck_assert_int_eq(lwk_config_parse(3, argv, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.syncmon_memory, 1ULL << 30);
	ck_assert_uint_eq(c.syncmon_cpu, 50);
	ck_assert_uint_eq(c.syncmon_fifo, 49);
}
END_TEST

/* A site's prefix can be deep: a 4000-character sampler path is kept
 * whole and formatted whole, and one past PATH_MAX is refused. */
START_TEST(long_paths)
{
	static char arg[PATH_MAX + 16], buf[5 * PATH_MAX], want[PATH_MAX + 32];
	char *argv[] = { arg };
	struct lwk_config c;
	size_t n;

	snprintf(arg, sizeof(arg), "syncmon=/");
	memset(arg + 9, 'd', 3999);
	arg[9 + 3999] = '\0';
	ck_assert_int_eq(lwk_config_parse(1, argv, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(c.syncmon), 4000);
	n = lwk_config_format(&c, buf, sizeof(buf));
	ck_assert_uint_lt(n, sizeof(buf));
	snprintf(want, sizeof(want), ",%s,", arg);
	ck_assert_msg(strstr(buf, want), "the 4000-character path was cut: %zu characters", n);
	ck_assert_msg(strstr(buf, "lwk_whole_dies=no"), "the text after the path was cut");
	/* The build's own default, whatever the install prefix. */
	lwk_config_defaults(&c);
	ck_assert_str_eq(c.syncmon, LWK_SYNCMON_PATH);

	memset(arg + 9, 'd', PATH_MAX);
	arg[9 + PATH_MAX] = '\0';
	ck_assert_int_eq(lwk_config_parse(1, argv, &c, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "syncmon") && strstr(err, "at most 4095 characters"), "'%s'", err);
}
END_TEST

static void refuse(int argc, char **argv, const char *a, const char *b)
{
	struct lwk_config c;

	ck_assert_int_eq(lwk_config_parse(argc, argv, &c, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "lwk: plugstack.conf: ") == err, "'%s'", err);
	ck_assert_msg(strstr(err, a) && strstr(err, b), "'%s' lacks '%s' or '%s'", err, a, b);
	/* Nothing half set: a refused config is the default one. */
	ck_assert(c.offer_lwk && c.offer_syncmon && c.offer_casas);
}

START_TEST(refusals)
{
	char *unknown[] = { "lwk=no", "statedir=/tmp" };
	char *novalue[] = { "on_error" };
	char *badenum[] = { "on_error=panic" };
	char *badbool[] = { "lwk=maybe" };
	char *twice[] = { "lwk=no", "lwk=yes" };
	char *empty[] = { "=x" };
	char *relative[] = { "state_dir=run/lwk" };
	char *isolate[] = { "lwk_isolate=isolated" };
	char *small[] = { "syncmon_memory=8M" }, *nocpu[] = { "syncmon_cpu=0" };
	char *overcpu[] = { "syncmon_cpu=101%" };
	char *overfifo[] = { "syncmon_fifo=50" }, *wordfifo[] = { "syncmon_fifo=high" };

	refuse(2, unknown, "unknown key 'statedir'",
	       "lwk, sync_monitor, contention_aware, on_error, state_dir, syncmon, cgroup_root, mckernel, "
	       "lwk_whole_dies, lwk_isolate, lwk_irqbalance, syncmon_memory, syncmon_cpu, syncmon_fifo");
	refuse(1, novalue, "'on_error' is not key=value", "allowed keys");
	refuse(1, badenum, "on_error", "one of fail_job|drain_node");
	refuse(1, badbool, "lwk", "yes or no");
	refuse(2, twice, "lwk", "given twice");
	refuse(1, empty, "'=x' is not key=value", "allowed keys");
	refuse(1, relative, "state_dir='run/lwk'", "must be an absolute path");
	refuse(1, isolate, "lwk_isolate", "one of auto|partition|cpuset");
	/* Less than the sampler's own tables and the smallest buffer=. */
	refuse(1, small, "syncmon_memory", "a size from");
	refuse(1, nocpu, "syncmon_cpu", "a percentage from 0.01");
	refuse(1, overcpu, "syncmon_cpu", "to 100");
	refuse(1, overfifo, "syncmon_fifo", "a whole number from 0 to 49");
	refuse(1, wordfifo, "syncmon_fifo", "a whole number from 0 to 49");
}
END_TEST

/* slurmstepd's init_post_opt after a refused job value: 0 (the tasks fail
 * the job) or -1 (the node drains), never a positive value, which 25.05
 * and later take as a failure too. */
START_TEST(refusal_return_codes)
{
	struct lwk_config c;
	char *fail[] = { "on_error=fail_job" }, *drain[] = { "on_error=drain_node" };

	lwk_config_defaults(&c);
	ck_assert_int_eq(lwk_config_refusal_rc(&c, false), 0);
	ck_assert_int_eq(lwk_config_parse(1, fail, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_config_refusal_rc(&c, false), 0);
	ck_assert_int_eq(lwk_config_parse(1, drain, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_config_refusal_rc(&c, false), -1);
	/* A value from the user's login environment on the node: never a drain. */
	ck_assert_int_eq(lwk_config_refusal_rc(&c, true), 0);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, values);
	tcase_add_test(tc, isolate_values);
	tcase_add_test(tc, sampler_bounds);
	tcase_add_test(tc, long_paths);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, refusal_return_codes);
	suite_add_tcase(s, tc);
	return s;
}
