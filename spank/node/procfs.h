/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel says of a job's processes and of the node, as /proc
 * and cgroupfs show it (a --sync-monitor sample reads these; the
 * liveness check and the contention-aware probe too).  The job's
 * processes come from its cgroup when
 * Slurm made one (cgroup.procs of the job and every cgroup below it),
 * else from a scan of /proc for processes whose environment names the
 * job and this node (proctrack/linuxproc makes no cgroup).  Node totals
 * come from /proc files kept open.  The /proc and cgroup roots are
 * parameters so tests read fixture trees.
 */
#ifndef LWK_PROCFS_H
#define LWK_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Walk the "id:controllers:path" lines of a /proc/<pid>/cgroup text:
 * copies the next line's controllers ("" on cgroup v2) and path, moves
 * *cursor on, and returns 1; 0 at the end.
 */
int lwk_cgroup_line(const char **cursor, char *ctl, size_t ctllen, char *path, size_t pathlen);

/* The text of a /proc/<pid>/cgroup file into text (len bytes, "" when
 * unreadable). */
void lwk_cgroup_text_read(const char *path, char *text, size_t len);

/* The directory under cgroup_root of the v2 line ("0::/...") of a
 * /proc/<pid>/cgroup text: 0, or -1 without one (v1 alone). */
int lwk_cgroup_v2_dir(const char *text, const char *cgroup_root, char *dir, size_t len);

/*
 * The scope Slurm's cgroup/v2 plugin runs its steps in, from slurmd's own
 * /proc/self/cgroup text: the one slurmd sits in when it started it
 * (".../<scope>.scope/slurmd"), else system.slice's "<node>_slurmstepd.scope"
 * or "slurmstepd.scope" under cgroup_root (_init_new_scope and
 * cgroup_p_setup_scope, src/plugins/cgroup/v2/cgroup_v2.c, slurm-22-05-11-1
 * to slurm-26-05-3-1).  0, or -1 where there is none (no cgroup/v2).
 */
int lwk_slurm_scope_dir(const char *text, const char *cgroup_root, const char *node, char *dir,
			size_t len);

/*
 * Slurm's job level in the path of a cgroup of one of job `job`'s own
 * processes (n bytes: a /proc/<pid>/cgroup line's path):
 *   "job_<job>"  cgroup v1; v2 up to 25.11, and 26.05 with
 *                CgroupJobIdPaths=yes (cgroup.conf)
 *   "s<SLUID>"   26.05's v2 default: "s" and 13 digits of Crockford's
 *                base 32 (cgroup_p_step_create in
 *                src/plugins/cgroup/v2/cgroup_v2.c, print_sluid in
 *                src/common/sluid.c, slurm-26-05-3-1), directly above a
 *                "step_*" component (step_0, step_batch, step_extern...)
 * A SLUID does not say which job it is: the caller vouches that the
 * process is the job's (its own slurmstepd, or a task pid Slurm gave);
 * sluid, when not NULL, must be that name.  Returns the offset just past
 * the component (path[end] is '/' or the end), *start that of the '/'
 * before it; 0 when there is none.
 */
size_t lwk_cgroup_job_level(const char *path, size_t n, uint32_t job, const char *sluid,
			    size_t *start);

/* Is name (n bytes) the job level of job: "job_<job>", or a SLUID
 * (sluid itself when not NULL)?  For paths recorded from a process of
 * the job (the plugin's state) and for directory names. */
bool lwk_cgroup_job_name_is(const char *name, size_t n, uint32_t job, const char *sluid);

/* The job level's name in a cgroup path of a process of any job
 * ("job_<n>", or a SLUID above a step_*), copied into name: 1, or 0
 * when the path is in no job's cgroup. */
int lwk_cgroup_job_name(const char *path, char *name, size_t len);

/* What a /proc/<pid>/cgroup text says of any process and job: 1 in the
 * job's cgroup (job_<job>, or its SLUID when sluid is given), 0 in
 * another job's, -1 in no job's, or in a SLUID-named one while the job's
 * SLUID is unknown (then only the process's environment can tell). */
int lwk_cgroup_job_of(const char *proc_cgroup, uint32_t job, const char *sluid);

/* Is name (n bytes) a SLUID as Slurm prints it: "s" and 13 digits of
 * "0123456789ABCDEFGHJKMNPQRSTVWXYZ"? */
bool lwk_sluid_shaped(const char *name, size_t n);

/* The SLUID v as Slurm prints it (print_sluid): "s", then v in base 32,
 * 13 digits, most significant first. */
void lwk_sluid_format(uint64_t v, char out[15]);

/*
 * From the text of /proc/<pid>/cgroup of a process inside job `job`,
 * the job's cgroup directory under cgroup_root: the v2 line ("0::/...")
 * or the v1 cpuacct line, cut after its job level
 * (lwk_cgroup_job_level).  0, or -1 when the process is in no job
 * cgroup.
 */
int lwk_job_cgroup(const char *proc_cgroup, uint32_t job, const char *cgroup_root,
		   char *out, size_t len);

/*
 * Does an environment block (NUL-separated, as /proc/<pid>/environ)
 * name job `job` and, when node is not NULL, node `node`?
 */
bool lwk_environ_matches(const char *env, size_t len, uint32_t job, const char *node);

/* Append pids found in dir/cgroup.procs and every cgroup below (depth <= 8). */
int lwk_cgroup_pids(const char *dir, pid_t *pids, size_t max, size_t *n);
/* The same in a job cgroup, without Slurm's own processes: those in the
 * job level itself (v1: slurmstepd) and, on v2 only, in step_<n>/slurm;
 * *slurm_own_n counts them (a task between its fork from slurmstepd and
 * its move to its own cgroup is among them for a moment). */
int lwk_cgroup_job_pids(const char *job_cgroup, pid_t *pids, size_t max, size_t *n,
			size_t *slurm_own_n);

/*
 * Pids under proc_root whose environment matches job and node.  not_job,
 * when given, is a bitmap of LWK_PID_BITS bits of pids already known not
 * to be the job's: their environment is not read again (a rescan then
 * costs a directory read plus the new processes), and pids found not to
 * match are added.  Clear it to re-check everything (full scans).
 */
#define LWK_PID_BITS (1u << 22) /* the kernel's PID_MAX_LIMIT */
int lwk_scan_job_pids(const char *proc_root, uint32_t job, const char *node,
		      pid_t *pids, size_t max, size_t *n, uint64_t *not_job);

/* Node-wide counters, from files kept open. */
struct lwk_nodestat {
	int stat_fd, mem_fd, load_fd;
	uint64_t busy, total;	/* from the "cpu" line, in ticks    */
	uint64_t forks;		/* "processes" line: forks since boot */
	uint64_t mem_total_kb, mem_avail_kb;
	double load1;
};

int lwk_nodestat_open(struct lwk_nodestat *s, const char *proc_root);
void lwk_nodestat_close(struct lwk_nodestat *s);
int lwk_nodestat_read(struct lwk_nodestat *s);
/* Parsers of the three files, exposed for tests. */
int lwk_parse_proc_stat(const char *text, uint64_t *busy, uint64_t *total, uint64_t *forks);
int lwk_parse_meminfo(const char *text, uint64_t *total_kb, uint64_t *avail_kb);

/*
 * The job's CPU time from its cgroup, in one read: v2 cpu.stat
 * usage_usec, or v1 cpuacct.usage (ns).  0, or -1 where neither exists.
 */
int lwk_cgroup_cpu_us(const char *job_cgroup, uint64_t *cpu_us);
int lwk_parse_cpu_stat(const char *text, uint64_t *usage_usec);

/*
 * Where to move a process out of the job's cgroups (the lines of
 * proc_cgroup that have its job level), so that the job's end does not kill
 * the sampler before it writes its last samples: on v2 into the scope's
 * "system" cgroup next to slurmstepd (a process may not sit in an inner
 * cgroup), on v1 into each hierarchy's root.  Fills out[] with
 * cgroup.procs paths; returns how many.
 */
#define LWK_ESCAPE_MAX 16
int lwk_cgroup_escape_paths(const char *proc_cgroup, uint32_t job, const char *cgroup_root,
			    char out[][512], int max);

#endif
