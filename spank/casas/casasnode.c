/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include "casas/casasnode.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "node/perfcount.h"
#include "node/procfs.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

#define say lwk_log_append

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
				"prober=%u:%llu\nlauncher=%u:%llu\nips=%s\ndies=%s\ncpus=%s\nmems=%s\nsplit=%s\n",
				r->job, r->status, why, cg, ac, am, opts, counters, r->probing,
				r->prober_pid, r->prober_start, r->launcher_pid, r->launcher_start, ips, dies,
				cpus, mems, split);
}

static const char *const statuses[] = { "probing", "placed", "equal", "shared", "off", NULL };

static int parse_set(const char *v, struct lwk_cpuset *s)
{
	return lwk_cpulist_parse(v, LWK_MAX_CPUS, s);
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
		int bad = 0;

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
		if (!strcmp(key, "job")) {
			char *end;
			unsigned long j;

			errno = 0;
			j = strtoul(v, &end, 10);
			bad = errno || end == v || *end || !isdigit((unsigned char)v[0]) || !j ||
			      j > UINT32_MAX;
			r->job = (uint32_t)j;
			have_job = !bad;
		} else if (!strcmp(key, "status")) {
			bad = 1;
			for (int i = 0; statuses[i]; i++)
				if (!strcmp(v, statuses[i]))
					bad = 0;
			if (!bad)
				snprintf(r->status, sizeof(r->status), "%s", v);
		} else if (!strcmp(key, "why")) {
			snprintf(r->why, sizeof(r->why), "%s", v);
		} else if (!strcmp(key, "cgroup")) {
			bad = v[0] && (v[0] != '/' || strstr(v, "/..") || strstr(v, "//") ||
				       strlen(v) >= sizeof(r->cgroup));
			for (const char *c = v; *c && !bad; c++)
				bad = (unsigned char)*c < 0x20 || *c == 0x7f;
			if (!bad)
				snprintf(r->cgroup, sizeof(r->cgroup), "%s", v);
		} else if (!strcmp(key, "allowed_cpus")) {
			bad = parse_set(v, &r->allowed_cpus);
		} else if (!strcmp(key, "allowed_mems")) {
			bad = parse_set(v, &r->allowed_mems);
		} else if (!strcmp(key, "options")) {
			char e2[256];

			bad = lwk_option_parse(&lwk_grammar_casas, v, &r->opts, e2, sizeof(e2));
		} else if (!strcmp(key, "counters")) {
			snprintf(r->counters, sizeof(r->counters), "%s", v);
		} else if (!strcmp(key, "probing")) {
			char *end;
			unsigned long k;

			errno = 0;
			k = strtoul(v, &end, 10);
			bad = errno || end == v || *end || !isdigit((unsigned char)v[0]) ||
			      k > LWK_CASAS_MAX_POINTS;
			r->probing = (unsigned int)k;
		} else if (!strcmp(key, "prober") || !strcmp(key, "launcher")) {
			char *end, *end2;
			unsigned long pid;
			unsigned long long start;
			bool prober = key[0] == 'p';

			errno = 0;
			pid = strtoul(v, &end, 10);
			bad = errno || end == v || *end != ':' || !isdigit((unsigned char)v[0]) ||
			      pid > 0x7fffffffUL;
			if (!bad) {
				start = strtoull(end + 1, &end2, 10);
				bad = errno || end2 == end + 1 || *end2 ||
				      !isdigit((unsigned char)end[1]);
				*(prober ? &r->prober_pid : &r->launcher_pid) = (unsigned int)pid;
				*(prober ? &r->prober_start : &r->launcher_start) = start;
			}
		} else if (!strcmp(key, "ips")) {
			bad = lwk_casas_curve_parse(v, &r->curve);
		} else if (!strcmp(key, "dies")) {
			bad = parse_set(v, &r->dies);
		} else if (!strcmp(key, "cpus")) {
			bad = parse_set(v, &r->cpus);
		} else if (!strcmp(key, "mems")) {
			bad = parse_set(v, &r->mems);
		} else if (!strcmp(key, "split")) {
			snprintf(r->split, sizeof(r->split), "%s", v);
		}
		/* Unknown keys: a newer writer; skip them. */
		if (bad)
			return ERR("lwk: casas record: bad %s", key);
	}
	if (!have_job || !r->status[0])
		return ERR("lwk: casas record: no job or no status");
	return 0;
}

/* ---- where things are ----------------------------------------------------- */

/* The path of line (text after the second ':'), cut after "/job_<job>"
 * when it names that job: its length, or 0. */
static size_t job_prefix(const char *path, size_t n, const char *want)
{
	size_t wl = strlen(want);

	for (size_t h = 0; h + wl <= n; h++)
		if (!strncmp(path + h, want, wl) && (h + wl == n || path[h + wl] == '/'))
			return h + wl;
	return 0;
}

int lwk_casas_job_cgroup(const char *proc_cgroup, uint32_t job, char *path, size_t len)
{
	char want[32];
	const char *p = proc_cgroup;
	int best = 0; /* 3: v2 or v1 cpuset line; 1: another v1 line */

	snprintf(want, sizeof(want), "/job_%u", job);
	while (*p) {
		size_t n = strcspn(p, "\n"), plen;
		const char *c1 = memchr(p, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - p)) : NULL;

		if (c2 && (plen = job_prefix(c2 + 1, (size_t)(p + n - c2 - 1), want)) && plen < len) {
			/* v2 "0::/path"; v1 "N:ctrl,ctrl:/path".  Slurm uses one
			 * path in every v1 hierarchy, and slurmstepd may not be in
			 * the cpuset one yet when the step starts: any v1 line
			 * will do, the cpuset one is best. */
			bool v2 = c1 == p + 1 && p[0] == '0' && c2 == c1 + 1;
			bool cpuset = false;
			int rank;

			for (const char *c = c1 + 1; c < c2;) {
				size_t w = strcspn(c, ",:");

				if (w == 6 && !strncmp(c, "cpuset", 6))
					cpuset = true;
				c += w + 1;
			}
			rank = v2 || cpuset ? 3 : 1;
			if (rank > best) {
				memcpy(path, c2 + 1, plen);
				path[plen] = '\0';
				best = rank;
			}
		}
		p += n + (p[n] == '\n');
	}
	return best ? 0 : -1;
}

static void casas_dir(const struct lwk_node_roots *r, char *buf, size_t len)
{
	lwk_state_casas_dir(r->state_root, r->node, buf, len);
}

void lwk_casas_record_path(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/casas/%u", r->state_root, r->node, job);
}

static int make_dirs(const struct lwk_node_roots *r, char *err, size_t errlen)
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
	casas_dir(r, dir, sizeof(dir));
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
	if (w != (ssize_t)n || fsync(fd) || close(fd) || rename(tmp, path)) {
		int e = errno;

		if (w != (ssize_t)n)
			close(fd);
		unlink(tmp);
		return ERR("lwk: cannot write %s: %s", path, strerror(e));
	}
	return 0;
}

/* The record's text goes to the heap, never a static buffer: the probe
 * thread and the step's main thread store and load at the same time. */
enum { RECORD_TEXT = 32768 };

static int store(const struct lwk_node_roots *r, const struct lwk_casas_record *rec, char *err,
		 size_t errlen)
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
static int record_jobs(const struct lwk_node_roots *r, uint32_t *jobs, int max)
{
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int n = 0;

	casas_dir(r, dir, sizeof(dir));
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

/* The job's CPUs (mems false) or memory nodes on its cgroup tree. */
static int apply(const struct lwk_node_roots *r, const struct lwk_casas_record *rec, bool mems,
		 const struct lwk_cpuset *set, char *err, size_t errlen)
{
	struct lwk_cgroup cg;

	if (!rec->cgroup[0])
		return ERR("lwk: job %u has no cgroup to place", rec->job);
	if (lwk_cgroup_init(&cg, r->cgroup_root, rec->cgroup, err, errlen))
		return -1;
	return (mems ? lwk_cgroup_set_mems_tree : lwk_cgroup_set_cpus_tree)(&cg, set, err, errlen);
}

/*
 * Memory follows the CPUs, after the node lock is released: a new
 * cpuset.mems on v2 migrates the job's memory and waits for every CPU,
 * which a busy node can make take long (tens of seconds measured on the
 * TCG guests); the split itself must not wait for it.  Under its own
 * lock, each job's cgroup gets the memory nodes its record has now (a
 * later decision's, if one came meanwhile).
 */
/* Every cpuset.mems write holds it (bind_memory, reapply): two writers
 * could otherwise leave an older decision's nodes last.  The fd, or -1. */
static int mems_lock(const struct lwk_node_roots *r)
{
	char path[4200];
	int fd;

	casas_dir(r, path, sizeof(path));
	strncat(path, "/.mems.lock", sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	return fd;
}

static void bind_memory(const struct lwk_node_roots *r, char *log, size_t loglen)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	char err[512];
	int fd = mems_lock(r), n;

	if (fd < 0)
		return;
	n = record_jobs(r, ids, LWK_CASAS_MAX_JOBS);
	for (int i = 0; i < n; i++) {
		struct lwk_casas_record rec;

		if (lwk_casas_load(r, ids[i], &rec) != 1 || !strcmp(rec.status, "off") ||
		    !lwk_cpuset_count(&rec.mems))
			continue;
		if (apply(r, &rec, true, &rec.mems, err, sizeof(err)))
			say(log, loglen, "lwk: contention-aware: job %u: memory nodes not bound: %s",
			    rec.job, err);
	}
	close(fd);
}

static void set_text(char *out, size_t len, const struct lwk_cpuset *s)
{
	if (lwk_cpulist_format(s, out, len) >= len && len > 4)
		strcpy(out + len - 4, "...");
}

/* The start time of process pid (clock ticks after boot, field 22 of
 * <proc>/<pid>/stat): 0 when it is gone.  With the pid it names one
 * process for good: a pid reused later starts later. */
static unsigned long long proc_start(const char *proc, unsigned int pid)
{
	char path[512], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/stat", proc, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command's ")" (it may hold spaces and parentheses):
	 * state is field 3, starttime field 22. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

/* The probe holding rec (its prober) has ended without giving the hold
 * back: its slurmstepd was killed, or the step ended between the join
 * and the probe.  A record of an older plugin (no prober) is trusted. */
static bool probe_is_gone(const struct lwk_node_roots *r, const struct lwk_casas_record *rec)
{
	return rec->probing && rec->prober_pid &&
	       proc_start(r->proc, rec->prober_pid) != rec->prober_start;
}

/*
 * Which recorded jobs are gone, decided before the node lock is taken:
 * alive() may ask slurmctld (up to MessageTimeout each when it is down),
 * and --lwk setups, joins, reapplies and epilogs on the node wait for
 * that lock.  A record written meanwhile is not in the list: alive.
 */
struct gone_jobs {
	int n;
	uint32_t ids[LWK_CASAS_MAX_JOBS];
};

static void find_gone(const struct lwk_node_roots *r, bool (*alive)(uint32_t), struct gone_jobs *g)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	int n = alive ? record_jobs(r, ids, LWK_CASAS_MAX_JOBS) : 0;

	g->n = 0;
	for (int i = 0; i < n; i++)
		if (!alive(ids[i]))
			g->ids[g->n++] = ids[i];
}

static bool is_gone(const struct gone_jobs *g, uint32_t job)
{
	for (int i = 0; g && i < g->n; i++)
		if (g->ids[i] == job)
			return true;
	return false;
}

/*
 * The split of every contention-aware job on the node, under the node
 * lock.  Gone jobs (found before the lock) are dropped first.  Each job's record gets its dies;
 * its cgroup's CPUs are rewritten where they changed.
 */
static int replan_locked(const struct lwk_node_roots *r, const struct gone_jobs *g, char *log,
			 size_t loglen)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	struct lwk_casas_record *recs = NULL;
	struct lwk_casas_job *jobs = NULL;
	struct lwk_cpuset *out = NULL;
	struct lwk_casas_decision d;
	struct lwk_topology *t = NULL;
	int idx[LWK_CASAS_MAX_JOBS], n = 0, rc = -1;
	unsigned int nj = 0;
	char err[512], line[512];
	enum lwk_objective objective = LWK_OBJECTIVE_STP;
	bool probing = false;
	int nids = record_jobs(r, ids, LWK_CASAS_MAX_JOBS);

	if (!nids)
		return 0;
	recs = calloc((size_t)nids, sizeof(*recs));
	jobs = calloc((size_t)nids, sizeof(*jobs));
	out = calloc((size_t)nids, sizeof(*out));
	if (!recs || !jobs || !out)
		goto done;
	t = lwk_topology_read(r->sysfs, err, sizeof(err));
	if (!t) {
		say(log, loglen, "lwk: contention-aware: %s", err);
		goto done;
	}
	for (int i = 0; i < nids; i++) {
		struct lwk_casas_record *rec = &recs[n];
		char path[4200];

		if (lwk_casas_load(r, ids[i], rec) != 1) {
			/* Root writes records whole (rename): only a damaged
			 * disk or a hand gets here.  Kept while its job runs. */
			bool gone = is_gone(g, ids[i]);

			if (gone) {
				lwk_casas_record_path(r, ids[i], path, sizeof(path));
				unlink(path);
			}
			say(log, loglen, "lwk: contention-aware: the record of job %u is unreadable%s", ids[i],
			    gone ? "; its job is gone: removed" : "");
			continue;
		}
		if (is_gone(g, ids[i])) {
			lwk_casas_record_path(r, ids[i], path, sizeof(path));
			unlink(path);
			say(log, loglen, "lwk: contention-aware: job %u is gone: its dies return to the others",
			    ids[i]);
			continue;
		}
		n++;
		if (probe_is_gone(r, rec)) {
			say(log, loglen, "lwk: contention-aware: job %u: its probe (process %u) is gone: no longer held",
			    rec->job, rec->prober_pid);
			rec->probing = 0;
			rec->prober_pid = 0;
			rec->prober_start = 0;
		}
		if (rec->launcher_pid && proc_start(r->proc, rec->launcher_pid) != rec->launcher_start) {
			/* Its step died while starting its tasks: narrowed again below. */
			rec->launcher_pid = 0;
			rec->launcher_start = 0;
			memset(&rec->cpus, 0, sizeof(rec->cpus));
		}
		if (!strcmp(rec->status, "off"))
			continue;
		idx[nj] = n - 1;
		memset(&jobs[nj], 0, sizeof(jobs[nj]));
		jobs[nj].id = rec->job;
		jobs[nj].min_dies = (unsigned int)rec->opts.min_dies;
		jobs[nj].max_dies = (unsigned int)rec->opts.max_dies;
		jobs[nj].curve = rec->curve;
		jobs[nj].forced = (int)rec->probing;
		lwk_casas_whole_dies(t, &rec->allowed_cpus, &jobs[nj].allowed);
		jobs[nj].current = rec->dies;
		/* STP only when every job asked for it: ANTT is the fair one. */
		if (rec->opts.objective != LWK_OBJECTIVE_STP)
			objective = LWK_OBJECTIVE_ANTT;
		nj++;
	}
	if (!nj) {
		rc = 0;
		goto done;
	}
	/* A probe never takes the others' last die: its count shrinks to
	 * what leaves each of them its minimum (the probe then stops). */
	for (unsigned int k = 0; k < nj; k++) {
		unsigned int others = 0;

		if (jobs[k].forced <= 0)
			continue;
		for (unsigned int o = 0; o < nj; o++)
			if (o != k)
				others += jobs[o].forced > 0 ? (unsigned int)jobs[o].forced
							      : jobs[o].min_dies > 1 ? jobs[o].min_dies : 1;
		if ((unsigned int)jobs[k].forced + others > t->ndies)
			jobs[k].forced = others < t->ndies ? (int)(t->ndies - others) : 1;
	}
	if (lwk_casas_split(jobs, nj, t->ndies, objective, &d, err, sizeof(err))) {
		say(log, loglen, "%s", err);
		goto done;
	}
	lwk_casas_fill_idle(jobs, nj, t->ndies, &d);
	lwk_casas_place(t, jobs, nj, d.count, out);
	for (unsigned int k = 0; k < nj; k++)
		if (jobs[k].forced > 0)
			probing = true;
	if (d.method == LWK_CASAS_SPLIT)
		snprintf(line, sizeof(line), "%u job(s) on %u dies by %s: estimated ANTT %.3f, STP %.3f",
			 nj, t->ndies, objective == LWK_OBJECTIVE_STP ? "STP" : "ANTT", d.antt, d.stp);
	else
		snprintf(line, sizeof(line), "%u job(s) on %u dies: %s", nj, t->ndies, d.why);
	say(log, loglen, "lwk: contention-aware split: %s", line);
	rc = 0;
	for (unsigned int k = 0; k < nj; k++) {
		struct lwk_casas_record *rec = &recs[idx[k]];
		struct lwk_cpuset cpus, mems;
		char ds[256], cs[512], ms[128];
		bool split = lwk_cpuset_count(&out[k]) > 0;

		if (split) {
			lwk_casas_dies_cpus(t, &out[k], &cpus, &mems);
			/* While a probe runs only CPUs move: a new cpuset.mems
			 * migrates the job's memory, once per decision is enough. */
			if (probing)
				mems = lwk_cpuset_count(&rec->mems) ? rec->mems : rec->allowed_mems;
		} else {
			/* Not split (shared, or no die of its own left): back to
			 * what Slurm gave it. */
			cpus = rec->allowed_cpus;
			mems = rec->allowed_mems;
		}
		/* A cgroup not there yet (v1: Slurm makes the step's cpuset
		 * after the step starts) gets its CPUs from the record when the
		 * step's tasks start (lwk_casas_reapply): the decision stands. */
		/* A step starting its tasks keeps all of Slurm's CPUs meanwhile
		 * (lwk_casas_launch); the decision is written when it is done. */
		if (rec->launcher_pid) {
			if (apply(r, rec, false, &rec->allowed_cpus, err, sizeof(err)))
				say(log, loglen, "lwk: contention-aware: job %u: %s", rec->job, err);
		} else if (!lwk_cpuset_equal(&cpus, &rec->cpus) &&
			   apply(r, rec, false, &cpus, err, sizeof(err))) {
			say(log, loglen, "lwk: contention-aware: job %u: %s", rec->job, err);
			rc = -1;
		}
		rec->dies = split ? out[k] : (struct lwk_cpuset){ { 0 } };
		rec->cpus = cpus;
		rec->mems = mems;
		if (rec->probing)
			snprintf(rec->status, sizeof(rec->status), "probing");
		else if (!split)
			snprintf(rec->status, sizeof(rec->status), "shared");
		else
			snprintf(rec->status, sizeof(rec->status), "%s",
				 d.method == LWK_CASAS_SPLIT ? "placed" : "equal");
		rec->why[0] = '\0';
		if (!split || d.method != LWK_CASAS_SPLIT)
			snprintf(rec->why, sizeof(rec->why), "%s",
				 split ? d.why : d.method == LWK_CASAS_SHARED ? d.why
								      : "no whole die of its own left");
		snprintf(rec->split, sizeof(rec->split), "%s", line);
		set_text(ds, sizeof(ds), &rec->dies);
		set_text(cs, sizeof(cs), &cpus);
		set_text(ms, sizeof(ms), &mems);
		if (store(r, rec, err, sizeof(err)))
			say(log, loglen, "%s", err);
		say(log, loglen, "lwk: contention-aware: job %u: %s, dies %s, CPUs %s, memory nodes %s",
		    rec->job, rec->status, ds[0] ? ds : "none", cs, ms);
	}
done:
	lwk_topology_free(t);
	free(recs);
	free(jobs);
	free(out);
	return rc;
}

int lwk_casas_join(const struct lwk_node_roots *r, struct lwk_casas_record *rec,
		   bool (*alive)(uint32_t), char *log, size_t loglen, char *err, size_t errlen)
{
	struct lwk_casas_record have;
	struct gone_jobs gone;
	uint32_t lwk_owner = 0;
	int nfd, rc;

	if (make_dirs(r, err, errlen))
		return -1;
	find_gone(r, alive, &gone);
	{
		/* Another live job's --lwk partition owns the node's CPUs
		 * and IRQs: no die split next to it.  Asked before the node
		 * lock, as liveness may ask slurmctld; one set up meanwhile
		 * sees this job's record under the lock and refuses. */
		uint32_t ids[256];
		int n = lwk_state_jobs(r->state_root, r->node, ids, 256);

		for (int i = 0; i < n && !lwk_owner; i++) {
			char st[4200];

			snprintf(st, sizeof(st), "%s/%s/%u/lwk.state", r->state_root, r->node, ids[i]);
			if (ids[i] != rec->job && access(st, F_OK) == 0 && alive(ids[i]))
				lwk_owner = ids[i];
		}
	}
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	rc = lwk_casas_load(r, rec->job, &have);
	if (rc == 1) {
		*rec = have;
		if (probe_is_gone(r, &have)) {
			/* Its first step ended (or was killed) without probing:
			 * nothing else would re-plan a job alone on the node. */
			replan_locked(r, &gone, log, loglen);
			lwk_casas_load(r, rec->job, rec);
			close(nfd);
			bind_memory(r, log, loglen);
			return 0;
		}
		close(nfd);
		return 0;
	}
	if (strcmp(rec->status, "off") && lwk_owner) {
		snprintf(rec->status, sizeof(rec->status), "off");
		snprintf(rec->why, sizeof(rec->why), "job %u has a --lwk partition on this node",
			 lwk_owner);
	}
	if (strcmp(rec->status, "off")) {
		/* Held on one die for its first probe window, by this
		 * process (the step's slurmstepd, whose thread probes). */
		snprintf(rec->status, sizeof(rec->status), "probing");
		rec->probing = 1;
		rec->prober_pid = (unsigned int)getpid();
		rec->prober_start = proc_start(r->proc, rec->prober_pid);
	}
	if (store(r, rec, err, errlen)) {
		close(nfd);
		return -1;
	}
	replan_locked(r, &gone, log, loglen);
	lwk_casas_load(r, rec->job, rec);
	close(nfd);
	bind_memory(r, log, loglen);
	return 1;
}

int lwk_casas_reapply(const struct lwk_node_roots *r, uint32_t job, char *err, size_t errlen)
{
	struct lwk_casas_record rec = { 0 };
	int nfd = lwk_node_lock(r->state_root), rc = 0;

	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	if (lwk_casas_load(r, job, &rec) == 1 && rec.launcher_pid == (unsigned int)getpid()) {
		char e2[512];

		/* This step's tasks are bound: the decision may narrow them. */
		rec.launcher_pid = 0;
		rec.launcher_start = 0;
		if (store(r, &rec, e2, sizeof(e2)))
			rc = ERR("%s", e2);
	}
	if (rc == 0 && strcmp(rec.status, "off") && !rec.launcher_pid && lwk_cpuset_count(&rec.cpus))
		rc = apply(r, &rec, false, &rec.cpus, err, errlen);
	close(nfd);
	if (rc == 0 && lwk_cpuset_count(&rec.mems) && strcmp(rec.status, "off")) {
		/* Under the memory lock, with the record as it is now: a
		 * bind_memory meanwhile may have written a newer decision. */
		int mfd = mems_lock(r);

		if (mfd < 0)
			return ERR("lwk: cannot take the memory lock of job %u: %s", job,
				   strerror(errno));
		if (lwk_casas_load(r, job, &rec) == 1 && strcmp(rec.status, "off") &&
		    lwk_cpuset_count(&rec.mems))
			rc = apply(r, &rec, true, &rec.mems, err, errlen);
		close(mfd);
	}
	return rc;
}

int lwk_casas_launch(const struct lwk_node_roots *r, uint32_t job, char *err, size_t errlen)
{
	struct lwk_casas_record rec;
	int nfd = lwk_node_lock(r->state_root), rc = 0;

	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	if (lwk_casas_load(r, job, &rec) == 1 && strcmp(rec.status, "off")) {
		rec.launcher_pid = (unsigned int)getpid();
		rec.launcher_start = proc_start(r->proc, rec.launcher_pid);
		rc = store(r, &rec, err, errlen);
		if (rc == 0 && apply(r, &rec, false, &rec.allowed_cpus, err, errlen))
			rc = -1;
	}
	close(nfd);
	return rc;
}

int lwk_casas_leave(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		    char *log, size_t loglen)
{
	char path[4200], dir[4096];
	struct gone_jobs gone;
	struct stat st;
	int nfd, had = 0;

	casas_dir(r, dir, sizeof(dir));
	if (lstat(dir, &st))
		return 0; /* no contention-aware job ever ran here: one stat */
	find_gone(r, alive, &gone);
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return 0;
	if (job) {
		lwk_casas_record_path(r, job, path, sizeof(path));
		had = unlink(path) == 0;
		if (had)
			say(log, loglen, "lwk: contention-aware: job %u left: re-planning the others", job);
	}
	replan_locked(r, &gone, log, loglen);
	close(nfd);
	bind_memory(r, log, loglen);
	return had;
}

/* ---- the probe ----------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep us microseconds in slices, returning early (false) on stop. */
static bool nap(uint64_t us, const volatile int *stop)
{
	while (us) {
		uint64_t slice = us < 50000 ? us : 50000;
		struct timespec ts = { 0, (long)slice * 1000 };

		if (stop && *stop)
			return false;
		nanosleep(&ts, NULL);
		us -= slice;
	}
	return !(stop && *stop);
}

/* Per thread with inherit: every thread now in the job's v1 cpuset
 * cgroup, and what they start from now on. */
static int open_threads(struct lwk_perf_counter *c, const struct lwk_perf_event *ev,
			const char *dir, const char *proc, char *err, size_t errlen)
{
	pid_t *pids = calloc(4096, sizeof(*pids)); /* never static: see store() */
	size_t n = 0;

	c->n = 0;
	if (!pids || lwk_cgroup_pids(dir, pids, 4096, &n)) {
		free(pids);
		return ERR("lwk: cannot list the processes of %.400s", dir);
	}
	for (size_t i = 0; i < n; i++) {
		char tdir[256];
		struct dirent *e;
		DIR *d;

		snprintf(tdir, sizeof(tdir), "%s/%d/task", proc, (int)pids[i]);
		d = opendir(tdir);
		if (!d)
			continue; /* gone */
		while ((e = readdir(d))) {
			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			if (lwk_perf_add_task(c, ev, (pid_t)atoi(e->d_name), true, err, errlen) &&
			    errno != ESRCH) {
				closedir(d);
				lwk_perf_close(c);
				free(pids);
				return -1;
			}
		}
		closedir(d);
	}
	free(pids);
	if (!c->n)
		return ERR("lwk: no thread of the job to count in %.400s", dir);
	return 0;
}

static int open_counter(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			struct lwk_perf_counter *c, struct lwk_perf_event *ev, char *err,
			size_t errlen)
{
	char dir[1200];
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);

	if (lwk_perf_resolve(rec->opts.event, ev, err, errlen))
		return -1;
	if (v == LWK_CGROUP_V2) {
		snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, rec->cgroup);
		return lwk_perf_open_cgroup(c, ev, dir, &rec->allowed_cpus, err, errlen);
	}
	snprintf(dir, sizeof(dir), "%s/cpuset%s", r->cgroup_root, rec->cgroup);
	return open_threads(c, ev, dir, r->proc, err, errlen);
}

/* Update one job's record under the node lock: set its probe state and
 * maybe a curve point, then re-plan.  false when the record is gone. */
static bool probe_step(const struct lwk_node_roots *r, uint32_t job, unsigned int probing,
		       unsigned int k, double ips, const char *counters, bool (*alive)(uint32_t),
		       struct lwk_casas_record *rec, char *log, size_t loglen)
{
	char err[512];
	struct gone_jobs gone;
	int nfd;
	bool ok = false;

	find_gone(r, alive, &gone);
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return false;
	if (lwk_casas_load(r, job, rec) == 1) {
		rec->probing = probing;
		if (!probing) {
			rec->prober_pid = 0;
			rec->prober_start = 0;
		}
		if (k && k <= LWK_CASAS_MAX_POINTS && k == rec->curve.n + 1) {
			rec->curve.ips[k] = ips;
			rec->curve.n = k;
		}
		if (counters)
			snprintf(rec->counters, sizeof(rec->counters), "%s", counters);
		if (store(r, rec, err, sizeof(err)) == 0) {
			replan_locked(r, &gone, log, loglen);
			ok = lwk_casas_load(r, job, rec) == 1;
		}
	}
	close(nfd);
	return ok;
}

int lwk_casas_unhold(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		     char *log, size_t loglen)
{
	struct lwk_casas_record rec;
	bool ok = probe_step(r, job, 0, 0, 0, NULL, alive, &rec, log, loglen);

	bind_memory(r, log, loglen);
	return ok ? 0 : -1;
}

/* One job probes at a time on a node: its windows must not see another
 * job's dies move.  The lock fd, or -1 when told to stop first. */
static int probe_lock(const struct lwk_node_roots *r, const volatile int *stop)
{
	char path[4200];
	int fd;

	casas_dir(r, path, sizeof(path));
	strncat(path, "/.probe.lock", sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (!nap(100000, stop)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Hand what was logged so far to emit (the slurmd log, as it happens). */
static void flush(char *log, void (*emit)(char *))
{
	if (emit && log[0]) {
		emit(log);
		log[0] = '\0';
	}
}

int lwk_casas_probe(const struct lwk_node_roots *r, uint32_t job, const volatile int *stop,
		    bool (*alive)(uint32_t), char *log, size_t loglen, void (*emit)(char *))
{
	struct lwk_casas_record rec;
	struct lwk_perf_counter *c = calloc(1, sizeof(*c));
	struct lwk_perf_event ev;
	struct lwk_topology *t;
	struct lwk_cpuset dies;
	char err[512], counters[256];
	unsigned int most;
	int lock, rc = 0;
	bool per_thread = lwk_cgroup_detect(r->cgroup_root) != LWK_CGROUP_V2;

	/* Every way out gives the hold back (probing 0): a job left held
	 * stays on one die, and no job's memory is bound while it is. */
	if (!c) {
		lwk_casas_unhold(r, job, alive, log, loglen);
		return -1;
	}
	lock = probe_lock(r, stop);
	if (lock < 0) {
		/* The step ended while another job probed. */
		say(log, loglen, "lwk: contention-aware: job %u: the step ended before its probe began",
		    job);
		free(c);
		lwk_casas_unhold(r, job, alive, log, loglen);
		return 0;
	}
	if (lwk_casas_load(r, job, &rec) != 1 || !strcmp(rec.status, "off")) {
		/* Unreadable: the re-plans skip it, its hold counts for nothing. */
		close(lock);
		free(c);
		lwk_casas_unhold(r, job, alive, log, loglen);
		return 0;
	}
	t = lwk_topology_read(r->sysfs, err, sizeof(err));
	if (!t) {
		say(log, loglen, "lwk: contention-aware: job %u: %s", job, err);
		probe_step(r, job, 0, 0, 0, NULL, alive, &rec, log, loglen);
		close(lock);
		free(c);
		return -1;
	}
	lwk_casas_whole_dies(t, &rec.allowed_cpus, &dies);
	most = lwk_cpuset_count(&dies);
	if (rec.opts.max_dies && rec.opts.max_dies < most)
		most = (unsigned int)rec.opts.max_dies;
	lwk_topology_free(t);
	/* A job is measured once it runs: its first window would otherwise
	 * see it start its processes (the paper assumes steady behaviour). */
	nap(rec.opts.probe, stop);
	if (open_counter(r, &rec, c, &ev, err, sizeof(err))) {
		snprintf(counters, sizeof(counters), "none: %.240s", err);
		say(log, loglen, "lwk: contention-aware: job %u: cannot count '%s' here, the split is equal: %s",
		    job, rec.opts.event, err);
		probe_step(r, job, 0, 0, 0, counters, alive, &rec, log, loglen);
		close(lock);
		free(c);
		bind_memory(r, log, loglen);
		return 0;
	}
	snprintf(counters, sizeof(counters), "%s (%s, %s)", ev.name,
		 ev.type == 0 ? "hardware" : ev.type == 1 ? "software" : "raw",
		 per_thread ? "per thread, inherited" : "per CPU on the job's cgroup");
	for (unsigned int k = 1; k <= most; k++) {
		struct lwk_perf_reading a, b;
		double t0, t1, ips;

		/* Hold the job on k dies; the others keep one each at least. */
		flush(log, emit);
		if (!probe_step(r, job, k, 0, 0, counters, alive, &rec, log, loglen))
			break;
		flush(log, emit);
		if (lwk_cpuset_count(&rec.dies) < k) {
			say(log, loglen, "lwk: contention-aware: job %u: probe stops at %u dies (the other jobs hold the rest)",
			    job, k - 1);
			break;
		}
		/* Let its threads spread over the new dies first. */
		if (!nap(rec.opts.probe / 2 > 50000 ? rec.opts.probe / 2 : 50000, stop))
			break;
		/* Per thread: the threads of now (inherit covers what they
		 * start; processes started by others since would be missed). */
		if (per_thread && k > 1) {
			lwk_perf_close(c);
			if (open_counter(r, &rec, c, &ev, err, sizeof(err)))
				break;
		}
		if (lwk_perf_read(c, &a))
			break;
		t0 = now_s();
		if (!nap(rec.opts.probe, stop))
			break;
		if (lwk_perf_read(c, &b))
			break;
		t1 = now_s();
		ips = (double)(b.scaled - a.scaled) / (t1 - t0);
		say(log, loglen, "lwk: contention-aware: job %u: probe on %u die(s): %.4g %s/s", job, k,
		    ips, ev.name);
		if (!probe_step(r, job, k, k, ips, NULL, alive, &rec, log, loglen))
			break;
	}
	flush(log, emit);
	lwk_perf_close(c);
	free(c);
	/* Done, or cut short: what was measured decides; memory follows. */
	if (!probe_step(r, job, 0, 0, 0, NULL, alive, &rec, log, loglen)) {
		rc = -1;
	} else {
		char ips[2048];

		lwk_casas_curve_format(&rec.curve, ips, sizeof(ips));
		say(log, loglen, "lwk: contention-aware: job %u: IPS curve %s", job, ips[0] ? ips : "(none)");
	}
	/* The next job may probe while this one's memory moves. */
	close(lock);
	flush(log, emit);
	bind_memory(r, log, loglen);
	return rc;
}
