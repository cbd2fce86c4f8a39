/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The App cores of an --lwk job made an isolated remote partition where
 * the kernel can (node/xpart.h), for the step whose tasks run there;
 * its undoing.  See lwk/part.h, lwk_part_isolate.
 *
 * Each write is recorded first in the job's state (lwk/xlines.c says
 * the lines and their undoing), and only what was added is taken out
 * again: what a level held before stays.
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

/* What the holder scan leaves out: the levels this job wrote (its
 * state's lines) and the App cgroup's own ancestors, which must hold
 * the App CPUs for the partition anyway. */
struct ours_ctx {
	const char *state;
	const char *path;
};

/* Is a the path b or one of its ancestors? */
static bool at_or_above(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

static bool ours(const char *path, void *arg)
{
	const struct ours_ctx *o = arg;

	return at_or_above(path, o->path) || lwk_xrecorded(o->state, "xcpus", path) ||
	       lwk_xrecorded(o->state, "xpart", path);
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

/* Another App cgroup of the job ("appcg" lines) whose tasks still run:
 * its path in other, 1; else 0. */
static int other_running(const char *root, const char *state, const char *path, char *other,
			 size_t len)
{
	struct lwk_xline *x;
	int n = lwk_xlines(state, "appcg", &x), found = 0;

	for (int i = 0; i < n && !found; i++) {
		if (strcmp(x[i].path, path) && lwk_xpart_populated(root, x[i].path)) {
			snprintf(other, len, "%s", x[i].path);
			found = 1;
		}
	}
	free(x);
	return found;
}

/* Every path but the one given and its ancestors: the levels of other
 * steps. */
static bool not_ours(const char *level, const void *path)
{
	return !at_or_above(level, path);
}

/* What an undo could not do, added to why for the log. */
static void undo_into(const char *root, const char *state,
		      bool (*keep)(const char *, const void *), const char *path, char *why,
		      size_t whylen)
{
	char log[1024] = "";

	if (lwk_xundo(root, state, keep, path, log, sizeof(log), NULL) && strlen(why) + 3 < whylen)
		snprintf(why + strlen(why), whylen - strlen(why), "; %s", log);
}

/* Record "<key> <path>" once, and read the state again. */
static int record(const struct lwk_node_roots *r, uint32_t job, const char *key, const char *path,
		  char *state, char *why, size_t whylen)
{
	char line[900];

	if (lwk_xrecorded(state, key, path))
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
	char other[800];
	bool busy = other_running(r->cgroup_root, state, path, other, sizeof(other));

	if (busy && mode == LWK_ISOLATE_PARTITION) {
		(void)ERR("lwk: --lwk: another step of the job (%s) runs on the App cores on %s; an "
		    "isolated partition holds one step's tasks, and with lwk_isolate=partition the "
		    "job's steps run on the App cores one at a time", other, r->node);
		return 1;
	}
	if (busy)
		snprintf(why, whylen, "another step of the job (%s) runs on the App cores at the same "
			 "time: a partition holds one step's tasks, so theirs is a plain cpuset too",
			 other);
	undo_into(r->cgroup_root, state, not_ours, path, why, whylen);
	return busy;
}

/* Every level of path below the root, top down, each made to hold the
 * App CPUs exclusively (recorded first), then path an isolated
 * partition.  0, or -1 with the kernel's words in why. */
static int make_partition(const struct lwk_node_roots *r, uint32_t job, const char *path,
			  const struct lwk_cpuset *app_cpus, char *state, char *why, size_t whylen)
{
	char level[800], dir[1100], cur[16384], list[16384], line[17400];
	struct lwk_cpuset have, add;
	size_t n = strlen(path);

	for (size_t at = 1; at <= n; at++) {
		if (at < n && path[at] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)at, path);
		snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, level);
		if (lwk_cgroup_read_knob(dir, "cpuset.cpus.exclusive", cur, sizeof(cur), why, whylen))
			return -1;
		if (lwk_cpulist_parse(cur, LWK_MAX_CPUS, &have)) {
			snprintf(why, whylen, "%s/cpuset.cpus.exclusive reads '%.100s'", level, cur);
			return -1;
		}
		/* Only the App CPUs the level lacks are added (and recorded,
		 * to be taken out again): what it held stays. */
		add = *app_cpus;
		for (int c = lwk_cpuset_first(&have); c >= 0; c = lwk_cpuset_next(&have, c))
			add.bits[c / 64] &= ~(UINT64_C(1) << (c % 64));
		if (!lwk_cpuset_count(&add))
			continue;
		lwk_cpuset_or(&have, &add);
		if (lwk_cpulist_format(&have, list, sizeof(list)) >= sizeof(list) ||
		    lwk_cpulist_format(&add, cur, sizeof(cur)) >= sizeof(cur)) {
			snprintf(why, whylen, "%s: the CPU list is too long", level);
			return -1;
		}
		snprintf(line, sizeof(line), "xcpus %s %s\n", level, cur);
		if (lwk_part_append_state(r, job, line, why, whylen) ||
		    lwk_part_read_state(r, job, state, STATE_MAX) ||
		    lwk_cgroup_write_knob(dir, "cpuset.cpus.exclusive", list, why, whylen))
			return -1;
	}
	if (record(r, job, "xpart", path, state, why, whylen))
		return -1;
	snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, path);
	if (lwk_cgroup_write_knob(dir, "cpuset.cpus.partition", "isolated", why, whylen) ||
	    lwk_cgroup_read_knob(dir, "cpuset.cpus.partition", cur, sizeof(cur), why, whylen))
		return -1;
	/* The kernel takes the write and says "isolated invalid (...)"
	 * when it cannot make the partition. */
	if (strcmp(cur, "isolated")) {
		snprintf(why, whylen, "the kernel left %s '%.300s'", path, cur);
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

/* The partition of path, made (0: kind "partition") or not: the kernel
 * refused (auto: a plain cpuset, why says so, and the step's later
 * tasks do not ask again; partition: -1 with err). */
static int try_partition(const struct lwk_node_roots *r, const struct lwk_part *p,
			 const char *path, int mode, char *state, char *kind, size_t kindlen,
			 char *why, size_t whylen, char *err, size_t errlen)
{
	if (make_partition(r, p->job, path, &p->plan.app_cpus, state, why, whylen) == 0) {
		snprintf(kind, kindlen, "partition");
		return 0;
	}
	/* What this step wrote, undone; the kernel's words stay in why. */
	undo_into(r->cgroup_root, state, this_path, path, why, whylen);
	if (mode == LWK_ISOLATE_PARTITION)
		return ERR("lwk: --lwk: the site asks for an isolated partition "
			   "(lwk_isolate=partition), but on %s the kernel refused it: %s", r->node, why);
	record(r, p->job, "xfail", path, state, err, errlen);
	return 0;
}

int lwk_part_isolate(const struct lwk_node_roots *r, const struct lwk_part *p, const char *path,
		     int mode, char *kind, size_t kindlen, char *why, size_t whylen, char *err,
		     size_t errlen)
{
	char app[4096], what[1000];
	struct ours_ctx o = { NULL, path };
	char *state = NULL;
	int fd, rc = -1, held;

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
		return ERR("lwk: --lwk: job %" PRIu32 " has no --lwk state on %s", p->job, r->node);
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, p->job, state, STATE_MAX)) {
		(void)ERR("lwk: --lwk: cannot read the state of job %" PRIu32, p->job);
		goto out;
	}
	o.state = state;
	rc = 0;
	if (lwk_xrecorded(state, "xpart", path) &&
	    !strcmp(isolation_of_dir(r->cgroup_root, path), "partition")) {
		/* An earlier task of the step made it. */
		snprintf(kind, kindlen, "partition");
		goto out;
	}
	if (lwk_xrecorded(state, "xfail", path)) {
		snprintf(why, whylen, "the kernel refused the step's first task a partition");
		goto out;
	}
	/* A new step: the lines of the steps gone are dropped (the state
	 * stays the size of what runs), then this one is recorded. */
	rc = -1;
	if (!lwk_xrecorded(state, "appcg", path) &&
	    (lwk_xcompact(r, p->job, state) < 0 || record(r, p->job, "appcg", path, state, err, errlen)))
		goto out;
	if (share_with_others(r, state, path, mode, why, whylen, err, errlen)) {
		rc = why[0] ? 0 : -1;
		goto out;
	}
	held = lwk_xpart_holder(r->cgroup_root, &p->plan.app_cpus, ours, &o, what, sizeof(what));
	if (held > 0) {
		(void)ERR("lwk: --lwk: %s holds App CPUs %s of the job exclusively on %s; the App "
			  "cores cannot be the job's", what, app, r->node);
		goto out;
	}
	if (held < 0 && mode == LWK_ISOLATE_PARTITION) {
		(void)ERR("lwk: --lwk: the site asks for an isolated partition (lwk_isolate=partition), "
			  "but on %s %s", r->node, what);
		goto out;
	}
	if (held < 0) {
		snprintf(why, whylen, "%s", what);
		rc = 0;
		goto out;
	}
	rc = try_partition(r, p, path, mode, state, kind, kindlen, why, whylen, err, errlen);
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
	int held;

	if (mode == LWK_ISOLATE_CPUSET)
		return 0;
	if (!lwk_xpart_capable(r->cgroup_root, app, why, sizeof(why)))
		return mode == LWK_ISOLATE_PARTITION
			       ? ERR("lwk: --lwk: the site asks for an isolated partition "
				     "(lwk_isolate=partition), but on %s %s", r->node, why)
			       : 0;
	held = lwk_xpart_holder(r->cgroup_root, &p->plan.app_cpus, of_job, (void *)job, what,
				sizeof(what));
	if (held > 0)
		return ERR("lwk: --lwk: %s holds App CPUs of the job exclusively on %s; the App "
			   "cores cannot be the job's", what, r->node);
	if (held < 0 && mode == LWK_ISOLATE_PARTITION)
		return ERR("lwk: --lwk: the site asks for an isolated partition "
			   "(lwk_isolate=partition), but on %s %s", r->node, what);
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
