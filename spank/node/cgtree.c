/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One cpuset knob over a cgroup and every cgroup below it (see
 * lwk_cgroup_set_cpus_tree in cgroup.h): the whole tree walked, widened
 * to the union top down, narrowed to the target bottom up. */
#include "node/cgroup.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define dir_of lwk_cgroup_dir

/* A job's user may make cgroups below its own (Slurm 22.05's v1 step
 * directories are the user's): the walk has no depth limit, and past
 * this many cgroups it refuses rather than leave some unwritten. */
#define TREE_MAX 4096

struct tree {
	char (*paths)[768];
	int n, cap;
};

/* cg's path and those of every cgroup below it that has cpuset files,
 * parents before children (breadth first, no recursion); none when cg
 * has none.  -1 with err naming the cgroup when the tree has more than
 * TREE_MAX cgroups or a path does not fit: a cgroup left out could keep
 * the CPUs. */
static int tree_collect(const struct lwk_cgroup *cg, struct tree *t, char *err, size_t errlen)
{
	char dir[1100], file[1400];

	t->n = 0;
	dir_of(cg, "cpuset", dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/cpuset.cpus", dir);
	if (access(file, F_OK))
		return 0;
	snprintf(t->paths[t->n++], 768, "%s", cg->path);
	for (int i = 0; i < t->n; i++) {
		struct lwk_cgroup c = *cg;
		struct dirent *e;
		DIR *d;

		snprintf(c.path, sizeof(c.path), "%s", t->paths[i]);
		dir_of(&c, "cpuset", dir, sizeof(dir));
		if (!(d = opendir(dir)))
			continue;
		while ((e = readdir(d))) {
			char *next;

			/* Every name but "." and "..": a job's user may hide a
			 * cpuset behind a leading dot. */
			if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			/* A child without cpuset files (v2: the controller not
			 * enabled below) has no CPUs of its own to write. */
			snprintf(file, sizeof(file), "%s/%s/cpuset.cpus", dir, e->d_name);
			if (access(file, F_OK))
				continue;
			if (t->n >= TREE_MAX) {
				closedir(d);
				return ERR("lwk: %s has more than %d cgroups below it: refusing to place "
					   "CPUs on part of them", cg->path, TREE_MAX);
			}
			if (t->n == t->cap) {
				char (*more)[768] = realloc(t->paths, sizeof(*more) * (size_t)t->cap * 2);

				if (!more) {
					closedir(d);
					return ERR("lwk: out of memory");
				}
				t->paths = more;
				t->cap *= 2;
			}
			next = t->paths[t->n];
			if ((size_t)snprintf(next, 768, "%s/%s", c.path, e->d_name) >= 768) {
				closedir(d);
				return ERR("lwk: %s/%s: path too long to place CPUs on", c.path, e->d_name);
			}
			t->n++;
		}
		closedir(d);
	}
	return 0;
}

/* One knob over the tree: nothing when every cgroup has it already
 * (a cpuset.mems write on v2 migrates the tasks' memory and waits for
 * every CPU to drain its page lists: never for nothing); else the union
 * top down, then the target bottom up.  A write that fails half way
 * (a cgroup the job's user made or widened meanwhile) puts back what
 * each level had, top down: the tree is never left wider than it was. */
static int set_tree_knob(const struct lwk_cgroup *cg, char (*paths)[768], int n, bool mems,
			 const struct lwk_cpuset *target, char *err, size_t errlen)
{
	int (*set)(const struct lwk_cgroup *, const struct lwk_cpuset *, char *, size_t) =
		mems ? lwk_cgroup_set_mems : lwk_cgroup_set_cpus;
	struct lwk_cpuset wide = *target, *before = malloc(sizeof(*before) * (size_t)n);
	bool all_there = true;
	int rc = -1;

	if (!before)
		return ERR("lwk: out of memory");
	for (int i = 0; i < n; i++) {
		struct lwk_cgroup c = *cg;
		struct lwk_cpuset have[2];

		snprintf(c.path, sizeof(c.path), "%s", paths[i]);
		if (lwk_cgroup_get_cpuset(&c, &have[0], &have[1], err, errlen))
			goto out;
		before[i] = have[mems];
		lwk_cpuset_or(&wide, &have[mems]);
		if (!lwk_cpuset_equal(&have[mems], target))
			all_there = false;
	}
	rc = 0;
	if (all_there)
		goto out;
	for (int i = 0; i < n && !rc; i++) {
		struct lwk_cgroup c = *cg;

		snprintf(c.path, sizeof(c.path), "%s", paths[i]);
		rc = set(&c, &wide, err, errlen);
	}
	for (int i = n; i-- > 0 && !rc;) {
		struct lwk_cgroup c = *cg;

		snprintf(c.path, sizeof(c.path), "%s", paths[i]);
		rc = set(&c, target, err, errlen);
	}
	if (rc) {
		/* The first error is the one said. */
		for (int i = 0; i < n; i++) {
			struct lwk_cgroup c = *cg;
			char ignored[256];

			snprintf(c.path, sizeof(c.path), "%s", paths[i]);
			(void)set(&c, &before[i], ignored, sizeof(ignored));
		}
	}
out:
	free(before);
	return rc ? -1 : 0;
}

static int set_tree(const struct lwk_cgroup *cg, bool mems, const struct lwk_cpuset *set,
		    char *err, size_t errlen)
{
	struct tree t = { .paths = malloc(sizeof(*t.paths) * 64), .cap = 64 };
	int rc;

	if (!t.paths)
		return ERR("lwk: out of memory");
	rc = tree_collect(cg, &t, err, errlen);
	if (!rc && !t.n)
		rc = ERR("lwk: cgroup %s has no cpuset here", cg->path);
	if (!rc)
		rc = set_tree_knob(cg, t.paths, t.n, mems, set, err, errlen);
	free(t.paths);
	return rc ? -1 : 0;
}

int lwk_cgroup_set_cpus_tree(const struct lwk_cgroup *cg, const struct lwk_cpuset *cpus,
			     char *err, size_t errlen)
{
	return set_tree(cg, false, cpus, err, errlen);
}

int lwk_cgroup_set_mems_tree(const struct lwk_cgroup *cg, const struct lwk_cpuset *mems,
			     char *err, size_t errlen)
{
	return set_tree(cg, true, mems, err, errlen);
}
