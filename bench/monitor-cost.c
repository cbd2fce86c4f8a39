/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/monitor-cost [ROUNDS]: CPU cost of one sample of a job's
 * processes, at 50, 200 and 1000 processes, for each way of reading
 * per-process CPU time:
 *
 *   naive      open/read/close /proc/<pid>/stat per process (seed 000's pinfo)
 *   pread      files kept open, re-read with pread (lwk_proctab)
 *   taskstats  one netlink request per process (lwk_taskstats, TGID)
 *   skip       pread, skipping processes idle over their lifetime (< 1%)
 *              while no new process appears, full scan every 20th sample
 *              (seed 000, 3.3.1)
 *
 * The methods alternate within each round so that the machine's noise
 * falls on all alike; the cost is CPU time of this process per sample
 * (CLOCK_PROCESS_CPUTIME_ID, which counts the system calls), and the
 * ratios are measured in this one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "node/procstat.h"
#include "node/taskstats.h"

enum { NAIVE, PREAD, TASKSTATS, SKIP, METHODS };
static const char *const names[METHODS] = { "naive", "pread", "taskstats", "skip" };

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

int main(int argc, char **argv)
{
	static const int sizes[] = { 50, 200, 1000 };
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	struct lwk_taskstats ts;
	struct rlimit rl;
	char err[256];
	int have_ts;

	/* One open file per process for pread: raise the soft limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	have_ts = lwk_taskstats_open(&ts, err, sizeof(err)) == 0;
	if (!have_ts)
		printf("taskstats not measured: %s\n", err);
	printf("CPU time per sample of all processes, microseconds (median of %d samples):\n", rounds);
	printf("%6s %10s %10s %10s %10s   %s\n", "procs", names[0], names[1], names[2], names[3],
	       "ratios naive/pread naive/taskstats naive/skip");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		int n = sizes[s];
		pid_t *pids = calloc((size_t)n, sizeof(*pids));
		struct lwk_procstat *last = calloc((size_t)n, sizeof(*last));
		double *cost[METHODS];
		struct lwk_proctab *tab = lwk_proctab_new("/proc", (size_t)n);
		struct lwk_proctab *tab2 = lwk_proctab_new("/proc", (size_t)n);
		double med[METHODS];

		for (int m = 0; m < METHODS; m++)
			cost[m] = calloc((size_t)rounds, sizeof(double));
		for (int i = 0; i < n; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				pause();
				_exit(0);
			}
		}
		for (int r = 0; r < rounds; r++) {
			for (int j = 0; j < METHODS; j++) {
				int m = (j + r) % METHODS;
				double t0 = cpu_now();

				switch (m) {
				case NAIVE: sample_naive(pids, n); break;
				case PREAD: sample_pread(tab, pids, n, NULL, 1); break;
				case TASKSTATS: if (have_ts) sample_taskstats(&ts, pids, n); break;
				case SKIP: sample_pread(tab2, pids, n, last, r % 20 == 0); break;
				}
				cost[m][r] = cpu_now() - t0;
			}
		}
		for (int m = 0; m < METHODS; m++) {
			/* median */
			for (int a = 1; a < rounds; a++)
				for (int b = a; b > 0 && cost[m][b - 1] > cost[m][b]; b--) {
					double x = cost[m][b];

					cost[m][b] = cost[m][b - 1];
					cost[m][b - 1] = x;
				}
			med[m] = cost[m][rounds / 2];
		}
		printf("%6d %10.0f %10.0f %10.0f %10.0f   %5.1f %5.1f %5.1f\n", n, med[NAIVE], med[PREAD],
		       have_ts ? med[TASKSTATS] : 0.0, med[SKIP], med[NAIVE] / med[PREAD],
		       have_ts ? med[NAIVE] / med[TASKSTATS] : 0.0,
		       med[SKIP] > 0 ? med[NAIVE] / med[SKIP] : 0.0);
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
	printf("(skip: the median sample skips every idle process; every 20th is a full scan)\n");
	if (have_ts)
		lwk_taskstats_close(&ts);
	return sink == 42; /* never: uses sink */
}
