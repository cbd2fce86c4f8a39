/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Backend mckernel: boot IHK/McKernel on a job's App cores and memory
 * and shut it down, through IHK's own tools under the site's install
 * prefix (plugstack.conf mckernel=, default /opt/mckernel):
 *
 *   sbin/mcreboot.sh -c <App CPUs> -m <size@node,...> -r <IKC map> -o <uid>:<gid>
 *   sbin/ihkosctl 0 get status          RUNNING once booted
 *   sbin/ihkconfig 0 query cpu          the CPUs IHK really reserved
 *   sbin/mcstop+release.sh              shut down, give CPUs and memory back
 *
 * The job's tasks run bin/mcexec (the Linux-side proxy of each LWK
 * process) in the delegation cgroup; status is read from outside, never
 * by running anything in the LWK.  Tools are run directly (no shell),
 * with a fixed environment, their output kept for the log; root runs
 * them, so each must be a root-owned file nobody else can write.
 */
#ifndef LWK_MCKERNEL_H
#define LWK_MCKERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lwk/plan.h"
#include "common/topology.h"

#define LWK_MCK_ARGS 12

/* Is IHK/McKernel installed under prefix (a usable sbin/mcreboot.sh)? */
bool lwk_mck_installed(const char *prefix);

/*
 * The mcreboot.sh command line for the plan (pure): argv[] points into
 * store.  -1 with a message when the plan cannot boot McKernel (no
 * memory asked: McKernel needs mem=).
 */
int lwk_mck_boot_argv(const char *prefix, const struct lwk_topology *t, const struct lwk_plan *p,
		      uid_t uid, gid_t gid, char store[LWK_MCK_ARGS][4096],
		      const char *argv[LWK_MCK_ARGS + 1], char *err, size_t errlen);

/* Run argv[0] (an absolute path) with argv; its exit status (0 = ok,
 * -1 not run), its output (stdout and stderr) in out. */
int lwk_mck_run(const char *const argv[], char *out, size_t outlen, int timeout_s);

/* Boot for the plan and check it is RUNNING on the App CPUs.  0, or -1
 * with err (what the tool said); on -1 McKernel is shut down again. */
int lwk_mck_boot(const char *prefix, const struct lwk_topology *t, const struct lwk_plan *p,
		 uid_t uid, gid_t gid, char *log, size_t loglen, char *err, size_t errlen);

/* Does an OS instance run (ihkosctl 0 get status: RUNNING or BOOTING)? */
bool lwk_mck_running(const char *prefix);

/* mcstop+release.sh: 0, or -1 (its output in log). */
int lwk_mck_shutdown(const char *prefix, char *log, size_t loglen);

#endif
