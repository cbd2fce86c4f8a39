/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Killing the processes of a job that keeps CPUs it was not given (see
 * lwk_cgroup_kill_users in cgroup.h): every cgroup of its tree opened
 * relative to its parent's descriptor, so that neither depth nor the
 * length of the names a user chose below their step puts a process out
 * of reach; slurmstepd is left to end the job. */
#include "node/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Past this many cgroups in the tree the walk stops and says so: the
 * kernel's memory, not this bound, is what limits a user on v1. */
#define KILL_MAX_CGROUPS 65536

/* Is pid listed in the cgroup.procs of the directory dirfd? */
static bool listed(int dirfd, long pid)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	bool found = false;
	long p;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && fscanf(f, "%ld", &p) == 1)
		found = p == pid;
	fclose(f);
	return found;
}

/* Is the process Slurm's own: root's and named slurmstepd in
 * <proc>/<pid>/status (kernel text, never a user's file)?  Only root
 * names a root process; a gone one is spared (nothing to kill). */
static bool slurms(const char *proc, long pid)
{
	char path[300], line[256];
	bool stepd = false;
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%ld/status", proc, pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (uid < 0 && fgets(line, sizeof(line), f)) {
		if (!strcmp(line, "Name:\tslurmstepd\n"))
			stepd = true;
		else if (!strncmp(line, "Uid:", 4))
			uid = strtol(line + 4, NULL, 10);
	}
	fclose(f);
	return uid != 0 ? uid < 0 : stepd;
}

/* One pid of the cgroup dirfd: pinned with a pidfd, then still listed
 * there (a pid reused before the pin belongs to another cgroup) and not
 * Slurm's, then signalled through the pidfd.  0 when signalled. */
static int kill_user(int dirfd, const char *proc, long pid)
{
	int fd = -1, rc = -1;

#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd < 0 && errno != ENOSYS)
		return -1; /* gone */
#endif
	if (listed(dirfd, pid) && !slurms(proc, pid)) {
#ifdef SYS_pidfd_send_signal
		if (fd >= 0)
			rc = (int)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		else
#endif
			rc = kill((pid_t)pid, SIGKILL);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The job's processes of one cgroup directory; how many signalled. */
static int kill_here(int dirfd, const char *proc)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW), n = 0;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	long pid;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* Read as a stream: a number cut at a buffer's end would be another pid. */
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 1 && kill_user(dirfd, proc, pid) == 0)
			n++;
	fclose(f);
	return n;
}

struct walk {
	DIR **open; /* the directories from the top down to the current one */
	int depth, cap, seen;
	bool whole;
};

/* Descend into the child fd: its processes killed, its directory
 * pushed.  false when it cannot be walked (whole is cleared). */
static bool push(struct walk *w, int fd, const char *proc, int *n)
{
	DIR *d;

	*n += kill_here(fd, proc);
	if (w->depth == w->cap) {
		DIR **more = realloc(w->open, sizeof(*more) * (size_t)(w->cap ? w->cap * 2 : 64));

		if (!more) {
			close(fd);
			w->whole = false;
			return false;
		}
		w->open = more;
		w->cap = w->cap ? w->cap * 2 : 64;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		w->whole = false;
		return false;
	}
	w->open[w->depth++] = d;
	return true;
}

int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, bool *whole)
{
	struct walk w = { .whole = true };
	char dir[1100];
	int fd, n = 0;

	lwk_cgroup_dir(cg, "cpuset", dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*whole = errno == ENOENT; /* gone: nothing left to kill */
		return 0;
	}
	push(&w, fd, proc, &n);
	while (w.depth > 0) {
		DIR *d = w.open[w.depth - 1];
		struct dirent *e = readdir(d);

		if (!e) {
			closedir(d);
			w.depth--;
			continue;
		}
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (w.seen >= KILL_MAX_CGROUPS) {
			w.whole = false;
			continue;
		}
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT) /* EMFILE: deeper than this process may open */
				w.whole = false;
			continue;
		}
		w.seen++;
		push(&w, fd, proc, &n);
	}
	free(w.open);
	*whole = w.whole;
	return n;
}
