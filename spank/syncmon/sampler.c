/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sampler's run (syncmon/sampler.h), for lwk-syncmon's main; one
 * tick's sample is syncmon/sample.c.
 *
 * Each tick t_k = offset + k * interval (wall clock, the same on every
 * node) it reads the job's processes and the node's totals, appends
 * one JSON line to a fixed buffer, and writes the buffer out only at
 * flush ticks, which are also the same on every node (seeds 000, 002).
 * The output file is opened by a child that has become the job's user:
 * root never opens a path the user chose.  The format is
 * doc/syncmon-format.md.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "syncmon/sampler.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/cpulist.h"
#include "common/options.h"
#include "node/procfs.h"
#include "node/taskstats.h"
#include "syncmon/json.h"
#include "syncmon/privs.h"
#include "syncmon/sample.h"
#include "syncmon/sampbuf.h"
#include "syncmon/tick.h"

static volatile sig_atomic_t stop;
static FILE *log_file; /* <state>/syncmon.log, read back by the epilog */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	FILE *f = log_file ? log_file : stderr;

	va_start(ap, fmt);
	fprintf(f, "lwk-syncmon: ");
	vfprintf(f, fmt, ap);
	fprintf(f, "\n");
	fflush(f);
	va_end(ap);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static ssize_t fd_write(void *ctx, const void *buf, size_t len)
{
	return write(*(int *)ctx, buf, len);
}

/* A run of the sampler: the samples' state, where the lines go, the
 * schedule, and what the footer counts. */
struct run {
	struct lwk_sampling s;
	int out_fd;
	struct lwk_sampbuf buf;
	struct lwk_ticker tick;
	uint64_t samples, flush_cost, last_full;
	uint64_t orphan_after; /* s */
	bool said_source_error;
	bool said_walk_fallback;
	struct lwk_cpu_budget cpu; /* the site's syncmon_cpu= */
	uint64_t cpu_max;
	unsigned fifo; /* the SCHED_FIFO priority it runs at, 0 none */
};

/* The CPU bound holds over any 10 s: what the sampler may spend at
 * once is its share of 10 s (a second at the default 10%). */
#define CPU_WINDOW_NS 10000000000ULL

/* Keep the sampler's own noise off the application's cores.  0, or
 * the exit status (2: not a CPU list, 1: the kernel refused). */
static int pin_to_cpus(const char *cpus)
{
	struct lwk_cpuset want;
	cpu_set_t set;

	if (lwk_cpulist_parse(cpus, CPU_SETSIZE, &want) || !lwk_cpuset_count(&want)) {
		say("--cpus '%s' is not a CPU list", cpus);
		return 2;
	}
	CPU_ZERO(&set);
	for (int cpu = lwk_cpuset_first(&want); cpu >= 0; cpu = lwk_cpuset_next(&want, cpu))
		CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		say("cannot run on CPUs %s: %s", cpus, strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * The site's syncmon_fifo=: on a node whose CPUs the job fills, a
 * sampler of the normal class wakes for its tick only when the
 * scheduler gets to it (ms late on a loaded node, tens of ms on a busy
 * host: bench/tick-lateness), and ticks late by different amounts on
 * different nodes are exactly the unaligned noise the sampler exists
 * to avoid.  A real-time class wakes it at the tick.  What one tick may
 * take there is bounded apart from syncmon_cpu= (which holds over 10 s,
 * between ticks): RLIMIT_RTTIME at the tick's share of the interval
 * (at least 5 ms); past it the kernel sends SIGXCPU and the sampler is
 * back in the normal class for good (leaving it needs no privilege),
 * and a second later, if it could not leave, SIGKILL.
 * Set after the source is loaded (a long load must not hold a CPU the
 * job's start needs) and while the sampler may still (CAP_SYS_NICE);
 * reset on fork.  A refusal leaves it sampling in the normal class,
 * said.  The plugin asks for it only on an --lwk job's own OS cores.
 */
static volatile sig_atomic_t fifo_dropped;

static void on_rttime(int sig)
{
	struct sched_param sp = { .sched_priority = 0 };
	int saved = errno; /* the interrupted code's */

	(void)sig;
	/* Keeping the reset-on-fork flag: only a privileged thread may
	 * clear it, and the sampler has given up its privileges. */
	if (sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp) == 0)
		fifo_dropped = 1;
	errno = saved;
}

static unsigned run_fifo(unsigned prio, const char *cpus, uint64_t interval_us, uint64_t cpu_max)
{
	struct sched_param sp = { .sched_priority = (int)prio };
	uint64_t us = interval_us * cpu_max / 10000;
	/* The hard limit (SIGKILL) only if a tick goes a second past the
	 * soft one without the class dropped. */
	struct rlimit rt = { .rlim_cur = us < 5000 ? 5000 : us,
			     .rlim_max = (us < 5000 ? 5000 : us) + 1000000 };

	if (!prio)
		return 0;
	if (!cpus) {
		say("syncmon_fifo=%u without --cpus: a real-time sampler must be pinned to its job's "
		    "CPUs; sampling in the normal class", prio);
		return 0;
	}
	signal(SIGXCPU, on_rttime);
	if (setrlimit(RLIMIT_RTTIME, &rt) ||
	    sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp)) {
		say("cannot run SCHED_FIFO at priority %u (syncmon_fifo=%u): %s; sampling in the "
		    "normal class", prio, prio, strerror(errno));
		return 0;
	}
	say("running SCHED_FIFO at priority %u (syncmon_fifo=%u), at most %llu ms a tick", prio,
	    prio, (unsigned long long)rt.rlim_cur / 1000);
	return prio;
}

/* Signals, timer slack and open-file limit of the sampler's process. */
static void prepare_process(void)
{
	struct rlimit rl;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the tick, not up to 50 us later */
	/* One open /proc file per job process. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 70000 ? rl.rlim_max : 70000;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The starter records the pid before the step goes on (a job may end
 * at once); this is for a sampler started by hand.  Never over the
 * starter's file: it may be reading it.
 */
static void record_pid(const char *state)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "%d\n", (int)getpid());
		close(fd);
	}
}

/* Give up what loading the source needed, and create the output file
 * as the job's user (in r->out_fd).  0, or -1 (logged). */
static int open_output(struct run *r, const struct lwk_sampler_args *a)
{
	char base[512], chosen[600], err[1300];

	if (lwk_syncmon_drop_after_open(r->s.use_bpf && lwk_syncmon_bpf_fds_need_caps()))
		say("cannot drop CAP_SYS_RESOURCE, CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON: %s",
		    strerror(errno));
	snprintf(base, sizeof(base), "syncmon-%u-%s", r->s.job, r->s.node);
	r->out_fd = lwk_syncmon_open_as_user(a->dir, base, a->uid, a->gid, &stop, chosen, sizeof(chosen),
					     err, sizeof(err));
	if (r->out_fd < 0) {
		say("%s", err);
		return -1;
	}
	say("job %u node %s: writing %s/%s", r->s.job, r->s.node, a->dir, chosen);
	return 0;
}

/*
 * The site's bound on the sampler's memory (plugstack syncmon_memory=),
 * set once the source is loaded (the kernel's BTF is read whole while
 * it loads, then let go) and before any of its tables or its buffer
 * are made: the buffer= the job asked for must fit beside them.  Soft
 * and hard alike, so that not even root's sampler raises it.  0, or -1
 * (logged).
 */
static int limit_memory(struct run *r, uint64_t max)
{
	struct rlimit rl = { .rlim_cur = max, .rlim_max = max };

	if (r->s.o.buffer > max || max - r->s.o.buffer < LWK_SYNCMON_OWN_BYTES) {
		say("buffer=%llu bytes does not fit this site's syncmon_memory=%llu beside the "
		    "sampler's own %llu",
		    (unsigned long long)r->s.o.buffer, (unsigned long long)max,
		    (unsigned long long)LWK_SYNCMON_OWN_BYTES);
		return -1;
	}
	if (setrlimit(RLIMIT_DATA, &rl)) {
		say("cannot bound its memory to syncmon_memory=%llu bytes: %s",
		    (unsigned long long)max, strerror(errno));
		return -1;
	}
	return 0;
}

/* All the sampler's memory, once, and its sources.  0, or -1 (logged). */
static int set_up(struct run *r)
{
	struct lwk_sampling *s = &r->s;

	if (lwk_sampling_alloc(s) ||
	    lwk_sampbuf_init(&r->buf, (size_t)s->o.buffer, fd_write, &r->out_fd) ||
	    lwk_nodestat_open(&s->ns, s->proc_root)) {
		say("cannot set up: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Open the per-process source while the sampler is still whole root
 * (loading BPF needs CAP_BPF and CAP_PERFMON or CAP_SYS_ADMIN, and
 * before 5.11 a memlock limit that CAP_SYS_RESOURCE may raise).  The
 * starter waits on ready_fd only for source=bpf, whose failure fails
 * the job: "o" once open, or "r" and the reason; then the fd closes.
 * 0, or the exit status 3 when source=bpf cannot work.
 */
/* Tell the starter the source is open ("o"), then let go of the fd. */
static void report_ready(int ready_fd)
{
	if (ready_fd < 0)
		return;
	if (write(ready_fd, "o", 1) != 1)
		say("cannot tell the starter: %s", strerror(errno));
	close(ready_fd);
}

static int open_source(struct run *r, int ready_fd)
{
	struct lwk_sampling *s = &r->s;
	char err[700];
	uint64_t cg_us;

	s->cgroup_cpu = s->cgroup && lwk_cgroup_cpu_us(s->cgroup, &cg_us) == 0;
	if (s->cgroup_cpu)
		lwk_sample_cgroup_cpu(s);
	if (lwk_sample_source_open(s, err, sizeof(err))) {
		say("%s", err);
		if (ready_fd >= 0 && dprintf(ready_fd, "r%s", err) < 0)
			say("cannot tell the starter: %s", strerror(errno));
		if (ready_fd >= 0)
			close(ready_fd);
		return 3;
	}
	report_ready(ready_fd);
	if (s->fallback[0])
		say("reading processes from %s: %s", lwk_sample_source_name(s), s->fallback);
	else if (s->use_bpf) {
		const char *why, *walk = lwk_sample_source_walk(s, &why);

		say("reading processes from bpf (%s skeleton), walking %s%s%s",
		    lwk_taskiter_loader(s->ti), walk, why[0] ? ": " : "", why);
	}
	return 0;
}

/* The header line: the job, the settings, the clock's state. */
static void write_header(struct run *r)
{
	struct lwk_sampling *s = &r->s;
	struct timex tx = { .modes = 0 };
	char host[256], node_json[600], hj[600], fb[1100], wj[800];
	const char *walk, *walk_why;
	int clock_state, n;

	clock_state = adjtimex(&tx);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	lwk_json_string(s->node, node_json, sizeof(node_json));
	lwk_json_string(host, hj, sizeof(hj));
	lwk_json_string(s->fallback, fb, sizeof(fb));
	walk = lwk_sample_source_walk(s, &walk_why);
	lwk_json_string(walk_why, wj, sizeof(wj));
	n = snprintf(s->line, s->line_cap,
		     "{\"format\":\"slurm-lwk-syncmon\",\"version\":1,\"job\":%u,\"node\":%s,"
		     "\"host\":%s,\"interval_us\":%llu,\"offset_us\":%llu,\"flush_every\":%llu,"
		     "\"fullscan_every\":%llu,\"buffer_bytes\":%llu,\"source\":\"%s\",\"source_fallback\":%s,"
		     "\"bpf_walk\":\"%s\",\"bpf_walk_why\":%s,"
		     "\"idle_threshold_pct\":%.2f,\"clock\":{\"synced\":%s,\"status\":%d,"
		     "\"maxerror_us\":%ld,\"esterror_us\":%ld},\"clk_tck\":%ld,"
		     "\"job_cgroup\":%s,\"job_cgroup_cpu\":%s,\"sched_fifo\":%u,\"start_ns\":%llu}\n",
		     s->job, node_json, hj, (unsigned long long)s->o.interval,
		     (unsigned long long)s->o.offset, (unsigned long long)s->o.flush,
		     (unsigned long long)s->o.fullscan, (unsigned long long)s->o.buffer,
		     lwk_sample_source_name(s), fb, walk, wj, (double)s->o.idle / 100.0,
		     (clock_state == TIME_ERROR || (tx.status & STA_UNSYNC)) ? "false" : "true",
		     tx.status, tx.maxerror, tx.esterror, s->clk_tck, s->cgroup ? "true" : "false",
		     s->cgroup_cpu ? "true" : "false", r->fifo,
		     (unsigned long long)now_ns(CLOCK_REALTIME));
	lwk_sampbuf_add(&r->buf, s->line, (size_t)n, true);
}

/*
 * The tick the sampler woke for: take its sample, write the sample's
 * cost into it, hand it to the buffer.  false when the sampler should
 * stop (its job has gone).
 */
static bool sample_tick(struct run *r)
{
	struct lwk_sampling *s = &r->s;
	uint64_t k, t, late, t_ideal, cpu0, cost;
	bool flush, full;
	size_t len, cost_at;
	char cost_txt[16];

	if (fifo_dropped && r->fifo) {
		say("a tick ran past its share at SCHED_FIFO (syncmon_fifo=%u): sampling in the "
		    "normal class from now on", r->fifo);
		r->fifo = 0;
	}
	t_ideal = r->tick.next;
	t = now_ns(CLOCK_REALTIME);
	late = lwk_ticker_fire(&r->tick, t, &k);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	flush = lwk_tick_is_flush(k, s->o.flush);
	/* A full scan at least every 10 s whatever fullscan= says: it is
	 * also how the sampler notices that the job has gone. */
	full = r->samples == 0 || k % s->o.fullscan == 0 || t - r->last_full >= 10000000000ULL;
	if (full)
		r->last_full = t;
	len = lwk_sample_take(s, k, t_ideal, t, late, flush, full, &cost_at);
	cost = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	if (s->ti_failures && !r->said_source_error) {
		say("the task iterator failed: %s (a failed read lists no process that tick; "
		    "the footer's source_errors counts the failures)", s->ti_error);
		r->said_source_error = true;
	}
	if (s->ti && !r->said_walk_fallback) {
		const char *first, *now_why, *walk;

		if (lwk_taskiter_fallbacks(s->ti, &first)) {
			walk = lwk_sample_source_walk(s, &now_why);
			say("the cgroup walk could not read a tick whole: %s (read by the walk of "
			    "every task; the footer's bpf_walk_fallbacks counts such ticks)%s%s",
			    first, strcmp(walk, "cgroup") ? "; every task from now on: " : "",
			    strcmp(walk, "cgroup") ? now_why : "");
			r->said_walk_fallback = true;
		}
	}
	/* Write the cost into its place, padded to the same width. */
	snprintf(cost_txt, sizeof(cost_txt), "%-12llu", (unsigned long long)cost);
	memcpy(s->line + cost_at, cost_txt, 12);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (lwk_sampbuf_add(&r->buf, s->line, len, flush))
		say("write failed: %s", strerror(errno));
	r->flush_cost += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	r->samples++;
	/* The job epilog stops the sampler.  This is the safety net for
	 * a job whose epilog never runs here (slurmd killed): no job
	 * process on the node for --orphan-after seconds.  It must be
	 * long: between two steps of a job whose batch script runs on
	 * another node, this node has no job process at all. */
	if (s->empty_since && t - s->empty_since >= r->orphan_after * 1000000000ULL) {
		say("job %u has had no process on %s for %llu s: stopping", s->job, s->node,
		    (unsigned long long)r->orphan_after);
		return false;
	}
	return true;
}

/* Sample at every tick on the grid until SIGTERM or SIGINT, or until
 * the job has gone. */
static void run_ticks(struct run *r)
{
	struct lwk_sampling *s = &r->s;

	lwk_nodestat_read(&s->ns);
	s->prev_busy = s->ns.busy;
	s->prev_total = s->ns.total;
	lwk_ticker_init(&r->tick, s->o.interval * 1000, s->o.offset * 1000,
			now_ns(CLOCK_REALTIME));
	lwk_cpu_budget_init(&r->cpu, r->cpu_max, CPU_WINDOW_NS / 10000 * r->cpu_max, now_ns(CLOCK_MONOTONIC),
			    now_ns(CLOCK_PROCESS_CPUTIME_ID));
	while (!stop) {
		struct timespec due = { .tv_sec = (time_t)(r->tick.next / 1000000000ULL),
					.tv_nsec = (long)(r->tick.next % 1000000000ULL) };

		if (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &due, NULL) == EINTR)
			continue;
		if (!lwk_cpu_budget_allows(&r->cpu, now_ns(CLOCK_MONOTONIC),
					   now_ns(CLOCK_PROCESS_CPUTIME_ID))) {
			uint64_t k;

			/* Passed over, on the same grid: the next tick
			 * sampled is still aligned with the other nodes'.
			 * A flush tick still writes out what the buffer
			 * holds (the other nodes write theirs then). */
			lwk_ticker_fire(&r->tick, now_ns(CLOCK_REALTIME), &k);
			if (lwk_tick_is_flush(k, r->s.o.flush) && lwk_sampbuf_flush(&r->buf))
				say("write failed: %s", strerror(errno));
			if (r->cpu.limited == 1)
				say("the sampler used more than this site's syncmon_cpu=%llu.%02llu%% "
				    "of a CPU: ticks are passed over until it is back under (the "
				    "footer's cpu_limited counts them)",
				    (unsigned long long)(r->cpu_max / 100),
				    (unsigned long long)(r->cpu_max % 100));
			continue;
		}
		if (!sample_tick(r))
			break;
	}
}

/* The footer line: what the run counted. */
static void write_footer(struct run *r)
{
	const char *why;
	int n = snprintf(r->s.line, r->s.line_cap,
			 "{\"end\":true,\"samples\":%llu,\"ticks_skipped\":%llu,\"flushes\":%llu,"
			 "\"early_flushes\":%llu,\"oversize\":%llu,\"dropped\":%llu,"
			 "\"source_errors\":%llu,\"bpf_walk_fallbacks\":%llu,\"bpf_walk_end\":\"%s\","
			 "\"cpu_limited\":%llu,\"flush_cost_ns\":%llu,\"stop_ns\":%llu}\n",
			 (unsigned long long)r->samples, (unsigned long long)r->tick.skipped,
			 (unsigned long long)r->buf.flushes, (unsigned long long)r->buf.early_flushes,
			 (unsigned long long)r->buf.oversize, (unsigned long long)r->buf.dropped,
			 (unsigned long long)r->s.ti_failures,
			 (unsigned long long)(r->s.ti ? lwk_taskiter_fallbacks(r->s.ti, &why) : 0),
			 lwk_sample_source_walk(&r->s, &why), (unsigned long long)r->cpu.limited,
			 (unsigned long long)r->flush_cost, (unsigned long long)now_ns(CLOCK_REALTIME));

	lwk_sampbuf_add(&r->buf, r->s.line, (size_t)n, true);
}

int lwk_sampler_run(const struct lwk_sampler_args *a)
{
	struct run r = { .s = { .job = a->job, .node = a->node, .cgroup = a->cgroup,
				.proc_root = a->proc_root },
			 .orphan_after = a->orphan_after, .cpu_max = a->cpu_max };
	char err[512], path[4096];
	int rc;

	/* Before any word to the starter: a starter that gave up waiting
	 * has closed its end. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(path, sizeof(path), "%s/syncmon.log", a->state);
	log_file = fopen(path, "ae");
	if (lwk_option_parse(&lwk_grammar_syncmon, a->options, &r.s.o, err, sizeof(err))) {
		say("%s", err);
		return 2;
	}
	/* Only source=bpf can fail the job: the starter waits for no other
	 * source to open. */
	if (r.s.o.source != LWK_SOURCE_BPF)
		report_ready(a->ready_fd);
	if (a->cpus && (rc = pin_to_cpus(a->cpus)))
		return rc;
	prepare_process();
	record_pid(a->state);
	if ((rc = open_source(&r, r.s.o.source == LWK_SOURCE_BPF ? a->ready_fd : -1)))
		return rc;
	if (limit_memory(&r, a->memory_max)) {
		lwk_sample_source_close(&r.s);
		return 1;
	}
	if (open_output(&r, a) || set_up(&r)) {
		lwk_sample_source_close(&r.s);
		return 1;
	}
	r.fifo = run_fifo(a->fifo, a->cpus, r.s.o.interval, a->cpu_max);
	/* Never on with more than it needs: no sampler rather than one
	 * that keeps root's capabilities for the job's life. */
	if (lwk_syncmon_confine(!r.s.cgroup, r.s.use_bpf && lwk_syncmon_bpf_fds_need_caps())) {
		say("cannot give up the capabilities sampling does not need (%s): stopping", strerror(errno));
		close(r.out_fd);
		lwk_sample_source_close(&r.s);
		return 1;
	}
	write_header(&r);
	run_ticks(&r);
	write_footer(&r);
	lwk_sampbuf_flush(&r.buf);
	close(r.out_fd);
	lwk_sample_source_close(&r.s); /* nothing of it stays in the kernel */
	say("job %u node %s: stopped after %llu samples", r.s.job, r.s.node,
	    (unsigned long long)r.samples);
	snprintf(path, sizeof(path), "%s/syncmon.pid", a->state);
	unlink(path);
	return 0;
}
