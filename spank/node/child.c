// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * child.c: what a child forked to read or ask something that may never
 * answer (a user's stalled memory, slurmctld) does with the parent's
 * fds, and how the parent ends it.  See node/child.h.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "node/child.h"

/* In the child: every fd but those of keep[] (sorted) closed, so that
 * no lock this process holds outlives the parent's own close. */
void lwk_child_close_all_but(const int *keep, size_t n)
{
	unsigned int from = 3, top = 65536;
	struct rlimit rl;
	size_t k = 0;

#ifdef SYS_close_range
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned int)keep[i] > from)
			ok = ok && !syscall(SYS_close_range, from, (unsigned int)keep[i] - 1, 0);
		from = (unsigned int)keep[i] + 1;
	}
	if (ok && !syscall(SYS_close_range, from, ~0U, 0))
		return;
#endif
	/* No close_range (before 5.9): one by one, up to the fd limit. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < top)
		top = (unsigned int)rl.rlim_cur;
	for (unsigned int fd = 3; fd < top; fd++) {
		while (k < n && (unsigned int)keep[k] < fd)
			k++;
		if (k < n && (unsigned int)keep[k] == fd)
			continue;
		close((int)fd);
	}
}

/* In order, without qsort (which may allocate: the child of a threaded
 * process calls nothing that does). */
void lwk_child_sort_fds(int *fds, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int t = fds[j];

			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
}

/* Kill child (through its pidfd when there is one: slurmstepd's main
 * thread reaps any child, and a pid reaped there may be reused) and
 * reap it within a second (ECHILD: slurmstepd's main thread did).  A
 * child SIGKILL cannot end yet (a FUSE answer that never comes) is left
 * to slurmstepd's main thread, which reaps any child, or to the end of
 * the epilog's process.  Closes pidfd. */
void lwk_child_end(pid_t child, int pidfd, int *status)
{
	if (child <= 0)
		return;
#ifdef SYS_pidfd_send_signal
	if (pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		close(pidfd);
	}
#else
	(void)pidfd;
#endif
	for (int i = 0; i < 100; i++) {
		struct timespec ms10 = { 0, 10 * 1000 * 1000 };

		if (waitpid(child, status, WNOHANG) != 0)
			break;
		nanosleep(&ms10, NULL);
	}
}

/* In the child: every fd from 3 on but keep made /dev/null's.  A lock
 * of the parent's then does not outlive its own close, and libslurm's
 * open log file, still written to, cannot become the number of a socket
 * the child opens (closing it would let its lines go into an RPC). */
void lwk_child_shed_fds(int keep)
{
	int fd0 = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* Above 2: with fds 0 to 2 closed, open() would take one of them. */
	int null = fd0 >= 0 ? fcntl(fd0, F_DUPFD_CLOEXEC, 3) : -1;
	DIR *d = null >= 0 ? opendir("/proc/self/fd") : NULL;
	struct dirent *e;

	if (fd0 >= 0 && fd0 != null)
		close(fd0);
	if (!d) {
		/* No /dev/null or no /proc: closed, as a lock must not
		 * outlive the parent's close. */
		if (null >= 0)
			close(null);
		lwk_child_close_all_but(&keep, 1);
		return;
	}
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (fd > 2 && fd != keep && fd != null && fd != dirfd(d))
			dup2(null, fd);
	}
	closedir(d);
	close(null);
}
