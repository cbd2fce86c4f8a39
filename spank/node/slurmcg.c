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
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node/cgroup.h"
#include "node/procfs.h"

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
static int clear(const char *cgroup_root, const char *dir, bool v1)
{
	char hier[PATH_MAX], ctrl[64] = "";
	const char *path = dir + strlen(cgroup_root);
	int n;

	/* v1: <root>/<controller>/slurm..., v2: <root>/<slice>/<scope>/... */
	if (v1) {
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

int lwk_slurm_job_cgroups_remove(const char *cgroup_root, uint32_t job, const char *sluid,
				 char *log, size_t loglen)
{
	/* Slurm's layouts: v1 under each controller's slurm (or
	 * slurm_<node> with several slurmd on a host); v2 under slurmd's
	 * scope unit in its slice (_set_int_cg_ns in
	 * src/plugins/cgroup/v2/cgroup_v2.c: <slice>/[<node>_]slurmstepd.scope,
	 * the slice system.slice or CgroupSlice from 25.11), the job's
	 * directory job_<id>, or from 26.05 its SLUID (cgroup_p_step_create),
	 * unless CgroupJobIdPaths=yes. */
	int removed = 0;

	for (int layout = 0; layout < 3; layout++) {
		char pattern[PATH_MAX];
		glob_t g;
		int n = layout == 0   ? snprintf(pattern, sizeof(pattern), "%s/*/slurm*/uid_*/job_%" PRIu32,
						 cgroup_root, job)
			: layout == 1 ? snprintf(pattern, sizeof(pattern), "%s/*/*slurmstepd.scope/job_%" PRIu32,
						 cgroup_root, job)
				      : snprintf(pattern, sizeof(pattern), "%s/*/*slurmstepd.scope/%s",
						 cgroup_root, sluid ? sluid : "");

		if (n < 0 || n >= (int)sizeof(pattern) ||
		    (layout == 2 && (!sluid || !lwk_sluid_shaped(sluid, strlen(sluid)))))
			continue;
		if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			if (clear(cgroup_root, g.gl_pathv[j], layout == 0) == 0)
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
