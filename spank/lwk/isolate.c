/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The App cores of an --lwk job made an isolated remote partition where
 * the kernel can (node/xpart.h), for the step whose tasks run there;
 * its undoing.  See lwk/part.h, lwk_part_isolate.
 *
 * State lines, each written before what it records:
 *   xcpus <path> <old>   cpuset.cpus.exclusive of an ancestor (or the
 *                        App cgroup) about to get the App CPUs added;
 *                        <old> its value before ("-" for none)
 *   xpart <path>         the App cgroup about to become "isolated"
 *   appcg <path>         a step's App cgroup (each step's, partition or
 *                        not: a later step sees whether it still runs)
 * The undoing puts every xpart back to "member", then every xcpus, the
 * deepest first, to its old value, where the cgroup is still there.
 *
 * One partition holds one cgroup's tasks, and Slurm gives each step a
 * cgroup of its own: the App cores are the partition of one step at a
 * time.  A step that starts while another step of the job still runs
 * there gets a plain cpuset (lwk_isolate=auto: the other step's
 * partition is turned back into a plain cpuset too, or the new step
 * could not run on the App cores) or is refused (lwk_isolate=partition).
 * Each task of a step runs this as it starts (lwk_part_isolate_task):
 * the first decides, under the job's lock, the others find it done.
 */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lwk/part_int.h"
#include "node/procfs.h"
#include "node/xpart.h"

/* Does the state hold "<key> <path> " or "<key> <path>\n" (or at its end)? */
static bool recorded(const char *state, const char *key, const char *path)
{
	size_t kl = strlen(key), pl = strlen(path);

	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);

		if (n >= kl + 1 + pl && !strncmp(line, key, kl) && line[kl] == ' ' &&
		    !strncmp(line + kl + 1, path, pl) &&
		    (n == kl + 1 + pl || line[kl + 1 + pl] == ' '))
			return true;
		line += n + (nl ? 1 : 0);
	}
	return false;
}

static bool ours(const char *path, void *state)
{
	return recorded(state, "xcpus", path) || recorded(state, "xpart", path);
}

/* Is a the path b or one of its ancestors? */
static bool at_or_above(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

static const char *isolation_of_dir(const char *cgroup_root, const char *path)
{
	char dir[1100], kind[128], err[256];

	snprintf(dir, sizeof(dir), "%s%s", cgroup_root, path);
	if (lwk_cgroup_read_knob(dir, "cpuset.cpus.partition", kind, sizeof(kind), err,
				 sizeof(err)) == 0 &&
	    !strcmp(kind, "isolated"))
		return "partition";
	return "cpuset";
}

/* The state's lines of key, as (path, rest) pairs. */
struct xline {
	char path[800];
	char old[4096];
};

static int lines_of(const char *state, const char *key, struct xline *out, int max)
{
	int n = 0;
	size_t kl = strlen(key);

	for (const char *line = state; *line && n < max;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char l[4900], *p, *sp;

		if (len > kl + 1 && len < sizeof(l) && !strncmp(line, key, kl) && line[kl] == ' ') {
			memcpy(l, line + kl + 1, len - kl - 1);
			l[len - kl - 1] = '\0';
			p = l;
			sp = strchr(p, ' ');
			if (sp)
				*sp = '\0';
			if (p[0] == '/' && !strstr(p, "/..") && strlen(p) < sizeof(out[n].path)) {
				snprintf(out[n].path, sizeof(out[n].path), "%s", p);
				snprintf(out[n].old, sizeof(out[n].old), "%s",
					 sp && strcmp(sp + 1, "-") ? sp + 1 : "");
				n++;
			}
		}
		line += len + (nl ? 1 : 0);
	}
	return n;
}

#define XMAX 64

/*
 * Undo the state's partitions and exclusive CPUs whose path keep() says
 * (all with keep NULL): xpart back to member, then xcpus deepest (last
 * written) first.  What failed goes to log and, with k, stays recorded.
 * Returns how many writes failed.
 */
static int undo_some(const char *root, const char *state, bool (*keep)(const char *, const void *),
		     const void *arg, char *log, size_t loglen, struct lwk_part_remains *k)
{
	struct xline *x = malloc(sizeof(*x) * XMAX);
	int n, failed = 0;
	char dir[1100], err[512];

	if (!x)
		return 1;
	n = lines_of(state, "xpart", x, XMAX);
	for (int i = n - 1; i >= 0; i--) {
		if (keep && !keep(x[i].path, arg))
			continue;
		snprintf(dir, sizeof(dir), "%s%s", root, x[i].path);
		if (access(dir, F_OK))
			continue; /* Slurm removed it: the kernel freed its CPUs */
		if (lwk_cgroup_write_knob(dir, "cpuset.cpus.partition", "member", err, sizeof(err))) {
			failed++;
			lwk_log_append(log, loglen, "%s", err);
			if (k)
				lwk_part_keep(k, true, "xpart %s\n", x[i].path);
		}
	}
	n = lines_of(state, "xcpus", x, XMAX);
	for (int i = n - 1; i >= 0; i--) {
		if (keep && !keep(x[i].path, arg))
			continue;
		snprintf(dir, sizeof(dir), "%s%s", root, x[i].path);
		if (access(dir, F_OK))
			continue;
		if (lwk_cgroup_write_knob(dir, "cpuset.cpus.exclusive", x[i].old[0] ? x[i].old : "\n",
					  err, sizeof(err))) {
			failed++;
			lwk_log_append(log, loglen, "%s", err);
			if (k)
				lwk_part_keep(k, true, "xcpus %s %s\n", x[i].path,
					      x[i].old[0] ? x[i].old : "-");
		}
	}
	free(x);
	return failed;
}

void lwk_part_unisolate(const struct lwk_node_roots *r, const char *state, bool kill, char *log,
			size_t loglen, struct lwk_part_remains *k)
{
	int failed;

	if (!strstr(state, "xcpus ") && !strstr(state, "xpart "))
		return;
	if (!kill) {
		/* A setup redone while the job runs: its partition stays, the
		 * lines with it for the job's final teardown. */
		struct xline *x = malloc(sizeof(*x) * XMAX);
		int n;

		if (!x) {
			k->failed++;
			return;
		}
		n = lines_of(state, "xcpus", x, XMAX);
		for (int i = 0; i < n; i++)
			lwk_part_keep(k, false, "xcpus %s %s\n", x[i].path, x[i].old[0] ? x[i].old : "-");
		n = lines_of(state, "xpart", x, XMAX);
		for (int i = 0; i < n; i++)
			lwk_part_keep(k, false, "xpart %s\n", x[i].path);
		n = lines_of(state, "appcg", x, XMAX);
		for (int i = 0; i < n; i++)
			lwk_part_keep(k, false, "appcg %s\n", x[i].path);
		free(x);
		return;
	}
	failed = undo_some(r->cgroup_root, state, NULL, NULL, log, loglen, k);
	lwk_log_append(log, loglen, "%s the exclusive CPUs and isolated partitions of the App cores",
		       failed ? "could not give back all" : "gave back");
}

/* Another App cgroup of the job ("appcg" lines) whose tasks still run:
 * its path in other, 1; else 0. */
static int other_running(const char *root, const char *state, const char *path, char *other,
			 size_t len)
{
	struct xline *x = malloc(sizeof(*x) * XMAX);
	int n, found = 0;

	if (!x)
		return 0;
	n = lines_of(state, "appcg", x, XMAX);
	for (int i = 0; i < n && !found; i++) {
		if (strcmp(x[i].path, path) && lwk_xpart_populated(root, x[i].path)) {
			snprintf(other, len, "%s", x[i].path);
			found = 1;
		}
	}
	free(x);
	return found;
}

/* Every path but the one given: the partitions of other steps. */
static bool not_ours(const char *level, const void *path)
{
	return !at_or_above(level, path);
}

/* Record "<key> <path>" once, and read the state again. */
static int record(const struct lwk_node_roots *r, uint32_t job, const char *key, const char *path,
		  char *state, char *why, size_t whylen)
{
	char line[900];

	if (recorded(state, key, path))
		return 0;
	snprintf(line, sizeof(line), "%s %s\n", key, path);
	if (lwk_part_append_state(r, job, line, why, whylen))
		return -1;
	return lwk_part_read_state(r, job, state, STATE_MAX);
}

/*
 * Other steps of the job on the App cores: with one still running, this
 * step shares them as a plain cpuset (1, why says so) or, under
 * lwk_isolate=partition, is refused (1, err; why empty).  Every other
 * step's partition goes back to a plain cpuset either way: its tasks
 * are gone (a step ending) or they share the App cores with this one.
 * 0: this step may take the partition.
 */
static int share_with_others(const struct lwk_node_roots *r, const char *state, const char *path,
			     int mode, char *why, size_t whylen, char *err, size_t errlen)
{
	char other[800], log[1024];
	bool busy = other_running(r->cgroup_root, state, path, other, sizeof(other));

	if (busy && mode == LWK_ISOLATE_PARTITION) {
		(void)ERR("lwk: --lwk: another step of the job (%s) runs on the App cores on %s; an "
		    "isolated partition holds one step's tasks, and with lwk_isolate=partition the "
		    "job's steps run on the App cores one at a time", other, r->node);
		return 1;
	}
	log[0] = '\0';
	undo_some(r->cgroup_root, state, not_ours, path, log, sizeof(log), NULL);
	if (!busy)
		return 0;
	snprintf(why, whylen, "another step of the job (%s) runs on the App cores at the same time: "
		 "a partition holds one step's tasks, so theirs is a plain cpuset too", other);
	return 1;
}

/* Every level of path below the root, top down, each made to hold the
 * App CPUs exclusively (recorded first), then path an isolated
 * partition.  0, or -1 with the kernel's words in why. */
static int make_partition(const struct lwk_node_roots *r, uint32_t job, const char *path,
			  const struct lwk_cpuset *app_cpus, char **state, char *why, size_t whylen)
{
	char level[800], dir[1100], cur[4096], list[4096], line[5000];
	struct lwk_cpuset have, want;
	size_t n = strlen(path);

	for (size_t at = 1; at <= n; at++) {
		if (at < n && path[at] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)at, path);
		snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, level);
		if (lwk_cgroup_read_knob(dir, "cpuset.cpus.exclusive", cur, sizeof(cur), why, whylen))
			return -1;
		/* What the level held stays: a partition of the site's below
		 * it may need it. */
		if (lwk_cpulist_parse(cur, LWK_MAX_CPUS, &have)) {
			snprintf(why, whylen, "%s/cpuset.cpus.exclusive reads '%.100s'", level, cur);
			return -1;
		}
		want = have;
		lwk_cpuset_or(&want, app_cpus);
		if (lwk_cpuset_equal(&want, &have))
			continue;
		lwk_cpulist_format(&want, list, sizeof(list));
		if (!recorded(*state, "xcpus", level)) {
			snprintf(line, sizeof(line), "xcpus %s %s\n", level, cur[0] ? cur : "-");
			if (lwk_part_append_state(r, job, line, why, whylen) ||
			    lwk_part_read_state(r, job, *state, STATE_MAX))
				return -1;
		}
		if (lwk_cgroup_write_knob(dir, "cpuset.cpus.exclusive", list, why, whylen))
			return -1;
	}
	if (record(r, job, "xpart", path, *state, why, whylen))
		return -1;
	snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, path);
	if (lwk_cgroup_write_knob(dir, "cpuset.cpus.partition", "isolated", why, whylen) ||
	    lwk_cgroup_read_knob(dir, "cpuset.cpus.partition", cur, sizeof(cur), why, whylen))
		return -1;
	/* The kernel takes the write and says "isolated invalid (...)"
	 * when it cannot make the partition. */
	if (strcmp(cur, "isolated")) {
		snprintf(why, whylen, "the kernel left %s '%s'", path, cur);
		return -1;
	}
	return 0;
}

/* Only the levels of this step (path and its ancestors not shared with
 * another step's partition): undone after a failed make_partition. */
static bool this_path(const char *level, const void *path)
{
	return at_or_above(level, path);
}

int lwk_part_isolate(const struct lwk_node_roots *r, const struct lwk_part *p, const char *path,
		     int mode, char *kind, size_t kindlen, char *why, size_t whylen, char *err,
		     size_t errlen)
{
	char app[4096], what[1000], log[1024];
	char *state = NULL;
	int fd, rc = -1;

	snprintf(kind, kindlen, "cpuset");
	why[0] = '\0';
	if (mode == LWK_ISOLATE_CPUSET) {
		snprintf(why, whylen, "lwk_isolate=cpuset");
		return 0;
	}
	/* The state's lines are "<key> <path> <value>": a path with a
	 * blank (no cgroup Slurm makes) is not recorded, nor made one. */
	if (strpbrk(path, " \t\n"))
		snprintf(why, whylen, "the cgroup path '%.200s' has a blank", path);
	if (why[0] || !lwk_xpart_capable(r->cgroup_root, path, why, whylen))
		return mode == LWK_ISOLATE_PARTITION
			       ? ERR("lwk: --lwk: the site asks for an isolated partition "
				     "(lwk_isolate=partition), but on %s %s", r->node, why)
			       : 0;
	lwk_cpulist_format(&p->plan.app_cpus, app, sizeof(app));
	fd = lwk_part_lock_job(r, p->job, false, err, errlen);
	if (fd < 0)
		return -1;
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, p->job, state, STATE_MAX)) {
		(void)ERR("lwk: --lwk: cannot read the state of job %" PRIu32, p->job);
		goto out;
	}
	if (recorded(state, "xpart", path) &&
	    !strcmp(isolation_of_dir(r->cgroup_root, path), "partition")) {
		/* An earlier task of the step made it. */
		snprintf(kind, kindlen, "partition");
		rc = 0;
		goto out;
	}
	/* Every App cgroup is recorded: a later step sees this one. */
	if (record(r, p->job, "appcg", path, state, err, errlen))
		goto out;
	if (share_with_others(r, state, path, mode, why, whylen, err, errlen)) {
		rc = why[0] ? 0 : -1;
		goto out;
	}
	if (lwk_xpart_holder(r->cgroup_root, &p->plan.app_cpus, ours, state, what, sizeof(what))) {
		(void)ERR("lwk: --lwk: %s holds App CPUs %s of the job exclusively on %s; nothing was "
		    "changed", what, app, r->node);
		goto out;
	}
	if (make_partition(r, p->job, path, &p->plan.app_cpus, &state, why, whylen) == 0) {
		snprintf(kind, kindlen, "partition");
		rc = 0;
		goto out;
	}
	/* Undo this step's writes; the kernel's words stay in why. */
	log[0] = '\0';
	undo_some(r->cgroup_root, state, this_path, path, log, sizeof(log), NULL);
	if (mode == LWK_ISOLATE_PARTITION) {
		(void)ERR("lwk: --lwk: the site asks for an isolated partition (lwk_isolate=partition), "
		    "but on %s the kernel refused it: %s", r->node, why);
		goto out;
	}
	rc = 0;
out:
	free(state);
	close(fd);
	return rc;
}

/* A cgroup of the job (job the job's level): at or above it (the levels
 * its steps hand exclusive CPUs down through), or below it. */
static bool of_job(const char *path, void *job)
{
	return at_or_above(path, job) || at_or_above(job, path);
}

/* Another step_<n> below the job's level than the one of app, with
 * tasks: its name in other. */
static int other_step_running(const char *root, const char *job, const char *app, char *other,
			      size_t len)
{
	char dir[1100], path[900];
	DIR *d;
	struct dirent *e;
	int found = 0;

	snprintf(dir, sizeof(dir), "%s%s", root, job);
	if (!(d = opendir(dir)))
		return 0;
	while (!found && (e = readdir(d))) {
		if (strncmp(e->d_name, "step_", 5) || !isdigit((unsigned char)e->d_name[5]))
			continue;
		snprintf(path, sizeof(path), "%s/%s", job, e->d_name);
		if (!at_or_above(path, app) && lwk_xpart_populated(root, path)) {
			snprintf(other, len, "%s", path);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

int lwk_part_isolation_judge(const struct lwk_node_roots *r, const struct lwk_part *p,
			     const char *job, const char *app, int mode, char *err, size_t errlen)
{
	char why[512], what[1000], other[900];

	if (mode == LWK_ISOLATE_CPUSET)
		return 0;
	if (!lwk_xpart_capable(r->cgroup_root, app, why, sizeof(why)))
		return mode == LWK_ISOLATE_PARTITION
			       ? ERR("lwk: --lwk: the site asks for an isolated partition "
				     "(lwk_isolate=partition), but on %s %s", r->node, why)
			       : 0;
	if (lwk_xpart_holder(r->cgroup_root, &p->plan.app_cpus, of_job, (void *)job, what,
			     sizeof(what)) > 0)
		return ERR("lwk: --lwk: %s holds App CPUs of the job exclusively on %s; the App "
			   "cores cannot be the job's", what, r->node);
	if (mode == LWK_ISOLATE_PARTITION &&
	    other_step_running(r->cgroup_root, job, app, other, sizeof(other)))
		return ERR("lwk: --lwk: another step of the job (%s) runs on %s; an isolated "
			   "partition holds one step's tasks, and with lwk_isolate=partition the "
			   "job's steps run on the App cores one at a time", other, r->node);
	return 0;
}

const char *lwk_part_isolation_of(const char *cgroup_root, const char *proc_cgroup)
{
	char ctl[256], path[800];
	const char *cursor = proc_cgroup;

	while (lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path))) {
		if (ctl[0])
			continue; /* v1 hierarchies: never a partition here */
		for (int up = 0; up < 2 && path[0] == '/' && path[1]; up++) {
			if (!strcmp(isolation_of_dir(cgroup_root, path), "partition"))
				return "partition";
			*strrchr(path, '/') = '\0';
		}
	}
	return "cpuset";
}
