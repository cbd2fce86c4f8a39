/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/options.h"

#include <stdio.h>
#include <string.h>

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)
#define MSEC UINT64_C(1000)
#define SEC UINT64_C(1000000)

#define NUM(k, t, s, f, lo, hi) \
	{ k, t, offsetof(s, f), lo, hi, NULL, LWK_KV_NOSET }
#define ENUM(k, s, f, c) \
	{ k, LWK_KV_ENUM, offsetof(s, f), 0, 0, c, LWK_KV_NOSET }
#define TEXT(k, t, s, f) \
	{ k, t, offsetof(s, f), 0, sizeof(((s *)0)->f), NULL, LWK_KV_NOSET }

/* ---- --lwk ---------------------------------------------------------- */

static const char *const backends[] = { "auto", "linux", "mckernel", NULL };
static const char *const hugepages[] = { "none", "2M", "1G", NULL };

static const struct lwk_kv_key lwk_keys[] = {
	NUM("os", LWK_KV_UINT, struct lwk_opts, os_cores, 1, 1024),
	NUM("mem", LWK_KV_SIZE, struct lwk_opts, mem, 0, 64 * TIB),
	{ "numa", LWK_KV_LIST, offsetof(struct lwk_opts, numa), 0,
	  LWK_MAX_NUMA_NODES, NULL, LWK_KV_NOSET },
	ENUM("backend", struct lwk_opts, backend, backends),
	ENUM("hugepage", struct lwk_opts, hugepage, hugepages),
	NUM("deleg_mem", LWK_KV_SIZE, struct lwk_opts, deleg_mem, 16 * MIB, 1 * TIB),
	/* One core is 100%; the seed's default quota is one core's worth. */
	NUM("deleg_cpu", LWK_KV_PERCENT, struct lwk_opts, deleg_cpu, 100, 1024 * 10000),
	{ NULL, 0, 0, 0, 0, NULL, 0 }
};

static void lwk_defaults(void *p)
{
	struct lwk_opts *o = p;

	memset(o, 0, sizeof(*o));
	o->os_cores = 1;
	o->backend = LWK_BACKEND_AUTO;
	o->hugepage = LWK_HUGEPAGE_2M;
	o->deleg_mem = 128 * MIB;
	o->deleg_cpu = 100 * 100;
}

static int lwk_check(const void *p, char *err, size_t errlen)
{
	const struct lwk_opts *o = p;

	/* The delegation cgroup runs on the OS cores: more quota than
	 * OS cores can never be used and is a sign of a typo. */
	if (o->deleg_cpu > o->os_cores * 100 * 100) {
		snprintf(err, errlen,
			 "lwk: --lwk: deleg_cpu=%llu.%02llu%% is more than the %llu OS core(s) can give; "
			 "deleg_cpu must be at most %llu%% (100%% per OS core, see os=)",
			 (unsigned long long)(o->deleg_cpu / 100), (unsigned long long)(o->deleg_cpu % 100),
			 (unsigned long long)o->os_cores,
			 (unsigned long long)(o->os_cores * 100));
		return -1;
	}
	return 0;
}

const struct lwk_option_grammar lwk_grammar_lwk = {
	.name = "lwk",
	.arginfo = "os=N,mem=SIZE,...",
	.usage = "Run on a lightweight-kernel-like partition of quiet App cores "
		 "(keys: os mem numa backend hugepage deleg_mem deleg_cpu; see slurm-lwk(1))",
	.keys = lwk_keys,
	.size = sizeof(struct lwk_opts),
	.defaults = lwk_defaults,
	.check = lwk_check,
};

/* ---- --sync-monitor --------------------------------------------------- */

/* In enum lwk_source order. */
static const char *const sources[] = { "auto", "taskstats", "proc", "bpf", NULL };

static const struct lwk_kv_key syncmon_keys[] = {
	NUM("interval", LWK_KV_DURATION, struct lwk_syncmon_opts, interval, 10 * MSEC, 3600 * SEC),
	NUM("offset", LWK_KV_DURATION, struct lwk_syncmon_opts, offset, 0, 3600 * SEC),
	TEXT("dir", LWK_KV_PATH, struct lwk_syncmon_opts, dir),
	ENUM("source", struct lwk_syncmon_opts, source, sources),
	NUM("idle", LWK_KV_PERCENT, struct lwk_syncmon_opts, idle, 0, 100 * 100),
	NUM("fullscan", LWK_KV_UINT, struct lwk_syncmon_opts, fullscan, 1, 1000000),
	NUM("flush", LWK_KV_UINT, struct lwk_syncmon_opts, flush, 1, 1000000),
	/* Root's memory outside the job's allocation: keep it modest. */
	NUM("buffer", LWK_KV_SIZE, struct lwk_syncmon_opts, buffer, 64 * KIB, 64 * MIB),
	{ NULL, 0, 0, 0, 0, NULL, 0 }
};

static void syncmon_defaults(void *p)
{
	struct lwk_syncmon_opts *o = p;

	memset(o, 0, sizeof(*o));
	o->interval = 500 * MSEC;
	o->source = LWK_SOURCE_AUTO;
	o->idle = 1 * 100;
	o->fullscan = 20;
	o->flush = 20;
	o->buffer = 1 * MIB;
}

static int syncmon_check(const void *p, char *err, size_t errlen)
{
	const struct lwk_syncmon_opts *o = p;
	char iv[32], of[32];

	if (o->offset >= o->interval) {
		lwk_format_duration(o->interval, iv, sizeof(iv));
		lwk_format_duration(o->offset, of, sizeof(of));
		snprintf(err, errlen,
			 "lwk: --sync-monitor: offset=%s is not below interval=%s; "
			 "offset must be smaller than the interval", of, iv);
		return -1;
	}
	return 0;
}

const struct lwk_option_grammar lwk_grammar_syncmon = {
	.name = "sync-monitor",
	.arginfo = "interval=D,...",
	.usage = "Sample the job on every node at the same instants, cheaply "
		 "(keys: interval offset dir source idle fullscan flush buffer; see slurm-lwk(1))",
	.keys = syncmon_keys,
	.size = sizeof(struct lwk_syncmon_opts),
	.defaults = syncmon_defaults,
	.check = syncmon_check,
};

/* ---- --contention-aware ---------------------------------------------- */

static const char *const objectives[] = { "antt", "stp", NULL };

static const struct lwk_kv_key casas_keys[] = {
	NUM("probe", LWK_KV_DURATION, struct lwk_casas_opts, probe, 10 * MSEC, 60 * SEC),
	NUM("min_dies", LWK_KV_UINT, struct lwk_casas_opts, min_dies, 1, LWK_MAX_DIES),
	NUM("max_dies", LWK_KV_UINT, struct lwk_casas_opts, max_dies, 0, LWK_MAX_DIES),
	TEXT("event", LWK_KV_NAME, struct lwk_casas_opts, event),
	ENUM("objective", struct lwk_casas_opts, objective, objectives),
	{ NULL, 0, 0, 0, 0, NULL, 0 }
};

static void casas_defaults(void *p)
{
	struct lwk_casas_opts *o = p;

	memset(o, 0, sizeof(*o));
	o->probe = 500 * MSEC;
	o->min_dies = 1;
	o->max_dies = 0;
	strcpy(o->event, "instructions");
	o->objective = LWK_OBJECTIVE_ANTT;
}

static int casas_check(const void *p, char *err, size_t errlen)
{
	const struct lwk_casas_opts *o = p;

	if (o->max_dies && o->max_dies < o->min_dies) {
		snprintf(err, errlen,
			 "lwk: --contention-aware: max_dies=%llu is below min_dies=%llu; "
			 "max_dies must be 0 (no limit) or at least min_dies",
			 (unsigned long long)o->max_dies, (unsigned long long)o->min_dies);
		return -1;
	}
	return 0;
}

const struct lwk_option_grammar lwk_grammar_casas = {
	.name = "contention-aware",
	.arginfo = "probe=D,...",
	.usage = "Share co-scheduled nodes by whole dies chosen from probed scalability "
		 "(keys: probe min_dies max_dies event objective; see slurm-lwk(1))",
	.keys = casas_keys,
	.size = sizeof(struct lwk_casas_opts),
	.defaults = casas_defaults,
	.check = casas_check,
};

/* ---- shared ------------------------------------------------------------ */

int lwk_option_parse(const struct lwk_option_grammar *g, const char *arg,
		     void *opts, char *err, size_t errlen)
{
	char what[64];

	snprintf(what, sizeof(what), "--%s", g->name);
	g->defaults(opts);
	if (lwk_kv_parse_list(g->keys, what, arg, opts, err, errlen) ||
	    g->check(opts, err, errlen)) {
		/* Nothing half-parsed survives a failure. */
		g->defaults(opts);
		return -1;
	}
	return 0;
}

size_t lwk_option_format(const struct lwk_option_grammar *g, const void *opts,
			 char *buf, size_t len)
{
	return lwk_kv_format(g->keys, opts, buf, len);
}

int lwk_options_combination_check(bool lwk, bool syncmon, bool casas,
				  char *err, size_t errlen)
{
	(void)syncmon; /* the monitor goes with either */
	if (lwk && casas) {
		snprintf(err, errlen,
			 "lwk: --lwk and --contention-aware cannot be used together: "
			 "--lwk takes whole nodes, --contention-aware shares nodes by dies; "
			 "choose one");
		return -1;
	}
	return 0;
}
