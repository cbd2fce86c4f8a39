/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-internal: what the files of the --lwk partition share among
 * themselves.  Only spank/lwk/ includes this; the part's interface is
 * lwk/part.h.
 *
 * The partition's files, each calling only those above it:
 *   record.c     the state file as text, and what the tasks see (pure);
 *   state.c      the state files and the lock of a job;
 *   owncgroup.c  the plugin's own cgroups: made, killed in, removed;
 *   charge.c     mem= in the job's memory limit, and its undoing;
 *   teardown.c   undo what a state records; the teardown; the sweep;
 *   owner.c      whose node: does another job use it;
 *   setup.c      the setup (backend linux or mckernel);
 *   xlines.c     the isolated partition's state lines, their undoing;
 *   isolate.c    the App cores an isolated partition (called by
 *                place.c, undone by teardown.c through xlines.c);
 *   place.c      placement of the tasks.
 * Below them all: plan.c (the plan, pure) and mckernel.c (IHK's tools).
 */
#ifndef LWK_PART_INT_H
#define LWK_PART_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lwk/part.h"
#include "node/cgroup.h"
#include "node/statedir.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define STATE_MAX (256 * 1024)

/* ---- record.c ---- */

/*
 * What the state says, line by line: a torn or damaged line is skipped,
 * not a reason to undo nothing.  What was skipped goes to log.
 */
void lwk_part_parse_lenient(const char *state, struct lwk_part *p, char *log, size_t loglen);

/* ---- state.c: the files in <state_root>/<node>/<job>/ ---- */

/* The path of file name of job's state directory. */
void lwk_part_state_file(const struct lwk_node_roots *r, uint32_t job, const char *name,
			 char *out, size_t len);

/*
 * The job's lock, taken (blocking): the fd; -1 with errno ENOENT when
 * there is none and create is false; else -1 with err.
 */
int lwk_part_lock_job(const struct lwk_node_roots *r, uint32_t job, bool create, char *err,
		      size_t errlen);

/* The state text (root's only): 0 (possibly empty: none) or -1. */
int lwk_part_read_state(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len);
int lwk_part_append_state(const struct lwk_node_roots *r, uint32_t job, const char *text,
			  char *err, size_t errlen);
/* Replace the job's state with text (under the job's lock). */
int lwk_part_rewrite_state(const struct lwk_node_roots *r, uint32_t job, const char *text);
/* The state and lock files gone, and the directories they leave empty. */
void lwk_part_remove_state(const struct lwk_node_roots *r, uint32_t job);
/* Append "line" to the job's state unless it is there; under the lock. */
int lwk_part_record_once(const struct lwk_node_roots *r, uint32_t job, const char *line,
			 char *err, size_t errlen);

/* Is the state a finished setup (its "ready" line)?  p read leniently. */
bool lwk_part_state_ready(const char *state, struct lwk_part *p);

/* What a teardown could not undo, kept as state lines for the next. */
struct lwk_part_remains {
	char *text;
	size_t len;
	int failed; /* items that failed (header lines do not count) */
};

void lwk_part_keep(struct lwk_part_remains *k, bool failed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- owncgroup.c ---- */

/* How long a teardown waits, for all the cgroup trees it removes, for
 * the processes it killed there to be gone: an emulated node under load
 * took over 3 s. */
#define LWK_CLEAR_WAIT_S 5

/* A teardown's removal of cgroup trees: its deadline, and what held the
 * last tree that could not be removed. */
struct lwk_part_clear {
	struct timespec deadline;
	char why[400];
};

/* The deadline set, LWK_CLEAR_WAIT_S from now. */
void lwk_part_clear_start(struct lwk_part_clear *c);

/* Kill what is left in a cgroup tree, wait (until c's deadline, at
 * least one try) for it to be empty, remove it: how many processes
 * were killed, or -1 when it is still there (c->why says what holds
 * it). */
int lwk_part_clear_tree(const struct lwk_node_roots *r, const char *hier, const char *controller,
			const char *path, struct lwk_part_clear *c);

/* The own cgroups the state records ("cgroup" lines), killed in and
 * removed deepest first; what could not be goes to k.  0 or -1. */
int lwk_part_remove_own_cgroups(const struct lwk_node_roots *r, const char *state, char *log,
				size_t loglen, struct lwk_part_remains *k, struct lwk_part_clear *c);

/* The plugin's own cgroup for a role, made (each level) and recorded. */
int lwk_part_own_cgroup(const struct lwk_node_roots *r, const struct lwk_part *p,
			enum lwk_part_role role, struct lwk_cgroup *cg, char *err, size_t errlen);

/* ---- charge.c ---- */

/* Undo one "memcharge <path> <slurm> <target>" line of len bytes. */
/* Does a cgroup path recorded in the state (jobcg, memcharge) end in the
 * job level of job: "/job_<job>", or a SLUID (26.05; recorded from a task
 * of the job: lwk_cgroup_job_level)?  (charge.c) */
bool lwk_part_is_job_cgroup(const char *path, uint32_t job);
void lwk_part_uncharge(const struct lwk_node_roots *r, uint32_t job, const char *line,
		       size_t len, char *log, size_t loglen);

/* ---- xlines.c: the isolated partition's state lines ---- */

/* One "<key> <path>[ <cpus>]" line ("-" or nothing: cpus ""). */
struct lwk_xline {
	char path[800];
	char list[16384];
};

/* Is there a whole line "<key> <path>" (with or without a value)? */
bool lwk_xrecorded(const char *state, const char *key, const char *path);
/* The whole lines of key, in order, in *out (malloc'd, free it): how
 * many, or -1 out of memory. */
int lwk_xlines(const char *state, const char *key, struct lwk_xline **out);
/*
 * Undo the lines whose path keep() says (every line with keep NULL):
 * each xpart back to member, then each xcpus line's CPUs taken out of
 * its level, the last written first, where the cgroup is still there.
 * What fails goes to log and, with k, stays recorded.  How many failed.
 */
int lwk_xundo(const char *root, const char *state, bool (*keep)(const char *, const void *),
	      const void *arg, char *log, size_t loglen, struct lwk_part_remains *k);
/*
 * Undo the state's xpart and xcpus lines (lwk_xundo); with kill false
 * (a setup redone while the job runs) keep every line in k instead.
 */
void lwk_part_unisolate(const struct lwk_node_roots *r, const char *state, bool kill, char *log,
			size_t loglen, struct lwk_part_remains *k);
/* The lines of cgroups that are gone dropped from the job's state (and
 * from state, its text): how many, or -1.  Under the job's lock. */
int lwk_xcompact(const struct lwk_node_roots *r, uint32_t job, char *state);

/* ---- teardown.c ---- */

/*
 * Undo what the state records, in the reverse order of setup; kill is
 * false when a setup redoes one cut short (the job runs: its processes
 * are not touched).  What is still to undo goes to k.  0, or -1 when
 * something failed.
 */
int lwk_part_undo(const struct lwk_node_roots *r, uint32_t job, const char *state, bool kill,
		  char *log, size_t loglen, struct lwk_part_remains *k);

#endif
