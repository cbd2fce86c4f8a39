/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The walk of a job's cpuset tree under the node lock (see
 * lwk_cgroup_walk in node/cgroup_users.h): every cgroup opened relative
 * to its parent, however deep, at most WALK_MAX_CGROUPS, until a
 * deadline. */
#include "node/cgroup_users.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

bool lwk_cgroup_walk(const struct lwk_cgroup *cg, struct walk *w, double deadline,
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
