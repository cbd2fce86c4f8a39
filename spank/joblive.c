// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * joblive.c: is a job still allocated on this node?  The sweeps (slurmd
 * start, the job epilog, lwk-sweep) and the --contention-aware re-plan
 * ask it before undoing what a job set up, so a wrong "gone" takes a
 * live job's partition or dies away.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "joblive.h"

bool lwk_job_alive(uint32_t job)
{
	char want[48], path[64], buf[256];
	struct dirent *e;
	DIR *d = opendir("/proc");
	bool alive = false;
	int wlen = snprintf(want, sizeof(want), "slurmstepd: [%" PRIu32 ".", job);

	if (!d)
		return true; /* cannot tell: keep it */
	while (!alive && (e = readdir(d))) {
		int fd;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (strncmp(buf, want, (size_t)wlen))
			continue;
		/* Anyone can name a process so: only root's slurmstepd
		 * counts, or a user could keep a dead job's partition. */
		{
			struct stat st;
			char exe[256];
			ssize_t l;

			snprintf(path, sizeof(path), "/proc/%.20s", e->d_name);
			if (stat(path, &st) || st.st_uid != 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%.20s/exe", e->d_name);
			l = readlink(path, exe, sizeof(exe) - 1);
			if (l <= 0)
				continue;
			exe[l] = '\0';
			/* Debian's is slurmstepd-wlm. */
			alive = strrchr(exe, '/') && !strncmp(strrchr(exe, '/'), "/slurmstepd", 11);
		}
	}
	closedir(d);
	return alive;
}
