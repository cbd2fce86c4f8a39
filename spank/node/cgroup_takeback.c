/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A v1 job's cgroup tree taken back from its user, and the cgroups Slurm
 * does not make told from its own (see lwk_cgroup_take_back and
 * lwk_cgroup_foreign in cgroup.h). */
#include "node/cgroup_users.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	foreign = lwk_cgroup_walk(cg, w, deadline, foreign_name, NULL, (void *)cg) ||
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

struct take {
	struct lwk_take_back *tb;
	/* The cgroups its user made, by inode. */
	ino_t *made;
	size_t n, cap;
	struct lwk_killer *k; /* for the processes in them */
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
			lwk_killer_listed(fd, name, level, t->k);
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
		lwk_cgroup_walk(cg, &w, deadline, take_here, NULL, &t);
		tb->whole = w.whole;
	}
	if (t.n) {
		struct lwk_killer *k = lwk_killer_open(cg, proc, deadline);
		size_t u = 1;

		qsort(t.made, t.n, sizeof(*t.made), by_ino);
		for (size_t i = 1; i < t.n; i++) /* noted again by a later pass */
			if (t.made[i] != t.made[u - 1])
				t.made[u++] = t.made[i];
		t.n = u;
		if (k) {
			t.k = k;
			lwk_cgroup_walk(cg, &w, deadline, NULL, remove_here, &t);
			tb->whole = tb->whole && w.whole;
			tb->killed = lwk_killer_close(k);
		} else {
			tb->left = (int)t.n;
		}
	}
	free(t.made);
	return tb->changed + tb->removed;
}
