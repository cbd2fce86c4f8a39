/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin's plugstack.conf arguments:
 *
 *   required /usr/lib/x86_64-linux-gnu/slurm-wlm/lwk.so on_error=fail_job
 *
 * Parsed strictly: an unknown key or a bad value is an error naming it,
 * so a typo in plugstack.conf is found at once instead of silently
 * running with defaults.
 */
#ifndef LWK_CONFIG_H
#define LWK_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lwk_on_error {
	LWK_ON_ERROR_FAIL_JOB,	 /* a bad job request fails the job's tasks */
	LWK_ON_ERROR_DRAIN_NODE, /* ... or fails slurmstepd's init, which   */
				 /* Slurm answers by draining the node      */
};

struct lwk_config {
	bool offer_lwk;		/* register --lwk                    */
	bool offer_syncmon;	/* register --sync-monitor           */
	bool offer_casas;	/* register --contention-aware       */
	int on_error;		/* enum lwk_on_error                 */
	char state_dir[256];	/* per-node, per-job state            */
	/* The sampler's default is under the install prefix, which can be
	 * deep (a distcheck in a long path): room for any path. */
	char syncmon[PATH_MAX];	/* the --sync-monitor sampler program */
	char cgroup_root[256];	/* where cgroupfs is mounted          */
	char mckernel[256];	/* IHK/McKernel's install prefix      */
	bool lwk_whole_dies;	/* --lwk OS cores in whole dies       */
	int lwk_isolate;	/* enum lwk_isolate                   */
	bool lwk_irqbalance;	/* --lwk tells irqbalance (its socket) */
	uint64_t syncmon_memory; /* the sampler's data, bytes (RLIMIT_DATA) */
	uint64_t syncmon_cpu;	/* its CPU, hundredths of % of one CPU */
	uint64_t syncmon_fifo;	/* its SCHED_FIFO priority; 0 the normal class */
};

/*
 * What the sampler holds beside its buffer= (its pid tables, the
 * proc/BPF readers, one sample line, the C library): measured at 5 MiB
 * (source=proc) and 10 MiB (source=bpf) of data on Debian 12 x86_64,
 * rounded up.  A buffer= over syncmon_memory= less this is refused.
 */
#define LWK_SYNCMON_OWN_BYTES (16ULL << 20)

/* How --lwk isolates its App cores (plugstack lwk_isolate=). */
enum lwk_isolate {
	LWK_ISOLATE_AUTO,	/* an isolated partition where the kernel */
				/* can make one, else a plain cpuset      */
	LWK_ISOLATE_PARTITION,	/* the partition or the job is refused    */
	LWK_ISOLATE_CPUSET,	/* a plain cpuset, never a partition      */
};

#ifndef LWK_SYNCMON_PATH
#define LWK_SYNCMON_PATH "/usr/libexec/slurm-lwk/lwk-syncmon"
#endif

void lwk_config_defaults(struct lwk_config *c);

/* Parse argv ("key=value" each).  0, or -1 with a message in err. */
int lwk_config_parse(int argc, char **argv, struct lwk_config *c,
		     char *err, size_t errlen);

size_t lwk_config_format(const struct lwk_config *c, char *buf, size_t len);

/*
 * What slurmstepd's init_post_opt returns for a job option value refused
 * on the node: 0 with on_error=fail_job (the job's tasks fail instead,
 * lwk_remote.c), -1 with drain_node (slurmstepd's init fails: Slurm
 * drains the node).  Never positive: from 25.05 any non-zero return is a
 * failure (src/common/spank.c and its callers, SchedMD commit 74ff6df484
 * "All spank functions now fail for non-zero return codes").
 * login_env: slurmd merged the user's login environment on the node into
 * the job's (SLURM_GET_USER_ENV: sbatch --get-user-env, --export=NONE),
 * where no submission check saw it: 0 whatever on_error, for a user's
 * own profile must never drain a node.
 */
int lwk_config_refusal_rc(const struct lwk_config *c, bool login_env);

#endif
