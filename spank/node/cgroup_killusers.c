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
	bool cut; /* stopped at the deadline */
	double deadline; /* CLOCK_MONOTONIC seconds: the walk stops there, unsure */
	/* Called on every directory below the top once all below it was
	 * walked, with its parent's fd (children first: it may remove it). */
	void (*leave)(int parentfd, const char *name, int level, void *arg);
};

double lwk_cgroup_clock(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

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
			int want = cap ? cap * 2 : 16;
			char(*more)[256] = realloc(l.names, sizeof(*more) * (size_t)want);

			if (!more)
				break;
			l.names = more;
			cap = want;
		}
		snprintf(l.names[l.n++], 256, "%s", e->d_name);
	}
	if (e)
		w->whole = false; /* past the bound, or out of memory */
	closedir(d);
	if (w->depth == w->cap) {
		int want = w->cap ? w->cap * 2 : 16;
		struct level *more = realloc(w->lv, sizeof(*more) * (size_t)want);

		if (!more) {
			free(l.names);
			return false;
		}
		w->lv = more;
		w->cap = want;
	}
	w->lv[w->depth++] = l;
	return true;
}

/* Call visit on the directory of cg (name NULL, level 0) and on every
 * directory below it (level 1 for a child of cg's), parents first (fd
 * -1: listed, gone when opened), and leave (when set) on each below the
 * top after all below it; stop early when visit returns true or at the
 * deadline.  Returns what the last visit returned; w->whole false when
 * some directory could not be walked. */
static bool walk_tree(const struct lwk_cgroup *cg, struct walk *w, double deadline,
		      bool (*visit)(int dirfd, const char *name, int level, void *arg),
		      void (*leave)(int parentfd, const char *name, int level, void *arg), void *arg)
{
	char dir[1100];
	bool done = false;
	int cur;

	*w = (struct walk){ .whole = true, .deadline = deadline, .leave = leave };
	lwk_cgroup_dir(cg, "cpuset", dir, sizeof(dir));
	cur = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cur < 0) {
		w->whole = errno == ENOENT; /* gone: nothing left in it */
		return false;
	}
	if (!(done = visit && visit(cur, NULL, 0, arg)) && !push_level(w, cur))
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
			if (w->leave && w->deadline && lwk_cgroup_clock() > w->deadline) {
				w->whole = false;
				w->cut = true;
			} else if (w->leave) {
				l = &w->lv[w->depth - 1]; /* the parent's: its last name is the one left */
				w->leave(cur, l->names[l->next - 1], w->depth, arg);
			}
			continue;
		}
		if (w->seen >= WALK_MAX_CGROUPS) {
			w->whole = false;
			break;
		}
		if (w->deadline && lwk_cgroup_clock() > w->deadline) {
			w->whole = false;
			w->cut = true;
			break;
		}
		fd = openat(cur, l->names[l->next++], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			/* Removed or renamed meanwhile (a user renames their own
			 * cgroups on v1): the name is still judged, what was in it
			 * not read. */
			w->whole = false;
			if (errno == ENOENT && visit)
				done = visit(-1, l->names[l->next - 1], w->depth, arg);
			continue;
		}
		w->seen++;
		if ((done = visit && visit(fd, l->names[l->next - 1], w->depth, arg)) ||
		    !push_level(w, fd)) {
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

/* The mode the take-back leaves on a cgroup its user made (root's,
 * 0700): Slurm makes its own 0755, so that a later take-back still
 * knows it once its files are root's. */
#define USERS_MARK 0700

/*
 * On v1, is the cgroup dirfd (name, at level below the job's; fd -1:
 * gone, judged by its name) one its user made?  Its files are the
 * user's (the kernel gives a new cgroup's files to its maker, and Slurm
 * makes its own as root, the directory alone given to the user), it has
 * an earlier take-back's mark, or Slurm uses no such name there in the
 * cpuset hierarchy: its steps, and below a step its tasks (from 24.11.3
 * on, cpusets per task), nothing deeper.
 */
static bool users_v1(int dirfd, const char *name, int level)
{
	struct stat dir, procs;

	if (!name)
		return false;
	if (level > 2 || !slurms_place(name, level) || !strcmp(name, "user") || !strcmp(name, "slurm"))
		return true;
	if (dirfd < 0)
		return false;
	if (!fstat(dirfd, &dir) && !dir.st_uid && (dir.st_mode & 07777) == USERS_MARK)
		return true;
	return !fstatat(dirfd, "cgroup.procs", &procs, AT_SYMLINK_NOFOLLOW) && procs.st_uid;
}

static bool foreign_name(int dirfd, const char *name, int level, void *arg)
{
	const struct lwk_cgroup *cg = arg;

	if (cg->version == LWK_CGROUP_V1)
		return users_v1(dirfd, name, level);
	return name && !slurms_place(name, level);
}

bool lwk_cgroup_foreign(const struct lwk_cgroup *cg, double deadline)
{
	struct walk *w = malloc(sizeof(*w));
	double least = lwk_cgroup_clock() + 0.5;
	bool foreign;

	if (!w)
		return true; /* cannot tell */
	/* A look of half a second at least, whatever the deadline. */
	if (deadline < least)
		deadline = least;
	/* Past the bound: cannot tell.  Cut at the deadline: on v2 what was
	 * seen (only root makes cgroups there), on v1 cannot tell. */
	foreign = walk_tree(cg, w, deadline, foreign_name, NULL, (void *)cg) ||
		  w->seen >= WALK_MAX_CGROUPS || (cg->version == LWK_CGROUP_V1 && w->cut);
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

struct kill;
static bool deep_here(int dirfd, const char *name, int level, void *arg);

struct take {
	struct lwk_take_back *tb;
	/* The cgroups its user made, by inode. */
	ino_t *made;
	size_t n, cap;
	struct kill *k; /* for the processes in them */
	double deadline;
};

/* A cgroup to remove: one of its user's (the take-back is v1's), noted
 * before its files are made root's.  true when it is. */
static bool note_made(struct take *t, int dirfd, const char *name, int level)
{
	struct stat dir;

	if (!users_v1(dirfd, name, level) || fstat(dirfd, &dir))
		return false;
	if (t->n == t->cap) {
		size_t want = t->cap ? t->cap * 2 : 16;
		ino_t *more = realloc(t->made, sizeof(*more) * want);

		if (!more)
			return true; /* not removed: the narrowing fails, the refusal kills */
		t->made = more;
		t->cap = want;
	}
	t->made[t->n++] = dir.st_ino;
	return true;
}

/* The cgroup dirfd and every file in it made root's, writable by root
 * alone: its user can no longer make cgroups there, write its cpusets or
 * move a process in, except through a file they opened before (cgroupfs
 * checks when a file is opened): the cgroups they made are noted, to be
 * removed. */
static bool take_here(int dirfd, const char *name, int level, void *arg)
{
	struct take *t = arg;
	int dup_fd;
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (dirfd < 0 || fstat(dirfd, &st))
		return false;
	if (note_made(t, dirfd, name, level)) {
		if ((st.st_uid || st.st_gid || (st.st_mode & 07777) != USERS_MARK) && !fchown(dirfd, 0, 0) &&
		    !fchmod(dirfd, USERS_MARK))
			t->tb->changed++;
	} else if ((writable_by_others(&st) || (st.st_mode & 07777) != 0755) && !fchown(dirfd, 0, 0) &&
		   !fchmod(dirfd, 0755)) {
		/* Slurm's own mode: a user who owned it and made it 0700 must
		 * not leave it looking marked as theirs. */
		t->tb->changed++;
	}
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
			t->tb->changed++;
	closedir(d);
	return false;
}

static int by_ino(const void *a, const void *b)
{
	ino_t x = *(const ino_t *)a, y = *(const ino_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A cgroup noted (children first): its processes killed (each pinned,
 * then listed again, as the kill does; moving them instead would write
 * pid numbers, which a user who reaps their own processes can hand to
 * another process meanwhile), then it is removed, which makes the
 * files its user holds open fail (ENODEV); again while they exit or a
 * process is moved back in through such a file, until the deadline.
 */
static void remove_here(int parentfd, const char *name, int level, void *arg)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };
	struct take *t = arg;
	struct stat st;

	if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) ||
	    !bsearch(&st.st_ino, t->made, t->n, sizeof(*t->made), by_ino))
		return;
	for (;;) {
		int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			deep_here(fd, name, level, t->k);
			close(fd);
		}
		if (!unlinkat(parentfd, name, AT_REMOVEDIR) || errno == ENOENT) {
			t->tb->removed++;
			return;
		}
		if (errno != EBUSY || lwk_cgroup_clock() > t->deadline)
			break;
		nanosleep(&ms10, NULL);
	}
	t->tb->left++;
}

static struct kill *kill_open(const struct lwk_cgroup *cg, const char *proc, double deadline);
static int kill_close(struct kill *k);

int lwk_cgroup_take_back(const struct lwk_cgroup *cg, const char *proc, double deadline,
			 struct lwk_take_back *tb)
{
	struct take t = { .tb = tb, .deadline = deadline };
	struct walk w;

	*tb = (struct lwk_take_back){ .whole = false };
	if (!cg->path[0] || !cg->path[1]) /* never the whole hierarchy */
		return 0;
	/* Again while a cgroup was renamed under the walk. */
	for (int pass = 0; pass < 3 && !tb->whole && lwk_cgroup_clock() < deadline; pass++) {
		walk_tree(cg, &w, deadline, take_here, NULL, &t);
		tb->whole = w.whole;
	}
	if (t.n) {
		struct kill *k = kill_open(cg, proc, deadline);
		size_t u = 1;

		qsort(t.made, t.n, sizeof(*t.made), by_ino);
		for (size_t i = 1; i < t.n; i++) /* noted again by a later pass */
			if (t.made[i] != t.made[u - 1])
				t.made[u++] = t.made[i];
		t.n = u;
		if (k) {
			t.k = k;
			walk_tree(cg, &w, deadline, NULL, remove_here, &t);
			tb->whole = tb->whole && w.whole;
			tb->killed = kill_close(k);
		} else {
			tb->left = (int)t.n;
		}
	}
	free(t.made);
	return tb->changed + tb->removed;
}

/* ---- the kill ---------------------------------------------------------------- */

#define TEXT 65536

struct kill {
	const struct lwk_cgroup *cg;
	int procfd; /* <proc> */
	double deadline; /* CLOCK_MONOTONIC seconds: the node lock is held */
	long *hit, nhit, caphit; /* signalled from the lists, sorted before the scan */
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
 * tree? */
static bool line_in_job(struct kill *k)
{
	return lwk_cgroup_text_places(k->text, k->cg->version == LWK_CGROUP_V2 ? NULL : "cpuset",
				      k->cg->path);
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
		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false; /* a process of very many threads */
			break;
		}
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
 * slurmstepd-wlm).  Only root runs a root process.  1 when it is, 0
 * when not (a root process with no executable left is exiting), -1
 * when its status cannot be read (out of fds: then it is not
 * signalled, and the round is not whole). */
static int slurms(struct kill *k, int pdir)
{
	char exe[4096];
	const char *base;
	ssize_t l;
	char *uid;

	if (read_text(k, pdir, "status") <= 0 || !(uid = strstr(k->text, "\nUid:\t")))
		return -1;
	if (strtol(uid + 6, NULL, 10) != 0)
		return 0;
	l = readlinkat(pdir, "exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return errno == ENOENT ? 0 : -1;
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
	int pidfd = -1, pdir, where, stepd;

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
	else if (where == 1 && (stepd = slurms(k, pdir)) == 0)
		signal_pinned(k, pidfd);
	else if (where == 1 && stepd < 0)
		k->whole = false;
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
		errno = ENOSYS;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
		fds[i] = (int)syscall(SYS_pidfd_open, (pid_t)before[i], 0);
#endif
		if (fds[i] < 0 && errno != ESRCH)
			k->whole = false; /* not pinned (no pidfds, out of fds): not judged */
	}
	if (!fds)
		k->whole = false;
	m = fds ? read_pids(dirfd, &after) : -1;
	if (fds && m < 0 && errno != ENOENT)
		k->whole = false;
	for (long i = 0; m > 0 && i < n; i++) {
		char name_[32];
		int pdir, stepd;

		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false;
			break;
		}
		if (fds[i] < 0 || !bsearch(&before[i], after, (size_t)m, sizeof(*after), by_pid))
			continue;
		snprintf(name_, sizeof(name_), "%ld", before[i]);
		pdir = openat(k->procfd, name_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		stepd = pdir >= 0 ? slurms(k, pdir) : 0; /* no entry: gone */
		if (stepd < 0)
			k->whole = false;
		if (stepd == 0 && pdir >= 0) {
			signal_pinned(k, fds[i]);
			if (k->nhit == k->caphit) {
				long want = k->caphit ? k->caphit * 2 : 64;
				long *more = realloc(k->hit, sizeof(*more) * (size_t)want);

				if (more) {
					k->hit = more;
					k->caphit = want;
				}
			}
			if (k->nhit < k->caphit)
				k->hit[k->nhit++] = before[i];
		}
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
	return lwk_cgroup_clock() > k->deadline; /* then the walk stops, unsure */
}

/* The pids of <proc>, sorted; their count, or -1. */
static long proc_pids(int procfd, long **pids)
{
	int fd = fcntl(procfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	long n = 0, cap = 0;
	struct dirent *e;

	*pids = NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (n == cap) {
			long *more = realloc(*pids, sizeof(*more) * (size_t)(cap = cap ? cap * 2 : 1024));

			if (!more) {
				closedir(d);
				free(*pids);
				*pids = NULL;
				return -1;
			}
			*pids = more;
		}
		(*pids)[n++] = strtol(e->d_name, NULL, 10);
	}
	closedir(d);
	if (n)
		qsort(*pids, (size_t)n, sizeof(**pids), by_pid);
	return n;
}

static struct kill *kill_open(const struct lwk_cgroup *cg, const char *proc, double deadline)
{
	struct kill *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	*k = (struct kill){ .cg = cg, .deadline = deadline, .whole = true, .text = malloc(TEXT) };
	k->procfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!k->text || k->procfd < 0) {
		if (k->procfd >= 0)
			close(k->procfd);
		free(k->text);
		free(k);
		return NULL;
	}
	return k;
}

/* Frees k; how many it signalled. */
static int kill_close(struct kill *k)
{
	int signalled = k->signalled;

	close(k->procfd);
	free(k->text);
	free(k->hit);
	free(k);
	return signalled;
}

int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, struct lwk_kill *kl)
{
	double t0 = lwk_cgroup_clock(), round = kl->deadline < t0 + 1 ? kl->deadline : t0 + 1;
	struct kill *k;
	long *pids = NULL, n, start = 0;
	int found;
	struct walk w;

	kl->whole = false;
	if (!cg->path[0] || !cg->path[1]) /* never the whole hierarchy */
		return 0;
	if (!(k = kill_open(cg, proc, round)))
		return 0;
	if ((n = proc_pids(k->procfd, &pids)) < 0) {
		kill_close(k);
		return 0;
	}
	/* On v1, once the tree is taken back, its lists say every process
	 * in it (a thread in a cgroup lists its process there): read first,
	 * for at most 0.4 s of the round, whatever the rest of the node
	 * holds; the scan below finds the processes of a tree too big for
	 * that. */
	if (cg->version == LWK_CGROUP_V1) {
		k->deadline = t0 + 0.4 < round ? t0 + 0.4 : round;
		if (walk_tree(cg, &w, k->deadline, deep_here, NULL, k) || !w.whole)
			k->whole = false;
		k->deadline = round;
	}
	if (k->nhit)
		qsort(k->hit, (size_t)k->nhit, sizeof(*k->hit), by_pid);
	/* Every process of the node, from where the last round stopped:
	 * the user can rename or move the cgroups below the step, never the
	 * job's path above them.  Cut at the deadline (then unsure). */
	while (start < n && pids[start] <= kl->cursor)
		start++;
	for (long i = 0; i < n; i++) {
		long pid = pids[(start + i) % n];
		char name[24];

		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false;
			break;
		}
		snprintf(name, sizeof(name), "%ld", pid);
		if (!k->nhit || !bsearch(&pid, k->hit, (size_t)k->nhit, sizeof(*k->hit), by_pid))
			judge(k, k->procfd, name);
		kl->cursor = pid;
	}
	free(pids);
	if (k->deep && cg->version != LWK_CGROUP_V1) {
		if (walk_tree(cg, &w, k->deadline, deep_here, NULL, k) || !w.whole)
			k->whole = false;
	}
	kl->whole = k->whole;
	found = k->found;
	kl->signalled += kill_close(k);
	return found;
}
