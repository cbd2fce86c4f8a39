/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: the probe.  One job at a time on the node (the
 * probe lock) runs on 1, 2, ... dies for a window each while its event
 * is counted; each step re-plans under the node lock.  Every way out
 * gives the job's hold back (lwk_casas_unhold when it never began).
 */
#define _GNU_SOURCE
#include "casas/internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "node/perfcount.h"
#include "node/procfs.h"

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
	pid_t *pids = calloc(4096, sizeof(*pids)); /* never static: see lwk_casas_store() */
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

/* probe_step's probing for a job let go from its one die while it
 * waits for its turn: no hold, its prober kept on record (no job's
 * memory moves while one waits: its probe is still to come). */
#define WAITING UINT_MAX

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

	lwk_casas_find_gone(r, alive, 0, &gone);
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return false;
	if (lwk_casas_load(r, job, rec) == 1) {
		rec->probing = probing == WAITING ? 0 : probing;
		if (!probing) {
			rec->prober_pid = 0;
			rec->prober_start = 0;
			rec->ticket = 0;
		} else if (!rec->prober_pid) {
			/* Held again after it was let go (probe_lock): by this
			 * process, which a re-plan must see go. */
			rec->prober_pid = (unsigned int)getpid();
			rec->prober_start = lwk_casas_proc_start(r->proc, rec->prober_pid);
		}
		if (k && k <= LWK_CASAS_MAX_POINTS && k == rec->curve.n + 1) {
			rec->curve.ips[k] = ips;
			rec->curve.n = k;
		}
		if (counters)
			snprintf(rec->counters, sizeof(rec->counters), "%s", counters);
		if (lwk_casas_store(r, rec, err, sizeof(err)) == 0) {
			lwk_casas_replan_locked(r, &gone, log, loglen);
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

	lwk_casas_bind_memory(r, log, loglen);
	return ok ? 0 : -1;
}


/* Hand what was logged so far to emit (the slurmd log, as it happens). */
static void flush(char *log, void (*emit)(char *))
{
	if (emit && log[0]) {
		emit(log);
		log[0] = '\0';
	}
}

/*
 * A probe under way, on the stack of lwk_casas_probe: what it was given,
 * its counter and event, the job's record as the last step left it.
 * The steps below run with the probe lock held by lwk_casas_probe, and
 * without the node lock: probe_step takes it for each step.
 */
struct probe {
	const struct lwk_node_roots *r;
	uint32_t job;
	const volatile int *stop;
	bool (*alive)(uint32_t);
	char *log;
	size_t loglen;
	void (*emit)(char *);
	struct lwk_perf_counter *c;
	struct lwk_perf_event ev;
	bool per_thread;	/* cgroup v1: per thread, with inherit */
	uint64_t window;	/* us of each window (probe=, or less: the budget) */
	uint64_t total;		/* us the whole probe takes at most, hold included */
	unsigned long long ticket; /* its place in the probe lock's queue, 0: none */
	struct lwk_casas_record rec;
	char err[512], counters[256];
};

/*
 * The probe lock's queue: flock lets any waiter in, so a job could wait
 * behind every job that arrives after it.  Each job takes a ticket, one
 * past the highest on the node, and takes the lock only when no job
 * with an earlier ticket still waits for its probe.
 */
static void take_ticket(struct probe *p)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	struct lwk_casas_record *other = malloc(sizeof(*other));
	unsigned long long top = 0;
	int nfd = other ? lwk_node_lock(p->r->state_root) : -1, n;

	if (nfd < 0) {
		free(other);
		return;
	}
	n = lwk_casas_record_jobs(p->r, ids, LWK_CASAS_MAX_JOBS);
	for (int i = 0; i < n; i++)
		if (lwk_casas_load(p->r, ids[i], other) == 1 && other->ticket > top)
			top = other->ticket;
	if (lwk_casas_load(p->r, p->job, other) == 1) {
		other->ticket = top + 1;
		if (!lwk_casas_store(p->r, other, p->err, sizeof(p->err)))
			p->ticket = top + 1;
	}
	close(nfd);
	free(other);
}

/* Does a job with an earlier ticket, its prober alive, still wait? */
static bool queued_before(struct probe *p)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	struct lwk_casas_record *other = malloc(sizeof(*other));
	bool found = false;
	int nfd = other && p->ticket ? lwk_node_lock(p->r->state_root) : -1, n;

	if (nfd < 0) {
		free(other);
		return false;
	}
	n = lwk_casas_record_jobs(p->r, ids, LWK_CASAS_MAX_JOBS);
	for (int i = 0; i < n && !found; i++)
		found = ids[i] != p->job && lwk_casas_load(p->r, ids[i], other) == 1 && other->ticket &&
			other->ticket < p->ticket && other->prober_pid &&
			!lwk_casas_probe_is_gone(p->r, other);
	close(nfd);
	free(other);
	return found;
}

/*
 * One job probes at a time on a node, in the order they came (their
 * tickets): its windows must not see another job's dies move.  A job waits on one die (its hold, from its join) no
 * longer than its own probe would take: then it is let go (the split
 * without its curve) and waits on, held again once its turn comes.  The
 * lock fd, or -1 when told to stop first.
 */
static int probe_lock(struct probe *p)
{
	char path[4200];
	double until = now_s() + (double)p->total / 1e6, yielded = 0;
	bool held = true;
	int fd;

	lwk_casas_dir(p->r, path, sizeof(path));
	strncat(path, "/.probe.lock", sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	take_ticket(p);
	for (;;) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			/* An earlier job that leaves the lock free for 10 s is
			 * not coming (a record it could not store): no longer
			 * waited for. */
			if (!queued_before(p) || (yielded && now_s() - yielded > 10))
				break;
			if (!yielded)
				yielded = now_s();
			flock(fd, LOCK_UN);
		} else {
			yielded = 0;
		}
		if (held && now_s() >= until) {
			flush(p->log, p->emit);
			probe_step(p->r, p->job, WAITING, 0, 0, NULL, p->alive, &p->rec, p->log,
				   p->loglen);
			say(p->log, p->loglen, "lwk: contention-aware: job %u: another job's probe "
			    "outlasts this one's own (%.1f s): off its one die until its turn to probe",
			    p->job, (double)p->total / 1e6);
			flush(p->log, p->emit);
			held = false;
		}
		if (!nap(100000, p->stop)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * How a probe fits the node's budget (LWK_CASAS_PROBE_BUDGET_US): a
 * first nap and, for each of k points, a settle of half a window and the
 * window.  A window too long for one point is cut to one that fits;
 * then as many points as fit, at most `most`.  The points; the window
 * and the whole in *window and *total (us).
 */
static uint64_t settle_of(uint64_t window)
{
	return window / 2 > 50000 ? window / 2 : 50000;
}

unsigned int lwk_casas_probe_plan(uint64_t probe, unsigned int most, uint64_t budget,
				  uint64_t *window, uint64_t *total)
{
	uint64_t w = probe, k;

	if (w + settle_of(w) + w > budget)
		w = budget * 2 / 5; /* w + w/2 + w = budget */
	k = budget > w ? (budget - w) / (settle_of(w) + w) : 0;
	if (k > most)
		k = most;
	if (most && !k)
		k = 1;
	*window = w;
	*total = w + k * (settle_of(w) + w);
	return (unsigned int)k;
}

/* The most dies the probe tries: the whole dies Slurm allowed the job,
 * at most its max_dies. */
static unsigned int most_dies(const struct lwk_topology *t, const struct lwk_casas_record *rec)
{
	struct lwk_cpuset dies;
	unsigned int most;

	lwk_casas_whole_dies(t, &rec->allowed_cpus, &dies);
	most = lwk_cpuset_count(&dies);
	if (rec->opts.max_dies && rec->opts.max_dies < most)
		most = (unsigned int)rec->opts.max_dies;
	return most;
}

/* The job's window on k dies: the event's rate over it, a curve point.
 * false when the probe stops here (told to, the job or its record gone,
 * no more dies to take, a counter that fails).  The caller holds the
 * probe lock; probe_step takes the node lock. */
static bool probe_window(struct probe *p, unsigned int k)
{
	struct lwk_perf_reading a, b;
	double t0, t1, ips;

	/* Hold the job on k dies; the others keep one each at least. */
	flush(p->log, p->emit);
	if (!probe_step(p->r, p->job, k, 0, 0, p->counters, p->alive, &p->rec, p->log, p->loglen))
		return false;
	flush(p->log, p->emit);
	if (lwk_cpuset_count(&p->rec.dies) < k) {
		say(p->log, p->loglen, "lwk: contention-aware: job %u: probe stops at %u dies (the other jobs hold the rest)",
		    p->job, k - 1);
		return false;
	}
	/* Let its threads spread over the new dies first. */
	if (!nap(settle_of(p->window), p->stop))
		return false;
	/* Per thread: the threads of now (inherit covers what they
	 * start; processes started by others since would be missed). */
	if (p->per_thread && k > 1) {
		lwk_perf_close(p->c);
		if (open_counter(p->r, &p->rec, p->c, &p->ev, p->err, sizeof(p->err)))
			return false;
	}
	/* The window holds both reads: a prober descheduled between a
	 * read and its clock (a loaded node, an emulated one) then counts
	 * a longer window, never events from outside it (one busy loop was
	 * measured at 1.6 CPUs when the clock came after the first read). */
	t0 = now_s();
	if (lwk_perf_read(p->c, &a))
		return false;
	if (!nap(p->window, p->stop))
		return false;
	if (lwk_perf_read(p->c, &b))
		return false;
	t1 = now_s();
	ips = (double)(b.scaled - a.scaled) / (t1 - t0);
	say(p->log, p->loglen, "lwk: contention-aware: job %u: probe on %u die(s): %.4g %s/s", p->job,
	    k, ips, p->ev.name);
	return probe_step(p->r, p->job, k, k, ips, NULL, p->alive, &p->rec, p->log, p->loglen);
}

/* The windows are over (done, or cut short): the counter closed, the
 * hold given back and what was measured decides.  0, or -1 when the
 * record is gone.  The caller holds the probe lock. */
static int probe_end(struct probe *p)
{
	char ips[2048];

	flush(p->log, p->emit);
	lwk_perf_close(p->c);
	free(p->c);
	if (!probe_step(p->r, p->job, 0, 0, 0, NULL, p->alive, &p->rec, p->log, p->loglen))
		return -1;
	lwk_casas_curve_format(&p->rec.curve, ips, sizeof(ips));
	say(p->log, p->loglen, "lwk: contention-aware: job %u: IPS curve %s", p->job,
	    ips[0] ? ips : "(none)");
	return 0;
}

/* How many dies the probe takes and its windows (p->window, p->total),
 * from the node's topology and the budget.  0, or -1 (logged, the hold
 * given back) when the topology cannot be read. */
static int plan_probe(struct probe *p, unsigned int *most)
{
	struct lwk_topology *t = lwk_topology_read(p->r->sysfs, p->err, sizeof(p->err));

	if (!t) {
		say(p->log, p->loglen, "lwk: contention-aware: job %u: %s", p->job, p->err);
		probe_step(p->r, p->job, 0, 0, 0, NULL, p->alive, &p->rec, p->log, p->loglen);
		return -1;
	}
	*most = lwk_casas_probe_plan(p->rec.opts.probe, most_dies(t, &p->rec),
				     LWK_CASAS_PROBE_BUDGET_US, &p->window, &p->total);
	lwk_topology_free(t);
	if (p->window < p->rec.opts.probe)
		say(p->log, p->loglen, "lwk: contention-aware: job %u: probe windows of %.1f s, not "
		    "%.1f s: the node's probe budget is %.0f s", p->job, (double)p->window / 1e6,
		    (double)p->rec.opts.probe / 1e6, (double)LWK_CASAS_PROBE_BUDGET_US / 1e6);
	return 0;
}

/* The windows on 1, 2, ... most dies, until one stops the probe or the
 * budget is spent: waits for the node lock stretch a probe, so the
 * budget holds in wall time too (after the first point). */
static void run_windows(struct probe *p, unsigned int most, double start)
{
	for (unsigned int k = 1; k <= most; k++) {
		if (k > 1 && (now_s() - start) * 1e6 + (double)(settle_of(p->window) + p->window) >
				     (double)LWK_CASAS_PROBE_BUDGET_US) {
			say(p->log, p->loglen, "lwk: contention-aware: job %u: probe stops at %u dies: "
			    "the node's probe budget (%.0f s) is spent", p->job, k - 1,
			    (double)LWK_CASAS_PROBE_BUDGET_US / 1e6);
			return;
		}
		if (!probe_window(p, k))
			return;
	}
}

int lwk_casas_probe(const struct lwk_node_roots *r, uint32_t job, const volatile int *stop,
		    bool (*alive)(uint32_t), char *log, size_t loglen, void (*emit)(char *))
{
	struct probe p = { .r = r, .job = job, .stop = stop, .alive = alive, .log = log,
			   .loglen = loglen, .emit = emit };
	unsigned int most;
	double start;
	int lock, rc;

	p.c = calloc(1, sizeof(*p.c));
	p.per_thread = lwk_cgroup_detect(r->cgroup_root) != LWK_CGROUP_V2;
	/* Every way out gives the hold back (probing 0): a job left held
	 * stays on one die, and no job's memory is bound while it is. */
	if (!p.c) {
		lwk_casas_unhold(r, job, alive, log, loglen);
		return -1;
	}
	/* What it will probe, before it waits for its turn: how long it may
	 * wait held comes from it. */
	if (lwk_casas_load(r, job, &p.rec) != 1 || !strcmp(p.rec.status, "off")) {
		/* Unreadable: the re-plans skip it, its hold counts for nothing. */
		free(p.c);
		lwk_casas_unhold(r, job, alive, log, loglen);
		return 0;
	}
	if (plan_probe(&p, &most)) {
		free(p.c);
		return -1;
	}
	lock = probe_lock(&p);
	if (lock < 0) {
		/* The step ended while another job probed. */
		say(log, loglen, "lwk: contention-aware: job %u: the step ended before its probe began",
		    job);
		free(p.c);
		lwk_casas_unhold(r, job, alive, log, loglen);
		return 0;
	}
	if (lwk_casas_load(r, job, &p.rec) != 1 || !strcmp(p.rec.status, "off")) {
		close(lock);
		free(p.c);
		lwk_casas_unhold(r, job, alive, log, loglen);
		return 0;
	}
	start = now_s();
	/* A job is measured once it runs: its first window would otherwise
	 * see it start its processes (the paper assumes steady behaviour). */
	nap(p.window, stop);
	if (open_counter(r, &p.rec, p.c, &p.ev, p.err, sizeof(p.err))) {
		snprintf(p.counters, sizeof(p.counters), "none: %.240s", p.err);
		say(log, loglen, "lwk: contention-aware: job %u: cannot count '%s' here, the split is equal: %s",
		    job, p.rec.opts.event, p.err);
		probe_step(r, job, 0, 0, 0, p.counters, alive, &p.rec, log, loglen);
		close(lock);
		free(p.c);
		lwk_casas_bind_memory(r, log, loglen);
		return 0;
	}
	snprintf(p.counters, sizeof(p.counters), "%s (%s, %s)", p.ev.name,
		 p.ev.type == 0 ? "hardware" : p.ev.type == 1 ? "software" : "raw",
		 p.per_thread ? "per thread, inherited" : "per CPU on the job's cgroup");
	run_windows(&p, most, start);
	/* Done, or cut short: what was measured decides; memory follows. */
	rc = probe_end(&p);
	/* The next job may probe while this one's memory moves. */
	close(lock);
	flush(log, emit);
	lwk_casas_bind_memory(r, log, loglen);
	return rc;
}
