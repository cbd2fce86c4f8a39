/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The batch source of a build without clang, libbpf or bpftool
 * (node/taskiter.h): it cannot open, saying why, and source=auto reads
 * taskstats or /proc (t50 and check_start test it).
 */
#include "node/taskiter.h"

#include <errno.h>
#include <stdio.h>

bool lwk_taskiter_built(void)
{
	return false;
}

struct lwk_taskiter *lwk_taskiter_open(size_t max_procs, const char *cgroup, char *err,
				      size_t errlen)
{
	(void)max_procs, (void)cgroup;
	snprintf(err, errlen, "bpf: not built (configure found no clang, libbpf or bpftool)");
	errno = ENOSYS;
	return NULL;
}

void lwk_taskiter_close(struct lwk_taskiter *ti)
{
	(void)ti;
}

int lwk_taskiter_set_pids(struct lwk_taskiter *ti, const pid_t *pids, size_t n)
{
	(void)ti, (void)pids, (void)n;
	errno = ENOSYS;
	return -1;
}

int lwk_taskiter_read(struct lwk_taskiter *ti)
{
	(void)ti;
	errno = ENOSYS;
	return -1;
}

const char *lwk_taskiter_loader(const struct lwk_taskiter *ti)
{
	(void)ti;
	return "";
}

const char *lwk_taskiter_walk(const struct lwk_taskiter *ti, const char **why)
{
	(void)ti;
	*why = "";
	return "tasks";
}

uint64_t lwk_taskiter_fallbacks(const struct lwk_taskiter *ti, const char **why)
{
	(void)ti;
	*why = "";
	return 0;
}

const struct lwk_taskiter_proc *lwk_taskiter_find(const struct lwk_taskiter *ti, pid_t pid)
{
	(void)ti, (void)pid;
	return NULL;
}
