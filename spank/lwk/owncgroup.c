/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroups the --lwk partition makes itself where Slurm made none
 * (/slurm-lwk/<node>/job_<id>/app, .../delegation): made and recorded for
 * the placement, killed in and removed by the teardown.  See lwk/part.h. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lwk/part_int.h"

/* SIGKILL every process in the cgroup path of hierarchy hier (v1: of
 * controller) and below: never one a reused pid names outside it
 * (cgroup.kill, or a pidfd checked against the cgroup: node/cgroup.c). */
static int kill_tree(const struct lwk_node_roots *r, const char *hier, const char *controller,
		     const char *path)
{
	return lwk_cgroup_kill_tree(hier, controller, path, r->proc);
}

/* Remove the cgroup directory and the ones below it, deepest first. */
static int rmdir_tree(const char *dir, int depth)
{
	char path[1500];
	struct dirent *e;
	DIR *d = depth <= 8 ? opendir(dir) : NULL;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
			    strlen(dir) + strlen(e->d_name) < 1200) {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				rmdir_tree(path, depth + 1);
			}
		closedir(d);
	}
	return rmdir(dir) && errno != ENOENT ? -1 : 0;
}

/* The first pid listed in cgroup.procs at dir or below it (depth-first,
 * as deep as kill_tree goes), or 0. */
static long first_pid(const char *dir, int depth)
{
	char p[1500];
	long pid = 0;
	struct dirent *e;
	FILE *f;
	DIR *d;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	f = fopen(p, "re");
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	d = pid > 0 || depth > 8 ? NULL : opendir(dir);
	while (d && pid <= 0 && (e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.' && strlen(dir) + strlen(e->d_name) < 1200) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			pid = first_pid(p, depth + 1);
		}
	if (d)
		closedir(d);
	return pid;
}

/* What still holds the tree that could not be removed, for the log: a
 * pid in it, its command (the user's to name: what is not printable is
 * shown as '?') and its state ("D" is a task stuck in the kernel, which
 * no signal ends). */
static void say_what_holds(const struct lwk_node_roots *r, const char *dir, int err,
			   struct lwk_part_clear *c)
{
	char p[600], stat[512] = "", comm[64] = "?", state = '?';
	long pid = first_pid(dir, 0);
	FILE *f;

	if (pid <= 0) {
		snprintf(c->why, sizeof(c->why), "rmdir: %s", strerror(err));
		return;
	}
	snprintf(p, sizeof(p), "%s/%ld/stat", r->proc, pid);
	f = fopen(p, "re");
	if (f) {
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = '\0';
		fclose(f);
	}
	{
		char *open = strchr(stat, '('), *close = strrchr(stat, ')');

		if (open && close && close > open) {
			size_t n = (size_t)(close - open - 1);

			n = n < sizeof(comm) - 1 ? n : sizeof(comm) - 1;
			for (size_t i = 0; i < n; i++)
				comm[i] = open[1 + i] >= 0x20 && open[1 + i] < 0x7f ? open[1 + i] : '?';
			comm[n] = '\0';
			state = close[1] == ' ' && close[2] ? close[2] : '?';
		}
	}
	/* A refusal other than "busy" is said too: it is why. */
	snprintf(c->why, sizeof(c->why), "process %ld (%s) in state %c still in it%s%s", pid, comm,
		 state, err != EBUSY ? "; rmdir: " : "", err != EBUSY ? strerror(err) : "");
}

static bool past(const struct timespec *deadline)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec > deadline->tv_sec ||
	       (t.tv_sec == deadline->tv_sec && t.tv_nsec >= deadline->tv_nsec);
}

void lwk_part_clear_start(struct lwk_part_clear *c)
{
	clock_gettime(CLOCK_MONOTONIC, &c->deadline);
	c->deadline.tv_sec += LWK_CLEAR_WAIT_S;
	c->why[0] = '\0';
}

int lwk_part_clear_tree(const struct lwk_node_roots *r, const char *hier, const char *controller,
			const char *path, struct lwk_part_clear *c)
{
	char dir[1200];
	int killed = 0, err = 0;

	snprintf(dir, sizeof(dir), "%s%s", hier, path);
	/* A killed process stays listed in the cgroup while it exits, and
	 * rmdir fails with EBUSY until it is gone, though no process is
	 * left to signal.  The bound is in time, one for the whole
	 * teardown, not rounds: each round reads the whole tree, which
	 * costs an emulated node tens of milliseconds, and a loaded node's
	 * exits take seconds.  Each tree is tried at least once. */
	do {
		struct timespec t = { 0, 10 * 1000 * 1000 };
		int n = kill_tree(r, hier, controller, path);

		if (n > 0 && !killed)
			killed = n;
		if (n <= 0) {
			if (rmdir_tree(dir, 0) == 0)
				return killed;
			err = errno;
			if (err != EBUSY)
				break;
		}
		nanosleep(&t, NULL);
	} while (!past(&c->deadline));
	say_what_holds(r, dir, err ? err : EBUSY, c);
	return -1;
}

/* The own cgroups the state records, removed deepest first. */
int lwk_part_remove_own_cgroups(const struct lwk_node_roots *r, const char *state, char *log,
				size_t loglen, struct lwk_part_remains *k, struct lwk_part_clear *c)
{
	const char *line = state;
	char paths[16][800];
	int n = 0, rc = 0;

	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len > 7 && len < 7 + sizeof(paths[0]) && !strncmp(line, "cgroup ", 7) && n < 16) {
			memcpy(paths[n], line + 7, len - 7);
			paths[n++][len - 7] = '\0';
		}
		line += len + (nl ? 1 : 0);
	}
	for (int i = n - 1; i >= 0; i--) {
		struct lwk_cgroup cg;
		char err[512];

		/* Only what this plugin makes: never a cgroup of Slurm's. */
		if (strncmp(paths[i], "/slurm-lwk/", 11) ||
		    lwk_cgroup_init(&cg, r->cgroup_root, paths[i], err, sizeof(err)))
			continue;
		{
			char hier[400];

			snprintf(hier, sizeof(hier), "%s%s", cg.root,
				 cg.version == LWK_CGROUP_V1 ? "/cpuset" : "");
			if (lwk_part_clear_tree(r, hier,
						cg.version == LWK_CGROUP_V1 ? "cpuset" : NULL,
						cg.path, c) > 0)
				lwk_log_append(log, loglen, "killed what was left in %s", cg.path);
		}
		if (lwk_cgroup_remove(&cg, err, sizeof(err))) {
			lwk_log_append(log, loglen, "%s", err);
			lwk_part_keep(k, true, "cgroup %s\n", paths[i]);
			rc = -1;
		}
	}
	if (n) {
		/* The shared levels go with their last job. */
		char parents[2][300], err[512];
		struct lwk_cgroup cg;

		snprintf(parents[0], sizeof(parents[0]), "/slurm-lwk/%s", r->node);
		snprintf(parents[1], sizeof(parents[1]), "/slurm-lwk");
		for (int i = 0; i < 2; i++)
			if (lwk_cgroup_init(&cg, r->cgroup_root, parents[i], err, sizeof(err)) == 0)
				lwk_cgroup_remove(&cg, err, sizeof(err));
	}
	return rc;
}

/* The plugin's own cgroup for a role, made (each level) and recorded. */
int lwk_part_own_cgroup(const struct lwk_node_roots *r, const struct lwk_part *p,
			enum lwk_part_role role, struct lwk_cgroup *cg, char *err, size_t errlen)
{
	char levels[3][600], *state, rec[700];
	int fd, rc = 0;

	snprintf(levels[0], sizeof(levels[0]), "/slurm-lwk");
	snprintf(levels[1], sizeof(levels[1]), "/slurm-lwk/%s", r->node);
	snprintf(levels[2], sizeof(levels[2]), "/slurm-lwk/%s/job_%" PRIu32, r->node, p->job);
	snprintf(rec, sizeof(rec), "%s/%s", levels[2], role == LWK_ROLE_APP ? "app" : "delegation");
	fd = lwk_part_lock_job(r, p->job, false, err, errlen);
	if (fd < 0)
		return ERR("lwk: job %" PRIu32 " has no --lwk state on %s", p->job, r->node);
	/* Recorded before made (once each; the teardown removes them,
	 * deepest first, and tolerates what was never made). */
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, p->job, state, STATE_MAX))
		rc = ERR("lwk: cannot read the state of job %" PRIu32, p->job);
	for (int i = 0; !rc && i < 2; i++) {
		char line[720];

		snprintf(line, sizeof(line), "cgroup %s\n", i ? rec : levels[2]);
		if (!strstr(state, line) && lwk_part_append_state(r, p->job, line, err, errlen))
			rc = -1;
	}
	free(state);
	for (int i = 0; i < 3 && !rc; i++)
		if (lwk_cgroup_init(cg, r->cgroup_root, levels[i], err, errlen) ||
		    lwk_cgroup_create(cg, err, errlen))
			rc = -1;
	if (!rc && (lwk_cgroup_init(cg, r->cgroup_root, rec, err, errlen) ||
		    lwk_cgroup_create(cg, err, errlen)))
		rc = -1;
	close(fd);
	return rc;
}
