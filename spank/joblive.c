// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * joblive.c: is a job still allocated on this node?  The sweeps (slurmd
 * start, the job epilog, lwk-sweep) and the --contention-aware re-plan
 * ask it before undoing what a job set up, so a wrong "gone" takes a
 * live job's partition or dies away.
 *
 * A slurmstepd of the job here says yes at once (with PrologFlags=Contain
 * the extern step's runs for the whole allocation).  Without one, the job
 * may be between two steps (a multi-node job's other nodes, an salloc):
 * slurmctld is asked, through libslurm's API, which slurmd and slurmstepd
 * have loaded already (libslurmfull; lwk-sweep loads it).  It keeps the
 * job while slurmctld cannot answer, and drops it when slurmctld no longer
 * has it running on this node, or when its tasks run here with no
 * slurmstepd left (that was killed: nothing else will stop them).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "joblive.h"
#include "syncmon.h"

/* A root slurmstepd of job on this host (its process title). */
static bool stepd_here(uint32_t job)
{
	char want[48], path[64], buf[256];
	struct dirent *e;
	DIR *d = opendir("/proc");
	bool alive = false;
	int wlen = snprintf(want, sizeof(want), "slurmstepd: [%" PRIu32 ".", job);

	if (!d)
		return true; /* cannot tell: keep it */
	while (!alive && (e = readdir(d))) {
		int fd;
		ssize_t n;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (strncmp(buf, want, (size_t)wlen))
			continue;
		/* Anyone can name a process so: only root's slurmstepd
		 * counts, or a user could keep a dead job's partition. */
		{
			struct stat st;
			char exe[256];
			ssize_t l;

			snprintf(path, sizeof(path), "/proc/%.20s", e->d_name);
			if (stat(path, &st) || st.st_uid != 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%.20s/exe", e->d_name);
			l = readlink(path, exe, sizeof(exe) - 1);
			if (l <= 0)
				continue;
			exe[l] = '\0';
			/* Debian's is slurmstepd-wlm. */
			alive = strrchr(exe, '/') && !strncmp(strrchr(exe, '/'), "/slurmstepd", 11);
		}
	}
	closedir(d);
	return alive;
}

/* A process of uid with the job's environment (SLURM_JOB_ID, and this
 * node's name when known) on this host: a task of the job.  Only the
 * job's own user counts: another user could put any job id in an
 * environment to make a live job look crashed. */
static bool tasks_here(uint32_t job, uid_t uid, const char *node)
{
	enum { ENV = 65536 };
	char path[64], *env = malloc(ENV); /* not static: threads ask too */
	struct dirent *e;
	DIR *d = env ? opendir("/proc") : NULL;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		struct stat st;
		ssize_t n;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s", e->d_name);
		if (stat(path, &st) || st.st_uid != uid)
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/environ", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, env, ENV);
		close(fd);
		found = n > 0 && lwk_environ_matches(env, (size_t)n, job, node);
	}
	if (d)
		closedir(d);
	free(env);
	return found;
}

/* This node's name in Slurm: what slurmd -N sets for its slurmstepd
 * and epilog (lwk-sweep sets it from --node), else the short host name. */
static void this_node(char *buf, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME");

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	if (gethostname(buf, len))
		buf[0] = '\0';
	buf[len - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

typedef int (*load_job_fn)(job_info_msg_t **, uint32_t, uint16_t);
typedef void (*free_job_fn)(job_info_msg_t *);
typedef hostlist_t (*hl_create_fn)(const char *);
typedef int (*hl_find_fn)(hostlist_t, const char *);
typedef void (*hl_destroy_fn)(hostlist_t);

int lwk_job_allocated_here(uint32_t job, const char *node, uid_t *uid)
{
	/* Looked up each time (no static state): present in slurmd and
	 * slurmstepd, absent from the tests and tools that load no libslurm. */
	load_job_fn load = (load_job_fn)dlsym(RTLD_DEFAULT, "slurm_load_job");
	free_job_fn freejob = (free_job_fn)dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg");
	hl_create_fn hl_create = (hl_create_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_create");
	hl_find_fn hl_find = (hl_find_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_find");
	hl_destroy_fn hl_destroy = (hl_destroy_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_destroy");
	job_info_msg_t *msg = NULL;
	int answer = LWK_ALLOC_NO;

	if (!load || !freejob || !hl_create || !hl_find || !hl_destroy)
		return LWK_ALLOC_NO_API;
	errno = 0;
	if (load(&msg, job, SHOW_ALL | SHOW_LOCAL) != 0) {
		/* Purged after MinJobAge, or never was: gone.  Anything
		 * else (slurmctld down, a timeout): cannot tell. */
		return errno == ESLURM_INVALID_JOB_ID ? LWK_ALLOC_NO : LWK_ALLOC_UNKNOWN;
	}
	for (uint32_t i = 0; msg && i < msg->record_count; i++) {
		const slurm_job_info_t *j = &msg->job_array[i];
		uint32_t base = j->job_state & JOB_STATE_BASE;
		hostlist_t hl;

		if (j->job_id != job)
			continue;
		/* Running or suspended, not yet completing: a completing
		 * job's epilog runs (or is owed) here and gives back the rest. */
		if ((base != JOB_RUNNING && base != JOB_SUSPENDED) || (j->job_state & JOB_COMPLETING) ||
		    !j->nodes)
			continue;
		hl = hl_create(j->nodes);
		if (!hl) {
			answer = LWK_ALLOC_UNKNOWN;
			continue;
		}
		if (hl_find(hl, node) >= 0) {
			answer = LWK_ALLOC_YES;
			if (uid)
				*uid = j->user_id;
		}
		hl_destroy(hl);
	}
	freejob(msg);
	return answer;
}

int lwk_job_alive_load_slurm(const char *lib)
{
	int (*init)(const char *);

	if (dlsym(RTLD_DEFAULT, "slurm_load_job"))
		return 0;
	if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL))
		return -1;
	init = (int (*)(const char *))dlsym(RTLD_DEFAULT, "slurm_init");
	if (init)
		init(NULL);
	return dlsym(RTLD_DEFAULT, "slurm_load_job") ? 0 : -1;
}

bool lwk_job_alive(uint32_t job)
{
	char node[256];
	uid_t uid = 0;

	if (stepd_here(job))
		return true;
	this_node(node, sizeof(node));
	switch (lwk_job_allocated_here(job, node, &uid)) {
	case LWK_ALLOC_NO_API:
		return false; /* no libslurm here: the slurmstepd alone decides */
	case LWK_ALLOC_UNKNOWN:
		return true; /* slurmctld did not answer: keep it */
	case LWK_ALLOC_NO:
		return false;
	default:
		/* Allocated, no slurmstepd: between two steps, unless its
		 * tasks still run here (their slurmstepd was killed). */
		return !tasks_here(job, uid, node[0] ? node : NULL);
	}
}
