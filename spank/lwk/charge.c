/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mem= in the job's memory limit (lwk_part_charge), and the teardown's
 * undoing of it.  See lwk/part.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lwk/part_int.h"
#include "node/procfs.h"

/* The job's memory cgroup (path up to and with its job level: job_<id>,
 * or 26.05's SLUID, lwk_cgroup_job_level) from a task's /proc/<pid>/cgroup
 * text: v2 the "0::" line, v1 the line of the memory controller.  -1 when
 * the task is in none of the job's. */
static int job_memory_cgroup(const char *proc_cgroup, enum lwk_cgroup_version v, uint32_t job,
			     char *out, size_t len)
{
	size_t start, end;

	for (const char *line = proc_cgroup; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[1024], padded[300], *ctrls, *path;

		if (n >= sizeof(l))
			n = 0;
		memcpy(l, line, n);
		l[n] = '\0';
		line += (nl ? (size_t)(nl - line) + 1 : strlen(line));
		ctrls = strchr(l, ':');
		path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		*ctrls++ = '\0';
		snprintf(padded, sizeof(padded), ",%s,", ctrls);
		if (v == LWK_CGROUP_V2 ? strcmp(l, "0") || ctrls[0] : !strstr(padded, ",memory,"))
			continue;
		/* "/job_7" followed by "/" or the end (not job_71), or the
		 * SLUID above step_*. */
		end = path[0] == '/' ? lwk_cgroup_job_level(path, strlen(path), job, NULL, &start) : 0;
		if (!end || strstr(path, "/..") || end >= len)
			return -1;
		snprintf(out, len, "%.*s", (int)end, path);
		return 0;
	}
	return -1;
}

bool lwk_part_is_job_cgroup(const char *path, uint32_t job)
{
	const char *last = strrchr(path, '/');

	return last && last != path && lwk_cgroup_job_name_is(last + 1, strlen(last + 1), job, NULL);
}

/* The memory limit of cgroup path: bytes, 0 for none ("max", or v1's
 * near-2^63 "unlimited"), -1 unreadable. */
static int read_mem_limit(const struct lwk_node_roots *r, enum lwk_cgroup_version v,
			  const char *path, uint64_t *bytes)
{
	char p[1200], buf[64], *end;
	unsigned long long b;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s%s%s/%s", r->cgroup_root, v == LWK_CGROUP_V1 ? "/memory" : "", path,
		 v == LWK_CGROUP_V1 ? "memory.limit_in_bytes" : "memory.max");
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!strncmp(buf, "max", 3)) {
		*bytes = 0;
		return 0;
	}
	errno = 0;
	b = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -1;
	*bytes = b >= (1ULL << 62) ? 0 : (uint64_t)b;
	return 0;
}

/* What mem= took outside the job's memory: the hugepages added, or
 * McKernel's memory. */
static uint64_t reserved_bytes(const struct lwk_part *p)
{
	uint64_t sum = 0;

	for (int n = 0; n < LWK_MAX_NUMA; n++)
		sum += p->mck_booted ? p->plan.node_mem[n]
				     : (uint64_t)p->huge_added[n] * p->plan.page_kb * 1024;
	return sum;
}

int lwk_part_charge(const struct lwk_node_roots *r, const struct lwk_part *p,
		    const char *proc_cgroup, char *what, size_t whatlen, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	uint64_t huge = reserved_bytes(p), slurm = 0, now = 0, target, keep_min;
	char path[800], line[1000];
	struct lwk_cgroup cg;

	if (whatlen)
		what[0] = '\0';
	if (!huge || v == LWK_CGROUP_NONE ||
	    job_memory_cgroup(proc_cgroup, v, p->job, path, sizeof(path)) ||
	    read_mem_limit(r, v, path, &now) || !now)
		return 0; /* nothing reserved, or Slurm limits no memory: the floor bounds mem= */
	/* Slurm's limit: the one recorded (first seen), else this one.  A
	 * value above what we write is Slurm's, written again for a new
	 * step. */
	slurm = now;
	{
		char *state = malloc(STATE_MAX), key[840];
		int fd = lwk_part_lock_job(r, p->job, false, err, errlen);

		if (fd < 0 || !state || lwk_part_read_state(r, p->job, state, STATE_MAX)) {
			free(state);
			if (fd >= 0)
				close(fd);
			return ERR("lwk: cannot read the state of job %" PRIu32, p->job);
		}
		snprintf(key, sizeof(key), "\nmemcharge %s ", path);
		{
			const char *at = strstr(state, key);
			unsigned long long a;

			if (at && sscanf(at + strlen(key), "%llu", &a) == 1)
				slurm = a;
		}
		free(state);
		close(fd);
	}
	keep_min = p->plan.deleg_mem < slurm ? p->plan.deleg_mem : slurm;
	target = slurm > huge && slurm - huge > keep_min ? slurm - huge : keep_min;
	if (now <= target)
		return 0; /* done already (another task of the step) */
	snprintf(line, sizeof(line), "memcharge %s %" PRIu64 " %" PRIu64 "\n", path, slurm, target);
	if (lwk_part_record_once(r, p->job, line, err, errlen) ||
	    lwk_cgroup_init(&cg, r->cgroup_root, path, err, errlen) ||
	    lwk_cgroup_set_memory_max(&cg, target, err, errlen))
		return -1;
	snprintf(what, whatlen,
		 "mem= holds %" PRIu64 "M outside the job's memory: its limit in %s is %" PRIu64
		 "M, not %" PRIu64 "M%s",
		 huge >> 20, path, target >> 20, slurm >> 20,
		 slurm - target < huge ? " (kept at deleg_mem: the job's helpers need it)" : "");
	return 0;
}

/* Undo one "memcharge <path> <slurm> <target>" line (best effort: the
 * job's cgroup is usually gone by the teardown). */
void lwk_part_uncharge(const struct lwk_node_roots *r, uint32_t job, const char *line, size_t len,
		       char *log, size_t loglen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char l[1000], path[800], err[512];
	unsigned long long slurm, target;
	uint64_t now;
	struct lwk_cgroup cg;

	if (len >= sizeof(l))
		return;
	memcpy(l, line, len);
	l[len] = '\0';
	/* Only this job's cgroup, as recorded by lwk_part_charge: a path
	 * ending in its job level (job_<id>, or the SLUID that a task of it
	 * was in). */
	if (sscanf(l, "memcharge %799s %llu %llu", path, &slurm, &target) != 3 || path[0] != '/' ||
	    strstr(path, "/..") || !lwk_part_is_job_cgroup(path, job) || v == LWK_CGROUP_NONE ||
	    read_mem_limit(r, v, path, &now) || now != target)
		return;
	if (lwk_cgroup_init(&cg, r->cgroup_root, path, err, sizeof(err)) ||
	    lwk_cgroup_set_memory_max(&cg, slurm, err, sizeof(err)))
		lwk_log_append(log, loglen, "%s", err);
	else
		lwk_log_append(log, loglen, "gave %s its memory limit back (%lluM)", path, slurm >> 20);
}
