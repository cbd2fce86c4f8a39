/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Starting the sampler (syncmon/control.h): as root, from a job step's
 * slurmstepd.  The checked program is exec'd by a detached grandchild
 * that holds the job's lock, and its pid is on record before the start
 * returns.  The stop and the sweep are in syncmon/stop.c.
 */
#define _GNU_SOURCE /* dup3, fexecve */
#include "syncmon/control.h"

#include "node/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Open the sampler and check the file that was opened (not its name,
 * which could change before exec): root will run it, so it must be
 * root's and only root's to change.  Returns the fd, to fexecve().
 */
static int open_program(const char *program, char *err, size_t errlen)
{
	struct stat st;
	int fd = program[0] == '/' ? open(program, O_RDONLY | O_CLOEXEC) : -1;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) || !(st.st_mode & 0100)) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen,
			 "lwk: sampler %s is missing, or not a root-owned executable that only "
			 "root can write (plugstack.conf syncmon=)", program);
		return -1;
	}
	return fd;
}

/* The decimal digits of v, without stdio (used between fork and exec). */
static size_t utoa(unsigned long v, char *buf)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		buf[i++] = tmp[--n];
	buf[i++] = '\n';
	return i;
}

/* Read exactly len bytes from fd within the deadline (CLOCK_MONOTONIC
 * ms); how many came before EOF, an error or the deadline.  *ended
 * (when not NULL) says whether it stopped at EOF or an error, not the
 * deadline. */
static size_t read_within(int fd, void *buf, size_t len, uint64_t deadline_ms, bool *ended)
{
	size_t got = 0;

	if (ended)
		*ended = false;
	while (got < len) {
		struct timespec now;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now_ms;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
		if (now_ms >= deadline_ms)
			break;
		if (poll(&p, 1, (int)(deadline_ms - now_ms)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!p.revents)
			continue;
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (ended)
				*ended = true;
			break;
		}
		got += (size_t)n;
	}
	return got;
}

/*
 * Record the sampler's pid for the epilog: written beside and renamed
 * into place, so a reader never sees a half-written file.
 */
static int write_pid(const char *state, pid_t pid)
{
	char path[4200], tmp[4200], text[24];
	size_t len = utoa((unsigned long)pid, text);
	int fd, ok;

	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	snprintf(tmp, sizeof(tmp), "%s/syncmon.pid.new", state);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t)len;
	ok = !close(fd) && ok;
	if (!ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * Take the job's lock on this node: 1 taken (*lock_fd holds it), 0
 * already held (this job's sampler runs here), -1 error (message in
 * err).  On 0 and -1 prog_fd is closed as well.
 */
static int take_lock(const char *state, int prog_fd, int *lock_fd, char *err, size_t errlen)
{
	char lock[4200];

	snprintf(lock, sizeof(lock), "%s/syncmon.lock", state);
	for (int tries = 0;; tries++) {
		struct stat held, named;

		*lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (*lock_fd < 0) {
			snprintf(err, errlen, "lwk: cannot open %s: %s", lock, strerror(errno));
			close(prog_fd);
			return -1;
		}
		if (flock(*lock_fd, LOCK_EX | LOCK_NB)) {
			int e = errno;

			close(*lock_fd);
			close(prog_fd);
			if (e == EWOULDBLOCK)
				return 0; /* this job's sampler already runs on this node */
			snprintf(err, errlen, "lwk: cannot lock %s: %s", lock, strerror(e));
			return -1;
		}
		/* A stop removes the lock file while it holds the lock: the
		 * one taken must still be the one the path names. */
		if (!fstat(*lock_fd, &held) && !stat(lock, &named) && held.st_dev == named.st_dev &&
		    held.st_ino == named.st_ino)
			return 1;
		close(*lock_fd);
		if (tries == 3) {
			snprintf(err, errlen, "lwk: %s keeps being removed under the start", lock);
			close(prog_fd);
			return -1;
		}
	}
}

/*
 * What the child needs to become the sampler, all made before the fork:
 * after it only async-signal-safe calls (this is a multi-threaded
 * slurmstepd).
 */
struct launch {
	const struct lwk_syncmon_start *a;
	const char *state;
	int prog_fd, lock_fd, ready[2];
	/* On this thread's stack: two steps' threads may start at once. */
	char escape[LWK_ESCAPE_MAX][512];
	int nescape;
	char opt_job[16], opt_uid[16], opt_gid[16], opt_mem[24], opt_cpu[24], opt_fifo[16];
};

/* The cgroup.procs files that take the sampler out of the job's
 * cgroups, from this process's own (lwk_cgroup_escape_paths). */
static int find_escapes(const struct lwk_syncmon_start *a, char escape[][512])
{
	char buf[8192];
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return lwk_cgroup_escape_paths(buf, a->job, a->cgroup_root, escape, LWK_ESCAPE_MAX);
}

/*
 * In the child: detach twice (the sampler must outlive this step and not
 * be one of its processes), and give every signal its default
 * disposition, unblocked.  Returns in the grandchild only.
 */
static void detach(void)
{
	sigset_t all;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	setsid();
	if (fork() != 0)
		_exit(0); /* a failed fork: the pipe closes with no pid */
	/* Default dispositions: an ignored SIGTERM would survive exec
	 * and the epilog's stop could not end a sampler that has not
	 * set its handler yet. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

/*
 * In the child: fd 3: the locked file, held for the sampler's life (no
 * close-on-exec); fd 4: the checked program, for fexecve; fd 5: the pipe
 * (kept across exec: --ready-fd 5; the sampler closes it at once unless
 * it was asked for source=bpf); 0, 1 and 2 on /dev/null; nothing else.  Each first
 * moves out of the way so that placing one cannot clobber another.
 */
static int place_fds(const struct launch *l)
{
	int null, lk, prog, wr;

	lk = fcntl(l->lock_fd, F_DUPFD_CLOEXEC, 10);
	prog = fcntl(l->prog_fd, F_DUPFD_CLOEXEC, 10);
	wr = fcntl(l->ready[1], F_DUPFD_CLOEXEC, 10);
	if (lk < 0 || prog < 0 || wr < 0)
		return -1;
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	if (dup2(lk, 3) < 0 || fcntl(3, F_SETFD, 0) < 0 || dup3(prog, 4, O_CLOEXEC) < 0 ||
	    dup2(wr, 5) < 0)
		return -1;
	closefrom(6);
	return 0;
}

/* In the child: move process me out of the job's cgroups. */
static void escape_cgroups(const struct launch *l, pid_t me)
{
	for (int i = 0; i < l->nescape; i++) {
		char pidtxt[24];
		size_t len = utoa((unsigned long)me, pidtxt);
		int fd = open(l->escape[i], O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			if (write(fd, pidtxt, len) < 0) {
				/* best effort: the epilog still stops it */
			}
			close(fd);
		}
	}
}

#define SAMPLER_ARGV 32

/* In the child: exec the checked program (fd 4); returns only when
 * that failed, after reporting its errno on the pipe (fd 5). */
static void exec_sampler(const struct launch *l)
{
	const struct lwk_syncmon_start *a = l->a;
	/* At most 28: 21 always (the program and ten options with their
	 * values), 2 each for --cgroup, --cpus and --fifo, the NULL.  Count
	 * again when adding one. */
	const char *argv[SAMPLER_ARGV];
	int i = 0, e;
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

	argv[i++] = a->program;
	argv[i++] = "--job";
	argv[i++] = l->opt_job;
	argv[i++] = "--node";
	argv[i++] = a->node;
	argv[i++] = "--uid";
	argv[i++] = l->opt_uid;
	argv[i++] = "--gid";
	argv[i++] = l->opt_gid;
	argv[i++] = "--dir";
	argv[i++] = a->dir;
	argv[i++] = "--state";
	argv[i++] = l->state;
	argv[i++] = "--options";
	argv[i++] = a->options;
	argv[i++] = "--ready-fd";
	argv[i++] = "5";
	argv[i++] = "--memory-max";
	argv[i++] = l->opt_mem;
	argv[i++] = "--cpu-max";
	argv[i++] = l->opt_cpu;
	if (a->cgroup) {
		argv[i++] = "--cgroup";
		argv[i++] = a->cgroup;
	}
	if (a->cpus) {
		argv[i++] = "--cpus";
		argv[i++] = a->cpus;
	}
	if (a->fifo) {
		argv[i++] = "--fifo";
		argv[i++] = l->opt_fifo;
	}
	argv[i] = NULL;
	fexecve(4, (char *const *)argv, envp);
	e = errno;
	if (write(5, "x", 1) < 0 || write(5, &e, sizeof(e)) < 0) {
		/* the starter sees a closed pipe: still an error */
	}
}

/* The child, which becomes the sampler: never returns. */
/* slurmstepd runs at oom_score_adj -1000, which its children inherit:
 * the sampler, whose memory grows with the job's processes, is left to
 * the OOM killer as the job's own processes are, not the last one. */
static void drop_oom_protection(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "0", 1) != 1) {
			/* A kernel without it: the sampler runs as before. */
		}
		close(fd);
	}
}

static void run_child(const struct launch *l) __attribute__((noreturn));
static void run_child(const struct launch *l)
{
	pid_t me;

	close(l->ready[0]);
	detach();
	if (place_fds(l))
		_exit(127);
	me = getpid();
	if (write(5, &me, sizeof(me)) != (ssize_t)sizeof(me))
		_exit(127);
	escape_cgroups(l, me);
	drop_oom_protection();
	exec_sampler(l);
	_exit(127);
}

/*
 * The child's report on the pipe fd: the sampler's pid, then "o" (the
 * sampler runs, its source open: at once unless source=bpf), "x" and the
 * errno of a failed exec, or "r" and the sampler's refusal of the job's
 * options (source=bpf on a node where it cannot work).  The pipe closing
 * with nothing said means the sampler stopped before it could say (it
 * crashed, its loader failed, it is older than this plugin): with
 * must_open (source=bpf) the job fails as for a refusal, else no sampler
 * runs and the job goes on.  No word by the deadline (a slow load; a
 * stray copy of the pipe's write end held by another thread's fork):
 * taken as running, its pid recorded for the epilog.  Returns the pid,
 * -1 (message in err), or -2 for the job's failure (the reason in err).
 * Closes fd.
 */
static pid_t await_report(int fd, const char *program, bool must_open, char *err, size_t errlen)
{
	pid_t sampler = 0;
	int exec_errno = 0;
	struct timespec now;
	uint64_t deadline;
	char msg[600];
	size_t got;
	bool ended;

	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000 + 20000;
	if (read_within(fd, &sampler, sizeof(sampler), deadline, NULL) != sizeof(sampler) ||
	    sampler <= 1) {
		close(fd);
		snprintf(err, errlen, "lwk: cannot start the sampler %s: it did not report", program);
		return -1;
	}
	got = read_within(fd, msg, 1, deadline, &ended);
	if (got == 1 && msg[0] != 'o')
		got += read_within(fd, msg + 1, sizeof(msg) - 2, deadline, &ended);
	close(fd);
	msg[got] = '\0';
	if (got == 1 + sizeof(exec_errno) && msg[0] == 'x') {
		memcpy(&exec_errno, msg + 1, sizeof(exec_errno));
		snprintf(err, errlen, "lwk: cannot run the sampler %s: %s", program,
			 strerror(exec_errno));
		return -1; /* it exited: its lock went with it */
	}
	if (got > 1 && msg[0] == 'r') {
		snprintf(err, errlen, "lwk: %s", msg + 1);
		return -2; /* it exits by itself */
	}
	if (got == 0 && ended) {
		snprintf(err, errlen,
			 "lwk: --sync-monitor: the sampler %s stopped before its source was open "
			 "(the slurmd log has its words once the job ends)", program);
		return must_open ? -2 : -1;
	}
	return sampler;
}

int lwk_syncmon_start(const struct lwk_syncmon_start *a, char *err, size_t errlen)
{
	char state[4096];
	struct launch l;
	pid_t child, sampler;
	int status, locked;

	l.a = a;
	l.state = state;
	l.nescape = 0;
	if (lwk_state_dir(a->state_root, a->node, a->job, state, sizeof(state), err, errlen) ||
	    (l.prog_fd = open_program(a->program, err, errlen)) < 0)
		return -1;
	locked = take_lock(state, l.prog_fd, &l.lock_fd, err, errlen);
	if (locked <= 0)
		return locked;
	if (a->cgroup_root)
		l.nescape = find_escapes(a, l.escape);
	snprintf(l.opt_job, sizeof(l.opt_job), "%u", a->job);
	snprintf(l.opt_uid, sizeof(l.opt_uid), "%u", (unsigned)a->uid);
	snprintf(l.opt_gid, sizeof(l.opt_gid), "%u", (unsigned)a->gid);
	snprintf(l.opt_mem, sizeof(l.opt_mem), "%llu", (unsigned long long)a->memory_max);
	snprintf(l.opt_cpu, sizeof(l.opt_cpu), "%llu", (unsigned long long)a->cpu_max);
	snprintf(l.opt_fifo, sizeof(l.opt_fifo), "%u", a->fifo);

	/*
	 * The sampler reports on this pipe: its pid first, then either
	 * nothing (the pipe closes when exec succeeds: close-on-exec) or the
	 * errno of a failed exec.  So the pid is on record before this
	 * returns, and then it is the sampler's own: a job that ends at once
	 * still has its sampler stopped by the epilog.
	 */
	if (pipe2(l.ready, O_CLOEXEC)) {
		snprintf(err, errlen, "lwk: cannot make a pipe for the sampler: %s", strerror(errno));
		close(l.lock_fd);
		close(l.prog_fd);
		return -1;
	}
	child = fork();
	if (child < 0) {
		snprintf(err, errlen, "lwk: cannot fork the sampler: %s", strerror(errno));
		close(l.ready[0]);
		close(l.ready[1]);
		close(l.lock_fd);
		close(l.prog_fd);
		return -1;
	}
	if (child == 0)
		run_child(&l);
	close(l.ready[1]);
	close(l.lock_fd); /* the sampler keeps the lock through its own fd */
	close(l.prog_fd);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	sampler = await_report(l.ready[0], a->program, a->must_open, err, errlen);
	if (sampler < 0)
		return (int)sampler;
	if (write_pid(state, sampler)) {
		/* The stop still finds it by its command line. */
		snprintf(err, errlen, "lwk: cannot record the sampler's pid in %s: %s", state,
			 strerror(errno));
	}
	return 1;
}
