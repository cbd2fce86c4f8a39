/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whose node: does another job use it (lwk_node_other_job), judged under
 * the node lock before a setup from the jobs' state directories (what
 * one holds: lwk_part_state_holds), die split records and cgroups.  See
 * lwk/part.h. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lwk/part.h"

static bool is_dir_at(int dfd, const struct dirent *e)
{
	struct stat st;

	if (e->d_type == DT_DIR)
		return true;
	if (e->d_type != DT_UNKNOWN)
		return false;
	return fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Another job's state directory: what it holds, or NULL when it holds
 * nothing but a setup's lock (a job waiting for the node lock, which
 * will find ours). */
const char *lwk_part_state_holds(const char *dir)
{
	const char *what = NULL;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "lwk.lock"))
			continue;
		if (!strcmp(e->d_name, "lwk.state")) {
			what = "has a --lwk partition there";
			break;
		}
		if (!strncmp(e->d_name, "syncmon.", 8))
			what = "has a --sync-monitor sampler there";
		else if (!what)
			what = "has slurm-lwk state there";
	}
	closedir(d);
	return what;
}

/* Are there processes in cgroup dir or below it (depth levels)?  A job
 * cgroup Slurm left empty is no job on the node. */
static bool cgroup_busy(const char *dir, int depth)
{
	char path[4200];
	struct dirent *e;
	bool busy = false;
	FILE *f;
	DIR *d;

	/* A path that does not fit cannot be judged: busy, the safe side
	 * (an idle node refused beats two partitions on one node). */
	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return true;
	f = fopen(path, "re");
	if (f) {
		busy = fgetc(f) != EOF;
		fclose(f);
	}
	if (busy || depth == 0 || !(d = opendir(dir)))
		return busy;
	while (!busy && (e = readdir(d)))
		if (e->d_name[0] != '.' && is_dir_at(dirfd(d), e)) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >=
			    sizeof(path))
				busy = true;
			else
				busy = cgroup_busy(path, depth - 1);
		}
	closedir(d);
	return busy;
}

/* Is cgroup dir a job's: named job_<n> (Slurm up to 25.11), or holding
 * a step_* cgroup (whatever the job's name, as with 26.05's SLUIDs)? */
static bool job_cgroup(const char *dir, const char *name)
{
	struct dirent *e;
	bool job = lwk_cgroup_numbered(name, "job_");
	DIR *d;

	if (job || !(d = opendir(dir)))
		return job;
	while (!job && (e = readdir(d)))
		job = !strncmp(e->d_name, "step_", 5) && is_dir_at(dirfd(d), e);
	closedir(d);
	return job;
}

/* The job id of job cgroup dir named otherwise than job_<n> (26.05: by
 * SLUID), from the title of a slurmstepd in one of its steps' "slurm"
 * cgroups ("slurmstepd: [<id>.<step>]"), read through proc: users know
 * their jobs by id.  0 with id, -1 when no slurmstepd says. */
static int stepd_job_id(const char *proc, const char *dir, char *id, size_t idlen)
{
	char path[4400], text[64];
	struct dirent *e;
	struct stat st;
	int rc = -1;
	DIR *d = opendir(dir);

	while (rc && d && (e = readdir(d))) {
		long pid = 0;
		size_t n;
		FILE *f;

		if (strncmp(e->d_name, "step_", 5) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s/slurm/cgroup.procs", dir,
				     e->d_name) >= sizeof(path) ||
		    !(f = fopen(path, "re")))
			continue;
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
		/* A slurmstepd is root's: a user's process that took the pid
		 * of one that just ended and set that title is not. */
		if (pid <= 0 || (size_t)snprintf(path, sizeof(path), "%s/%ld", proc, pid) >= sizeof(path) ||
		    stat(path, &st) || st.st_uid != 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%ld/cmdline", proc, pid) >= sizeof(path) ||
		    !(f = fopen(path, "re")))
			continue;
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = '\0';
		if (!strncmp(text, "slurmstepd: [", 13) &&
		    (n = strspn(text + 13, "0123456789")) > 0 && n < idlen && text[13 + n] == '.') {
			snprintf(id, idlen, "%.*s", (int)n, text + 13);
			rc = 0;
		}
	}
	if (d)
		closedir(d);
	return rc;
}

/* A busy job cgroup in dir other than ours: 1 with what, else 0. */
static int other_job_cgroup_in(const char *proc, const char *dir, const char *ours, char *what,
			       size_t len)
{
	char path[4400], id[112];
	struct dirent *e;
	int found = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, ours) || !is_dir_at(dirfd(d), e))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path)) {
			/* Cannot be judged: refused (2), never passed over. */
			snprintf(what, len, "cannot judge whether another job runs there: the cgroup "
				 "path %.200s/%.40s... is too long", dir, e->d_name);
			found = 2;
			break;
		}
		/* job_<n> Slurm's name; else the id its slurmstepd gives,
		 * else the cgroup's name as it is. */
		if (job_cgroup(path, e->d_name) && cgroup_busy(path, 3)) {
			if (!strncmp(e->d_name, "job_", 4))
				snprintf(id, sizeof(id), "%s", e->d_name + 4);
			else if (stepd_job_id(proc, path, id, sizeof(id)))
				snprintf(id, sizeof(id), "%.100s", e->d_name);
			snprintf(what, len, "job %s runs there (its cgroup %.200s)", id, path);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/*
 * One line of /proc/self/cgroup ("<id>:<controllers>:<path>"): the
 * directory of the job level in that hierarchy and our name there.  The
 * job level is the component named job_<job>, else the one above the
 * first step_* component.  0, or -1 when the line has no job level.
 */
static int job_level(const struct lwk_node_roots *r, uint32_t job, const char *line, size_t n,
		     char *parent, size_t plen, char *ours, size_t olen)
{
	char l[4096], want[32], *ctrls, *path, *c, *hit = NULL, *end;
	struct stat st;
	int w;

	if (n >= sizeof(l))
		return -2; /* cannot judge: the caller refuses */
	memcpy(l, line, n);
	l[n] = '\0';
	ctrls = strchr(l, ':');
	path = ctrls ? strchr(ctrls + 1, ':') : NULL;
	if (!path)
		return -1;
	*ctrls++ = '\0';
	*path++ = '\0';
	if (path[0] != '/')
		return -1;
	snprintf(want, sizeof(want), "job_%" PRIu32, job);
	for (c = path + 1; *c; c = *end ? end + 1 : end) {
		end = strchr(c, '/');
		if (!end)
			end = c + strlen(c);
		if ((size_t)(end - c) == strlen(want) && !strncmp(c, want, strlen(want))) {
			hit = c;
			break;
		}
		if (!hit && *end == '/' && !strncmp(end + 1, "step_", 5))
			hit = c;
	}
	if (!hit)
		return -1;
	end = strchr(hit, '/');
	if (end)
		*end = '\0';
	snprintf(ours, olen, "%s", hit);
	hit[-1] = '\0'; /* path is now the parent of the job level */
	/* v2 at the root, or in a hybrid's unified mount; v1 by its
	 * controllers' mount (named hierarchies by their name). */
	for (int i = 0; i < 2; i++) {
		if (ctrls[0])
			w = snprintf(parent, plen, "%s/%s%s", r->cgroup_root,
				     strncmp(ctrls, "name=", 5) ? ctrls : ctrls + 5, path);
		else
			w = snprintf(parent, plen, "%s%s%s", r->cgroup_root, i ? "/unified" : "", path);
		if (w > 0 && (size_t)w < plen) {
			char mine[4600];

			snprintf(mine, sizeof(mine), "%s/%s", parent, ours);
			if (stat(mine, &st) == 0 && S_ISDIR(st.st_mode))
				return 0;
		}
		if (ctrls[0])
			break;
	}
	return -1;
}

/* 0 none, 1 another job (what), 2 cannot judge (what says why). */
static int other_job_cgroup(const struct lwk_node_roots *r, uint32_t job, char *what, size_t len)
{
	char path[4200], text[8192], parent[4200], ours[256], more;
	size_t n = 0;
	int fd, rc;
	ssize_t got;

	snprintf(path, sizeof(path), "%s/self/cgroup", r->proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (n < sizeof(text) - 1 && (got = read(fd, text + n, sizeof(text) - 1 - n)) > 0)
		n += (size_t)got;
	got = n == sizeof(text) - 1 ? read(fd, &more, 1) : 0;
	close(fd);
	text[n] = '\0';
	/* A hierarchy not read is one not looked at: refuse, never pass. */
	if (got > 0)
		return snprintf(what, len, "cannot judge whether another job runs there: "
				"%s is longer than %zu bytes", path, sizeof(text) - 1), 2;
	for (const char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
		const char *base;
		int jl;

		nl = strchr(line, '\n');
		jl = job_level(r, job, line, nl ? (size_t)(nl - line) : strlen(line), parent,
			       sizeof(parent), ours, sizeof(ours));
		if (jl == -2)
			return snprintf(what, len, "cannot judge whether another job runs there: a "
					"line of %s is too long", path), 2;
		if (jl)
			continue;
		if ((rc = other_job_cgroup_in(r->proc, parent, ours, what, len)))
			return rc;
		/* v1 keeps each user's jobs under uid_<n>: the other users'
		 * jobs are cousins. */
		base = strrchr(parent, '/');
		if (base && lwk_cgroup_numbered(base + 1, "uid_")) {
			char up[4200], mine[64], cousin[4500];
			struct dirent *e;
			DIR *d;

			snprintf(mine, sizeof(mine), "%s", base + 1);
			snprintf(up, sizeof(up), "%.*s", (int)(base - parent), parent);
			d = opendir(up);
			while (d && (e = readdir(d))) {
				if (!lwk_cgroup_numbered(e->d_name, "uid_") ||
				    !strcmp(e->d_name, mine))
					continue;
				snprintf(cousin, sizeof(cousin), "%s/%s", up, e->d_name);
				if ((rc = other_job_cgroup_in(r->proc, cousin, ours, what, len))) {
					closedir(d);
					return rc;
				}
			}
			if (d)
				closedir(d);
		}
	}
	return 0;
}

int lwk_node_other_job(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		       char *what, size_t len)
{
	char dir[4200];
	uint32_t *jobs = malloc(4096 * sizeof(*jobs));
	int n = jobs ? lwk_state_jobs(r->state_root, r->node, jobs, 4096) : 0;
	struct dirent *e;
	DIR *d;

	for (int i = 0; i < n; i++) {
		const char *holds;

		if (jobs[i] == job)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s/%" PRIu32, r->state_root, r->node, jobs[i]);
		if ((holds = lwk_part_state_holds(dir))) {
			int gone = !alive(jobs[i]);

			if (gone)
				snprintf(what, len, "job %" PRIu32 " is gone and left what could not "
					 "be undone (%s/; lwk-sweep(8) tries again)", jobs[i], dir);
			else
				snprintf(what, len, "job %" PRIu32 " %s", jobs[i], holds);
			free(jobs);
			return gone ? 2 : 1;
		}
	}
	free(jobs);
	lwk_state_casas_dir(r->state_root, r->node, dir, sizeof(dir));
	if ((d = opendir(dir))) {
		while ((e = readdir(d)))
			if (lwk_cgroup_numbered(e->d_name, "") && strtoul(e->d_name, NULL, 10) != job) {
				uint32_t other = (uint32_t)strtoul(e->d_name, NULL, 10);
				int gone = !alive(other);

				if (gone)
					snprintf(what, len, "job %.20s is gone and left its "
						 "--contention-aware record %s/%.20s", e->d_name, dir,
						 e->d_name);
				else
					snprintf(what, len, "job %.20s shares it by dies under "
						 "--contention-aware", e->d_name);
				closedir(d);
				return gone ? 2 : 1;
			}
		closedir(d);
	}
	return other_job_cgroup(r, job, what, len);
}
