/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-process CPU times from the kernel's taskstats interface (generic
 * netlink, TASKSTATS_CMD_GET): one request and one reply per process
 * over a socket opened once, with no /proc file per process (seed 000,
 * 3.3.2: 1-3 ms instead of 15-20 ms for ~200 processes).  Needs
 * CAP_NET_ADMIN on some kernels; the sampler runs as root.  Written
 * against <linux/taskstats.h> without libnl.
 */
#ifndef LWK_TASKSTATS_H
#define LWK_TASKSTATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lwk_taskstats {
	int fd;
	uint16_t family;
	uint32_t seq;
	uint16_t version; /* the kernel's struct taskstats version */
};

struct lwk_task_cpu {
	uint64_t utime_us, stime_us;	/* user and system CPU time */
	uint64_t run_real_ns;		/* utime + stime in ns, tick-sampled */
	uint64_t run_virtual_ns;	/* run time (sum_exec_runtime), when the kernel
					 * accounts delays (delayacct), else 0 */
	uint64_t nvcsw, nivcsw;		/* context switches */
};

/* Open the socket and resolve the TASKSTATS family.  0, or -1 and a message. */
int lwk_taskstats_open(struct lwk_taskstats *ts, char *err, size_t errlen);
void lwk_taskstats_close(struct lwk_taskstats *ts);

/*
 * CPU times of one thread (tgid = 0) or of a whole thread group (tgid =
 * 1: the kernel sums its threads).  0, or -1 with errno (ESRCH: gone).
 */
int lwk_taskstats_query(struct lwk_taskstats *ts, pid_t pid, int tgid, struct lwk_task_cpu *out);

/*
 * Walk the attributes of one reply (exposed for tests and fuzzing):
 * finds TASKSTATS_TYPE_STATS inside an AGGR_PID/AGGR_TGID nest.
 */
int lwk_taskstats_parse_reply(const void *buf, size_t len, uint16_t family,
			      struct lwk_task_cpu *out, uint16_t *version);

#endif
