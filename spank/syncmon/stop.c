/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stopping the sampler (syncmon/control.h): the job epilog's stop, and
 * the sweep of state that no epilog removed.  Both go by the job's lock
 * in its state directory; the start is in syncmon/start.c.
 */
#include "syncmon/control.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Is the lock free (no sampler, no start under way)? */
static int lock_free(const char *lock)
{
	int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	int free_now;

	if (fd < 0)
		return 1;
	free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return free_now;
}

/*
 * Is pid the sampler of this state directory (not a reused pid)?  A
 * root process whose command line has "--state <state>": the starter
 * passes it, and it names one job on one node (several nodes of a dev
 * cluster share a host and a job id).
 */
static int is_our_sampler(pid_t pid, const char *state)
{
	char path[64], buf[8192];
	struct stat st;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) || st.st_uid != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n;) {
		const char *arg = buf + i;
		size_t len = strlen(arg);

		if (!strcmp(arg, "--state") && i + (ssize_t)len + 1 < n)
			return !strcmp(arg + len + 1, state);
		i += (ssize_t)len + 1;
	}
	return 0;
}

/* The sampler of this state directory by its command line: for a start
 * whose pid was never recorded (its slurmstepd was killed mid-start). */
static pid_t find_sampler(const char *state)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid > 1 && !*end && is_our_sampler((pid_t)pid, state))
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

/* Signal pid if it is the sampler of this state directory.  Through a
 * pidfd taken before the check, so a pid reused after the check is
 * another process's pidfd, never signalled; without pidfds (before
 * Linux 5.3) the check's window is left. */
static void signal_sampler(pid_t pid, const char *state, int sig)
{
	int pfd = -1;

#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	if (is_our_sampler(pid, state)) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
		if (pfd >= 0)
			syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
		else
#endif
			kill(pid, sig);
	}
	if (pfd >= 0)
		close(pfd);
}

static pid_t recorded_pid(const char *state)
{
	char path[4200], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

int lwk_syncmon_stop(const char *state_root, const char *node, uint32_t job, int wait_ms,
		     char *log, size_t loglen)
{
	char state[4096], path[4200], lock[4200];
	struct stat st;
	pid_t pid = 0;
	int fd, stopped = 0, t = 0;

	if (log && loglen)
		log[0] = '\0';
	snprintf(state, sizeof(state), "%s/%s/%u", state_root, node, job);
	if (lstat(state, &st) || !S_ISDIR(st.st_mode))
		return 0;
	snprintf(lock, sizeof(lock), "%s/syncmon.lock", state);
	/*
	 * A held lock means a sampler, or a start under way.  Its pid is on
	 * record once the start returned; if the start was cut short (its
	 * slurmstepd killed), look for it by its command line, for as long
	 * as the wait allows.
	 */
	while (!lock_free(lock)) {
		pid = recorded_pid(state);
		if (pid <= 1 || !is_our_sampler(pid, state))
			pid = find_sampler(state);
		if (pid > 1 || t >= wait_ms)
			break;
		sleep_ms(10);
		t += 10;
	}
	if (pid > 1) {
		signal_sampler(pid, state, SIGTERM);
		stopped = 1;
		for (t = 0; t < wait_ms && !lock_free(lock); t += 10)
			sleep_ms(10);
		if (!lock_free(lock)) {
			signal_sampler(pid, state, SIGKILL);
			/* Gone before its files are removed under it. */
			for (t = 0; t < 1000 && !lock_free(lock); t += 10)
				sleep_ms(10);
		}
	}
	snprintf(path, sizeof(path), "%s/syncmon.log", state);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && log && loglen) {
		ssize_t n = read(fd, log, loglen - 1);

		log[n > 0 ? n : 0] = '\0';
	}
	if (fd >= 0)
		close(fd);
	/* The files go under the lock: a start that took it meanwhile (a
	 * new step's) keeps its files, and one that opened the lock file
	 * before it went finds it unlinked and opens it again (start.c). */
	fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return stopped;
	}
	static const char *const files[] = { "syncmon.log", "syncmon.pid", "syncmon.pid.new",
					     "syncmon.lock" };

	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(path, sizeof(path), "%s/%s", state, files[i]);
		unlink(path);
	}
	if (fd >= 0)
		close(fd);
	rmdir(state);
	snprintf(path, sizeof(path), "%s/%s", state_root, node);
	rmdir(path); /* fails while other jobs have state: fine */
	return stopped;
}

int lwk_syncmon_sweep(const char *state_root, const char *node)
{
	char lock[4400];
	uint32_t jobs[4096];
	int n = lwk_state_jobs(state_root, node, jobs, 4096), cleaned = 0;

	for (int i = 0; i < n; i++) {
		snprintf(lock, sizeof(lock), "%s/%s/%u/syncmon.lock", state_root, node, jobs[i]);
		bool had = access(lock, F_OK) == 0;

		if (!lock_free(lock))
			continue; /* its sampler still runs */
		/* Reuse the epilog's removal; nothing to signal.  It also
		 * removes a job directory left empty. */
		lwk_syncmon_stop(state_root, node, jobs[i], 0, NULL, 0);
		cleaned += had;
	}
	return cleaned;
}
