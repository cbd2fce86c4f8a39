/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Backend mckernel: see lwk/mckernel.h. */
#define _GNU_SOURCE /* pipe2 */
#include "lwk/mckernel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* Root-owned and writable by root alone. */
static bool root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & 022);
}

/*
 * Open a tool root may run: a root-owned regular executable that no one
 * else can change, in directories no one else can change (else its name
 * could be made to point elsewhere).  The fd, for fexecve: what was
 * checked is what runs.  -1 when not.
 */
static int open_trusted(const char *path)
{
	char real[PATH_MAX], dir[PATH_MAX];
	struct stat st;
	int fd;

	if (path[0] != '/' || !realpath(path, real))
		return -1;
	snprintf(dir, sizeof(dir), "%s", real);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		*slash = '\0';
		/* A sticky directory (/tmp) is fine: nobody else may rename
		 * or remove root's entries in it. */
		if (stat(dir[0] ? dir : "/", &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			return -1;
		if (!dir[0])
			break;
	}
	fd = open(real, O_RDONLY); /* no O_CLOEXEC: a script's interpreter reads it */
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !root_only(&st) || !(st.st_mode & 0100)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool trusted(const char *path)
{
	int fd = open_trusted(path);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void tool(const char *prefix, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", prefix, name);
}

bool lwk_mck_installed(const char *prefix)
{
	char p[512];

	tool(prefix, "sbin/mcreboot.sh", p, sizeof(p));
	return trusted(p);
}

int lwk_mck_boot_argv(const char *prefix, const struct lwk_topology *t, const struct lwk_plan *p,
		      uid_t uid, gid_t gid, char store[LWK_MCK_ARGS][4096],
		      const char *argv[LWK_MCK_ARGS + 1], char *err, size_t errlen)
{
	int n = 0;

	if (lwk_plan_mem_arg(p, store[6], sizeof(store[6])) || !store[6][0])
		return ERR("lwk: --lwk: backend=mckernel needs memory for McKernel: give mem= "
			   "(for example mem=4G)");
	if (lwk_plan_ikc_map(t, p, store[8], sizeof(store[8])))
		return ERR("lwk: --lwk: backend=mckernel: no OS core to take the IKC messages");
	tool(prefix, "sbin/mcreboot.sh", store[0], sizeof(store[0]));
	argv[n++] = store[0];
	snprintf(store[1], sizeof(store[1]), "-c");
	argv[n++] = store[1];
	lwk_cpulist_format(&p->app_cpus, store[2], sizeof(store[2]));
	argv[n++] = store[2];
	snprintf(store[5], sizeof(store[5]), "-m");
	argv[n++] = store[5];
	argv[n++] = store[6];
	snprintf(store[7], sizeof(store[7]), "-r");
	argv[n++] = store[7];
	argv[n++] = store[8];
	/* The job's user owns the LWK's device files: its mcexec may use
	 * them, nobody else's. */
	snprintf(store[9], sizeof(store[9]), "-o");
	argv[n++] = store[9];
	snprintf(store[10], sizeof(store[10]), "%u:%u", (unsigned)uid, (unsigned)gid);
	argv[n++] = store[10];
	argv[n] = NULL;
	return 0;
}

/* In the child: stdin /dev/null, stdout and stderr the pipe's end
 * out_w, the tool (tfd) as fd 3 and nothing else open; then the tool. */
static void __attribute__((noreturn)) exec_tool(int out_w, int tfd, const char *const argv[])
{
	static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	/* Out of the way of 0-3 first (a parent with stdio closed could
	 * have them there). */
	int out_fd = fcntl(out_w, F_DUPFD, 10), tool_fd = fcntl(tfd, F_DUPFD, 10);
	int devnull = open("/dev/null", O_RDONLY);

	if (out_fd < 0 || tool_fd < 0 || devnull < 0 || dup2(devnull, 0) != 0 ||
	    dup2(out_fd, 1) != 1 || dup2(out_fd, 2) != 2 || dup2(tool_fd, 3) != 3)
		_exit(127);
	/* Nothing of slurmstepd's open files reaches the tool or the
	 * daemons it starts: only the tool itself, as fd 3. */
	if (close_range(4, ~0U, 0)) {
		long max = sysconf(_SC_OPEN_MAX);

		for (long f = 4; f < (max > 0 && max < 65536 ? max : 65536); f++)
			close((int)f);
	}
	setsid();
	fexecve(3, (char *const *)argv, envp);
	_exit(127);
}

/* The tool's output from fd into out until it closes it, or until
 * timeout_s is over (then its session is killed, and that said in out):
 * how many bytes out holds. */
static size_t read_output(int fd, pid_t pid, char *out, size_t outlen, int timeout_s)
{
	struct timespec start, now;
	size_t got = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		char buf[1024];
		ssize_t n;
		int left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout_s * 1000 - (int)((now.tv_sec - start.tv_sec) * 1000 +
						(now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0) {
			/* A hung tool: kill its session, report it. */
			kill(-pid, SIGKILL);
			snprintf(out + got, outlen - got, "%s(killed after %d s)", got ? "\n" : "",
				 timeout_s);
			break;
		}
		if (poll(&pfd, 1, left) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		if (got + 1 < outlen) {
			size_t take = (size_t)n < outlen - 1 - got ? (size_t)n : outlen - 1 - got;

			memcpy(out + got, buf, take);
			got += take;
			out[got] = '\0';
		}
	}
	return got;
}

/* Reaped within a bounded time: a tool stuck in the kernel (D state)
 * must not hold slurmstepd or the epilog forever.  0 with its status, or
 * -1 (said in out after the got bytes there). */
static int reap(pid_t pid, int *status, char *out, size_t outlen, size_t got)
{
	for (int i = 0;; i++) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if ((w < 0 && errno != EINTR) || i >= 1000) {
			snprintf(out + got, outlen - got, "%s(not reaped: left running)", got ? "\n" : "");
			return -1;
		}
		{
			struct timespec ten = { 0, 10 * 1000 * 1000 };

			nanosleep(&ten, NULL);
		}
	}
}

int lwk_mck_run(const char *const argv[], char *out, size_t outlen, int timeout_s)
{
	int pipefd[2], status = 0, tfd;
	size_t got;
	pid_t pid;

	if (outlen)
		out[0] = '\0';
	tfd = open_trusted(argv[0]);
	if (tfd < 0) {
		snprintf(out, outlen,
			 "%s is not a root-owned executable that only root can change, in "
			 "directories only root can change",
			 argv[0]);
		return -1;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		close(tfd);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(tfd);
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0)
		exec_tool(pipefd[1], tfd, argv);
	close(tfd);
	close(pipefd[1]);
	got = read_output(pipefd[0], pid, out, outlen, timeout_s);
	close(pipefd[0]);
	if (reap(pid, &status, out, outlen, got))
		return -1;
	/* Trailing newlines make log lines ragged. */
	while (got && out[got - 1] == '\n')
		out[--got] = '\0';
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run2(const char *prefix, const char *name, const char *a1, const char *a2,
		const char *a3, char *out, size_t outlen)
{
	char path[512];
	const char *argv[] = { path, a1, a2, a3, NULL };

	tool(prefix, name, path, sizeof(path));
	return lwk_mck_run(argv, out, outlen, 60);
}

int lwk_mck_boot(const char *prefix, const struct lwk_topology *t, const struct lwk_plan *p,
		 uid_t uid, gid_t gid, char *log, size_t loglen, char *err, size_t errlen)
{
	static char store[LWK_MCK_ARGS][4096];
	const char *argv[LWK_MCK_ARGS + 1];
	char out[2048], want[4096];
	struct lwk_cpuset got;
	int rc;

	if (lwk_mck_boot_argv(prefix, t, p, uid, gid, store, argv, err, errlen))
		return -1;
	rc = lwk_mck_run(argv, out, sizeof(out), 300);
	snprintf(log, loglen, "mcreboot.sh -c %s -m %s -r %s -o %s: exit %d%s%s", argv[2], argv[4],
		 argv[6], argv[8], rc, out[0] ? ": " : "", out);
	if (rc != 0) {
		snprintf(err, errlen, "lwk: --lwk: McKernel did not boot (mcreboot.sh exit %d): %.300s", rc, out);
		goto undo;
	}
	if (run2(prefix, "sbin/ihkosctl", "0", "get", "status", out, sizeof(out)) != 0 ||
	    !strstr(out, "RUNNING")) {
		snprintf(err, errlen, "lwk: --lwk: McKernel booted but its status is '%.100s', not RUNNING", out);
		goto undo;
	}
	/* IHK may reserve other CPUs than asked (offline, taken): check. */
	if (run2(prefix, "sbin/ihkconfig", "0", "query", "cpu", out, sizeof(out)) != 0 ||
	    lwk_cpulist_parse(out, LWK_MAX_CPUS, &got) || !lwk_cpuset_equal(&got, &p->app_cpus)) {
		lwk_cpulist_format(&p->app_cpus, want, sizeof(want));
		snprintf(err, errlen, "lwk: --lwk: IHK reserved CPUs '%.100s', not the App CPUs %.100s", out, want);
		goto undo;
	}
	return 0;
undo:
	lwk_mck_shutdown(prefix, out, sizeof(out));
	return -1;
}

bool lwk_mck_running(const char *prefix)
{
	char out[256];

	/* Any instance but an inactive or shut down one is someone's: a
	 * frozen or panicked McKernel is kept for its dump. */
	return run2(prefix, "sbin/ihkosctl", "0", "get", "status", out, sizeof(out)) == 0 &&
	       out[0] && !strstr(out, "INACTIVE") && !strstr(out, "SHUTDOWN");
}

int lwk_mck_shutdown(const char *prefix, char *log, size_t loglen)
{
	return run2(prefix, "sbin/mcstop+release.sh", NULL, NULL, NULL, log, loglen) == 0 ? 0 : -1;
}
