/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Remote isolated partitions: what the kernel offers, who holds exclusive
 * CPUs.  See xpart.h. */
#include "node/xpart.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/cgroup.h"

#define WALK_DEPTH 16
#define WALK_MAX 16384

int lwk_xpart_capable(const char *root, const char *path, char *why, size_t len)
{
	char dir[1100], file[1200];

	if (lwk_cgroup_detect(root) != LWK_CGROUP_V2) {
		snprintf(why, len, "cgroup v1: isolated partitions under Slurm's cgroups need cgroup v2 "
			 "and Linux 6.7 or later");
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s%s", root, path);
	snprintf(file, sizeof(file), "%s/cpuset.cpus", dir);
	if (access(file, F_OK)) {
		snprintf(why, len, "the cpuset controller is not enabled for %s", path);
		return 0;
	}
	snprintf(file, sizeof(file), "%s/cpuset.cpus.exclusive", dir);
	if (access(file, F_OK)) {
		snprintf(why, len, "this kernel has no cpuset.cpus.exclusive (remote partitions: "
			 "Linux 6.7 or later), so Slurm's cgroups cannot hold an isolated partition");
		return 0;
	}
	return 1;
}

/* The CPUs a cgroup directory holds exclusively, as text ("" none). */
static void held(const char *dir, char *list, size_t len)
{
	char err[256], part[128];

	list[0] = '\0';
	if (lwk_cgroup_read_knob(dir, "cpuset.cpus.exclusive", list, len, err, sizeof(err)) ||
	    list[0])
		return;
	/* A partition made from cpuset.cpus alone: its effective set. */
	if (lwk_cgroup_read_knob(dir, "cpuset.cpus.partition", part, sizeof(part), err, sizeof(err)) ||
	    (strcmp(part, "root") && strcmp(part, "isolated")) ||
	    lwk_cgroup_read_knob(dir, "cpuset.cpus.exclusive.effective", list, len, err, sizeof(err)))
		list[0] = '\0';
}

struct walk {
	const char *root;
	const struct lwk_cpuset *cpus;
	bool (*ours)(const char *path, void *ctx);
	void *ctx;
	char *what;
	size_t len;
	unsigned int seen;
};

/* 1 found (w->what), 0 none below, -1 not known (w->what says why):
 * too many cgroups, too deep, a path too long.  A cgroup never looked at
 * could hold the CPUs: the walk says so instead of passing it over. */
static int walk(struct walk *w, const char *path, int depth)
{
	char dir[1100], list[4096];
	struct lwk_cpuset s;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (++w->seen > WALK_MAX) {
		snprintf(w->what, w->len, "more than %d cgroups under %s: who holds exclusive CPUs "
			 "is not known", WALK_MAX, w->root);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s%s", w->root, path);
	if (path[0]) {
		held(dir, list, sizeof(list));
		if (list[0] && lwk_cpulist_parse(list, LWK_MAX_CPUS, &s) == 0) {
			lwk_cpuset_and(&s, w->cpus);
			if (lwk_cpuset_count(&s) && !(w->ours && w->ours(path, w->ctx))) {
				snprintf(w->what, w->len, "%s (cpuset.cpus.exclusive %s)", path, list);
				return 1;
			}
		}
	}
	if (!(d = opendir(dir)))
		return 0;
	while (rc == 0 && (e = readdir(d))) {
		char child[800];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (depth >= WALK_DEPTH) {
			snprintf(w->what, w->len, "cgroups deeper than %d levels under %s (%s): who "
				 "holds exclusive CPUs is not known", WALK_DEPTH, w->root, path);
			rc = -1;
		} else if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, e->d_name) >=
			   sizeof(child)) {
			snprintf(w->what, w->len, "a cgroup path under %s%.200s longer than %zu characters: "
				 "who holds exclusive CPUs is not known", w->root, path, sizeof(child) - 1);
			rc = -1;
		} else {
			rc = walk(w, child, depth + 1);
		}
	}
	closedir(d);
	return rc;
}

int lwk_xpart_holder(const char *root, const struct lwk_cpuset *cpus,
		     bool (*ours)(const char *path, void *ctx), void *ctx, char *what, size_t len)
{
	struct walk w = { root, cpus, ours, ctx, what, len, 0 };
	struct stat st;

	what[0] = '\0';
	if (stat(root, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(what, len, "cannot read the cgroup tree %s: %s", root, strerror(errno));
		return -1;
	}
	return walk(&w, "", 0);
}

bool lwk_xpart_populated(const char *root, const char *path)
{
	char dir[1100], text[512], err[256];

	snprintf(dir, sizeof(dir), "%s%s", root, path);
	if (lwk_cgroup_read_knob(dir, "cgroup.events", text, sizeof(text), err, sizeof(err)))
		return false;
	return strstr(text, "populated 1") != NULL;
}
