/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stopping a job that keeps CPUs it was not given (see
 * lwk_cgroup_kill_users and lwk_cgroup_foreign in cgroup.h): every
 * cgroup of its tree opened relative to its parent's descriptor, so that
 * neither depth nor the length of the names a user chose below their
 * step puts a process out of reach; slurmstepd is left to end the job. */
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

/* Past this many cgroups the walk stops and says so (whole false): it
 * runs under the node lock.  It has no depth limit: it holds one
 * directory open, climbing back through "..", and keeps the names left
 * to visit at each level. */
#define WALK_MAX_CGROUPS 65536

struct level {
	char (*names)[256]; /* the subdirectories left to visit, from next */
	int n, next;
};

struct walk {
	struct level *lv; /* from the top down to the current directory */
	int depth, cap, seen;
	bool whole;
};

/* The subdirectory names of dirfd pushed as the next level (dirfd is
 * left open).  false when they cannot be read. */
static bool push_level(struct walk *w, int dirfd)
{
	struct level l = { 0 };
	struct dirent *e;
	int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0), cap = 0;
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return false;
	}
	while ((e = readdir(d)) && w->seen + l.n < WALK_MAX_CGROUPS) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (l.n == cap) {
			char(*more)[256] = realloc(l.names, sizeof(*more) * (size_t)(cap = cap ? cap * 2 : 16));

			if (!more)
				break;
			l.names = more;
		}
		snprintf(l.names[l.n++], 256, "%s", e->d_name);
	}
	if (e)
		w->whole = false; /* past the bound, or out of memory */
	closedir(d);
	if (w->depth == w->cap) {
		struct level *more = realloc(w->lv, sizeof(*more) * (size_t)(w->cap = w->cap ? w->cap * 2 : 16));

		if (!more) {
			free(l.names);
			return false;
		}
		w->lv = more;
	}
	w->lv[w->depth++] = l;
	return true;
}

/* Call visit on the directory of cg (name NULL, level 0) and on every
 * directory below it (level 1 for a child of cg's), parents first; stop
 * early when visit returns true.  Returns what the last visit returned;
 * w->whole false when some directory could not be walked. */
static bool walk_tree(const struct lwk_cgroup *cg, struct walk *w,
		      bool (*visit)(int dirfd, const char *name, int level, void *arg), void *arg)
{
	char dir[1100];
	bool done = false;
	int cur;

	*w = (struct walk){ .whole = true };
	lwk_cgroup_dir(cg, "cpuset", dir, sizeof(dir));
	cur = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cur < 0) {
		w->whole = errno == ENOENT; /* gone: nothing left in it */
		return false;
	}
	if (!(done = visit(cur, NULL, 0, arg)) && !push_level(w, cur))
		w->whole = false;
	while (!done && w->depth > 0) {
		struct level *l = &w->lv[w->depth - 1];
		int fd;

		if (l->next == l->n) {
			free(l->names);
			if (--w->depth == 0)
				break;
			/* cgroupfs moves no directory to another parent. */
			fd = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			close(cur);
			if ((cur = fd) < 0) {
				w->whole = false; /* removed meanwhile: its place is lost */
				break;
			}
			continue;
		}
		fd = openat(cur, l->names[l->next++], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT)
				w->whole = false;
			continue;
		}
		w->seen++;
		if ((done = visit(fd, l->names[l->next - 1], w->depth, arg)) || !push_level(w, fd)) {
			w->whole = w->whole && done;
			close(fd);
			continue;
		}
		close(cur);
		cur = fd;
	}
	while (w->depth > 0)
		free(w->lv[--w->depth].names);
	free(w->lv);
	if (cur >= 0)
		close(cur);
	return done;
}

/* ---- cgroups Slurm does not make ------------------------------------------ */

/* step_N+M: a step of a heterogeneous job's component M. */
static bool het_step(const char *n)
{
	const char *plus = strchr(n, '+');
	char step[64];

	if (!plus || (size_t)(plus - n) >= sizeof(step))
		return false;
	memcpy(step, n, (size_t)(plus - n));
	step[plus - n] = '\0';
	return lwk_cgroup_numbered(step, "step_") && lwk_cgroup_numbered(plus + 1, "");
}

/* Where Slurm puts each name below a job's cgroup: its steps (level 1);
 * a step's slurm and user halves (v2) or its tasks (level 2); the tasks
 * in a step's user half (level 3).  Nothing deeper. */
static bool slurms_place(const char *n, int level)
{
	bool task = lwk_cgroup_numbered(n, "task_") || !strcmp(n, "task_special");

	switch (level) {
	case 1:
		return lwk_cgroup_numbered(n, "step_") || het_step(n) || !strcmp(n, "step_batch") ||
		       !strcmp(n, "step_extern") || !strcmp(n, "step_interactive");
	case 2:
		return task || !strcmp(n, "user") || !strcmp(n, "slurm");
	case 3:
		return task;
	default:
		return false;
	}
}

static bool foreign_name(int dirfd, const char *name, int level, void *arg)
{
	(void)dirfd;
	(void)arg;
	return name && !slurms_place(name, level);
}

bool lwk_cgroup_foreign(const struct lwk_cgroup *cg)
{
	struct walk *w = malloc(sizeof(*w));
	bool foreign;

	if (!w)
		return true; /* cannot tell */
	/* More cgroups than the narrowing walks (cgtree.c): Slurm makes
	 * nothing like it. */
	foreign = walk_tree(cg, w, foreign_name, NULL) || !w->whole || w->seen > 4096;
	free(w);
	return foreign;
}

/* ---- the kill ---------------------------------------------------------------- */

struct kill {
	const struct lwk_cgroup *cg;
	const char *proc;
	char *text; /* a heap buffer of TEXT bytes */
	int signalled, found;
	bool whole;
};

#define TEXT 65536

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

/* Read <proc>/<pid>/<file> (kernel text, never a user's file) into
 * k->text: its length, or -1. */
static ssize_t read_proc(struct kill *k, long pid, const char *file)
{
	char path[300];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%ld/%s", k->proc, pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, k->text, TEXT - 1);
	close(fd);
	if (n >= 0)
		k->text[n] = '\0';
	return n;
}

/* Is the process in the job's tree now: still listed in the cgroup it
 * was listed in (a thread of it is there: on v1 threads may sit apart),
 * or the line of its cgroup file for the cpuset hierarchy (v2: "0::")
 * names the job's cgroup or one below it (moved within the job)? */
static bool in_job(struct kill *k, int dirfd, long pid)
{
	size_t plen = strlen(k->cg->path);

	if (listed(dirfd, pid))
		return true;
	if (read_proc(k, pid, "cgroup") <= 0)
		return false;
	for (char *save = NULL, *l = strtok_r(k->text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char ctrls[300];

		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		snprintf(ctrls, sizeof(ctrls), ",%s,", c1 + 1);
		if (k->cg->version == LWK_CGROUP_V2 ? strcmp(l, "0") || c1[1] : !strstr(ctrls, ",cpuset,"))
			continue;
		return !strncmp(c2 + 1, k->cg->path, plen) && (c2[1 + plen] == '\0' || c2[1 + plen] == '/');
	}
	return false;
}

/* Slurm's own: root's and named slurmstepd (only root names a root
 * process).  A gone process counts as spared: nothing to kill. */
static bool slurms(struct kill *k, long pid)
{
	char *uid, *name;

	if (read_proc(k, pid, "status") <= 0)
		return true;
	name = strstr(k->text, "Name:\t");
	uid = strstr(k->text, "\nUid:\t");
	return !uid || (strtol(uid + 6, NULL, 10) == 0 && name == k->text &&
			!strncmp(name + 6, "slurmstepd\n", 11));
}

/* One pid: pinned with a pidfd, then in the job's tree and not
 * slurmstepd, then signalled through the pidfd.  Without pidfds
 * (kernels before 5.3) nothing is killed: a pid reused between the
 * check and a kill() would be another's. */
static void kill_one(struct kill *k, int dirfd, long pid)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);

	if (fd < 0) {
		if (errno != ESRCH)
			k->whole = false;
		return;
	}
	if (in_job(k, dirfd, pid) && !slurms(k, pid)) {
		k->found++;
		if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0)
			k->signalled++;
	}
	close(fd);
#else
	(void)dirfd;
	(void)pid;
	k->whole = false;
#endif
}

/* The processes of one cgroup: its cgroup.procs read whole first (the
 * buffer is reused per pid), then each judged. */
static bool kill_here(int dirfd, const char *name, int level, void *arg)
{
	struct kill *k = arg;
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	long *pids = NULL, pid;
	size_t n = 0, cap = 0;

	(void)name;
	(void)level;
	if (!f) {
		if (fd >= 0 || errno != ENOENT) /* ENOENT: removed meanwhile */
			k->whole = false;
		if (fd >= 0)
			close(fd);
		return false;
	}
	/* Read as a stream: a number cut at a buffer's end would be another pid. */
	while (fscanf(f, "%ld", &pid) == 1) {
		if (n == cap) {
			long *more = realloc(pids, sizeof(*more) * (cap = cap ? cap * 2 : 64));

			if (!more) {
				k->whole = false;
				break;
			}
			pids = more;
		}
		pids[n++] = pid;
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (pids[i] > 1)
			kill_one(k, dirfd, pids[i]);
	free(pids);
	return false;
}

int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, int *signalled,
			  bool *whole)
{
	struct kill k = { .cg = cg, .proc = proc, .text = malloc(TEXT), .whole = true };
	struct walk *w = malloc(sizeof(*w));

	*whole = false;
	if (!cg->path[0] || !cg->path[1] || !k.text || !w) { /* never the whole hierarchy */
		free(k.text);
		free(w);
		return 0;
	}
	walk_tree(cg, w, kill_here, &k);
	*whole = w->whole && k.whole;
	*signalled += k.signalled;
	free(k.text);
	free(w);
	return k.found;
}
