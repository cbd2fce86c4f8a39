/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/monitor-cost [--idle] [ROUNDS]: CPU cost of one sample of a
 * job's processes, at 50, 200 and 1000 processes, for each way of
 * reading per-process CPU time:
 *
 *   naive      open/read/close /proc/<pid>/stat per process (seed 000's pinfo)
 *   pread      files kept open, re-read with pread (lwk_proctab)
 *   taskstats  one netlink request per process (lwk_taskstats, TGID)
 *   skip       pread, skipping processes idle over their lifetime (< 1%)
 *              while no new process appears, full scan every 20th sample
 *              (seed 000, 3.3.1)
 *   bpf        one read() of the BPF task iterator for all of them
 *              (lwk_taskiter walking every task of the node), then a
 *              lookup per process
 *   bpf-cg     the same through the walk of one cgroup's tasks (Linux
 *              6.7+): the processes are put in a cgroup of their own,
 *              as a job's are in Slurm's job cgroup
 *
 * The processes are busy by default: each spins (at SCHED_IDLE, so the
 * benchmark itself still gets a CPU), as an HPC rank does; --idle makes
 * them sleep instead.  The methods alternate within each round so that
 * the machine's noise falls on all alike; the cost is CPU time of this
 * process per sample (CLOCK_PROCESS_CPUTIME_ID, which counts the system
 * calls), and the ratios are measured in this one run.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sched.h>

#include "node/procstat.h"
#include "node/taskiter.h"
#include "node/taskstats.h"

enum { NAIVE, PREAD, TASKSTATS, SKIP, BPF, BPF_CG, METHODS };
static const char *const names[METHODS] = { "naive", "pread", "taskstats", "skip", "bpf",
					    "bpf-cg" };

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static uint64_t sink; /* keeps the reads from being optimised away */

static void sample_naive(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		char path[64], buf[1024];
		struct lwk_procstat st;
		int fd;
		ssize_t r;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r > 0 && lwk_procstat_parse(buf, (size_t)r, &st) == 0)
			sink += st.utime + st.stime;
	}
}

/* Now, in the clock ticks /proc/<pid>/stat counts from boot. */
static uint64_t boot_ticks(void)
{
	struct timespec t;

	clock_gettime(CLOCK_BOOTTIME, &t);
	return ((uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec) /
	       (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
}

static void sample_pread(struct lwk_proctab *t, const pid_t *pids, int n,
			 struct lwk_procstat *last, int full)
{
	uint64_t now = last ? boot_ticks() : 0;

	for (int i = 0; i < n; i++) {
		struct lwk_procstat st;

		/* Skip mode: last[] holds what the last full scan saw. */
		if (last && !full && last[i].pid &&
		    lwk_procstat_skip(last[i].utime + last[i].stime, last[i].starttime,
				      now, 100, false))
			continue;
		if (lwk_proctab_read(t, pids[i], &st) == 0) {
			sink += st.utime + st.stime;
			if (last)
				last[i] = st;
		}
	}
}

static void sample_taskstats(struct lwk_taskstats *ts, const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		struct lwk_task_cpu c;

		if (lwk_taskstats_query(ts, pids[i], 1, &c) == 0)
			sink += c.utime_us + c.stime_us;
	}
}

static void sample_bpf(struct lwk_taskiter *ti, const pid_t *pids, int n)
{
	lwk_taskiter_read(ti);
	for (int i = 0; i < n; i++) {
		const struct lwk_taskiter_proc *p = lwk_taskiter_find(ti, pids[i]);

		if (p)
			sink += p->cpu_ns;
	}
}

/* How many of the processes one read of the walk finds. */
static int found(struct lwk_taskiter *ti, const pid_t *pids, int n)
{
	int k = 0;

	if (lwk_taskiter_read(ti) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		k += lwk_taskiter_find(ti, pids[i]) != NULL;
	return k;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench/monitor-cost [--idle] [ROUNDS]\n"
		"  CPU time of one sample of 50, 200 and 1000 processes by each source of\n"
		"  per-process CPU time (naive open/read/close of /proc, pread of kept-open\n"
		"  files, taskstats, the idle skip, the BPF task iterator over every task and\n"
		"  over the processes' cgroup only), median of ROUNDS\n"
		"  (default 40), with the ratios naive/method of this one run.\n"
		"  --idle   the processes sleep (default: each spins, at SCHED_IDLE)\n"
		"Run as root for taskstats and bpf; a source that cannot run says why.  The\n"
		"  processes go in a cgroup of their own, removed at the end.\n");
}

/* n processes that spin (busy) or sleep; their pids in pids. */
static void start_procs(pid_t *pids, int n, int busy)
{
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct sched_param sp = { 0 };

			if (!busy) {
				pause();
				_exit(0);
			}
			sched_setscheduler(0, SCHED_IDLE, &sp);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
}

static double median(double *v, int n)
{
	for (int a = 1; a < n; a++)
		for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
			double x = v[b];

			v[b] = v[b - 1];
			v[b - 1] = x;
		}
	return v[n / 2];
}

/* One size: n processes, each method `rounds` times; prints a row. */
/* Put the processes in the benchmark's cgroup (cg: its directory). */
static void join_cgroup(const char *cg, const pid_t *pids, int n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	for (int i = 0; i < n; i++) {
		if (!(f = fopen(path, "w")))
			return;
		fprintf(f, "%d\n", (int)pids[i]);
		fclose(f);
	}
}

static void measure(int n, int rounds, int busy, struct lwk_taskstats *ts, struct lwk_taskiter *ti,
		    struct lwk_taskiter *cgi, const char *cg)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	struct lwk_procstat *last = calloc((size_t)n, sizeof(*last));
	struct lwk_proctab *tab = lwk_proctab_new("/proc", (size_t)n);
	struct lwk_proctab *tab2 = lwk_proctab_new("/proc", (size_t)n);
	double *cost[METHODS], med[METHODS];
	int k;

	for (int m = 0; m < METHODS; m++)
		cost[m] = calloc((size_t)rounds, sizeof(double));
	start_procs(pids, n, busy);
	if (ti)
		lwk_taskiter_set_pids(ti, pids, (size_t)n);
	if (cgi) {
		join_cgroup(cg, pids, n);
		lwk_taskiter_set_pids(cgi, pids, (size_t)n);
	}
	/* A walk that finds fewer than the n processes would time less
	 * work than a sample: its column is left out, saying so. */
	if (ti && (k = found(ti, pids, n)) < n) {
		printf("bpf at %d processes not measured: a read found %d\n", n, k);
		ti = NULL;
	}
	if (cgi && (k = found(cgi, pids, n)) < n) {
		printf("bpf-cg at %d processes not measured: a read found %d\n", n, k);
		cgi = NULL;
	}
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < METHODS; j++) {
			int m = (j + r) % METHODS;
			double t0 = cpu_now();

			switch (m) {
			case NAIVE: sample_naive(pids, n); break;
			case PREAD: sample_pread(tab, pids, n, NULL, 1); break;
			case TASKSTATS: if (ts) sample_taskstats(ts, pids, n); break;
			case SKIP: sample_pread(tab2, pids, n, last, r % 20 == 0); break;
			case BPF: if (ti) sample_bpf(ti, pids, n); break;
			case BPF_CG: if (cgi) sample_bpf(cgi, pids, n); break;
			}
			cost[m][r] = cpu_now() - t0;
		}
	}
	for (int m = 0; m < METHODS; m++)
		med[m] = median(cost[m], rounds);
	printf("%6d %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f   %7.1f %7.1f %7.1f %7.1f %7.1f\n", n,
	       med[NAIVE], med[PREAD], ts ? med[TASKSTATS] : 0.0, med[SKIP], ti ? med[BPF] : 0.0,
	       cgi ? med[BPF_CG] : 0.0, med[NAIVE] / med[PREAD],
	       ts ? med[NAIVE] / med[TASKSTATS] : 0.0, med[SKIP] > 0 ? med[NAIVE] / med[SKIP] : 0.0,
	       ti && med[BPF] > 0 ? med[NAIVE] / med[BPF] : 0.0,
	       cgi && med[BPF_CG] > 0 ? med[NAIVE] / med[BPF_CG] : 0.0);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	lwk_proctab_free(tab);
	lwk_proctab_free(tab2);
	for (int m = 0; m < METHODS; m++)
		free(cost[m]);
	free(pids);
	free(last);
}

/*
 * A cgroup of the benchmark's own in cgroup v2 where it is mounted,
 * else in the first v1 hierarchy: its directory in cg, or "" (with the
 * reason in err).
 */
static void make_cgroup(char *cg, size_t len, char *err, size_t errlen)
{
	char line[1024], dev[256], dir[512], type[64], first_v1[512] = "";
	FILE *m = fopen("/proc/mounts", "r");

	cg[0] = '\0';
	dir[0] = '\0';
	while (m && fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%255s %511s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2"))
			break;
		if (!strcmp(type, "cgroup") && !first_v1[0])
			snprintf(first_v1, sizeof(first_v1), "%s", dir);
		dir[0] = '\0';
	}
	if (m)
		fclose(m);
	if (!dir[0])
		snprintf(dir, sizeof(dir), "%s", first_v1);
	if (!dir[0]) {
		snprintf(err, errlen, "no cgroup file system mounted");
		return;
	}
	snprintf(cg, len, "%s/lwk-monitor-cost-%d", dir, (int)getpid());
	if (mkdir(cg, 0755)) {
		snprintf(err, errlen, "mkdir %s: %s", cg, strerror(errno));
		cg[0] = '\0';
	}
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 50, 200, 1000 };
	struct lwk_taskstats ts_store, *ts = NULL;
	struct lwk_taskiter *ti, *cgi = NULL;
	int rounds = 40, busy = 1;
	const char *walk, *why;
	char cg[600];
	struct rlimit rl;
	char err[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--idle")) {
			busy = 0;
		} else if ((rounds = atoi(argv[i])) < 1) {
			usage(stderr);
			return 2;
		}
	}
	/* One open file per process for pread: raise the soft limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (lwk_taskstats_open(&ts_store, err, sizeof(err)) == 0)
		ts = &ts_store;
	else
		printf("taskstats not measured: %s\n", err);
	ti = lwk_taskiter_open(1024, NULL, err, sizeof(err));
	if (!ti)
		printf("bpf not measured: %s\n", err);
	make_cgroup(cg, sizeof(cg), err, sizeof(err));
	if (!cg[0])
		printf("bpf-cg not measured: %s\n", err);
	else if (ti && !(cgi = lwk_taskiter_open(1024, cg, err, sizeof(err))))
		printf("bpf-cg not measured: %s\n", err);
	else if (cgi && strcmp(walk = lwk_taskiter_walk(cgi, &why), "cgroup")) {
		printf("bpf-cg not measured: %s\n", why);
		lwk_taskiter_close(cgi);
		cgi = NULL;
	}
	printf("CPU time per sample of all processes (%s), microseconds, median of %d samples:\n",
	       busy ? "busy: each spins" : "idle: each sleeps", rounds);
	printf("%6s %9s %9s %9s %9s %9s %9s   %s\n", "procs", names[0], names[1], names[2],
	       names[3], names[4], names[5], "naive/ pread  tstats    skip     bpf  bpf-cg");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
		measure(sizes[s], rounds, busy, ts, ti, cgi, cg);
	printf("(skip: the median sample skips every process whose lifetime CPU share is\n"
	       " below 1%%: all of them when idle, and busy ones too once more spin than\n"
	       " there are CPUs; every 20th is a full scan)\n");
	if (ts)
		lwk_taskstats_close(ts);
	lwk_taskiter_close(ti);
	lwk_taskiter_close(cgi);
	if (cg[0] && rmdir(cg))
		printf("cannot remove %s: %s\n", cg, strerror(errno));
	return sink == 42; /* never: uses sink */
}
