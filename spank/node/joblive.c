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
 * slurmctld is asked, through libslurm's public calls only
 * (slurm_load_job, and slurm_init in the epilog's child), which slurmd
 * and slurmstepd have loaded already (libslurmfull; lwk-sweep loads it).
 * It keeps the job while slurmctld cannot be asked or cannot answer, and
 * drops it when slurmctld no longer has it running on this node, or
 * when its tasks run here with no slurmstepd left (that was killed:
 * nothing else will stop them).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "node/child.h"
#include "node/joblive.h"
#include "node/nodename.h"
#include "node/procfs.h"

/* Read at most len-1 bytes of name below the /proc/<pid> directory fd
 * (opened once: a pid reused meanwhile cannot swap the process under
 * us).  The length, or -1. */
static ssize_t read_at(int dfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* A root slurmstepd of job on this host (its process title).  The
 * owner and the executable are checked before the title is read: a
 * command line lives in the process's memory, which its user can make
 * a read of stall (a FUSE-backed page); /proc's own files cannot. */
static bool stepd_here(uint32_t job)
{
	char want[48], buf[256], exe[256];
	struct dirent *e;
	DIR *d = opendir("/proc");
	bool alive = false;
	int wlen = snprintf(want, sizeof(want), "slurmstepd: [%" PRIu32 ".", job);

	if (!d)
		return true; /* cannot tell: keep it */
	while (!alive && (e = readdir(d))) {
		struct stat st;
		ssize_t l;
		int dfd;
		const char *base;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		/* Anyone can name a process so: only root's slurmstepd
		 * counts, or a user could keep a dead job's partition. */
		if (fstat(dfd, &st) || st.st_uid != 0) {
			close(dfd);
			continue;
		}
		l = readlinkat(dfd, "exe", exe, sizeof(exe) - 1);
		if (l <= 0) {
			close(dfd);
			continue;
		}
		exe[l] = '\0';
		/* Debian's is slurmstepd-wlm. */
		base = strrchr(exe, '/');
		if (base && !strncmp(base, "/slurmstepd", 11) && read_at(dfd, "cmdline", buf, sizeof(buf)) > 0)
			alive = !strncmp(buf, want, (size_t)wlen);
		close(dfd);
	}
	closedir(d);
	return alive;
}

/* Does the environment of one of these processes (their /proc
 * directories open in dirs[], owner checked) name the job (SLURM_JOB_ID,
 * and this node's name when known)?  A user's environment can be memory
 * whose fault the user holds, and a read of it would not return: it is
 * read in a child, which is given 2 s.  No answer is "no": only the
 * job's own user can stall it, and only while slurmctld still has the
 * job allocated here, which then counts as between two steps (kept). */
static bool environ_names(int *dirs, size_t n, uint32_t job, const char *node)
{
	enum { ENV = 65536 };
	char *env = malloc(ENV), found = 0;
	struct pollfd p;
	int pipefd[2], pidfd = -1;
	pid_t child;

	if (!env || pipe2(pipefd, O_CLOEXEC)) {
		free(env);
		return false;
	}
	child = fork();
	if (child == 0) {
		/* Only open, read and a pure match here: the parent may have
		 * threads (the probe's). */
		dirs[n] = pipefd[1];
		lwk_child_sort_fds(dirs, n + 1);
		lwk_child_close_all_but(dirs, n + 1);
		for (size_t i = 0; i < n + 1 && !found; i++) {
			int fd = dirs[i] == pipefd[1] ? -1 : openat(dirs[i], "environ", O_RDONLY | O_CLOEXEC);
			ssize_t got = fd >= 0 ? read(fd, env, ENV) : -1;

			if (fd >= 0)
				close(fd);
			found = got > 0 && lwk_environ_matches(env, (size_t)got, job, node);
		}
		_exit(write(pipefd[1], &found, 1) == 1 ? 0 : 1);
	}
	close(pipefd[1]);
#ifdef SYS_pidfd_open
	/* slurmstepd's main thread reaps any child: a pidfd, never the pid,
	 * is what is killed. */
	if (child > 0)
		pidfd = (int)syscall(SYS_pidfd_open, child, 0);
#endif
	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	if (child < 0 || poll(&p, 1, 2000) != 1 || read(pipefd[0], &found, 1) != 1)
		found = 0;
	lwk_child_end(child, pidfd, NULL);
	close(pipefd[0]);
	free(env);
	return found;
}

/* A process of uid that is a task of the job here.  Slurm's job cgroup
 * says so where there is one (kernel data the user cannot stall);
 * only a process in no job's cgroup (Slurm without cgroups) is judged
 * by its environment (environ_names).  Only the job's own user counts:
 * another user could put any job id in an environment to make a live
 * job look crashed. */
static bool tasks_here(uint32_t job, uid_t uid, const char *node, const char *sluid)
{
	enum { CG = 65536, MOST = 256 };
	char *cg = malloc(CG); /* not static: threads ask too */
	int *dirs = malloc(sizeof(int) * (MOST + 1));
	struct dirent *e;
	DIR *d = cg && dirs ? opendir("/proc") : NULL;
	bool found = false;
	size_t n = 0;

	while (d && !found && (e = readdir(d))) {
		struct stat st;
		int dfd, in;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (!fstat(dfd, &st) && st.st_uid == uid && read_at(dfd, "cgroup", cg, CG) >= 0) {
			in = lwk_cgroup_job_of(cg, job, sluid);
			if (in >= 0)
				found = in == 1;
			else if (n < MOST) {
				dirs[n++] = dfd; /* its environment, later */
				continue;
			}
		}
		close(dfd);
	}
	if (d)
		closedir(d);
	if (!found && n)
		found = environ_names(dirs, n, job, node);
	while (n > 0)
		close(dirs[--n]);
	free(cg);
	free(dirs);
	return found;
}

const struct lwk_slurm_api *lwk_slurm_api_override;

/* Set (once, in the epilog's own process) when slurmctld is to be asked
 * from a child: lwk_job_alive_ask_apart(). */
static atomic_int ask_apart_ms;

/* The pointers dlsym gives are called through these types: they must be
 * the ones this Slurm's slurm.h declares. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&slurm_load_job), lwk_load_job_fn),
	       "lwk_load_job_fn is not slurm_load_job's type in this slurm/slurm.h");
_Static_assert(__builtin_types_compatible_p(__typeof__(&slurm_free_job_info_msg), lwk_free_job_fn),
	       "lwk_free_job_fn is not slurm_free_job_info_msg's type");
_Static_assert(__builtin_types_compatible_p(__typeof__(&slurm_hostlist_create), lwk_hl_create_fn),
	       "lwk_hl_create_fn is not slurm_hostlist_create's type");
_Static_assert(__builtin_types_compatible_p(__typeof__(&slurm_hostlist_find), lwk_hl_find_fn),
	       "lwk_hl_find_fn is not slurm_hostlist_find's type");
_Static_assert(__builtin_types_compatible_p(__typeof__(&slurm_hostlist_destroy), lwk_hl_destroy_fn),
	       "lwk_hl_destroy_fn is not slurm_hostlist_destroy's type");

lwk_job_key_t lwk_job_key_of(uint32_t job)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_step_id_t key = SLURM_STEP_ID_INITIALIZER;

	key.job_id = job;
	return key;
#else
	return job;
#endif
}

uint32_t lwk_job_key_id(lwk_job_key_t key)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	return key.job_id;
#else
	return key;
#endif
}

uint32_t lwk_job_info_id(const slurm_job_info_t *j)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	return j->step_id.job_id;
#else
	return j->job_id;
#endif
}

/* The job's SLUID from its record, as Slurm prints it; "" before 26.05,
 * whose cgroups are named job_<id> (the record has step_id.sluid from
 * 25.11, slurm/slurm.h). */
static void job_info_sluid(const slurm_job_info_t *j, char out[15])
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	if (j->step_id.sluid) {
		lwk_sluid_format(j->step_id.sluid, out);
		return;
	}
#else
	(void)j;
#endif
	out[0] = '\0';
}

/* lwk_job_allocated_here, and the job's SLUID into sluid when not NULL
 * and the answer is yes, asked in this process. */
static int ask_here(uint32_t job, const char *node, uid_t *uid, char sluid[15])
{
	/* Looked up each time (no static state): present in slurmd and
	 * slurmstepd, absent from the tests and tools that load no libslurm. */
	struct lwk_slurm_api api = {
		(lwk_load_job_fn)dlsym(RTLD_DEFAULT, "slurm_load_job"),
		(lwk_free_job_fn)dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg"),
		(lwk_hl_create_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_create"),
		(lwk_hl_find_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_find"),
		(lwk_hl_destroy_fn)dlsym(RTLD_DEFAULT, "slurm_hostlist_destroy"),
	};
	lwk_load_job_fn load;
	lwk_free_job_fn freejob;
	lwk_hl_create_fn hl_create;
	lwk_hl_find_fn hl_find;
	lwk_hl_destroy_fn hl_destroy;
	job_info_msg_t *msg = NULL;
	int answer = LWK_ALLOC_NO;

	if (lwk_slurm_api_override)
		api = *lwk_slurm_api_override;
	load = api.load_job;
	freejob = api.free_job;
	hl_create = api.hl_create;
	hl_find = api.hl_find;
	hl_destroy = api.hl_destroy;
	if (!load || !freejob || !hl_create || !hl_find || !hl_destroy)
		return LWK_ALLOC_NO_API;
	/* Root's process running as another user for now (slurmstepd sets
	 * its effective uid to the job's user around task set-up, for the
	 * whole process): the RPC would go as that user.  Cannot tell. */
	if (geteuid() != 0 && getuid() == 0)
		return LWK_ALLOC_UNKNOWN;
	errno = 0;
	if (load(&msg, lwk_job_key_of(job), SHOW_ALL | SHOW_LOCAL) != 0) {
		/* Purged after MinJobAge, or never was: gone.  Anything
		 * else (slurmctld down, a timeout): cannot tell. */
		return errno == ESLURM_INVALID_JOB_ID ? LWK_ALLOC_NO : LWK_ALLOC_UNKNOWN;
	}
	for (uint32_t i = 0; msg && i < msg->record_count; i++) {
		const slurm_job_info_t *j = &msg->job_array[i];
		uint32_t base = j->job_state & JOB_STATE_BASE;
		lwk_hostlist_t hl;

		if (lwk_job_info_id(j) != job)
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
			if (sluid)
				job_info_sluid(j, sluid);
		}
		hl_destroy(hl);
	}
	freejob(msg);
	return answer;
}

/* What a child that asked slurmctld hands back. */
struct answer {
	int alloc;
	uid_t uid;
	char sluid[15];
};

/*
 * ask_here in a child, given ms to answer.  The epilog runs in
 * "slurmstepd spank epilog" (_handle_spank_mode in slurmstepd.c), which
 * reads the lite conf and runs the plugins without the client plugins a
 * step gets: an RPC from it died in fatal("No hash plugins loaded")
 * (24.11) or on a NULL call (25.05 on: connections go through the conn
 * plugin).  libslurm's one public call that loads them is slurm_init(),
 * which fatal()s (exits) when one fails to load: called here, a failure
 * ends only the child, and the answer is "cannot tell".  No answer in
 * time is "cannot tell" too.
 */
/* The first question asked apart that got no answer (the child exited,
 * or gave none in time, or slurmctld did not answer it): after it,
 * this process asks no more. */
static atomic_int apart_failed;
static _Atomic int apart_status;

static int ask_apart(uint32_t job, const char *node, uid_t *uid, char sluid[15], int ms)
{
	struct answer a = { LWK_ALLOC_UNKNOWN, 0, "" };
	struct pollfd p;
	int pipefd[2], pidfd = -1, status = -1, polled = -1;
	bool answered;
	pid_t child;

	/* slurmctld that could not be asked once is not asked again by
	 * this epilog: 20 s a job would add up past its time limit. */
	if (atomic_load(&apart_failed))
		return LWK_ALLOC_UNKNOWN;
	if (pipe2(pipefd, O_CLOEXEC))
		return LWK_ALLOC_UNKNOWN;
	child = fork();
	if (child == 0) {
		void (*init)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "slurm_init");

		lwk_child_shed_fds(pipefd[1]);
		/* slurm_conf_init() inside returns at once: the epilog's
		 * process has its configuration already. */
		if (init)
			init(NULL);
		a.alloc = ask_here(job, node, &a.uid, a.sluid);
		_exit(write(pipefd[1], &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : 1);
	}
	close(pipefd[1]);
#ifdef SYS_pidfd_open
	if (child > 0)
		pidfd = (int)syscall(SYS_pidfd_open, child, 0);
#endif
	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN, .revents = 0 };
	if (child > 0) {
		struct timespec end, now;

		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += ms / 1000;
		end.tv_nsec += (long)(ms % 1000) * 1000000L;
		/* A signal is no timeout: poll again for the time left. */
		do {
			long left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = (end.tv_sec - now.tv_sec) * 1000L + (end.tv_nsec - now.tv_nsec) / 1000000L;
			polled = poll(&p, 1, left > 0 ? (int)left : 0);
		} while (polled < 0 && errno == EINTR);
	}
	answered = polled == 1 && read(pipefd[0], &a, sizeof(a)) == (ssize_t)sizeof(a);
	if (!answered)
		a.alloc = LWK_ALLOC_UNKNOWN;
	/* Nothing else reaps a child of the epilog's process: its pid is
	 * its own until reaped here, and a kill by pid is safe. */
	if (child > 0 && pidfd < 0)
		kill(child, SIGKILL);
	lwk_child_end(child, pidfd, &status);
	close(pipefd[0]);
	/* No fork is no answer from slurmctld: ask again next time. */
	if (child > 0 && (!answered || a.alloc == LWK_ALLOC_UNKNOWN)) {
		/* Killed here for want of an answer: "in time". */
		if (!answered && polled == 0)
			status = -1;
		atomic_store(&apart_status, answered ? -2 : status);
		atomic_store(&apart_failed, 1);
	}
	if (a.alloc == LWK_ALLOC_YES) {
		if (uid)
			*uid = a.uid;
		if (sluid) {
			memcpy(sluid, a.sluid, sizeof(a.sluid));
			sluid[14] = '\0';
		}
	}
	return a.alloc;
}

int lwk_job_alive_apart_failure(char *why, size_t len)
{
	int status = atomic_load(&apart_status);

	if (!atomic_load(&apart_failed))
		return 0;
	if (status == -2)
		snprintf(why, len, "it did not answer");
	else if (status < 0)
		snprintf(why, len, "no answer within %.1f s", atomic_load(&ask_apart_ms) / 1000.0);
	else if (WIFEXITED(status))
		snprintf(why, len, "libslurm ended the asking process with exit status %d",
			 WEXITSTATUS(status));
	else
		snprintf(why, len, "the asking process was killed by signal %d",
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return -1;
}

static int allocated_here(uint32_t job, const char *node, uid_t *uid, char sluid[15])
{
	int ms = atomic_load(&ask_apart_ms);

	return ms > 0 ? ask_apart(job, node, uid, sluid, ms) : ask_here(job, node, uid, sluid);
}

void lwk_job_alive_ask_apart(int ms)
{
	atomic_store(&ask_apart_ms, ms);
	atomic_store(&apart_failed, 0);
}

int lwk_job_allocated_here(uint32_t job, const char *node, uid_t *uid)
{
	return allocated_here(job, node, uid, NULL);
}

int lwk_lib_is_safe(const char *lib, char *resolved, size_t len, char *err, size_t errlen)
{
	char *real = realpath(lib, NULL), *slash;
	struct stat st;
	int rc = -1;

	if (!real) {
		snprintf(err, errlen, "%s: %s", lib, strerror(errno));
		return -1;
	}
	/* root loads it into a root process: only root may have written
	 * the file or the directory it is in. */
	if (stat(real, &st) || !S_ISREG(st.st_mode))
		snprintf(err, errlen, "%s: not a regular file", real);
	else if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		snprintf(err, errlen, "%s: not root's only (owner %u, mode %03o): not loaded", real,
			 (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 0777));
	else if (strlen(real) >= len)
		snprintf(err, errlen, "%s: path too long", real);
	else {
		slash = strrchr(real, '/');
		*slash = '\0';
		if (stat(slash == real ? "/" : real, &st) || st.st_uid != 0 ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			snprintf(err, errlen, "%s: its directory is not root's only: not loaded", lib);
		else {
			*slash = '/';
			snprintf(resolved, len, "%s", real);
			rc = 0;
		}
	}
	free(real);
	return rc;
}

int lwk_job_alive_load_slurm(const char *lib, char *err, size_t errlen)
{
	void (*init)(const char *);
	char real[4096];

	if (dlsym(RTLD_DEFAULT, "slurm_load_job"))
		return 0;
	if (lwk_lib_is_safe(lib, real, sizeof(real), err, errlen))
		return -1;
	if (!dlopen(real, RTLD_NOW | RTLD_GLOBAL)) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	init = (void (*)(const char *))dlsym(RTLD_DEFAULT, "slurm_init");
	if (init)
		init(NULL);
	if (!dlsym(RTLD_DEFAULT, "slurm_load_job")) {
		snprintf(err, errlen, "%s has no slurm_load_job", real);
		return -1;
	}
	return 0;
}

int lwk_job_liveness(uint32_t job)
{
	char node[256], sluid[15] = "";
	uid_t uid = 0;

	if (stepd_here(job))
		return LWK_LIVE_YES;
	lwk_this_node(node, sizeof(node));
	switch (allocated_here(job, node, &uid, sluid)) {
	case LWK_ALLOC_NO_API:
		/* No libslurm here (lwk-sweep could not load it): slurmctld
		 * cannot be asked, and a job between two steps has no
		 * slurmstepd here.  Cannot tell: the caller keeps it. */
		return LWK_LIVE_UNKNOWN;
	case LWK_ALLOC_UNKNOWN:
		return LWK_LIVE_UNKNOWN; /* slurmctld did not answer: keep it */
	case LWK_ALLOC_NO:
		return LWK_LIVE_GONE;
	default:
		/* Allocated, no slurmstepd: between two steps, unless its
		 * tasks still run here (their slurmstepd was killed). */
		return tasks_here(job, uid, node[0] ? node : NULL, sluid) ? LWK_LIVE_GONE : LWK_LIVE_YES;
	}
}

bool lwk_job_alive(uint32_t job)
{
	return lwk_job_liveness(job) != LWK_LIVE_GONE;
}
