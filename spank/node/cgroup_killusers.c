/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stopping a job that keeps CPUs it was not given (see
 * lwk_cgroup_kill_users in cgroup.h): its processes found from every
 * process's threads in /proc (the user can rename or move their cgroups
 * below the step, never the job's path), and in its tree's lists (first
 * on v1; where a path is too deep for the kernel to print); slurmstepd
 * is left to end the job. */
#include "node/cgroup_users.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the kill ---------------------------------------------------------------- */

#define TEXT 65536

struct lwk_killer {
	const struct lwk_cgroup *cg;
	int procfd; /* <proc> */
	double deadline; /* CLOCK_MONOTONIC seconds: the node lock is held */
	long *hit, nhit, caphit; /* signalled from the lists, sorted before the scan */
	char *text; /* a heap buffer of TEXT bytes */
	int signalled, found;
	bool whole;
	/* A process seen a thread of which sits deeper than the kernel
	 * prints a path (4096 bytes): the job's tree's lists are read. */
	bool deep;
};

/* <dirfd>/<file> (kernel text, never a user's file) into k->text: its
 * length, or -1 (errno). */
static ssize_t read_text(struct lwk_killer *k, int dirfd, const char *file)
{
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, k->text, TEXT - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	k->text[n] = '\0';
	return n;
}

/* Does a cgroup file's text (k->text) place the thread in the job's
 * tree? */
static bool line_in_job(struct lwk_killer *k)
{
	return lwk_cgroup_text_places(k->text, k->cg->version == LWK_CGROUP_V2 ? NULL : "cpuset",
				      k->cg->path);
}

/* Where the process of /proc/<pid> (pdir) is: 1 when a thread of it is
 * in the job's tree (on v1 threads may sit apart), -1 when none is but
 * one's path is too long to print (ENAMETOOLONG), else 0. */
static int threads_in_job(struct lwk_killer *k, int pdir)
{
	int tfd = openat(pdir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC), where = 0;
	DIR *d = tfd >= 0 ? fdopendir(tfd) : NULL;
	struct dirent *e;

	if (!d) {
		if (tfd >= 0)
			close(tfd);
		return 0; /* gone */
	}
	while (where != 1 && (e = readdir(d))) {
		char file[300];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false; /* a process of very many threads */
			break;
		}
		snprintf(file, sizeof(file), "%s/cgroup", e->d_name);
		if (read_text(k, dirfd(d), file) < 0)
			where = errno == ENAMETOOLONG ? -1 : where;
		else if (line_in_job(k))
			where = 1;
	}
	closedir(d);
	return where;
}

/* Slurm's own: root's, its executable slurmstepd (Debian's is
 * slurmstepd-wlm).  Only root runs a root process.  1 when it is, 0
 * when not (a root process with no executable left is exiting; one
 * whose path is too long to read is not Slurm's), -1 when it cannot be
 * told (out of fds, reaped meanwhile: then it is not signalled, and
 * the round is not whole). */
static int slurms(struct lwk_killer *k, int pdir)
{
	char exe[4096];
	const char *base;
	ssize_t l;
	char *uid;

	if (read_text(k, pdir, "status") <= 0 || !(uid = strstr(k->text, "\nUid:\t")))
		return -1;
	if (strtol(uid + 6, NULL, 10) != 0)
		return 0;
	l = readlinkat(pdir, "exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return errno == ENOENT || errno == ENAMETOOLONG ? 0 : -1;
	exe[l] = '\0';
	base = strrchr(exe, '/');
	return base && !strncmp(base + 1, "slurmstepd", 10);
}

static void signal_pinned(struct lwk_killer *k, int pidfd)
{
	k->found++;
#ifdef SYS_pidfd_send_signal
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
		k->signalled++;
#endif
}

/* One process of the node: pinned with a pidfd, then judged from its
 * /proc entry, then signalled through the pidfd.  Had the pinned process
 * died and its pid gone to another before the entry was read, the
 * signal would find the pinned one gone: never another process. */
static void judge(struct lwk_killer *k, int procfd, const char *name)
{
	long pid = strtol(name, NULL, 10);
	int pidfd = -1, pdir, where, stepd;

	errno = ENOSYS;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
	if (pidfd < 0) {
		if (errno != ESRCH)
			k->whole = false; /* no pidfds: nothing is killed */
		return;
	}
	pdir = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pdir < 0 && errno != ENOENT && errno != ESRCH)
		k->whole = false; /* out of fds: not judged */
	where = pdir >= 0 ? threads_in_job(k, pdir) : 0;
	if (where == -1)
		k->deep = true;
	else if (where == 1 && (stepd = slurms(k, pdir)) == 0)
		signal_pinned(k, pidfd);
	else if (where == 1 && stepd < 0)
		k->whole = false;
	if (pdir >= 0)
		close(pdir);
	close(pidfd);
}

static int by_pid(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The pids of dirfd's cgroup.procs, sorted; their count, or -1. */
static long read_pids(int dirfd, long **pids)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	long n = 0, cap = 0, pid;

	*pids = NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (fscanf(f, "%ld", &pid) == 1) {
		if (n == cap) {
			long *more = realloc(*pids, sizeof(*more) * (size_t)(cap = cap ? cap * 2 : 64));

			if (!more) {
				fclose(f);
				free(*pids);
				*pids = NULL;
				errno = ENOMEM;
				return -1; /* a short list would leave some unjudged */
			}
			*pids = more;
		}
		(*pids)[n++] = pid;
	}
	fclose(f);
	if (n)
		qsort(*pids, (size_t)n, sizeof(**pids), by_pid);
	return n;
}

/* A cgroup of the job's tree, walked when a process too deep to print
 * was seen: each process it lists is pinned, then the list read again;
 * one still listed is in the job (whatever it was before the pin), and
 * is signalled unless it is slurmstepd. */
bool lwk_killer_listed(int dirfd, const char *name, int level, void *arg)
{
	struct lwk_killer *k = arg;
	long *before, *after, n, m;
	int *fds;

	(void)name;
	(void)level;
	if (dirfd < 0)
		return false;
	if ((n = read_pids(dirfd, &before)) < 0) {
		k->whole = errno == ENOENT && k->whole;
		return false;
	}
	fds = malloc(sizeof(*fds) * (size_t)(n ? n : 1));
	for (long i = 0; fds && i < n; i++) {
		fds[i] = -1;
		errno = ENOSYS;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
		fds[i] = (int)syscall(SYS_pidfd_open, (pid_t)before[i], 0);
#endif
		if (fds[i] < 0 && errno != ESRCH)
			k->whole = false; /* not pinned (no pidfds, out of fds): not judged */
	}
	if (!fds)
		k->whole = false;
	m = fds ? read_pids(dirfd, &after) : -1;
	if (fds && m < 0 && errno != ENOENT)
		k->whole = false;
	for (long i = 0; m > 0 && i < n; i++) {
		char name_[32];
		int pdir, stepd;

		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false;
			break;
		}
		if (fds[i] < 0 || !bsearch(&before[i], after, (size_t)m, sizeof(*after), by_pid))
			continue;
		snprintf(name_, sizeof(name_), "%ld", before[i]);
		pdir = openat(k->procfd, name_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pdir < 0 && errno != ENOENT && errno != ESRCH)
			k->whole = false; /* out of fds: not judged */
		stepd = pdir >= 0 ? slurms(k, pdir) : 0; /* no entry: gone */
		if (stepd < 0)
			k->whole = false;
		if (stepd == 0 && pdir >= 0) {
			signal_pinned(k, fds[i]);
			if (k->nhit == k->caphit) {
				long want = k->caphit ? k->caphit * 2 : 64;
				long *more = realloc(k->hit, sizeof(*more) * (size_t)want);

				if (more) {
					k->hit = more;
					k->caphit = want;
				}
			}
			if (k->nhit < k->caphit)
				k->hit[k->nhit++] = before[i];
		}
		if (pdir >= 0)
			close(pdir);
	}
	for (long i = 0; fds && i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (m > 0)
		free(after);
	free(fds);
	free(before);
	return lwk_cgroup_clock() > k->deadline; /* then the walk stops, unsure */
}

/* The pids of <proc>, sorted; their count, or -1. */
static long proc_pids(int procfd, long **pids)
{
	int fd = fcntl(procfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	long n = 0, cap = 0;
	struct dirent *e;

	*pids = NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (n == cap) {
			long *more = realloc(*pids, sizeof(*more) * (size_t)(cap = cap ? cap * 2 : 1024));

			if (!more) {
				closedir(d);
				free(*pids);
				*pids = NULL;
				return -1;
			}
			*pids = more;
		}
		(*pids)[n++] = strtol(e->d_name, NULL, 10);
	}
	closedir(d);
	if (n)
		qsort(*pids, (size_t)n, sizeof(**pids), by_pid);
	return n;
}

struct lwk_killer *lwk_killer_open(const struct lwk_cgroup *cg, const char *proc, double deadline)
{
	struct lwk_killer *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	*k = (struct lwk_killer){ .cg = cg, .deadline = deadline, .whole = true, .text = malloc(TEXT) };
	k->procfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!k->text || k->procfd < 0) {
		if (k->procfd >= 0)
			close(k->procfd);
		free(k->text);
		free(k);
		return NULL;
	}
	return k;
}

int lwk_killer_close(struct lwk_killer *k)
{
	int signalled = k->signalled;

	close(k->procfd);
	free(k->text);
	free(k->hit);
	free(k);
	return signalled;
}

int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, struct lwk_kill *kl)
{
	double t0 = lwk_cgroup_clock(), round = kl->deadline < t0 + 1 ? kl->deadline : t0 + 1;
	struct lwk_killer *k;
	long *pids = NULL, n, start = 0;
	int found;
	struct walk w;

	kl->whole = false;
	if (!cg->path[0] || !cg->path[1]) /* never the whole hierarchy */
		return 0;
	if (!(k = lwk_killer_open(cg, proc, round)))
		return 0;
	if ((n = proc_pids(k->procfd, &pids)) < 0) {
		lwk_killer_close(k);
		return 0;
	}
	/* On v1, once the tree is taken back, its lists say every process
	 * in it (a thread in a cgroup lists its process there): read first,
	 * for at most 0.4 s of the round, whatever the rest of the node
	 * holds; the scan below finds the processes of a tree too big for
	 * that. */
	if (cg->version == LWK_CGROUP_V1) {
		k->deadline = t0 + 0.4 < round ? t0 + 0.4 : round;
		if (lwk_cgroup_walk(cg, &w, k->deadline, lwk_killer_listed, NULL, k) || !w.whole)
			k->whole = false;
		k->deadline = round;
	}
	if (k->nhit)
		qsort(k->hit, (size_t)k->nhit, sizeof(*k->hit), by_pid);
	/* Every process of the node, from where the last round stopped:
	 * the user can rename or move the cgroups below the step, never the
	 * job's path above them.  Cut at the deadline (then unsure). */
	while (start < n && pids[start] <= kl->cursor)
		start++;
	for (long i = 0; i < n; i++) {
		long pid = pids[(start + i) % n];
		char name[24];

		if (lwk_cgroup_clock() > k->deadline) {
			k->whole = false;
			break;
		}
		snprintf(name, sizeof(name), "%ld", pid);
		if (!k->nhit || !bsearch(&pid, k->hit, (size_t)k->nhit, sizeof(*k->hit), by_pid))
			judge(k, k->procfd, name);
		kl->cursor = pid;
	}
	free(pids);
	if (k->deep && cg->version != LWK_CGROUP_V1) {
		if (lwk_cgroup_walk(cg, &w, k->deadline, lwk_killer_listed, NULL, k) || !w.whole)
			k->whole = false;
	}
	kl->whole = k->whole;
	found = k->found;
	kl->signalled += lwk_killer_close(k);
	return found;
}
