/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tasks of an --lwk job placed in their role: in Slurm's cgroup of
 * the step, else in the plugin's own.  See lwk/part.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lwk/part_int.h"
#include "node/procfs.h"

/* The process's cgroup path in the unified hierarchy (v2) or the cpuset
 * one (v1), from /proc/<pid>/cgroup text. */
static int task_cgroup_path(const char *proc_cgroup, enum lwk_cgroup_version v, char *out,
			    size_t len)
{
	for (const char *line = proc_cgroup; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[1024], padded[300], *ctrls, *path;

		if (n < sizeof(l)) {
			memcpy(l, line, n);
			l[n] = '\0';
		} else {
			l[0] = '\0';
		}
		line += n + (nl ? 1 : 0);
		/* "<id>:<controllers>:<path>" */
		ctrls = strchr(l, ':');
		path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		*ctrls++ = '\0';
		snprintf(padded, sizeof(padded), ",%s,", ctrls);
		if (v == LWK_CGROUP_V2 ? strcmp(l, "0") || ctrls[0] : !strstr(padded, ",cpuset,"))
			continue;
		if (path[0] != '/' || strlen(path) >= len)
			return -1;
		snprintf(out, len, "%s", path);
		return 0;
	}
	return -1;
}

/*
 * Slurm's cgroup of the step that holds a task at path (v2:
 * .../<job>/step_<s>/user/task_<t>, v1: .../job_<id>/step_<s>, where
 * <job> is job_<id>, or the job's SLUID on 26.05: lwk_cgroup_job_level):
 * the step's "user" cgroup on v2 (the parent of every task leaf, which
 * Slurm gave the step's CPUs), step_<s> itself on v1.  -1 when the path
 * is not inside this job's cgroup (Slurm made none).
 */
static int slurm_step_cgroup(const char *path, uint32_t job, enum lwk_cgroup_version v, char *out,
			     size_t len, size_t *job_len)
{
	size_t start, at = lwk_cgroup_job_level(path, strlen(path), job, NULL, &start);
	const char *step, *end;

	if (!at || path[at] != '/')
		return -1;
	*job_len = at; /* up to and with the job level */
	step = path + at + 1;
	if (strncmp(step, "step_", 5))
		return -1;
	end = strchr(step, '/');
	if (!end)
		end = step + strlen(step);
	if ((size_t)(end - path) + 6 >= len)
		return -1;
	snprintf(out, len, "%.*s%s", (int)(end - path), path, v == LWK_CGROUP_V2 ? "/user" : "");
	return 0;
}

/* Does any line of proc_cgroup put the process in the job's cgroups: a
 * job level, or any SLUID-named component (no step below it: still
 * Slurm's, never to be left for the plugin's own)? */
static bool in_job_cgroups(const char *proc_cgroup, uint32_t job)
{
	char ctl[256], path[4096];
	const char *cursor = proc_cgroup;
	size_t start;

	while (lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path))) {
		if (lwk_cgroup_job_level(path, strlen(path), job, NULL, &start))
			return true;
		for (char *c = path, *e; c && *c; c = e ? e + 1 : NULL) {
			e = strchr(c, '/');
			if (lwk_sluid_shaped(c, e ? (size_t)(e - c) : strlen(c)))
				return true;
		}
	}
	return false;
}

static int no_hierarchy(const struct lwk_node_roots *r, char *err, size_t errlen)
{
	return ERR("lwk: --lwk: no cgroup v2 or v1 cpuset hierarchy under %s on %s", r->cgroup_root,
		   r->node);
}


/*
 * v2: the cgroup the tasks go to (cg, a path under the root; "" for the
 * plugin's own tree, made from the root down) gets CPUs of its own only
 * if its parent was delegated the cpuset controller.  Slurm enables in
 * its job and step cgroups every controller its scope has; without
 * cpuset there (systemd before 244, a container's cgroup without it),
 * the first write of CPUs would fail, naming only the file.
 */
static int undelegated(const struct lwk_node_roots *r, enum lwk_cgroup_version v, const char *cg,
		       char *err, size_t errlen)
{
	char dir[1100], why[1300];
	const char *slash = strrchr(cg, '/');

	if (v != LWK_CGROUP_V2)
		return 0;
	snprintf(dir, sizeof(dir), "%s%.*s", r->cgroup_root, slash ? (int)(slash - cg) : 0, cg);
	if (!lwk_cgroup_lacks_cpuset(dir, why, sizeof(why)))
		return 0;
	return ERR("lwk: --lwk: %s on %s, so the job cannot have CPUs of its own; Slurm's cgroups "
		   "need the cpuset controller delegated (systemd 244 or later gives it to Slurm's "
		   "scope; in a container, the container's cgroup must have it)", why, r->node);
}

/* A step's CPUs and memory nodes.  On v1 Slurm 22.05 makes the step's
 * directory the job user's, who may make cpusets below it, and a parent
 * narrower than a child is refused (EBUSY): the whole subtree is
 * narrowed.  On v2 a child's CPUs are within its parent's whatever it
 * asks for. */
static int set_cpus(const struct lwk_cgroup *cg, const struct lwk_cpuset *cpus, char *err,
		    size_t errlen)
{
	return (cg->version == LWK_CGROUP_V1 ? lwk_cgroup_set_cpus_tree
					      : lwk_cgroup_set_cpus)(cg, cpus, err, errlen);
}

static int set_mems(const struct lwk_cgroup *cg, const struct lwk_cpuset *mems, char *err,
		    size_t errlen)
{
	return (cg->version == LWK_CGROUP_V1 ? lwk_cgroup_set_mems_tree
					      : lwk_cgroup_set_mems)(cg, mems, err, errlen);
}

/*
 * Where the tasks of job go, judged from the cgroups of a process of
 * the step (proc_cgroup): 1 Slurm's cgroup of the step (path in step,
 * job_len long up to and with the job's part); 0 the plugin's own
 * cgroups (Slurm made none); -1 nowhere, with the reason.  One decision
 * for lwk_part_place (each task) and lwk_part_placeable (before them).
 */
static int placement_of(const struct lwk_node_roots *r, uint32_t job, enum lwk_cgroup_version v,
			const char *proc_cgroup, char *step, size_t steplen, size_t *job_len,
			char *err, size_t errlen)
{
	char path[768];

	if (v == LWK_CGROUP_NONE)
		return no_hierarchy(r, err, errlen);
	if (task_cgroup_path(proc_cgroup, v, path, sizeof(path)) == 0 &&
	    slurm_step_cgroup(path, job, v, step, steplen, job_len) == 0)
		return undelegated(r, v, step, err, errlen) ? -1 : 1;
	if (in_job_cgroups(proc_cgroup, job))
		/* Slurm holds the task in cgroups of the job, but not in a
		 * cpuset one (v1 without ConstrainCores): moving it out would
		 * take it from Slurm's other limits. */
		return ERR("lwk: --lwk: Slurm's cgroups of job %" PRIu32 " on %s have no cpuset of "
			   "the step (cgroup.conf ConstrainCores=no?); --lwk needs ConstrainCores=yes "
			   "there, or no Slurm cgroups at all", job, r->node);
	return undelegated(r, v, "", err, errlen) ? -1 : 0;
}

int lwk_part_placeable(const struct lwk_node_roots *r, uint32_t job, const char *proc_cgroup,
		       char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char step[768];
	size_t job_len;

	if (!proc_cgroup)
		return v == LWK_CGROUP_NONE ? no_hierarchy(r, err, errlen) : 0;
	return placement_of(r, job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen) < 0
		       ? -1
		       : 0;
}

int lwk_part_place(const struct lwk_node_roots *r, const struct lwk_part *p,
		   enum lwk_part_role role, const char *proc_cgroup, pid_t pid, char *where,
		   size_t wherelen, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	struct lwk_cgroup cg;
	char step[768];
	size_t job_len = 0;
	int at;

	if (v == LWK_CGROUP_NONE)
		return no_hierarchy(r, err, errlen);
	/* McKernel runs the job's processes on the App cores itself: every
	 * task here is an mcexec or a helper, all Linux-side. */
	if (!strcmp(p->backend, "mckernel"))
		role = LWK_ROLE_DELEGATION;
	if (!proc_cgroup[0])
		return ERR("lwk: --lwk: cannot read the cgroups of task %d", (int)pid);
	at = placement_of(r, p->job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen);
	if (at < 0)
		return -1;
	if (at == 1) {
		/* Slurm's cgroup of the step: Slurm keeps tracking,
		 * signalling and removing it. */
		char line[800];

		if (lwk_cgroup_init(&cg, r->cgroup_root, step, err, errlen) ||
		    lwk_cgroup_enable(&cg, err, errlen))
			return -1;
		/* The job's cgroup, for the teardown: what a killed
		 * slurmstepd leaves running there is killed with it. */
		snprintf(line, sizeof(line), "jobcg %.*s\n", (int)job_len, step);
		if (lwk_part_record_once(r, p->job, line, err, errlen))
			return -1;
	} else if (lwk_part_own_cgroup(r, p, role, &cg, err, errlen) ||
		   lwk_cgroup_attach(&cg, pid, err, errlen)) {
		return -1;
	}
	snprintf(where, wherelen, "%s", cg.path);
	if (role == LWK_ROLE_DELEGATION) {
		/* v1: Slurm makes a memory cgroup of the step only with
		 * ConstrainRAMSpace, a cpu one never; a limit without its
		 * cgroup is said, not invented elsewhere. */
		bool mem = lwk_cgroup_has(&cg, "memory"), cpu = lwk_cgroup_has(&cg, "cpu");

		if (set_cpus(&cg, &p->plan.os_cpus, err, errlen) ||
		    (mem && lwk_cgroup_set_memory_max(&cg, p->plan.deleg_mem, err, errlen)) ||
		    (cpu && lwk_cgroup_set_cpu_quota(&cg, p->plan.deleg_quota_us,
						     p->plan.deleg_period_us, err, errlen)))
			return -1;
		if (!mem || !cpu)
			snprintf(where + strlen(where), wherelen - strlen(where),
				 " (v1: no %s%s%s cgroup of the step: that limit is not set)",
				 mem ? "" : "memory", !mem && !cpu ? " or " : "", cpu ? "" : "cpu");
		return 0;
	}
	/* The partition, where the kernel can make one, comes after: in
	 * each task as it starts (lwk_part_isolate_task). */
	if (set_mems(&cg, &p->plan.app_nodes, err, errlen) ||
	    set_cpus(&cg, &p->plan.app_cpus, err, errlen))
		return -1;
	return 0;
}

int lwk_part_isolate_task(const struct lwk_node_roots *r, const struct lwk_part *p, int mode,
			  const char *proc_cgroup, char *kind, size_t kindlen, char *why,
			  size_t whylen, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char step[768], own[700];
	size_t job_len;
	int at;

	if (v == LWK_CGROUP_NONE)
		return no_hierarchy(r, err, errlen);
	at = placement_of(r, p->job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen);
	if (at < 0)
		return -1;
	/* Slurm made no cgroups: the plugin's own App cgroup, where the
	 * placement moved the task. */
	snprintf(own, sizeof(own), "/slurm-lwk/%s/job_%" PRIu32 "/app", r->node, p->job);
	if (at == 0)
		return lwk_part_isolate(r, p, own, mode, kind, kindlen, why, whylen, err, errlen);
	return lwk_part_isolate(r, p, step, mode, kind, kindlen, why, whylen, err, errlen);
}

int lwk_part_isolation_refused(const struct lwk_node_roots *r, const struct lwk_part *p, int mode,
			       const char *proc_cgroup, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char step[768], job[768], own[800];
	size_t job_len = 0;
	int at;

	if (v == LWK_CGROUP_NONE || !strcmp(p->backend, "mckernel"))
		return 0;
	at = placement_of(r, p->job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen);
	if (at < 0)
		return 0; /* placement refuses it, with its own words */
	if (at == 1) {
		snprintf(job, sizeof(job), "%.*s", (int)job_len, step);
		return lwk_part_isolation_judge(r, p, job, step, mode, err, errlen);
	}
	snprintf(job, sizeof(job), "/slurm-lwk/%s/job_%" PRIu32, r->node, p->job);
	snprintf(own, sizeof(own), "%s/app", job);
	return lwk_part_isolation_judge(r, p, job, own, mode, err, errlen);
}
