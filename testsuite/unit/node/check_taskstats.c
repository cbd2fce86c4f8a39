/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * taskstats against the running kernel: the CPU time of a busy child
 * grows.  Exits 77 (skipped) with the reason where the kernel or the
 * privileges do not allow it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "node/taskstats.h"

static int failures;

#define OK(cond, ...)                                  \
	do {                                           \
		if (cond) {                            \
			printf("ok: ");                \
		} else {                               \
			printf("FAIL: ");              \
			failures++;                    \
		}                                      \
		printf(__VA_ARGS__);                   \
		printf("\n");                          \
	} while (0)

static void spin(double seconds)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

int main(void)
{
	struct lwk_taskstats ts;
	struct lwk_task_cpu before, after, self;
	char err[256];
	pid_t child;
	int rc;

	if (lwk_taskstats_open(&ts, err, sizeof(err))) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	if (lwk_taskstats_query(&ts, getpid(), 0, &self)) {
		printf("SKIP: taskstats query refused (%s): needs CAP_NET_ADMIN\n", strerror(errno));
		return 77;
	}
	child = fork();
	if (child == 0) {
		spin(0.6);
		pause();
		_exit(0);
	}
	usleep(100000);
	rc = lwk_taskstats_query(&ts, child, 1, &before);
	OK(rc == 0, "TGID query of a live child (struct version %u)", ts.version);
	usleep(300000);
	rc = lwk_taskstats_query(&ts, child, 1, &after);
	OK(rc == 0 && after.utime_us + after.stime_us > before.utime_us + before.stime_us,
	   "its CPU time grows: %llu -> %llu us",
	   (unsigned long long)(before.utime_us + before.stime_us),
	   (unsigned long long)(after.utime_us + after.stime_us));
	OK(after.utime_us + after.stime_us <= 2000000, "and stays plausible (under 2 s)");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	rc = lwk_taskstats_query(&ts, child, 1, &after);
	OK(rc == -1 && errno == ESRCH, "a reaped pid answers ESRCH (rc %d, %s)", rc, strerror(errno));
	{
		/* A reply that is cut short, or from another family, is refused. */
		char junk[64] = { 0 };
		struct lwk_task_cpu c;

		OK(lwk_taskstats_parse_reply(junk, sizeof(junk), ts.family, &c, NULL) == -1,
		   "a malformed reply is refused");
	}
	lwk_taskstats_close(&ts);
	return failures ? 1 : 0;
}
