/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One --sync-monitor sample (syncmon/sample.h). */
#include "syncmon/sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "syncmon/json.h"

#define MAX_PIDS 65536

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

struct lwk_sample_proc {
	pid_t pid;
	uint64_t cpu_us;	/* at its last read */
	uint64_t start_ticks;
	uint64_t rss_kb;
};

/* Append to the sample line; a line that would not fit is cut short
 * (its "procs" list), never overrun. */
#define OUT(...)                                                                  \
	do {                                                                      \
		if (o < s->line_cap)                                              \
			o += (size_t)snprintf(s->line + o, s->line_cap - o, __VA_ARGS__); \
	} while (0)

/* The batch source's map follows the list; a refusal is counted with
 * the failed reads (the footer's source_errors), the first one kept
 * for the log. */
static int set_batch_pids(struct lwk_sampling *s, size_t n)
{
	if (!lwk_taskiter_set_pids(s->ti, s->pids, n))
		return 0;
	if (!s->ti_failures++)
		snprintf(s->ti_error, sizeof(s->ti_error), "the map refused a pid: %s", strerror(errno));
	return -1;
}

/*
 * Refresh the job's pid list.  Returns whether it changed: then every
 * process is read this tick (a new one has no history to skip on).
 */
static bool find_pids(struct lwk_sampling *s, bool full)
{
	size_t n = 0;
	bool changed = false;

	/* The seed's shortcut: no fork on the node since the last tick means
	 * no new process, so the known list stands (between full scans);
	 * but a pid the batch source's map refused is given again now. */
	if (!full && s->ns.forks == s->prev_forks && s->npids && !s->relist) {
		if (s->ti_retry && s->use_bpf)
			s->ti_retry = set_batch_pids(s, s->npids) != 0;
		return false;
	}
	if (s->cgroup) {
		size_t own;

		if (lwk_cgroup_job_pids(s->cgroup, s->fresh, MAX_PIDS, &n, &own))
			n = own = 0;
		/* Slurm's own changed: a task may be between its fork from
		 * slurmstepd and its move to its cgroup, left out now; its
		 * exec is no fork, so list again next tick. */
		s->relist = own != s->slurm_own;
		s->slurm_own = own;
	} else {
		/* A full scan re-checks every process (a pid may be reused by
		 * a job process); in between only new pids are looked at. */
		if (full)
			memset(s->not_job, 0, LWK_PID_BITS / 8);
		lwk_scan_job_pids(s->proc_root, s->job, s->node, s->fresh, MAX_PIDS, &n, s->not_job);
	}
	/* Forks elsewhere on the node do not count: only the job's set. */
	if (n != s->npids || memcmp(s->fresh, s->pids, n * sizeof(*s->pids)))
		changed = true;
	memcpy(s->pids, s->fresh, n * sizeof(*s->pids));
	s->npids = n;
	/* The batch source reads the processes its map lists; a pid its
	 * map refused is given again at the next tick. */
	if ((changed || s->ti_retry) && s->use_bpf)
		s->ti_retry = set_batch_pids(s, n) != 0;
	return changed;
}

/*
 * Read the node's counters and refresh the job's pid list.  Returns the
 * node's busy share since the last tick; *new_procs says whether the
 * list changed.
 */
static double read_node(struct lwk_sampling *s, bool full, bool *new_procs)
{
	double busy_pct = 0;

	lwk_nodestat_read(&s->ns);
	if (s->ns.total > s->prev_total)
		busy_pct = 100.0 * (double)(s->ns.busy - s->prev_busy) /
			   (double)(s->ns.total - s->prev_total);
	*new_procs = find_pids(s, full);
	s->prev_busy = s->ns.busy;
	s->prev_total = s->ns.total;
	s->prev_forks = s->ns.forks;
	return busy_pct;
}

/* What a sample needs of one process, whichever source gave it. */
struct proc_now {
	char comm[32];
	uint64_t cpu_us, threads, start_ticks, rss_pages;
};

/* From the batch source: one read of the iterator at the tick's first
 * process, then a lookup per process. */
static int read_bpf(struct lwk_sampling *s, pid_t pid, struct proc_now *p)
{
	const struct lwk_taskiter_proc *q;

	if (!s->ti_read) {
		s->ti_read = true;
		/* On failure no process is found this tick: counted for
		 * the footer, the first one logged by the sampler. */
		if (lwk_taskiter_read(s->ti) < 0) {
			if (!s->ti_failures++)
				snprintf(s->ti_error, sizeof(s->ti_error), "a read failed: %s",
					 strerror(errno));
		}
	}
	q = lwk_taskiter_find(s->ti, pid);
	if (!q)
		return -1; /* gone since it was listed */
	snprintf(p->comm, sizeof(p->comm), "%s", q->comm);
	p->cpu_us = q->cpu_ns / 1000;
	p->threads = q->threads;
	p->start_ticks = q->start_boottime_ns / (1000000000ULL / (uint64_t)s->clk_tck);
	p->rss_pages = q->rss_pages;
	return 0;
}

/*
 * One process's numbers: from the batch source, or from its stat line,
 * with the CPU time from taskstats when the sampler uses it and it
 * answers.  -1 when the process is gone.
 */
static int read_proc(struct lwk_sampling *s, pid_t pid, struct proc_now *p)
{
	struct lwk_procstat st;
	struct lwk_task_cpu c;

	if (s->use_bpf)
		return read_bpf(s, pid, p);
	if (lwk_proctab_read(s->tab, pid, &st))
		return -1;
	memcpy(p->comm, st.comm, sizeof(p->comm));
	p->threads = st.num_threads;
	p->start_ticks = st.starttime;
	p->rss_pages = st.rss_pages;
	/* taskstats' utime and stime are sampled at ticks, off by 15% from
	 * the run time under contention; its run time is what /proc adds
	 * up to (and the bpf source reads), where the kernel gives it. */
	if (s->use_taskstats && lwk_taskstats_query(&s->ts, pid, 1, &c) == 0)
		p->cpu_us = c.run_virtual_ns ? c.run_virtual_ns / 1000 : c.utime_us + c.stime_us;
	else
		p->cpu_us = (st.utime + st.stime) * 1000000ULL / (uint64_t)s->clk_tck;
	return 0;
}

/* The job's totals in a sample. */
struct job_sum {
	size_t skipped;
	uint64_t cpu_us, rss_kb;
};

/*
 * Append the "procs" entries to the line from o on: each job process
 * read (or, between full scans, an idle one skipped on its last
 * reading) and added to sum.  Returns the new end of the line.
 */
static size_t list_procs(struct lwk_sampling *s, size_t o, bool full, bool new_procs,
			 uint64_t now_ticks, struct job_sum *sum)
{
	size_t listed = 0;
	char comm[128]; /* 15 bytes, each up to \u00xx, quoted */

	for (size_t i = 0; i < s->npids; i++) {
		struct lwk_sample_proc *ps = &s->known[i];
		struct proc_now p;

		if (ps->pid != s->pids[i])
			memset(ps, 0, sizeof(*ps)), ps->pid = s->pids[i];
		if (!full && ps->start_ticks &&
		    lwk_procstat_skip(ps->cpu_us * (uint64_t)s->clk_tck / 1000000, ps->start_ticks,
				      now_ticks, s->o.idle, new_procs)) {
			sum->skipped++;
			sum->cpu_us += ps->cpu_us;
			sum->rss_kb += ps->rss_kb;
			continue;
		}
		if (read_proc(s, s->pids[i], &p))
			continue; /* gone since it was listed */
		/* A process's CPU time never goes back (the kernel's own
		 * totals do not); the batch read may miss, once, a thread
		 * that exits while the iterator passes its process, which
		 * would read as a drop and, in the report, as a new process
		 * of the same pid.  The other sources read the kernel's
		 * totals as they are. */
		if (s->use_bpf && ps->start_ticks == p.start_ticks && p.cpu_us < ps->cpu_us)
			p.cpu_us = ps->cpu_us;
		ps->cpu_us = p.cpu_us;
		ps->start_ticks = p.start_ticks;
		ps->rss_kb = p.rss_pages * (uint64_t)s->page_kb;
		sum->cpu_us += p.cpu_us;
		sum->rss_kb += ps->rss_kb;
		lwk_json_string(p.comm, comm, sizeof(comm));
		if (s->line_cap - o > 256) {
			OUT("%s{\"pid\":%d,\"comm\":%s,\"cpu_us\":%llu,\"threads\":%llu}",
			    listed ? "," : "", (int)s->pids[i], comm, (unsigned long long)p.cpu_us,
			    (unsigned long long)p.threads);
			listed++;
		}
	}
	return o;
}

size_t lwk_sample_take(struct lwk_sampling *s, uint64_t k, uint64_t t_ideal, uint64_t t,
		       uint64_t late, bool flush, bool full, size_t *cost_at)
{
	size_t o = 0;
	struct job_sum sum = { 0 };
	uint64_t now_ticks;
	bool new_procs;
	double busy_pct;

	s->ti_read = false;
	busy_pct = read_node(s, full, &new_procs);
	now_ticks = now_ns(CLOCK_BOOTTIME) / (1000000000ULL / (uint64_t)s->clk_tck);

	OUT("{\"k\":%llu,\"t_ideal_ns\":%llu,\"t_ns\":%llu,\"late_ns\":%llu,",
	    (unsigned long long)k, (unsigned long long)t_ideal, (unsigned long long)t,
	    (unsigned long long)late);
	/* The cost is known only once the line is built: leave 12 columns
	 * for it (JSON allows the padding spaces). */
	*cost_at = o + strlen("\"cost_ns\":");
	OUT("\"cost_ns\":%-12s,", "0");

	OUT("\"flush\":%s,\"full_scan\":%s,\"node\":{\"cpu_busy_pct\":%.1f,\"mem_used_kb\":%llu,"
	    "\"load1\":%.2f},\"procs\":[",
	    flush ? "true" : "false", full ? "true" : "false", busy_pct,
	    (unsigned long long)(s->ns.mem_total_kb - s->ns.mem_avail_kb), s->ns.load1);
	o = list_procs(s, o, full, new_procs, now_ticks, &sum);
	/* Close the files of exited processes at full scans: the sweep walks
	 * the whole table, too much for every tick. */
	if (full)
		lwk_proctab_sweep(s->tab);
	/* With a job cgroup that counts CPU, the job's total is one read,
	 * and exact: it includes processes that already exited; it never
	 * falls (lwk_sample_cgroup_cpu: a cgroup made anew adds to the one
	 * before, a failed read repeats the last total). */
	if (s->cgroup_cpu) {
		lwk_sample_cgroup_cpu(s);
		sum.cpu_us = s->cgroup_cpu_base + s->cgroup_cpu_us;
	}
	OUT("],\"skipped\":%zu,\"job\":{\"nprocs\":%zu,\"cpu_us\":%llu,\"rss_kb\":%llu}}\n",
	    sum.skipped, s->npids, (unsigned long long)sum.cpu_us, (unsigned long long)sum.rss_kb);
	/* Entries stop 256 bytes short of the end, so the tail fits. */
	if (s->npids)
		s->empty_since = 0;
	else if (full && !s->empty_since)
		s->empty_since = t;
	if (o >= s->line_cap) { /* never expected: keep it one line */
		o = s->line_cap - 1;
		s->line[o - 1] = '\n';
	}
	return o;
}

void lwk_sample_cgroup_cpu(struct lwk_sampling *s)
{
	struct stat a, b;
	uint64_t cg_us;

	/* The directory the same before and after the read: a cgroup made
	 * anew between them is read at the next tick. */
	if (stat(s->cgroup, &a) || lwk_cgroup_cpu_us(s->cgroup, &cg_us) || stat(s->cgroup, &b) ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return;
	/* A cgroup made anew (Slurm removes the job's between an
	 * allocation's steps when nothing holds it) counts from 0: what the
	 * one before had counted, as last read, is kept. */
	if (s->cgroup_ino && (a.st_ino != s->cgroup_ino || a.st_dev != s->cgroup_dev))
		s->cgroup_cpu_base += s->cgroup_cpu_us;
	s->cgroup_ino = a.st_ino;
	s->cgroup_dev = a.st_dev;
	s->cgroup_cpu_us = cg_us;
}

int lwk_sampling_alloc(struct lwk_sampling *s)
{
	s->clk_tck = sysconf(_SC_CLK_TCK);
	s->page_kb = sysconf(_SC_PAGESIZE) / 1024;
	s->pids = calloc(MAX_PIDS, sizeof(*s->pids));
	s->known = calloc(MAX_PIDS, sizeof(*s->known));
	s->not_job = calloc(LWK_PID_BITS / 64, sizeof(uint64_t)); /* 512 KiB, once */
	s->fresh = calloc(MAX_PIDS, sizeof(*s->fresh));
	s->tab = lwk_proctab_new(s->proc_root, MAX_PIDS);
	/* One sample line: 256 KiB holds ~3000 processes; more are counted
	 * but not listed.  Not sized by the user's buffer= (memory outside
	 * the job's allocation). */
	s->line_cap = 256 * 1024;
	s->line = malloc(s->line_cap);
	return !s->pids || !s->known || !s->not_job || !s->fresh || !s->tab || !s->line ? -1 : 0;
}
