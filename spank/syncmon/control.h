/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Starting and stopping the per-node, per-job sampler (lwk-syncmon):
 * syncmon/start.c and syncmon/stop.c.
 *
 * State lives in <state_root>/<node>/<job>/ (root's, 0700): syncmon.lock,
 * syncmon.pid and syncmon.log.  Whoever starts the sampler takes an
 * exclusive flock on syncmon.lock and hands the locked file to the
 * sampler, which holds it until it exits: a second step on the node finds
 * the lock taken and starts nothing, and the epilog knows the sampler is
 * gone when it can take the lock itself.  No SPANK here: the glue passes
 * plain values.
 */
#ifndef LWK_SYNCMON_CTL_H
#define LWK_SYNCMON_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "node/statedir.h"

struct lwk_syncmon_start {
	const char *program;	/* lwk-syncmon, root's and not writable by others */
	const char *state_root;
	const char *node;
	uint32_t job;
	uid_t uid;
	gid_t gid;
	const char *dir;	/* absolute output directory (opened as uid) */
	const char *options;	/* canonical --sync-monitor value */
	const char *cgroup;	/* the job's cgroup directory, or NULL */
	const char *cgroup_root; /* where cgroupfs is mounted, to step out of the job's */
	const char *cpus;	/* CPUs to run on (an --lwk job's OS cores), or NULL */
	bool must_open;		/* source=bpf: a sampler that stops before its source
				 * is open fails the job */
	uint64_t memory_max;	/* its data, bytes (plugstack syncmon_memory=) */
	uint64_t cpu_max;	/* its CPU, hundredths of % of one CPU (syncmon_cpu=) */
	unsigned fifo;		/* its SCHED_FIFO priority, 0 none (syncmon_fifo=) */
};

/*
 * 1 started, 0 already running on this node, -1 error (message in err,
 * also when the program could not be run), -2 the sampler refused the
 * job's options on this node (source=bpf where BPF cannot work, or with
 * must_open a sampler that stopped before its source was open: the
 * reason in err; the job's tasks should fail with it).  On 1 the sampler has
 * exec'd and its pid is in syncmon.pid: an epilog right after finds it.
 */
int lwk_syncmon_start(const struct lwk_syncmon_start *a, char *err, size_t errlen);

/*
 * Stop the job's sampler on this node (SIGTERM, then SIGKILL after
 * `wait_ms`), copy what it logged into log, and remove the state.  The
 * sampler is the recorded pid, or else (a start cut short) the root
 * process started with this job's --state, looked for while the lock is
 * held, up to `wait_ms`.
 * 1 stopped, 0 there was none, -1 error.
 */
int lwk_syncmon_stop(const char *state_root, const char *node, uint32_t job, int wait_ms,
		     char *log, size_t loglen);

/*
 * After a crash no epilog comes: remove the sampler state of this node's
 * jobs whose lock nobody holds (their sampler is gone).  Returns how
 * many job directories were cleaned.
 */
int lwk_syncmon_sweep(const char *state_root, const char *node);

#endif
