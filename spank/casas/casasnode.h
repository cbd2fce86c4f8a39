/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware on one node: the record of each job, the probe, and
 * the die split applied to the jobs' cgroups (casas/arbiter.c decides).
 * Made by casas/record.c, liveness.c, apply.c, replan.c, membership.c
 * and probe.c (casas/internal.h says which does what).
 *
 * Records: <state_root>/<node>/casas/<job>, root's, readable by all (the
 * job's user reads its curve and dies there: SLURM_CASAS_RECORD).  A
 * record holds what Slurm allocated the job on the node (the CPUs it may
 * ever get), its cgroup, its options, its IPS curve and the dies it has.
 * Every change to the split happens under the node lock: a job's arrival
 * (lwk_casas_join), each probe window, the end of a probe, a job's
 * departure (lwk_casas_leave, from the epilog) and a sweep; each re-plan
 * first drops the records of jobs that are gone (a crash), so their dies
 * return to the others.
 *
 * The probe runs the job on 1, 2, ... dies for a window each (the
 * others keep at least one die each meanwhile) and reads the event rate
 * over all its threads: per CPU on the job's cgroup (cgroup v2,
 * PERF_FLAG_PID_CGROUP), or per thread with inherit (v1, where Slurm
 * makes no perf_event cgroup).  One job probes at a time on a node.
 * Where the event cannot be counted the record says why and the split
 * is equal.
 *
 * No SPANK here: the glue passes plain values; every root (sysfs,
 * cgroupfs, state, proc) is a parameter for tests.
 */
#ifndef LWK_CASASNODE_H
#define LWK_CASASNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "casas/arbiter.h"
#include "node/cgroup.h"
#include "node/statedir.h"
#include "common/options.h"

/* A step of a job starting its tasks on the node (lwk_casas_launch). */
#define LWK_CASAS_MAX_LAUNCHERS 64
struct lwk_casas_launcher {
	unsigned int pid;		/* its slurmstepd */
	unsigned long long start;	/* and that process's start time */
	char step[32];			/* "step_0", "step_batch"; "": not known */
};

struct lwk_casas_record {
	uint32_t job;
	char status[16];	/* probing, placed, equal, shared, off, refused */
	char why[256];		/* for equal, shared, off; what the probe met     */
	char cgroup[768];	/* the job's cgroup, below the cgroup root        */
	struct lwk_cpuset allowed_cpus, allowed_mems; /* Slurm's, at arrival     */
	struct lwk_casas_opts opts;
	char counters[256];	/* what counted, or "none: <reason>"             */
	unsigned int probing;	/* > 0: the probe holds it on this many dies       */
	/* The process whose probe holds it (its pid and start time in clock
	 * ticks, /proc/<pid>/stat field 22): a probe killed with its
	 * slurmstepd is recognised as gone and the hold dropped.  0: none. */
	unsigned int prober_pid;
	unsigned long long prober_start;
	/* Its place in the queue for the probe lock (probes run first come,
	 * first served), 0 when it is not queued. */
	unsigned long long ticket;
	/* Since when (seconds since the epoch) its memory has stayed behind
	 * its dies while probes ran, 0 when it has not. */
	unsigned long long mems_held;
	/* The job's steps starting their tasks (each its slurmstepd, same
	 * form, and its step's cgroup below the job's, "step_0"): until each
	 * is done, the job's cgroup and that step's have all of Slurm's CPUs,
	 * for Slurm binds the tasks to CPUs of the step, which a narrower
	 * cpuset refuses (the launch fails); the job's other steps keep
	 * their dies.  A launcher of no known step widens the whole tree. */
	struct lwk_casas_launcher launchers[LWK_CASAS_MAX_LAUNCHERS];
	unsigned int nlaunchers;
	struct lwk_casas_curve curve;
	struct lwk_cpuset dies, cpus, mems; /* given now (die indices, CPUs, nodes) */
	char split[512];	/* the node's last decision, one line              */
};

/* Record text <-> struct (pure; the parser is fuzzed). */
size_t lwk_casas_record_format(const struct lwk_casas_record *r, char *buf, size_t len);
int lwk_casas_record_parse(const char *text, struct lwk_casas_record *r, char *err,
			   size_t errlen);

/* The job's cgroup in /proc/<pid>/cgroup text: v2 "0::/a/job_7/step_0"
 * or a v1 line (the cpuset one first: Slurm uses one path in every v1
 * hierarchy), cut after its job level: "job_<job>", or 26.05's SLUID
 * name (lwk_cgroup_job_level: the text is of the job's own slurmstepd).
 * 0 (path below the hierarchy's root), or -1 when the job has no cgroup
 * there. */
int lwk_casas_job_cgroup(const char *proc_cgroup, uint32_t job, char *path, size_t len);

/* <state_root>/<node>/casas/<job> */
void lwk_casas_record_path(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len);

/*
 * A job arrives on the node (rec filled by the caller: job, cgroup,
 * allowed sets, options; or status "off" with why).  Under the node
 * lock: 1 the record is new (rec is as written, after a first re-plan
 * that holds the job on one die for its probe); 0 it was there (rec
 * read back: a later step); -1 error in err.
 */
int lwk_casas_join(const struct lwk_node_roots *r, struct lwk_casas_record *rec,
		   bool (*alive)(uint32_t), char *log, size_t loglen, char *err, size_t errlen);

/* Read the record of job: 1, 0 none, -1 unreadable. */
int lwk_casas_load(const struct lwk_node_roots *r, uint32_t job, struct lwk_casas_record *rec);

/* Write the job's current dies again on its cgroup tree (a new step:
 * Slurm has just set its own cpuset there), ending this process's
 * launch (lwk_casas_launch).  0 (err: what to log, often nothing) or -1
 * with err. */
int lwk_casas_reapply(const struct lwk_node_roots *r, uint32_t job, char *err, size_t errlen);

/* A step of job begins to start its tasks in this process: the job's
 * cgroup and the step's (step: its name below the job's, "step_0") get
 * all of Slurm's CPUs back, the job's other steps keep their dies
 * (re-plans keep it so), until this process's lwk_casas_reapply or its
 * end.  0 (also: no record, or off), or -1 with err. */
int lwk_casas_launch(const struct lwk_node_roots *r, uint32_t job, const char *step, char *err,
		     size_t errlen);

/* A step cgroup's name as the record keeps it: "step_" and letters,
 * digits or '_' (never a path).  Pure. */
bool lwk_casas_step_name_ok(const char *step);

/*
 * The most a probe holds the node's probe lock, and so the most another
 * job waits held on one die behind it: at probe=60s a job of 16 dies
 * would hold it 25 minutes.  Windows are cut, then points, to fit.
 */
#define LWK_CASAS_PROBE_BUDGET_US (120ULL * 1000000)

/*
 * While a probe runs or waits, only CPUs move (each cpuset.mems write
 * migrates a job's memory); past this many seconds a job's memory
 * follows its dies anyway, however many jobs keep arriving to probe.
 */
#define LWK_CASAS_MEMS_HELD_MAX_S 120ULL

/* How a probe of `probe` us windows over at most `most` dies fits
 * `budget` us: the points it takes (at least one when most > 0); its
 * window and its whole time in *window and *total.  Pure. */
unsigned int lwk_casas_probe_plan(uint64_t probe, unsigned int most, uint64_t budget,
				  uint64_t *window, uint64_t *total);

/*
 * Probe job (its record must exist) and re-plan with its curve.  Polls
 * *stop between windows and stops early when it is set or the job's
 * cgroup is gone.  What happened goes to log, a line each, handed to
 * emit (when not NULL) as it happens and then cleared.  0 or -1.
 */
int lwk_casas_probe(const struct lwk_node_roots *r, uint32_t job, const volatile int *stop,
		    bool (*alive)(uint32_t), char *log, size_t loglen, void (*emit)(char *));

/* No probe will come (it could not start): release the job's hold on
 * one die and re-plan.  0 or -1. */
int lwk_casas_unhold(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		     char *log, size_t loglen);

/*
 * The job leaves the node (epilog): drop its record and re-plan the
 * others.  job 0: no job leaves, only the gone ones are dropped (a sweep
 * at slurmd start).  1 when the job had a record or the records of gone
 * jobs were dropped (what log says is worth logging), else 0.
 */
int lwk_casas_leave(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		    char *log, size_t loglen);

/* The same for a job's epilog: the other jobs' memory follows their
 * new CPUs in a detached process, which the epilog does not wait for. */
int lwk_casas_leave_apart(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
			  char *log, size_t loglen);

#endif
