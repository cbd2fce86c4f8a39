/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: the job's cgroup.  Where it is (from
 * /proc/<pid>/cgroup), and the CPUs and memory nodes written on its tree;
 * memory under its own lock (.mems.lock), after the node lock.
 */
#define _GNU_SOURCE
#include "casas/internal.h"
#include "node/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* ---- where the job's cgroup is --------------------------------------------- */

int lwk_casas_job_cgroup(const char *proc_cgroup, uint32_t job, char *path, size_t len)
{
	const char *p = proc_cgroup;
	int best = 0; /* 3: v2 or v1 cpuset line; 1: another v1 line */
	size_t start;

	while (*p) {
		size_t n = strcspn(p, "\n"), plen;
		const char *c1 = memchr(p, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - p)) : NULL;

		if (c2 && (plen = lwk_cgroup_job_level(c2 + 1, (size_t)(p + n - c2 - 1), job, NULL, &start)) &&
		    plen < len) {
			/* v2 "0::/path"; v1 "N:ctrl,ctrl:/path".  Slurm uses one
			 * path in every v1 hierarchy, and slurmstepd may not be in
			 * the cpuset one yet when the step starts: any v1 line
			 * will do, the cpuset one is best. */
			bool v2 = c1 == p + 1 && p[0] == '0' && c2 == c1 + 1;
			bool cpuset = false;
			int rank;

			for (const char *c = c1 + 1; c < c2;) {
				size_t w = strcspn(c, ",:");

				if (w == 6 && !strncmp(c, "cpuset", 6))
					cpuset = true;
				c += w + 1;
			}
			rank = v2 || cpuset ? 3 : 1;
			if (rank > best) {
				memcpy(path, c2 + 1, plen);
				path[plen] = '\0';
				best = rank;
			}
		}
		p += n + (p[n] == '\n');
	}
	return best ? 0 : -1;
}

/* ---- what is written on it ------------------------------------------------ */

/* The job's CPUs (mems false) or memory nodes on its cgroup tree. */
int lwk_casas_apply(const struct lwk_node_roots *r, const struct lwk_casas_record *rec, bool mems,
		    const struct lwk_cpuset *set, char *err, size_t errlen)
{
	struct lwk_cgroup cg;

	if (!rec->cgroup[0])
		return ERR("lwk: job %u has no cgroup to place", rec->job);
	if (lwk_cgroup_init(&cg, r->cgroup_root, rec->cgroup, err, errlen))
		return -1;
	return (mems ? lwk_cgroup_set_mems_tree : lwk_cgroup_set_cpus_tree)(&cg, set, err, errlen);
}

bool lwk_casas_cgroup_made(const struct lwk_node_roots *r, const struct lwk_casas_record *rec)
{
	struct lwk_cgroup cg;
	char dir[1100], file[1200], e[256];

	if (!rec->cgroup[0] || lwk_cgroup_init(&cg, r->cgroup_root, rec->cgroup, e, sizeof(e)))
		return true; /* not for this to judge: the write says why */
	lwk_cgroup_dir(&cg, "cpuset", dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/cpuset.cpus", dir);
	return access(file, F_OK) == 0;
}

/* Step's tree below the job's cgroup job gets cpus, if Slurm made it
 * (it makes it as the step starts, with CPUs of the step within the
 * job level's).  0 or -1 with err. */
static int set_step(const struct lwk_cgroup *job, const char *step, const struct lwk_cpuset *cpus,
		    char *err, size_t errlen)
{
	struct lwk_cgroup cg = *job;
	char dir[1100];

	if ((size_t)snprintf(cg.path, sizeof(cg.path), "%s/%s", job->path, step) >= sizeof(cg.path))
		return ERR("lwk: the path of %s below %s is too long", step, job->path);
	lwk_cgroup_dir(&cg, "cpuset", dir, sizeof(dir));
	if (access(dir, F_OK))
		return 0;
	return lwk_cgroup_set_cpus_tree(&cg, cpus, err, errlen);
}

/* Is step one of rec's launching steps? */
static bool launching(const struct lwk_casas_record *rec, const char *step)
{
	for (unsigned int i = 0; i < rec->nlaunchers; i++)
		if (!strcmp(rec->launchers[i].step, step))
			return true;
	return false;
}

/* The job's steps that are not launching get others (the decision). */
static int set_other_steps(const struct lwk_cgroup *job, const struct lwk_casas_record *rec,
			   const struct lwk_cpuset *others, char *err, size_t errlen)
{
	char dir[1100];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	lwk_cgroup_dir(job, "cpuset", dir, sizeof(dir));
	if (!(d = opendir(dir)))
		return 0;
	while (rc == 0 && (e = readdir(d)))
		if (e->d_type == DT_DIR && lwk_casas_step_name_ok(e->d_name) &&
		    !launching(rec, e->d_name))
			rc = set_step(job, e->d_name, others, err, errlen);
	closedir(d);
	return rc;
}

int lwk_casas_apply_launching(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			      const struct lwk_cpuset *others, char *err, size_t errlen)
{
	struct lwk_cgroup job;

	/* Not made yet (v1: Slurm makes the job's cpuset as its first step
	 * starts, with all of the job's CPUs): nothing to widen. */
	if (!lwk_casas_cgroup_made(r, rec))
		return 0;
	for (unsigned int i = 0; i < rec->nlaunchers; i++)
		if (!lwk_casas_step_name_ok(rec->launchers[i].step))
			return lwk_casas_apply(r, rec, false, &rec->allowed_cpus, err, errlen);
	if (!rec->cgroup[0])
		return ERR("lwk: job %u has no cgroup to place", rec->job);
	/* The job level first: a step's CPUs must be within its parent's. */
	if (lwk_cgroup_init(&job, r->cgroup_root, rec->cgroup, err, errlen) ||
	    lwk_cgroup_set_cpus(&job, &rec->allowed_cpus, err, errlen))
		return -1;
	for (unsigned int i = 0; i < rec->nlaunchers; i++)
		if (set_step(&job, rec->launchers[i].step, &rec->allowed_cpus, err, errlen))
			return -1;
	return others && lwk_cpuset_count(others) ? set_other_steps(&job, rec, others, err, errlen)
						   : 0;
}

int lwk_casas_narrow_step(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			  const char *step, char *err, size_t errlen)
{
	struct lwk_cgroup job;

	if (!lwk_casas_step_name_ok(step) || !lwk_cpuset_count(&rec->cpus))
		return 0;
	if (lwk_cgroup_init(&job, r->cgroup_root, rec->cgroup, err, errlen))
		return -1;
	return set_step(&job, step, &rec->cpus, err, errlen);
}

/* Every cpuset.mems write holds it (lwk_casas_bind_memory,
 * lwk_casas_reapply): two writers could otherwise leave an older
 * decision's nodes last.  The fd, or -1. */
int lwk_casas_mems_lock(const struct lwk_node_roots *r)
{
	char path[4200];
	int fd;

	lwk_casas_dir(r, path, sizeof(path));
	strncat(path, "/.mems.lock", sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	return fd;
}

/*
 * Memory follows the CPUs, after the node lock is released: a new
 * cpuset.mems on v2 migrates the job's memory and waits for every CPU,
 * which a busy node can make take long (tens of seconds measured on the
 * TCG guests); the split itself must not wait for it.  Under its own
 * lock, each job's cgroup gets the memory nodes its record has now (a
 * later decision's, if one came meanwhile).
 */
void lwk_casas_bind_memory(const struct lwk_node_roots *r, char *log, size_t loglen)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	char err[512];
	int fd = lwk_casas_mems_lock(r), n;

	if (fd < 0)
		return;
	n = lwk_casas_record_jobs(r, ids, LWK_CASAS_MAX_JOBS);
	for (int i = 0; i < n; i++) {
		struct lwk_casas_record rec;

		if (lwk_casas_load(r, ids[i], &rec) != 1 || !strcmp(rec.status, "off") ||
		    !lwk_cpuset_count(&rec.mems))
			continue;
		if (lwk_casas_apply(r, &rec, true, &rec.mems, err, sizeof(err)))
			say(log, loglen, "lwk: contention-aware: job %u: memory nodes not bound: %s",
			    rec.job, err);
	}
	close(fd);
}

/* ---- a job that cannot be narrowed --------------------------------------- */

bool lwk_casas_take_back(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			 double deadline, char *log, size_t loglen)
{
	struct lwk_take_back tb;
	struct lwk_cgroup cg;
	char e[256];

	if (!rec->cgroup[0] || lwk_cgroup_init(&cg, r->cgroup_root, rec->cgroup, e, sizeof(e)) ||
	    cg.version != LWK_CGROUP_V1)
		return false;
	if (!lwk_cgroup_take_back(&cg, r->proc, deadline, &tb))
		return false;
	say(log, loglen, "lwk: contention-aware: job %u: its CPUs could not be narrowed: its "
	    "cgroups taken back from its user (%d made root's, %d of its own removed, %d signals "
	    "to the processes in them%s%s)", rec->job, tb.changed, tb.removed, tb.killed,
	    tb.left ? ", some could not be" : "", tb.whole ? "" : ", some not reached");
	return true;
}

/*
 * Its processes are killed where its user is the cause: a cgroup below
 * the job's that Slurm does not make (on v1, where Slurm 22.05 gives the
 * user the step's directories, one the take-back could not remove: its
 * cpuset widened as fast as it is narrowed keeps CPUs that are other
 * jobs' now).  Otherwise (Slurm's cgroups only: a step's removed
 * meanwhile, the kernel's refusal; on v1 the user has no other lever,
 * for the files in a step's directory are root's) its next steps are
 * refused and nothing is killed.  Rounds until none of its processes
 * is found, for it may fork or move meanwhile, until the deadline: the
 * node lock is held.  At least one round, whatever the deadline.
 */
void lwk_casas_refuse(const struct lwk_node_roots *r, struct lwk_casas_record *rec,
		      const char *err, double deadline, char *log, size_t loglen)
{
	struct timespec ms50 = { 0, 50 * 1000 * 1000 };
	struct lwk_kill kl = { .deadline = deadline };
	struct lwk_cgroup cg;
	char e[256];
	int found;

	say(log, loglen, "lwk: contention-aware: job %u: its CPUs cannot be narrowed to its share: %s",
	    rec->job, err);
	snprintf(rec->status, sizeof(rec->status), "refused");
	snprintf(rec->why, sizeof(rec->why), "its CPUs could not be narrowed: %.200s", err);
	if (!rec->cgroup[0] || lwk_cgroup_init(&cg, r->cgroup_root, rec->cgroup, e, sizeof(e)) ||
	    !lwk_cgroup_foreign(&cg, deadline))
		return;
	if (kl.deadline < lwk_cgroup_clock() + 1)
		kl.deadline = lwk_cgroup_clock() + 1;
	/* Again while some were found or some could not be judged. */
	while (((found = lwk_cgroup_kill_users(&cg, r->proc, &kl)) || !kl.whole) &&
	       lwk_cgroup_clock() < kl.deadline)
		nanosleep(&ms50, NULL);
	say(log, loglen, "lwk: contention-aware: job %u: its user's cgroups keep CPUs that are "
	    "others': its processes killed (%d signals)%s", rec->job, kl.signalled,
	    found ? "; some still there at the deadline" : kl.whole ? "" : "; some could not be reached");
}
