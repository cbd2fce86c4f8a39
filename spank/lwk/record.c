/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition's state file as text, and what its tasks see: pure
 * (the parser is fuzzed).  See lwk/part.h. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lwk/part_int.h"

/* ---- the state file, as text (pure) ----------------------------------- */

/*
 * One line per fact, in the order things were done:
 *
 *   job 42
 *   backend linux
 *   app_cpus 2-7            os_cpus 0-1            mem_nodes 0-1
 *   page_kb 2048            node_mem 0 314572800   deleg 134217728 100000 100000
 *   irq 24 0-7 0-3          (an IRQ moved: its old affinity, the one written)
 *   irqs 12 3               (moved, refused)
 *   huge 0 150 150          (node, pages wanted, pages added)
 *   cgroup /slurm-lwk/node1/job_42/app   (made by the plugin)
 *   ready
 *   xcpus /system.slice 4-7 (App CPUs added to cpuset.cpus.exclusive)
 *   xpart, appcg, xfail <path> (the isolated partition: lwk/xlines.c)
 */

static void put(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(*o < len ? buf + *o : NULL, *o < len ? len - *o : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		*o += (size_t)w;
}

/* "<key><sep><list>\n"; an empty list is "-" in the state, "" for tasks. */
static void put_list(char *buf, size_t len, size_t *o, const char *key, char sep,
		     const struct lwk_cpuset *s)
{
	char list[4096];

	lwk_cpulist_format(s, list, sizeof(list));
	put(buf, len, o, "%s%c%s\n", key, sep, list[0] || sep == '=' ? list : "-");
}

/* The plan's lines (what setup decided, before it does anything). */
size_t lwk_part_format(const struct lwk_part *p, char *buf, size_t len)
{
	size_t o = 0;

	if (len)
		buf[0] = '\0';
	put(buf, len, &o, "job %" PRIu32 "\nbackend %s\n", p->job, p->backend);
	if (p->mcexec[0])
		put(buf, len, &o, "mcexec %s\n", p->mcexec);
	put_list(buf, len, &o, "app_cpus", ' ', &p->plan.app_cpus);
	put_list(buf, len, &o, "os_cpus", ' ', &p->plan.os_cpus);
	put_list(buf, len, &o, "mem_nodes", ' ', &p->plan.app_nodes);
	put(buf, len, &o, "page_kb %lu\n", p->plan.page_kb);
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		if (p->plan.node_mem[n])
			put(buf, len, &o, "node_mem %d %" PRIu64 "\n", n, p->plan.node_mem[n]);
	put(buf, len, &o, "deleg %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", p->plan.deleg_mem,
	    p->plan.deleg_quota_us, p->plan.deleg_period_us);
	return o;
}

static int parse_list(const char *v, unsigned int max, struct lwk_cpuset *s)
{
	return lwk_cpulist_parse(strcmp(v, "-") ? v : "", max, s);
}

/* A line of the plan (what setup decided): 0, -1 with err, or 1 when key
 * is none of the plan's. */
static int parse_plan_fact(const char *l, const char *key, const char *v, unsigned int lineno,
			   struct lwk_part *p, char *err, size_t errlen)
{
	unsigned long long a, b, c;
	int node;

	if (!strcmp(key, "job")) {
		if (sscanf(v, "%llu", &a) != 1 || a > UINT32_MAX)
			return ERR("lwk: state line %u: bad job", lineno);
		p->job = (uint32_t)a;
	} else if (!strcmp(key, "backend")) {
		if (strcmp(v, "linux") && strcmp(v, "mckernel"))
			return ERR("lwk: state line %u: bad backend", lineno);
		snprintf(p->backend, sizeof(p->backend), "%s", v);
	} else if (!strcmp(key, "mcexec")) {
		if (v[0] != '/' || strlen(v) >= sizeof(p->mcexec))
			return ERR("lwk: state line %u: bad mcexec", lineno);
		snprintf(p->mcexec, sizeof(p->mcexec), "%s", v);
	} else if (!strcmp(key, "app_cpus") || !strcmp(key, "os_cpus")) {
		if (parse_list(v, LWK_MAX_CPUS,
			       key[0] == 'a' ? &p->plan.app_cpus : &p->plan.os_cpus))
			return ERR("lwk: state line %u: bad CPU list", lineno);
	} else if (!strcmp(key, "mem_nodes")) {
		if (parse_list(v, LWK_MAX_NUMA, &p->plan.app_nodes))
			return ERR("lwk: state line %u: bad node list", lineno);
	} else if (!strcmp(key, "page_kb")) {
		if (sscanf(v, "%llu", &a) != 1 || (a && a != 2048 && a != 1048576))
			return ERR("lwk: state line %u: bad page size", lineno);
		p->plan.page_kb = (unsigned long)a;
	} else if (!strcmp(key, "node_mem")) {
		if (sscanf(l, "node_mem %d %llu", &node, &a) != 2 || node < 0 ||
		    node >= LWK_MAX_NUMA)
			return ERR("lwk: state line %u: bad node_mem", lineno);
		p->plan.node_mem[node] = a;
	} else if (!strcmp(key, "deleg")) {
		if (sscanf(l, "deleg %llu %llu %llu", &a, &b, &c) != 3)
			return ERR("lwk: state line %u: bad deleg", lineno);
		p->plan.deleg_mem = a;
		p->plan.deleg_quota_us = b;
		p->plan.deleg_period_us = c;
	} else {
		return 1;
	}
	return 0;
}

/* A line of what setup did, or one of the teardown's: 0, or -1 with err
 * (also for a key nobody knows). */
static int parse_done_fact(const char *l, const char *key, const char *v, unsigned int lineno,
			   struct lwk_part *p, char *err, size_t errlen)
{
	unsigned long long a, b;
	int node;

	if (!strcmp(key, "mck")) {
		/* "booting" too: a boot cut short may have booted. */
		p->mck_booted = !strcmp(v, "booted") || !strcmp(v, "booting");
	} else if (!strcmp(key, "irqs")) {
		if (sscanf(l, "irqs %llu %llu", &a, &b) != 2 || a > UINT32_MAX || b > UINT32_MAX)
			return ERR("lwk: state line %u: bad irqs", lineno);
		p->irq_moved = (unsigned int)a;
		p->irq_refused = (unsigned int)b;
	} else if (!strcmp(key, "huge")) {
		if (sscanf(l, "huge %d %llu %llu", &node, &a, &b) != 3 || node < 0 ||
		    node >= LWK_MAX_NUMA || a > LONG_MAX || b > a)
			return ERR("lwk: state line %u: bad huge", lineno);
		p->huge_wanted[node] = (long)a;
		p->huge_added[node] = (long)b;
		p->huge_before[node] = -1; /* the result is known */
	} else if (!strcmp(key, "hugeask")) {
		if (sscanf(l, "hugeask %d %llu %llu", &node, &a, &b) != 3 || node < 0 ||
		    node >= LWK_MAX_NUMA || a > LONG_MAX || b > LONG_MAX)
			return ERR("lwk: state line %u: bad hugeask", lineno);
		p->huge_before[node] = (long)a;
		p->huge_wanted[node] = (long)b;
	} else if (strcmp(key, "irq") && strcmp(key, "cgroup") && strcmp(key, "jobcg") &&
		   strcmp(key, "memcharge") && strcmp(key, "xcpus") && strcmp(key, "xpart") &&
		   strcmp(key, "appcg") && strcmp(key, "xfail") && strcmp(key, "irqbalance")) {
		/* irq, irqbalance, cgroup, jobcg, memcharge and the isolated
		 * partition's lines (lwk/xlines.c) are the teardown's. */
		return ERR("lwk: state line %u: unknown key '%s'", lineno, key);
	}
	return 0;
}

int lwk_part_parse(const char *text, struct lwk_part *p, char *err, size_t errlen)
{
	const char *line = text;
	unsigned int lineno = 0;

	memset(p, 0, sizeof(*p));
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		p->huge_before[n] = -1;
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[4200], key[16], v[4096];
		int k, rc;

		lineno++;
		if (n >= sizeof(l))
			return ERR("lwk: state line %u is too long", lineno);
		memcpy(l, line, n);
		l[n] = '\0';
		line += n + (nl ? 1 : 0);
		if (!l[0])
			continue;
		k = sscanf(l, "%15s %4095s", key, v);
		if (!strcmp(l, "ready")) {
			p->ready = true;
			continue;
		}
		if (k != 2)
			return ERR("lwk: state line %u is not 'key value': %.40s", lineno, l);
		rc = parse_plan_fact(l, key, v, lineno, p, err, errlen);
		if (rc == 1)
			rc = parse_done_fact(l, key, v, lineno, p, err, errlen);
		if (rc)
			return -1;
	}
	return 0;
}

/*
 * What the state says, line by line: a torn or damaged line is skipped,
 * not a reason to undo nothing.  The job is the caller's (the directory
 * the state is in).
 */
void lwk_part_parse_lenient(const char *state, struct lwk_part *p, char *log, size_t loglen)
{
	char err[512];

	if (lwk_part_parse(state, p, err, sizeof(err)) == 0)
		return;
	lwk_log_append(log, loglen, "%s (reading the rest line by line)", err);
	memset(p, 0, sizeof(*p));
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		p->huge_before[n] = -1;
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char one[4200];
		struct lwk_part q;

		if (len < sizeof(one)) {
			memcpy(one, line, len);
			one[len] = '\0';
			if (lwk_part_parse(one, &q, err, sizeof(err)) == 0) {
				/* The plan and the flags, for the tasks and teardown. */
				if (q.job)
					p->job = q.job;
				if (q.backend[0])
					memcpy(p->backend, q.backend, sizeof(p->backend));
				if (q.mcexec[0])
					memcpy(p->mcexec, q.mcexec, sizeof(p->mcexec));
				if (lwk_cpuset_count(&q.plan.app_cpus))
					p->plan.app_cpus = q.plan.app_cpus;
				if (lwk_cpuset_count(&q.plan.os_cpus))
					p->plan.os_cpus = q.plan.os_cpus;
				if (lwk_cpuset_count(&q.plan.app_nodes))
					p->plan.app_nodes = q.plan.app_nodes;
				if (q.plan.deleg_period_us) {
					p->plan.deleg_mem = q.plan.deleg_mem;
					p->plan.deleg_quota_us = q.plan.deleg_quota_us;
					p->plan.deleg_period_us = q.plan.deleg_period_us;
				}
				for (int n = 0; n < LWK_MAX_NUMA; n++)
					if (q.plan.node_mem[n])
						p->plan.node_mem[n] = q.plan.node_mem[n];
				p->ready |= q.ready;
				if (q.plan.page_kb)
					p->plan.page_kb = q.plan.page_kb;
				p->mck_booted |= q.mck_booted;
				for (int n = 0; n < LWK_MAX_NUMA; n++)
					if (q.huge_wanted[n] || q.huge_before[n] >= 0) {
						p->huge_wanted[n] = q.huge_wanted[n];
						p->huge_added[n] = q.huge_added[n];
						p->huge_before[n] = q.huge_before[n];
					}
			}
		}
		line += len + (nl ? 1 : 0);
	}
}

/* ---- what the tasks see (pure) ---------------------------------------- */

size_t lwk_part_env(const struct lwk_part *p, enum lwk_part_role role, const char *isolation,
		    char *buf, size_t len)
{
	size_t o = 0;
	char mem[1024];
	bool huge = false;

	if (len)
		buf[0] = '\0';
	put_list(buf, len, &o, "SLURM_LWK_APP_CPUS", '=', &p->plan.app_cpus);
	put_list(buf, len, &o, "SLURM_LWK_OS_CPUS", '=', &p->plan.os_cpus);
	put_list(buf, len, &o, "SLURM_LWK_MEM_NODES", '=', &p->plan.app_nodes);
	put(buf, len, &o, "SLURM_LWK_BACKEND=%s\n", p->backend);
	if (p->mcexec[0])
		put(buf, len, &o, "SLURM_LWK_MCEXEC=%s\n", p->mcexec);
	put(buf, len, &o, "SLURM_LWK_ROLE=%s\n", role == LWK_ROLE_APP ? "app" : "delegation");
	if (isolation && *isolation)
		put(buf, len, &o, "SLURM_LWK_ISOLATION=%s\n", isolation);
	if (lwk_plan_mem_arg(&p->plan, mem, sizeof(mem)) == 0 && mem[0])
		put(buf, len, &o, "SLURM_LWK_MEM=%s\n", mem);
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		huge |= p->huge_wanted[n] > 0;
	if (huge) {
		/* "2048kB:0=150/150,1=120/150": pages got/asked per node. */
		const char *sep = ":";

		put(buf, len, &o, "SLURM_LWK_HUGEPAGES=%lukB", p->plan.page_kb);
		for (int n = 0; n < LWK_MAX_NUMA; n++) {
			if (!p->huge_wanted[n])
				continue;
			put(buf, len, &o, "%s%d=%ld/%ld", sep, n, p->huge_added[n], p->huge_wanted[n]);
			sep = ",";
		}
		put(buf, len, &o, "\n");
	}
	return o;
}
