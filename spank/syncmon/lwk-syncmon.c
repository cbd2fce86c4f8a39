/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-syncmon: the --sync-monitor sampler, one per node per job.
 *
 * Started by the lwk SPANK plugin as root from the job's first step on
 * the node (it inherits the job's lock on <state>/syncmon.lock and
 * holds it for its whole life, so a second step never starts a second
 * sampler), stopped with SIGTERM by the job epilog; it also stops by
 * itself once the job has left the node.
 *
 * Each tick t_k = offset + k * interval (wall clock, the same on every
 * node) it reads the job's processes and the node's totals, appends
 * one JSON line to a fixed buffer, and writes the buffer out only at
 * flush ticks, which are also the same on every node (seeds 000, 002).
 * The output file is opened with the job user's file-system identity:
 * root never opens a path the user chose.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/options.h"
#include "node/procstat.h"
#include "syncmon/sampbuf.h"
#include "node/procfs.h"
#include "syncmon/json.h"
#include "node/taskstats.h"
#include "syncmon/tick.h"

#define MAX_PIDS 65536

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

/*
 * Create the output file as the job's user: set the file-system ids
 * (which also drops root's file capabilities) and the user's groups,
 * open dir and then the file relative to it with O_EXCL|O_NOFOLLOW,
 * and come back.  An existing file is never reused: a numbered name is
 * taken instead.
 */
static int open_as_user(const char *dir, const char *base, uid_t uid, gid_t gid,
			char *chosen, size_t len)
{
	struct passwd *pw = getpwuid(uid);
	int dfd, fd = -1, saved = 0;

	if (!pw || initgroups(pw->pw_name, gid)) {
		say("cannot find the groups of uid %u", (unsigned)uid);
		return -1;
	}
	setfsgid(gid);
	setfsuid(uid);
	if ((int)setfsuid((uid_t)-1) != (int)uid) {
		say("cannot take the file-system identity of uid %u", (unsigned)uid);
		goto back;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		saved = errno;
		say("cannot open the output directory %s as uid %u: %s", dir, (unsigned)uid,
		    strerror(errno));
		goto back;
	}
	for (int i = 0; i < 100 && fd < 0; i++) {
		if (i == 0)
			snprintf(chosen, len, "%s.jsonl", base);
		else
			snprintf(chosen, len, "%s.%d.jsonl", base, i);
		fd = openat(dfd, chosen, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST) {
			saved = errno;
			say("cannot create %s/%s as uid %u: %s", dir, chosen, (unsigned)uid,
			    strerror(errno));
			break;
		}
	}
	close(dfd);
back:
	setfsuid(0);
	setfsgid(0);
	setgroups(0, NULL);
	errno = saved;
	return fd;
}

struct proc_state {
	pid_t pid;
	uint64_t cpu_us;	/* at its last read */
	uint64_t start_ticks;
	uint64_t rss_kb;
};

struct sampler {
	struct lwk_syncmon_opts o;
	uint32_t job;
	const char *node, *cgroup, *proc_root;
	struct lwk_taskstats ts;
	bool use_taskstats;
	struct lwk_proctab *tab;
	struct lwk_nodestat ns;
	uint64_t prev_busy, prev_total, prev_forks;
	pid_t *pids;
	size_t npids;
	struct proc_state *known; /* by index into pids */
	uint64_t *not_job;	  /* pids seen not to be the job's (no cgroup) */
	pid_t *fresh;		  /* this tick's list, compared with pids */
	long clk_tck, page_kb;
	uint64_t empty_since; /* first full scan that found no job process; 0: some */
	char *line;
	size_t line_cap;
};

/* Append to the sample line; a line that would not fit is cut short
 * (its "procs" list), never overrun. */
#define OUT(...)                                                                  \
	do {                                                                      \
		if (o < s->line_cap)                                              \
			o += (size_t)snprintf(s->line + o, s->line_cap - o, __VA_ARGS__); \
	} while (0)

/*
 * Refresh the job's pid list.  Returns whether it changed: then every
 * process is read this tick (a new one has no history to skip on).
 */
static bool find_pids(struct sampler *s, bool full)
{
	size_t n = 0;
	bool changed = false;

	/* The seed's shortcut: no fork on the node since the last tick means
	 * no new process, so the known list stands (between full scans). */
	if (!full && s->ns.forks == s->prev_forks && s->npids)
		return false;
	if (s->cgroup) {
		if (lwk_cgroup_pids(s->cgroup, s->fresh, MAX_PIDS, &n))
			n = 0;
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
	return changed;
}

/* Build the line of tick k in s->line; *cost_at is where its cost goes. */
static size_t take_sample(struct sampler *s, uint64_t k, uint64_t t_ideal, uint64_t t,
			  uint64_t late, bool flush, bool full, size_t *cost_at)
{
	size_t o = 0, skipped = 0, listed = 0;
	uint64_t job_cpu = 0, job_rss = 0, now_ticks;
	bool new_procs;
	double busy_pct = 0;
	char comm[128]; /* 15 bytes, each up to \u00xx, quoted */

	lwk_nodestat_read(&s->ns);
	if (s->ns.total > s->prev_total)
		busy_pct = 100.0 * (double)(s->ns.busy - s->prev_busy) /
			   (double)(s->ns.total - s->prev_total);
	new_procs = find_pids(s, full);
	s->prev_busy = s->ns.busy;
	s->prev_total = s->ns.total;
	s->prev_forks = s->ns.forks;
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
	for (size_t i = 0; i < s->npids; i++) {
		struct proc_state *ps = &s->known[i];
		struct lwk_procstat st;
		uint64_t cpu_us;

		if (ps->pid != s->pids[i])
			memset(ps, 0, sizeof(*ps)), ps->pid = s->pids[i];
		if (!full && ps->start_ticks &&
		    lwk_procstat_skip(ps->cpu_us * (uint64_t)s->clk_tck / 1000000, ps->start_ticks,
				      now_ticks, s->o.idle, new_procs)) {
			skipped++;
			job_cpu += ps->cpu_us;
			job_rss += ps->rss_kb;
			continue;
		}
		if (lwk_proctab_read(s->tab, s->pids[i], &st))
			continue; /* gone since it was listed */
		if (s->use_taskstats) {
			struct lwk_task_cpu c;

			if (lwk_taskstats_query(&s->ts, s->pids[i], 1, &c) == 0)
				cpu_us = c.utime_us + c.stime_us;
			else
				cpu_us = (st.utime + st.stime) * 1000000ULL / (uint64_t)s->clk_tck;
		} else {
			cpu_us = (st.utime + st.stime) * 1000000ULL / (uint64_t)s->clk_tck;
		}
		ps->cpu_us = cpu_us;
		ps->start_ticks = st.starttime;
		ps->rss_kb = st.rss_pages * (uint64_t)s->page_kb;
		job_cpu += cpu_us;
		job_rss += ps->rss_kb;
		lwk_json_string(st.comm, comm, sizeof(comm));
		if (s->line_cap - o > 256) {
			OUT("%s{\"pid\":%d,\"comm\":%s,\"cpu_us\":%llu,\"threads\":%llu}",
			    listed ? "," : "", (int)st.pid, comm, (unsigned long long)cpu_us,
			    (unsigned long long)st.num_threads);
			listed++;
		}
	}
	/* Close the files of exited processes at full scans: the sweep walks
	 * the whole table, too much for every tick. */
	if (full)
		lwk_proctab_sweep(s->tab);
	/* With a job cgroup, the job's total is one read, and exact: it
	 * includes processes that already exited. */
	if (s->cgroup) {
		uint64_t cg_us;

		if (lwk_cgroup_cpu_us(s->cgroup, &cg_us) == 0)
			job_cpu = cg_us;
	}
	OUT("],\"skipped\":%zu,\"job\":{\"nprocs\":%zu,\"cpu_us\":%llu,\"rss_kb\":%llu}}\n", skipped,
	    s->npids, (unsigned long long)job_cpu, (unsigned long long)job_rss);
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

/*
 * Root writing into the user's file system must not go past the user's
 * quota or into the blocks reserved for root: drop CAP_SYS_RESOURCE
 * (the sampler keeps CAP_NET_ADMIN for taskstats, and the rest of root
 * for its state directory).
 */
static int drop_sys_resource(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_SYS_RESOURCE / 32].effective &= ~(1u << (CAP_SYS_RESOURCE % 32));
	data[CAP_SYS_RESOURCE / 32].permitted &= ~(1u << (CAP_SYS_RESOURCE % 32));
	data[CAP_SYS_RESOURCE / 32].inheritable &= ~(1u << (CAP_SYS_RESOURCE % 32));
	return (int)syscall(SYS_capset, &hdr, data);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lwk-syncmon --job ID --node NAME --uid UID --gid GID --dir DIR\n"
		"                   --state DIR [--options K=V,...] [--cgroup DIR]\n"
		"                   [--proc DIR] [--cpus LIST] [--orphan-after SECONDS]\n"
		"                   [--foreground]\n"
		"  --cpus LIST  run only on these CPUs (the OS cores of an --lwk job)\n"
		"  --orphan-after SECONDS  stop when the job has had no process here\n"
		"               this long (default 300; the job epilog stops it first)\n"
		"Started by the lwk SPANK plugin; see slurm-lwk(1), --sync-monitor.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "job", required_argument, NULL, 'j' },   { "node", required_argument, NULL, 'n' },
		{ "uid", required_argument, NULL, 'u' },   { "gid", required_argument, NULL, 'g' },
		{ "dir", required_argument, NULL, 'd' },   { "state", required_argument, NULL, 's' },
		{ "options", required_argument, NULL, 'o' }, { "cgroup", required_argument, NULL, 'c' },
		{ "proc", required_argument, NULL, 'p' },  { "foreground", no_argument, NULL, 'f' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "orphan-after", required_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 }
	};
	struct sampler s = { .proc_root = "/proc" };
	const char *dir = NULL, *state = NULL, *options = NULL, *cpus = NULL;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	char err[512], base[512], chosen[600], path[4096], host[256], node_json[600];
	struct lwk_sampbuf buf;
	struct lwk_ticker tick;
	struct timex tx = { .modes = 0 };
	int c, out_fd, clock_state;
	uint64_t samples = 0, flush_cost = 0, start, last_full = 0, orphan_after = 300;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': s.job = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'n': s.node = optarg; break;
		case 'u': uid = (uid_t)strtoul(optarg, NULL, 10); break;
		case 'g': gid = (gid_t)strtoul(optarg, NULL, 10); break;
		case 'd': dir = optarg; break;
		case 's': state = optarg; break;
		case 'o': options = optarg; break;
		case 'c': s.cgroup = optarg; break;
		case 'p': s.proc_root = optarg; break;
		case 'f': break;
		case 'C': cpus = optarg; break;
		case 'O': orphan_after = strtoull(optarg, NULL, 10); break;
		default: usage(); return 2;
		}
	}
	if (!s.job || !s.node || !orphan_after || orphan_after > 86400 || uid == (uid_t)-1 || gid == (gid_t)-1 || !dir || !state ||
	    dir[0] != '/') {
		usage();
		return 2;
	}
	snprintf(path, sizeof(path), "%s/syncmon.log", state);
	log_file = fopen(path, "ae");
	if (lwk_option_parse(&lwk_grammar_syncmon, options, &s.o, err, sizeof(err))) {
		say("%s", err);
		return 2;
	}
	if (cpus) {
		/* Keep the sampler's own noise off the application's cores. */
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
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the tick, not up to 50 us later */
	{
		/* One open /proc file per job process. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max < 70000 ? rl.rlim_max : 70000;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	/* The starter records the pid before the step goes on (a job may end
	 * at once); this is for a sampler started by hand.  Never over the
	 * starter's file: it may be reading it. */
	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	{
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dprintf(fd, "%d\n", (int)getpid());
			close(fd);
		}
	}

	if (drop_sys_resource())
		say("cannot drop CAP_SYS_RESOURCE: %s", strerror(errno));
	snprintf(base, sizeof(base), "syncmon-%u-%s", s.job, s.node);
	out_fd = open_as_user(dir, base, uid, gid, chosen, sizeof(chosen));
	if (out_fd < 0)
		return 1;
	say("job %u node %s: writing %s/%s", s.job, s.node, dir, chosen);

	s.clk_tck = sysconf(_SC_CLK_TCK);
	s.page_kb = sysconf(_SC_PAGESIZE) / 1024;
	s.pids = calloc(MAX_PIDS, sizeof(*s.pids));
	s.known = calloc(MAX_PIDS, sizeof(*s.known));
	s.not_job = calloc(LWK_PID_BITS / 64, sizeof(uint64_t)); /* 512 KiB, once */
	s.fresh = calloc(MAX_PIDS, sizeof(*s.fresh));
	s.tab = lwk_proctab_new(s.proc_root, MAX_PIDS);
	/* One sample line: 256 KiB holds ~3000 processes; more are counted
	 * but not listed.  Not sized by the user's buffer= (memory outside
	 * the job's allocation). */
	s.line_cap = 256 * 1024;
	s.line = malloc(s.line_cap);
	if (!s.pids || !s.known || !s.not_job || !s.fresh || !s.tab || !s.line ||
	    lwk_sampbuf_init(&buf, (size_t)s.o.buffer, fd_write, &out_fd) ||
	    lwk_nodestat_open(&s.ns, s.proc_root)) {
		say("cannot set up: %s", strerror(errno));
		return 1;
	}
	if (s.o.source != LWK_SOURCE_PROC) {
		s.use_taskstats = lwk_taskstats_open(&s.ts, err, sizeof(err)) == 0;
		if (!s.use_taskstats)
			say("%s; reading /proc instead", err);
	}

	clock_state = adjtimex(&tx);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	lwk_json_string(s.node, node_json, sizeof(node_json));
	{
		char hj[600];
		int n;

		lwk_json_string(host, hj, sizeof(hj));
		n = snprintf(s.line, s.line_cap,
			     "{\"format\":\"slurm-lwk-syncmon\",\"version\":1,\"job\":%u,\"node\":%s,"
			     "\"host\":%s,\"interval_us\":%llu,\"offset_us\":%llu,\"flush_every\":%llu,"
			     "\"fullscan_every\":%llu,\"buffer_bytes\":%llu,\"source\":\"%s\","
			     "\"idle_threshold_pct\":%.2f,\"clock\":{\"synced\":%s,\"status\":%d,"
			     "\"maxerror_us\":%ld,\"esterror_us\":%ld},\"clk_tck\":%ld,"
			     "\"job_cgroup\":%s,\"start_ns\":%llu}\n",
			     s.job, node_json, hj, (unsigned long long)s.o.interval,
			     (unsigned long long)s.o.offset, (unsigned long long)s.o.flush,
			     (unsigned long long)s.o.fullscan, (unsigned long long)s.o.buffer,
			     s.use_taskstats ? "taskstats" : "proc", (double)s.o.idle / 100.0,
			     (clock_state == TIME_ERROR || (tx.status & STA_UNSYNC)) ? "false" : "true",
			     tx.status, tx.maxerror, tx.esterror, s.clk_tck, s.cgroup ? "true" : "false",
			     (unsigned long long)now_ns(CLOCK_REALTIME));
		lwk_sampbuf_add(&buf, s.line, (size_t)n, true);
	}

	lwk_nodestat_read(&s.ns);
	s.prev_busy = s.ns.busy;
	s.prev_total = s.ns.total;
	start = now_ns(CLOCK_REALTIME);
	lwk_ticker_init(&tick, s.o.interval * 1000, s.o.offset * 1000, start);
	while (!stop) {
		struct timespec due = { .tv_sec = (time_t)(tick.next / 1000000000ULL),
					.tv_nsec = (long)(tick.next % 1000000000ULL) };
		uint64_t k, t, late, t_ideal, cpu0, cost;
		bool flush, full;
		size_t len, cost_at;
		char cost_txt[16];

		if (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &due, NULL) == EINTR)
			continue;
		t_ideal = tick.next;
		t = now_ns(CLOCK_REALTIME);
		late = lwk_ticker_fire(&tick, t, &k);
		cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		flush = lwk_tick_is_flush(k, s.o.flush);
		/* A full scan at least every 10 s whatever fullscan= says: it is
		 * also how the sampler notices that the job has gone. */
		full = samples == 0 || k % s.o.fullscan == 0 || t - last_full >= 10000000000ULL;
		if (full)
			last_full = t;
		len = take_sample(&s, k, t_ideal, t, late, flush, full, &cost_at);
		cost = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
		/* Write the cost into its place, padded to the same width. */
		snprintf(cost_txt, sizeof(cost_txt), "%-12llu", (unsigned long long)cost);
		memcpy(s.line + cost_at, cost_txt, 12);
		cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		if (lwk_sampbuf_add(&buf, s.line, len, flush))
			say("write failed: %s", strerror(errno));
		flush_cost += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
		samples++;
		/* The job epilog stops the sampler.  This is the safety net for
		 * a job whose epilog never runs here (slurmd killed): no job
		 * process on the node for --orphan-after seconds.  It must be
		 * long: between two steps of a job whose batch script runs on
		 * another node, this node has no job process at all. */
		if (s.empty_since && t - s.empty_since >= orphan_after * 1000000000ULL) {
			say("job %u has had no process on %s for %llu s: stopping", s.job, s.node,
			    (unsigned long long)orphan_after);
			break;
		}
	}
	{
		int n = snprintf(s.line, s.line_cap,
				 "{\"end\":true,\"samples\":%llu,\"ticks_skipped\":%llu,\"flushes\":%llu,"
				 "\"early_flushes\":%llu,\"oversize\":%llu,\"dropped\":%llu,"
				 "\"flush_cost_ns\":%llu,\"stop_ns\":%llu}\n",
				 (unsigned long long)samples, (unsigned long long)tick.skipped,
				 (unsigned long long)buf.flushes, (unsigned long long)buf.early_flushes,
				 (unsigned long long)buf.oversize, (unsigned long long)buf.dropped,
				 (unsigned long long)flush_cost, (unsigned long long)now_ns(CLOCK_REALTIME));

		lwk_sampbuf_add(&buf, s.line, (size_t)n, true);
	}
	lwk_sampbuf_flush(&buf);
	close(out_fd);
	say("job %u node %s: stopped after %llu samples", s.job, s.node, (unsigned long long)samples);
	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	unlink(path);
	return 0;
}
