/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stopping a job that keeps CPUs it was not given (see
 * lwk_cgroup_kill_users and lwk_cgroup_foreign in cgroup.h): its
 * processes found from every process's threads in /proc (the user can
 * rename or move their cgroups below the step, never the job's path),
 * and where a path is too deep for the kernel to print, in its tree,
 * each cgroup opened relative to its parent; slurmstepd is left to end
 * the job. */
#include "node/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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
	rewinddir(d); /* the offset is shared with every dup of dirfd */
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
 * directory below it (level 1 for a child of cg's), parents first (fd
 * -1: listed, gone when opened); stop early when visit returns true.
 * Returns what the last visit returned; w->whole false when some
 * directory could not be walked. */
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
		if (w->seen >= WALK_MAX_CGROUPS) {
			w->whole = false;
			break;
		}
		fd = openat(cur, l->names[l->next++], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			/* Removed or renamed meanwhile (a user renames their own
			 * cgroups on v1): the name is still judged, what was in it
			 * not read. */
			w->whole = false;
			if (errno == ENOENT)
				done = visit(-1, l->names[l->next - 1], w->depth, arg);
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
	foreign = walk_tree(cg, w, foreign_name, NULL) || w->seen >= WALK_MAX_CGROUPS;
	free(w);
	return foreign;
}

/* ---- taking the tree back from its user ----------------------------------- */

/* Can someone but root write it: another owner, or write bits for the
 * group or others (which an owner may have set before losing it)? */
static bool writable_by_others(const struct stat *st)
{
	return st->st_uid || st->st_gid || (st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The cgroup dirfd and every file in it made root's, writable by root
 * alone: its user can no longer make cgroups there, write its cpusets or
 * move a process in. */
static bool take_here(int dirfd, const char *name, int level, void *arg)
{
	int *changed = arg, dup_fd;
	struct dirent *e;
	struct stat st;
	DIR *d;

	(void)name;
	(void)level;
	if (dirfd < 0 || fstat(dirfd, &st))
		return false;
	if (writable_by_others(&st) && !fchown(dirfd, 0, 0) &&
	    !fchmod(dirfd, st.st_mode & 07755 & ~(S_IWGRP | S_IWOTH)))
		(*changed)++;
	dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return false;
	}
	rewinddir(d); /* the offset is shared with every dup of dirfd */
	/* cgroupfs has no links a user can make: DT_REG stays a file. */
	while ((e = readdir(d)))
		if (e->d_type == DT_REG && !fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode) && writable_by_others(&st) &&
		    !fchownat(dirfd, e->d_name, 0, 0, AT_SYMLINK_NOFOLLOW) &&
		    !fchmodat(dirfd, e->d_name, st.st_mode & 07755 & ~(S_IWGRP | S_IWOTH), 0))
			(*changed)++;
	closedir(d);
	return false;
}

int lwk_cgroup_take_back(const struct lwk_cgroup *cg, bool *whole)
{
	struct walk w;
	int changed = 0;

	walk_tree(cg, &w, take_here, &changed);
	*whole = w.whole;
	return changed;
}

/* ---- the kill ---------------------------------------------------------------- */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define TEXT 65536

struct kill {
	const struct lwk_cgroup *cg;
	int procfd; /* <proc> */
	double deadline; /* CLOCK_MONOTONIC seconds: the node lock is held */
	char *text; /* a heap buffer of TEXT bytes */
	int signalled, found;
	bool whole;
	/* A process seen a thread of which sits deeper than the kernel
	 * prints a path (4096 bytes): the job's tree's lists are read. */
	bool deep;
};

/* <dirfd>/<file> (kernel text, never a user's file) into k->text: its
 * length, or -1 (errno). */
static ssize_t read_text(struct kill *k, int dirfd, const char *file)
{
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, k->text, TEXT - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	k->text[n] = '\0';
	return n;
}

/* Does a cgroup file's text (k->text) place the thread in the job's
 * tree: its line for the cpuset hierarchy (v2: "0::") names the job's
 * cgroup or one below it? */
static bool line_in_job(struct kill *k)
{
	size_t plen = strlen(k->cg->path);

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

/* Where the process of /proc/<pid> (pdir) is: 1 when a thread of it is
 * in the job's tree (on v1 threads may sit apart), -1 when none is but
 * one's path is too long to print (ENAMETOOLONG), else 0. */
static int threads_in_job(struct kill *k, int pdir)
{
	int tfd = openat(pdir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), where = 0;
	DIR *d = tfd >= 0 ? fdopendir(tfd) : NULL;
	struct dirent *e;

	if (!d) {
		if (tfd >= 0)
			close(tfd);
		return 0; /* gone */
	}
	while (where != 1 && (e = readdir(d))) {
		char file[300];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(file, sizeof(file), "%s/cgroup", e->d_name);
		if (read_text(k, dirfd(d), file) < 0)
			where = errno == ENAMETOOLONG ? -1 : where;
		else if (line_in_job(k))
			where = 1;
	}
	closedir(d);
	return where;
}

/* Slurm's own: root's, its executable slurmstepd (Debian's is
 * slurmstepd-wlm).  Only root runs a root process. */
static bool slurms(struct kill *k, int pdir)
{
	char exe[256];
	const char *base;
	ssize_t l;
	char *uid;

	if (read_text(k, pdir, "status") <= 0 || !(uid = strstr(k->text, "\nUid:\t")) ||
	    strtol(uid + 6, NULL, 10) != 0)
		return false;
	l = readlinkat(pdir, "exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return false;
	exe[l] = '\0';
	base = strrchr(exe, '/');
	return base && !strncmp(base + 1, "slurmstepd", 10);
}

static void signal_pinned(struct kill *k, int pidfd)
{
	k->found++;
#ifdef SYS_pidfd_send_signal
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
		k->signalled++;
#endif
}

/* One process of the node: pinned with a pidfd, then judged from its
 * /proc entry, then signalled through the pidfd.  Had the pinned process
 * died and its pid gone to another before the entry was read, the
 * signal would find the pinned one gone: never another process. */
static void judge(struct kill *k, int procfd, const char *name)
{
	long pid = strtol(name, NULL, 10);
	int pidfd = -1, pdir, where;

	errno = ENOSYS;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
	if (pidfd < 0) {
		if (errno != ESRCH)
			k->whole = false; /* no pidfds: nothing is killed */
		return;
	}
	pdir = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	where = pdir >= 0 ? threads_in_job(k, pdir) : 0;
	if (where == -1)
		k->deep = true;
	else if (where == 1 && !slurms(k, pdir))
		signal_pinned(k, pidfd);
	if (pdir >= 0)
		close(pdir);
	close(pidfd);
}

static int by_pid(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The pids of dirfd's cgroup.procs, sorted; their count, or -1. */
static long read_pids(int dirfd, long **pids)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	long n = 0, cap = 0, pid;

	*pids = NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (fscanf(f, "%ld", &pid) == 1) {
		if (n == cap) {
			long *more = realloc(*pids, sizeof(*more) * (size_t)(cap = cap ? cap * 2 : 64));

			if (!more) {
				fclose(f);
				free(*pids);
				*pids = NULL;
				errno = ENOMEM;
				return -1; /* a short list would leave some unjudged */
			}
			*pids = more;
		}
		(*pids)[n++] = pid;
	}
	fclose(f);
	if (n)
		qsort(*pids, (size_t)n, sizeof(**pids), by_pid);
	return n;
}

/* A cgroup of the job's tree, walked when a process too deep to print
 * was seen: each process it lists is pinned, then the list read again;
 * one still listed is in the job (whatever it was before the pin), and
 * is signalled unless it is slurmstepd. */
static bool deep_here(int dirfd, const char *name, int level, void *arg)
{
	struct kill *k = arg;
	long *before, *after, n, m;
	int *fds;

	(void)name;
	(void)level;
	if (dirfd < 0)
		return false;
	if ((n = read_pids(dirfd, &before)) < 0) {
		k->whole = errno == ENOENT && k->whole;
		return false;
	}
	fds = malloc(sizeof(*fds) * (size_t)(n ? n : 1));
	for (long i = 0; fds && i < n; i++) {
		fds[i] = -1;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
		fds[i] = (int)syscall(SYS_pidfd_open, (pid_t)before[i], 0);
#endif
	}
	m = fds ? read_pids(dirfd, &after) : -1;
	for (long i = 0; m > 0 && i < n; i++) {
		char name_[32];
		int pdir;

		if (fds[i] < 0 || !bsearch(&before[i], after, (size_t)m, sizeof(*after), by_pid))
			continue;
		snprintf(name_, sizeof(name_), "%ld", before[i]);
		pdir = openat(k->procfd, name_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pdir >= 0 && !slurms(k, pdir))
			signal_pinned(k, fds[i]);
		if (pdir >= 0)
			close(pdir);
	}
	for (long i = 0; fds && i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (m > 0)
		free(after);
	free(fds);
	free(before);
	return now() > k->deadline; /* then the walk stops, unsure */
}

int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, int *signalled,
			  bool *whole)
{
	struct kill k = { .cg = cg, .deadline = now() + 1, .whole = true };
	struct walk w;
	struct dirent *e;
	DIR *d;

	*whole = false;
	if (!cg->path[0] || !cg->path[1]) /* never the whole hierarchy */
		return 0;
	k.text = malloc(TEXT);
	k.procfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = k.text && k.procfd >= 0 ? opendir(proc) : NULL;
	if (!d) {
		if (k.procfd >= 0)
			close(k.procfd);
		free(k.text);
		return 0;
	}
	/* Every process of the node: the user can rename or move the
	 * cgroups below the step, never the job's path above them.  Cut at
	 * the deadline (then unsure). */
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9') {
			if (now() > k.deadline) {
				k.whole = false;
				break;
			}
			judge(&k, k.procfd, e->d_name);
		}
	closedir(d);
	if (k.deep) {
		if (walk_tree(cg, &w, deep_here, &k) || !w.whole)
			k.whole = false;
	}
	close(k.procfd);
	free(k.text);
	*whole = k.whole;
	*signalled += k.signalled;
	return k.found;
}
