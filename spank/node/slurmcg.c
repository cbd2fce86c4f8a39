// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * slurmcg.c: the job cgroups Slurm leaves when its slurmstepd is killed.
 * slurmstepd removes its step and job cgroups as it exits; SIGKILLed, it
 * cannot, and the job's empty cgroups stay until the node reboots (a
 * later job with the same id would even start in them on v1).  The
 * plugin narrowed their cpusets (--lwk, --contention-aware), and a site
 * expects nothing of a job left after it: the epilog removes them.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node/cgroup.h"

#include "node/statedir.h"
#include "node/slurmcg.h"

/* Remove dir and the cgroups below it, deepest first.  -1 when dir is
 * still there (a process in it, or a tree deeper than Slurm makes). */
static int remove_tree(const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = depth <= 6 ? opendir(dir) : NULL;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
			    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
				remove_tree(path, depth + 1);
		closedir(d);
	}
	return rmdir(dir) && errno != ENOENT ? -1 : 0;
}

/* Kill what the job left in the cgroup at dir (its slurmstepd would
 * have: nobody else will), up to ~2 s for it to go, then remove it. */
static int clear(const char *cgroup_root, const char *dir)
{
	char hier[PATH_MAX], ctrl[64] = "";
	const char *path = dir + strlen(cgroup_root);
	int n;

	/* v1: <root>/<controller>/slurm..., v2: <root>/system.slice/... */
	if (strncmp(path, "/system.slice/", 14)) {
		const char *slash = strchr(path + 1, '/');

		if (!slash || (size_t)(slash - path - 1) >= sizeof(ctrl))
			return -1;
		memcpy(ctrl, path + 1, (size_t)(slash - path - 1));
		ctrl[slash - path - 1] = '\0';
		path = slash;
	}
	snprintf(hier, sizeof(hier), "%.*s", (int)(path - dir), dir);
	/* A killed process stays listed while it exits: rmdir is EBUSY
	 * until it is reaped, so try again for ~2 s. */
	for (int round = 0; round < 200; round++) {
		struct timespec t = { 0, 10 * 1000 * 1000 };

		n = lwk_cgroup_kill_tree(hier, ctrl[0] ? ctrl : NULL, path, "/proc");
		if (n <= 0) {
			if (remove_tree(dir, 0) == 0)
				return 0;
			if (errno != EBUSY)
				return -1;
		}
		nanosleep(&t, NULL);
	}
	return -1;
}

int lwk_slurm_job_cgroups_remove(const char *cgroup_root, uint32_t job, char *log, size_t loglen)
{
	/* Slurm's layouts (22.05 to 25.11): v1 under each controller's
	 * slurm (or slurm_<node> with several slurmd on a host), v2 under
	 * slurmd's scope unit.  26.05's SLUID-named job cgroups are not
	 * matched: nothing is removed there. */
	int removed = 0;

	for (int layout = 0; layout < 2; layout++) {
		char pattern[PATH_MAX];
		glob_t g;
		int n = layout == 0
				? snprintf(pattern, sizeof(pattern), "%s/*/slurm*/uid_*/job_%" PRIu32,
					   cgroup_root, job)
				: snprintf(pattern, sizeof(pattern),
					   "%s/system.slice/*slurmstepd.scope/job_%" PRIu32, cgroup_root,
					   job);

		if (n < 0 || n >= (int)sizeof(pattern))
			continue;
		if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			if (clear(cgroup_root, g.gl_pathv[j]) == 0)
				removed++;
			else
				lwk_log_append(log, loglen, "Slurm's cgroup %s of job %" PRIu32
					       " still holds processes after SIGKILL: left", g.gl_pathv[j],
					       job);
		}
		globfree(&g);
	}
	return removed;
}
