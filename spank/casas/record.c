/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: the record of a job on the node.  Its text (pure,
 * the parser is fuzzed), its file <state_root>/<node>/casas/<job>
 * (written whole or not at all) and the list of jobs that have one.
 */
#define _GNU_SOURCE
#include "casas/internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the record's text ---------------------------------------------------- */

/* Free text goes on one line: no newlines, no control characters. */
static void one_line(const char *in, char *out, size_t len)
{
	size_t i = 0;

	for (; *in && i + 1 < len; in++)
		out[i++] = (unsigned char)*in < 0x20 || *in == 0x7f ? ' ' : *in;
	out[i] = '\0';
}

size_t lwk_casas_record_format(const struct lwk_casas_record *r, char *buf, size_t len)
{
	char ac[2048], am[512], opts[512], ips[8192], dies[512], cpus[2048], mems[512];
	char why[256], counters[256], split[512], cg[768];
	/* ",<pid>:<start>:<step>": 1 + 10 + 1 + 20 + 1 + 31 each. */
	char launchers[LWK_CASAS_MAX_LAUNCHERS * 64 + 1] = "";
	size_t off = 0;

	for (unsigned int i = 0; i < r->nlaunchers && i < LWK_CASAS_MAX_LAUNCHERS &&
				 off < sizeof(launchers); i++)
		off += (size_t)snprintf(launchers + off, sizeof(launchers) - off, "%s%u:%llu:%s",
					i ? "," : "", r->launchers[i].pid, r->launchers[i].start,
					lwk_casas_step_name_ok(r->launchers[i].step) ?
						r->launchers[i].step : "");

	lwk_cpulist_format(&r->allowed_cpus, ac, sizeof(ac));
	lwk_cpulist_format(&r->allowed_mems, am, sizeof(am));
	lwk_option_format(&lwk_grammar_casas, &r->opts, opts, sizeof(opts));
	lwk_casas_curve_format(&r->curve, ips, sizeof(ips));
	lwk_cpulist_format(&r->dies, dies, sizeof(dies));
	lwk_cpulist_format(&r->cpus, cpus, sizeof(cpus));
	lwk_cpulist_format(&r->mems, mems, sizeof(mems));
	one_line(r->why, why, sizeof(why));
	one_line(r->counters, counters, sizeof(counters));
	one_line(r->split, split, sizeof(split));
	one_line(r->cgroup, cg, sizeof(cg));
	return (size_t)snprintf(buf, len,
				"job=%u\nstatus=%s\nwhy=%s\ncgroup=%s\nallowed_cpus=%s\n"
				"allowed_mems=%s\noptions=%s\ncounters=%s\nprobing=%u\n"
				"prober=%u:%llu\nticket=%llu\nlaunchers=%s\nips=%s\ndies=%s\n"
				"cpus=%s\nmems=%s\nmems_held=%llu\nsplit=%s\n",
				r->job, r->status, why, cg, ac, am, opts, counters, r->probing,
				r->prober_pid, r->prober_start, r->ticket, launchers, ips, dies, cpus,
				mems, r->mems_held, split);
}

static const char *const statuses[] = { "probing", "placed", "equal", "shared", "off", "refused", NULL };

static int parse_set(const char *v, struct lwk_cpuset *s)
{
	return lwk_cpulist_parse(v, LWK_MAX_CPUS, s);
}

/* The parser's steps, a field each: pure, so under any lock or none (the
 * probe thread and the step's main thread parse at the same time). */

/* job=: a job id, 1 to UINT32_MAX; *have_job when good.  0, or 1 when bad. */
static int parse_job(const char *v, struct lwk_casas_record *r, bool *have_job)
{
	char *end;
	unsigned long j;
	int bad;

	errno = 0;
	j = strtoul(v, &end, 10);
	bad = errno || end == v || *end || !isdigit((unsigned char)v[0]) || !j ||
	      j > UINT32_MAX;
	r->job = (uint32_t)j;
	*have_job = !bad;
	return bad;
}

/* status=: one of statuses[].  0, or 1 when bad. */
static int parse_status(const char *v, struct lwk_casas_record *r)
{
	int bad = 1;

	for (int i = 0; statuses[i]; i++)
		if (!strcmp(v, statuses[i]))
			bad = 0;
	if (!bad)
		snprintf(r->status, sizeof(r->status), "%s", v);
	return bad;
}

/* cgroup=: empty, or an absolute path without "/.." or "//" and no
 * control characters.  0, or 1 when bad. */
static int parse_cgroup(const char *v, struct lwk_casas_record *r)
{
	int bad = v[0] && (v[0] != '/' || strstr(v, "/..") || strstr(v, "//") ||
			   strlen(v) >= sizeof(r->cgroup));

	for (const char *c = v; *c && !bad; c++)
		bad = (unsigned char)*c < 0x20 || *c == 0x7f;
	if (!bad)
		snprintf(r->cgroup, sizeof(r->cgroup), "%s", v);
	return bad;
}

/* probing=: 0 to LWK_CASAS_MAX_POINTS dies.  0, or 1 when bad. */
static int parse_probing(const char *v, struct lwk_casas_record *r)
{
	char *end;
	unsigned long k;
	int bad;

	errno = 0;
	k = strtoul(v, &end, 10);
	bad = errno || end == v || *end || !isdigit((unsigned char)v[0]) ||
	      k > LWK_CASAS_MAX_POINTS;
	r->probing = (unsigned int)k;
	return bad;
}

/* ticket=, mems_held=: a decimal number.  0, or 1 when bad. */
static int parse_number(const char *v, unsigned long long *n)
{
	char *end;

	errno = 0;
	*n = strtoull(v, &end, 10);
	return errno || end == v || *end || !isdigit((unsigned char)v[0]);
}

/* prober= or, from a plugin before the list, launcher= (key):
 * "<pid>:<start>".  0, or 1 when bad. */
static int parse_process(const char *key, const char *v, struct lwk_casas_record *r)
{
	char *end, *end2;
	unsigned long pid;
	unsigned long long start;
	bool prober = key[0] == 'p';
	int bad;

	errno = 0;
	pid = strtoul(v, &end, 10);
	bad = errno || end == v || *end != ':' || !isdigit((unsigned char)v[0]) ||
	      pid > 0x7fffffffUL;
	if (!bad) {
		start = strtoull(end + 1, &end2, 10);
		bad = errno || end2 == end + 1 || *end2 || !isdigit((unsigned char)end[1]);
		if (prober) {
			r->prober_pid = (unsigned int)pid;
			r->prober_start = start;
		} else if (pid && !r->nlaunchers) {
			r->launchers[0] = (struct lwk_casas_launcher){ (unsigned int)pid, start, "" };
			r->nlaunchers = 1;
		}
	}
	return bad;
}

bool lwk_casas_step_name_ok(const char *step)
{
	size_t n = strlen(step);

	if (n <= 5 || n >= sizeof(((struct lwk_casas_launcher *)0)->step) ||
	    strncmp(step, "step_", 5))
		return false;
	for (size_t i = 5; i < n; i++)
		if (!isalnum((unsigned char)step[i]) && step[i] != '_')
			return false;
	return true;
}

/* launchers=: "<pid>:<start>:<step>,..." (step empty or a step cgroup's
 * name), at most LWK_CASAS_MAX_LAUNCHERS.  0, or 1 when bad. */
static int parse_launchers(const char *v, struct lwk_casas_record *r)
{
	r->nlaunchers = 0;
	while (*v) {
		struct lwk_casas_launcher *l = &r->launchers[r->nlaunchers];
		char *end;
		size_t n;

		if (r->nlaunchers == LWK_CASAS_MAX_LAUNCHERS || !isdigit((unsigned char)*v))
			return 1;
		errno = 0;
		{
			unsigned long pid = strtoul(v, &end, 10);

			if (errno || !pid || pid > 0x7fffffffUL || *end != ':' ||
			    !isdigit((unsigned char)end[1]))
				return 1;
			l->pid = (unsigned int)pid;
		}
		l->start = strtoull(end + 1, &end, 10);
		if (errno || *end != ':')
			return 1;
		v = end + 1;
		n = strcspn(v, ",");
		if (n >= sizeof(l->step))
			return 1;
		memcpy(l->step, v, n);
		l->step[n] = '\0';
		if (n && !lwk_casas_step_name_ok(l->step))
			return 1;
		r->nlaunchers++;
		v += n;
		if (*v == ',' && !*++v)
			return 1;
	}
	return 0;
}

/* options=: the --contention-aware options.  0, or nonzero when bad. */
static int parse_options(const char *v, struct lwk_casas_record *r)
{
	char e2[256];

	return lwk_option_parse(&lwk_grammar_casas, v, &r->opts, e2, sizeof(e2));
}

/* why=, counters=, split=: free text, as it is.  0. */
static int parse_text(const char *v, char *out, size_t len)
{
	snprintf(out, len, "%s", v);
	return 0;
}

/* One "key=value" line into r: 0, or nonzero when the value is bad. */
static int parse_field(const char *key, const char *v, struct lwk_casas_record *r,
		       bool *have_job)
{
	if (!strcmp(key, "job"))
		return parse_job(v, r, have_job);
	if (!strcmp(key, "status"))
		return parse_status(v, r);
	if (!strcmp(key, "why"))
		return parse_text(v, r->why, sizeof(r->why));
	if (!strcmp(key, "cgroup"))
		return parse_cgroup(v, r);
	if (!strcmp(key, "allowed_cpus"))
		return parse_set(v, &r->allowed_cpus);
	if (!strcmp(key, "allowed_mems"))
		return parse_set(v, &r->allowed_mems);
	if (!strcmp(key, "options"))
		return parse_options(v, r);
	if (!strcmp(key, "counters"))
		return parse_text(v, r->counters, sizeof(r->counters));
	if (!strcmp(key, "probing"))
		return parse_probing(v, r);
	if (!strcmp(key, "prober") || !strcmp(key, "launcher"))
		return parse_process(key, v, r);
	if (!strcmp(key, "launchers"))
		return parse_launchers(v, r);
	if (!strcmp(key, "ticket"))
		return parse_number(v, &r->ticket);
	if (!strcmp(key, "mems_held"))
		return parse_number(v, &r->mems_held);
	if (!strcmp(key, "ips"))
		return lwk_casas_curve_parse(v, &r->curve);
	if (!strcmp(key, "dies"))
		return parse_set(v, &r->dies);
	if (!strcmp(key, "cpus"))
		return parse_set(v, &r->cpus);
	if (!strcmp(key, "mems"))
		return parse_set(v, &r->mems);
	if (!strcmp(key, "split"))
		return parse_text(v, r->split, sizeof(r->split));
	/* Unknown keys: a newer writer; skip them. */
	return 0;
}

int lwk_casas_record_parse(const char *text, struct lwk_casas_record *r, char *err,
			   size_t errlen)
{
	/* On the stack: the probe thread and the step's main thread parse
	 * at the same time (a shared buffer mixed two jobs' records). */
	char line[16384];
	const char *p = text;
	bool have_job = false;

	memset(r, 0, sizeof(*r));
	lwk_option_parse(&lwk_grammar_casas, NULL, &r->opts, err, errlen);
	while (*p) {
		size_t n = strcspn(p, "\n");
		char *eq, *key, *v;

		if (n >= sizeof(line))
			return ERR("lwk: casas record: a line of %zu bytes", n);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if (!line[0])
			continue;
		eq = strchr(line, '=');
		if (!eq)
			return ERR("lwk: casas record: no '=' in '%.40s'", line);
		*eq = '\0';
		key = line;
		v = eq + 1;
		if (parse_field(key, v, r, &have_job))
			return ERR("lwk: casas record: bad %s", key);
	}
	if (!have_job || !r->status[0])
		return ERR("lwk: casas record: no job or no status");
	return 0;
}

/* ---- the record's file ---------------------------------------------------- */

void lwk_casas_dir(const struct lwk_node_roots *r, char *buf, size_t len)
{
	lwk_state_casas_dir(r->state_root, r->node, buf, len);
}

void lwk_casas_record_path(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/casas/%u", r->state_root, r->node, job);
}

int lwk_casas_make_dirs(const struct lwk_node_roots *r, char *err, size_t errlen)
{
	char dir[4096];

	if (r->state_root[0] != '/' || !r->node[0] || strchr(r->node, '/') || r->node[0] == '.')
		return ERR("lwk: state directory '%s' or node name '%s' is not usable",
			   r->state_root, r->node);
	if (lwk_mkdir_root(r->state_root, 0755))
		return ERR("lwk: cannot make %s: %s", r->state_root, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/%s", r->state_root, r->node);
	if (lwk_mkdir_root(dir, 0755))
		return ERR("lwk: cannot make %s: %s", dir, strerror(errno));
	lwk_casas_dir(r, dir, sizeof(dir));
	if (lwk_mkdir_root(dir, 0755))
		return ERR("lwk: cannot make %s: %s", dir, strerror(errno));
	return 0;
}

/* Write the record whole or not at all: a temporary file, then rename. */
static int store_text(const struct lwk_node_roots *r, uint32_t job, const char *text, size_t n,
		      char *err, size_t errlen)
{
	char path[4200], tmp[4300];
	int fd;
	ssize_t w;

	lwk_casas_record_path(r, job, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return ERR("lwk: cannot write %s: %s", tmp, strerror(errno));
	w = write(fd, text, n);
	if (w != (ssize_t)n || fsync(fd)) {
		int e = w < 0 || w == (ssize_t)n ? errno : EIO;

		close(fd);
		unlink(tmp);
		return ERR("lwk: cannot write %s: %s", path, strerror(e));
	}
	/* Closed once, whatever close says (the fd is gone either way). */
	if (close(fd) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return ERR("lwk: cannot write %s: %s", path, strerror(e));
	}
	return 0;
}

/* The record's text goes to the heap, never a static buffer: the probe
 * thread and the step's main thread store and load at the same time. */
enum { RECORD_TEXT = 32768 };

int lwk_casas_store(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
		    char *err, size_t errlen)
{
	char *text = malloc(RECORD_TEXT);
	size_t n;
	int rc;

	if (!text)
		return ERR("lwk: casas record of job %u: out of memory", rec->job);
	n = lwk_casas_record_format(rec, text, RECORD_TEXT);
	rc = n >= RECORD_TEXT ? ERR("lwk: casas record of job %u does not fit", rec->job)
			      : store_text(r, rec->job, text, n, err, errlen);
	free(text);
	return rc;
}

int lwk_casas_load(const struct lwk_node_roots *r, uint32_t job, struct lwk_casas_record *rec)
{
	char path[4200], err[256], *text;
	int fd, rc = -1;
	ssize_t n;

	lwk_casas_record_path(r, job, path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	text = malloc(RECORD_TEXT);
	n = text ? read(fd, text, RECORD_TEXT - 1) : -1;
	close(fd);
	if (n >= 0) {
		text[n] = '\0';
		if (lwk_casas_record_parse(text, rec, err, sizeof(err)) == 0 && rec->job == job)
			rc = 1;
	}
	free(text);
	return rc;
}

/* The jobs with a record here, at most max. */
int lwk_casas_record_jobs(const struct lwk_node_roots *r, uint32_t *jobs, int max)
{
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int n = 0;

	lwk_casas_dir(r, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char *end;
		unsigned long j = strtoul(e->d_name, &end, 10);

		if (isdigit((unsigned char)e->d_name[0]) && !*end && j && j <= UINT32_MAX)
			jobs[n++] = (uint32_t)j;
	}
	closedir(d);
	/* By job id: the order of arrival, and the same order every time. */
	for (int a = 1; a < n; a++)
		for (int b = a; b > 0 && jobs[b - 1] > jobs[b]; b--) {
			uint32_t x = jobs[b];

			jobs[b] = jobs[b - 1];
			jobs[b - 1] = x;
		}
	return n;
}
