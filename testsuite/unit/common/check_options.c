/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_lwk.h"
#include "common/options.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static char err[512];

/* Parse must fail, and the message must name the key and what is allowed. */
static void refuse(const struct lwk_option_grammar *g, const char *arg, const char *key,
		   const char *allowed)
{
	union {
		struct lwk_opts l;
		struct lwk_syncmon_opts s;
		struct lwk_casas_opts c;
	} o;

	err[0] = '\0';
	ck_assert_msg(lwk_option_parse(g, arg, &o, err, sizeof(err)) == -1, "accepted '%s'", arg);
	ck_assert_msg(strncmp(err, "lwk: ", 5) == 0, "message '%s' lacks the lwk: prefix", err);
	ck_assert_msg(strstr(err, key), "message '%s' does not name '%s'", err, key);
	ck_assert_msg(strstr(err, allowed), "message '%s' does not say '%s'", err, allowed);
}

START_TEST(lwk_defaults)
{
	struct lwk_opts o;

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, NULL, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.os_cores, 1);
	ck_assert_uint_eq(o.mem, 0);
	ck_assert_uint_eq(lwk_cpuset_count(&o.numa), 0);
	ck_assert_int_eq(o.backend, LWK_BACKEND_AUTO);
	ck_assert_int_eq(o.hugepage, LWK_HUGEPAGE_2M);
	ck_assert_uint_eq(o.deleg_mem, 128 * MIB);
	ck_assert_uint_eq(o.deleg_cpu, 10000);
	/* How Slurm passes a flag given without a value. */
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "(null)", &o, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "", &o, err, sizeof(err)), 0);
}
END_TEST

START_TEST(lwk_values)
{
	struct lwk_opts o;

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk,
		"os=2,mem=4G,numa=1-2,backend=mckernel,hugepage=1G,deleg_mem=256MiB,deleg_cpu=150%",
		&o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.os_cores, 2);
	ck_assert_uint_eq(o.mem, 4 * GIB);
	ck_assert(lwk_cpuset_isset(&o.numa, 1) && lwk_cpuset_isset(&o.numa, 2));
	ck_assert_uint_eq(lwk_cpuset_count(&o.numa), 2);
	ck_assert_int_eq(o.backend, LWK_BACKEND_MCKERNEL);
	ck_assert_int_eq(o.hugepage, LWK_HUGEPAGE_1G);
	ck_assert_uint_eq(o.deleg_mem, 256 * MIB);
	ck_assert_uint_eq(o.deleg_cpu, 15000);
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "mem=512M,deleg_cpu=12.5", &o, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(o.mem, 512 * MIB);
	ck_assert_uint_eq(o.deleg_cpu, 1250);
}
END_TEST

START_TEST(lwk_refusals)
{
	refuse(&lwk_grammar_lwk, "os=0", "os", "from 1 to 1024");
	refuse(&lwk_grammar_lwk, "os=abc", "os", "whole number");
	refuse(&lwk_grammar_lwk, "os=-1", "os", "whole number");
	refuse(&lwk_grammar_lwk, "os=1.5", "os", "whole number");
	refuse(&lwk_grammar_lwk, "mem=4X", "mem", "suffix K, M, G or T");
	refuse(&lwk_grammar_lwk, "mem=99999999999999999999", "mem", "size");
	refuse(&lwk_grammar_lwk, "mem=16777216T", "mem", "size");
	refuse(&lwk_grammar_lwk, "numa=x", "numa", "auto, or a list");
	refuse(&lwk_grammar_lwk, "numa=5000", "numa", "below 1024");
	refuse(&lwk_grammar_lwk, "numa=0-4:", "numa", "0:2-3");
	refuse(&lwk_grammar_lwk, "numa=1::2", "numa", "list");
	refuse(&lwk_grammar_lwk, "backend=mckernal", "backend", "one of auto|linux|mckernel");
	refuse(&lwk_grammar_lwk, "hugepage=4M", "hugepage", "one of none|2M|1G");
	refuse(&lwk_grammar_lwk, "deleg_mem=1M", "deleg_mem", "from 16M to 1T");
	refuse(&lwk_grammar_lwk, "deleg_cpu=0.5", "deleg_cpu", "percentage");
	refuse(&lwk_grammar_lwk, "deleg_cpu=1.234", "deleg_cpu", "percentage");
	refuse(&lwk_grammar_lwk, "deleg_cpu=250", "deleg_cpu", "at most 100%");
	refuse(&lwk_grammar_lwk, "deleg_cpu=100.5", "deleg_cpu=100.50%", "at most 100%");
	refuse(&lwk_grammar_lwk, "cores=2", "unknown key 'cores'", "os, mem, numa");
	refuse(&lwk_grammar_lwk, "os", "'os' is not key=value", "allowed keys");
	refuse(&lwk_grammar_lwk, "os=1,os=2", "os", "given twice");
	refuse(&lwk_grammar_lwk, "os=1,,mem=1G", "empty item", "");
	refuse(&lwk_grammar_lwk, "os=1,", "empty item", "");
	refuse(&lwk_grammar_lwk, ",os=1", "empty item", "");
	refuse(&lwk_grammar_lwk, "os=", "os", "whole number");
	refuse(&lwk_grammar_lwk, "=1", "unknown key ''", "allowed keys");
}
END_TEST

START_TEST(failure_leaves_defaults)
{
	struct lwk_opts o;

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "os=4,mem=bad", &o, err, sizeof(err)), -1);
	ck_assert_uint_eq(o.os_cores, 1); /* not the half-applied 4 */
}
END_TEST

START_TEST(syncmon_values)
{
	struct lwk_syncmon_opts o;

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, NULL, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.interval, 500000);
	ck_assert_uint_eq(o.offset, 0);
	ck_assert_str_eq(o.dir, "");
	ck_assert_uint_eq(o.buffer, 1 * MIB);
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon,
		"interval=1s,offset=250ms,dir=/scratch/me/mon,source=taskstats,idle=0.5,"
		"fullscan=10,flush=40,buffer=4M", &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.interval, 1000000);
	ck_assert_uint_eq(o.offset, 250000);
	ck_assert_str_eq(o.dir, "/scratch/me/mon");
	ck_assert_int_eq(o.source, LWK_SOURCE_TASKSTATS);
	ck_assert_uint_eq(o.idle, 50);
	ck_assert_uint_eq(o.fullscan, 10);
	ck_assert_uint_eq(o.flush, 40);
	ck_assert_uint_eq(o.buffer, 4 * MIB);
	/* A bare number is milliseconds; 10 ms is the documented floor. */
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, "interval=10", &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.interval, 10000);
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, "interval=10000us", &o, err, sizeof(err)), 0);
}
END_TEST

START_TEST(syncmon_refusals)
{
	refuse(&lwk_grammar_syncmon, "interval=9ms", "interval", "from 10ms to 3600s");
	refuse(&lwk_grammar_syncmon, "interval=9999us", "interval", "from 10ms");
	refuse(&lwk_grammar_syncmon, "interval=1h", "interval", "unit us, ms or s");
	refuse(&lwk_grammar_syncmon, "interval=100ms,offset=100ms", "offset", "smaller than the interval");
	refuse(&lwk_grammar_syncmon, "source=perf", "source", "auto|taskstats|proc");
	refuse(&lwk_grammar_syncmon, "idle=101", "idle", "from 0% to 100%");
	refuse(&lwk_grammar_syncmon, "flush=0", "flush", "from 1 to");
	refuse(&lwk_grammar_syncmon, "fullscan=0", "fullscan", "from 1 to");
	refuse(&lwk_grammar_syncmon, "buffer=1K", "buffer", "from 64K to 64M");
	refuse(&lwk_grammar_syncmon, "buffer=65M", "buffer", "from 64K to 64M");
	refuse(&lwk_grammar_syncmon, "dir=/tmp/a\nb", "dir", "control characters");
	refuse(&lwk_grammar_syncmon, "dir=\x1b[31m", "dir", "control characters");
}
END_TEST

START_TEST(path_length_bound)
{
	char arg[1100];
	struct lwk_syncmon_opts o;

	strcpy(arg, "dir=/");
	memset(arg + 5, 'a', 1022);
	arg[1027] = '\0'; /* 1023 characters of path: the most that fits */
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, arg, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(o.dir), 1023);
	strcat(arg, "b");
	refuse(&lwk_grammar_syncmon, arg, "dir", "at most 1023 characters");
}
END_TEST

START_TEST(casas_values)
{
	struct lwk_casas_opts o;

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, NULL, &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.probe, 500000);
	ck_assert_uint_eq(o.min_dies, 1);
	ck_assert_uint_eq(o.max_dies, 0);
	ck_assert_str_eq(o.event, "instructions");
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas,
		"probe=200ms,min_dies=2,max_dies=4,event=INST_RETIRED:ANY_P,objective=stp",
		&o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.probe, 200000);
	ck_assert_uint_eq(o.min_dies, 2);
	ck_assert_uint_eq(o.max_dies, 4);
	ck_assert_str_eq(o.event, "INST_RETIRED:ANY_P");
	ck_assert_int_eq(o.objective, LWK_OBJECTIVE_STP);
	refuse(&lwk_grammar_casas, "min_dies=4,max_dies=2", "max_dies", "at least min_dies");
	refuse(&lwk_grammar_casas, "min_dies=0", "min_dies", "from 1 to 1024");
	refuse(&lwk_grammar_casas, "event=a;rm -rf", "event", "A-Z a-z 0-9");
	refuse(&lwk_grammar_casas, "objective=fair", "objective", "antt|stp");
	refuse(&lwk_grammar_casas, "probe=5ms", "probe", "from 10ms to 60s");
}
END_TEST

START_TEST(combination)
{
	ck_assert_int_eq(lwk_options_combination_check(true, true, false, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_options_combination_check(false, true, true, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_options_combination_check(true, false, true, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--lwk and --contention-aware"));
}
END_TEST

/* What slurmstepd exports must parse back to the same request. */
START_TEST(format_roundtrip)
{
	struct lwk_opts a, b;
	struct lwk_syncmon_opts s1, s2;
	struct lwk_casas_opts c1, c2;
	char buf[4096];

	/* List members inside an option are separated by ':'. */
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk,
		"os=3,mem=1536M,numa=0:2-3,backend=linux,hugepage=none,deleg_mem=1G,deleg_cpu=250%",
		&a, err, sizeof(err)), 0);
	ck_assert_uint_eq(lwk_cpuset_count(&a.numa), 3);
	lwk_option_format(&lwk_grammar_lwk, &a, buf, sizeof(buf));
	ck_assert_str_eq(buf, "os=3,mem=1536M,numa=0:2-3,backend=linux,hugepage=none,"
			      "deleg_mem=1G,deleg_cpu=250%");
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, buf, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, "interval=15500us,dir=out", &s1,
					  err, sizeof(err)), 0);
	lwk_option_format(&lwk_grammar_syncmon, &s1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "interval=15500us,offset=0ms,dir=out,source=auto,idle=1%,"
			      "fullscan=20,flush=20,buffer=1M");
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_syncmon, buf, &s2, err, sizeof(err)), 0);
	ck_assert_int_eq(memcmp(&s1, &s2, sizeof(s1)), 0);

	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, NULL, &c1, err, sizeof(err)), 0);
	lwk_option_format(&lwk_grammar_casas, &c1, buf, sizeof(buf));
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, buf, &c2, err, sizeof(err)), 0);
	ck_assert_int_eq(memcmp(&c1, &c2, sizeof(c1)), 0);
}
END_TEST

START_TEST(hostile_input)
{
	static char big[LWK_KV_MAX_ARG + 10];
	struct lwk_opts o;

	memset(big, 'a', sizeof(big) - 1);
	refuse(&lwk_grammar_lwk, big, "longer than", "characters");
	/* The message quotes a user's bytes only as printable text. */
	refuse(&lwk_grammar_lwk, "os=\x01\xff", "os", "whole number");
	ck_assert_ptr_nonnull(strstr(err, "\\x01\\xff"));
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "os=18446744073709551616", &o, err,
					  sizeof(err)), -1);
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_lwk, "mem=18446744073709551615K", &o, err,
					  sizeof(err)), -1);
}
END_TEST

START_TEST(units)
{
	uint64_t v;

	ck_assert_int_eq(lwk_parse_size("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(lwk_parse_size("2k", &v), 0);
	ck_assert_uint_eq(v, 2048);
	ck_assert_int_eq(lwk_parse_size("1TB", &v), 0);
	ck_assert_uint_eq(v, UINT64_C(1) << 40);
	ck_assert_int_eq(lwk_parse_size("1Gi", &v), -1);
	ck_assert_int_eq(lwk_parse_size("G", &v), -1);
	ck_assert_int_eq(lwk_parse_duration("2s", &v), 0);
	ck_assert_uint_eq(v, 2000000);
	ck_assert_int_eq(lwk_parse_duration("2 s", &v), -1);
	ck_assert_int_eq(lwk_parse_duration("1.5s", &v), -1);
	ck_assert_int_eq(lwk_parse_percent("100", &v), 0);
	ck_assert_uint_eq(v, 10000);
	ck_assert_int_eq(lwk_parse_percent("0.05%", &v), 0);
	ck_assert_uint_eq(v, 5);
	ck_assert_int_eq(lwk_parse_percent("1.", &v), -1);
	ck_assert_int_eq(lwk_parse_percent("%", &v), -1);
}
END_TEST

/* Decode the fixture's \xNN escapes in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned int c;

		if (s[0] == '\\' && s[1] == 'x' && sscanf(s + 2, "%2x", &c) == 1) {
			*o++ = (char)c;
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Judge each line of F (cases.tsv's format) with the nodes' parser;
 * returns how many cases it held. */
static int judge_cases(FILE *f, const char *name)
{
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	while (getline(&line, &cap, f) > 0) {
		char *option, *value, *verdict, *word, *save = NULL;
		const struct lwk_option_grammar *g;
		union {
			struct lwk_opts l;
			struct lwk_syncmon_opts s;
			struct lwk_casas_opts c;
		} o;
		int rc;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		option = line;
		value = strchr(option, '\t');
		ck_assert_msg(value != NULL, "%s: line without a value: %s", name, line);
		*value++ = '\0';
		verdict = strchr(value, '\t');
		ck_assert_msg(verdict != NULL, "%s: line without a verdict: %s", name, line);
		*verdict++ = '\0';
		verdict = strtok_r(verdict, "\t", &save);
		word = strtok_r(NULL, "\t", &save);
		ck_assert_msg(verdict && word, "%s: line without a word: %s", name, line);
		unescape(value);
		g = !strcmp(option, "lwk") ? &lwk_grammar_lwk
		    : !strcmp(option, "sync-monitor") ? &lwk_grammar_syncmon
						       : &lwk_grammar_casas;
		err[0] = '\0';
		rc = lwk_option_parse(g, value, &o, err, sizeof(err));
		if (!strcmp(verdict, "ok")) {
			ck_assert_msg(rc == 0, "%s: --%s=%s refused: %s", name, option, value, err);
		} else {
			ck_assert_msg(rc == -1, "%s: --%s=%s accepted", name, option, value);
			ck_assert_msg(strstr(err, word), "%s: --%s=%s: '%s' does not name '%s'", name,
				      option, value, err, word);
		}
		n++;
	}
	free(line);
	return n;
}

/* The cases the submit side's Lua parser is held to as well: the two
 * must judge every value alike. */
START_TEST(shared_cases)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/testsuite/fixtures/options/cases.tsv", srcdir ? srcdir : ".");
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	n = judge_cases(f, path);
	fclose(f);
	ck_assert_msg(n > 100, "%s has only %d cases", path, n);
}
END_TEST

/* Random values, judged by job_submit.lua (testsuite/lua/fuzz-values.lua)
 * under each Lua slurmctld may embed (LUA51, LUA53: set by make check;
 * 5.3's integers wrap around where 5.1's doubles do not) and again here.
 * Without either the case says so and passes. */
START_TEST(lua_agrees_on_random_values)
{
	static const char *const luas[] = { "LUA51", "LUA53" };
	const char *srcdir = getenv("srcdir");
	int ran = 0;

	for (size_t l = 0; l < sizeof(luas) / sizeof(*luas); l++) {
		const char *lua = getenv(luas[l]);
		int n, seed = (int)(time(NULL) % 100000);
		char cmd[8192], name[64];
		FILE *f;

		if (!lua || !*lua || !srcdir)
			continue;
		snprintf(cmd, sizeof(cmd), "'%s' '%s/testsuite/lua/fuzz-values.lua' '%s' 20000 %d", lua,
			 srcdir, srcdir, seed);
		/* The seed in every message: a disagreement is found again with it. */
		snprintf(name, sizeof(name), "fuzz-values.lua (%s) seed %d", luas[l], seed);
		f = popen(cmd, "r");
		ck_assert_msg(f != NULL, "cannot run %s", cmd);
		n = judge_cases(f, name);
		ck_assert_msg(pclose(f) == 0, "%s failed", cmd);
		ck_assert_msg(n == 20000, "%s gave %d cases, not 20000", name, n);
		ran++;
	}
	if (!ran)
		printf("SKIP: neither LUA51 nor LUA53 (and srcdir) is set: the Lua and C parsers were "
		       "compared on the fixed cases only\n");
}
END_TEST

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, lwk_defaults);
	tcase_add_test(tc, lwk_values);
	tcase_add_test(tc, lwk_refusals);
	tcase_add_test(tc, failure_leaves_defaults);
	tcase_add_test(tc, syncmon_values);
	tcase_add_test(tc, syncmon_refusals);
	tcase_add_test(tc, path_length_bound);
	tcase_add_test(tc, casas_values);
	tcase_add_test(tc, combination);
	tcase_add_test(tc, format_roundtrip);
	tcase_add_test(tc, hostile_input);
	tcase_add_test(tc, units);
	tcase_add_test(tc, shared_cases);
	tcase_add_test(tc, lua_agrees_on_random_values);
	suite_add_tcase(s, tc);
	return s;
}
