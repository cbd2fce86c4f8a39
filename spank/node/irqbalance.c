/* SPDX-License-Identifier: GPL-2.0-or-later */
/* irqbalance kept off the App cores through its socket: see irqbalance.h. */
#define _GNU_SOURCE
#include "node/irqbalance.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* irqbalance reads one message of at most 500 bytes and cuts the rest. */
#define MSG_MAX 480

int lwk_irqbalance_socket(const char *dir, char *path, size_t len)
{
	char pattern[4096];
	glob_t g;
	int rc = 0;

	if ((size_t)snprintf(pattern, sizeof(pattern), "%s/irqbalance*.sock", dir) >= sizeof(pattern))
		return -1;
	if (glob(pattern, 0, NULL, &g))
		return 0;
	if (g.gl_pathc)
		rc = (size_t)snprintf(path, len, "%s", g.gl_pathv[0]) < len ? 1 : -1;
	globfree(&g);
	return rc;
}

static long ms_left(const struct timespec *end)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

/* fd ready for events within the time left: 0, or -1 (timed out). */
static int wait_for(int fd, short events, const struct timespec *end)
{
	struct pollfd p = { .fd = fd, .events = events };
	long left;

	while ((left = ms_left(end)) > 0) {
		int n = poll(&p, 1, (int)left);

		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
	return -1;
}

/* The message with this process's credentials: irqbalance takes a
 * message only with SCM_CREDENTIALS of uid 0. */
static int send_with_credentials(int fd, const char *msg)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { (void *)msg, strlen(msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			    .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	struct ucred cred = { getpid(), geteuid(), getegid() };

	memset(control.buf, 0, sizeof(control.buf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(cred));
	memcpy(CMSG_DATA(c), &cred, sizeof(cred));
	return sendmsg(fd, &m, MSG_NOSIGNAL) == (ssize_t)strlen(msg) ? 0 : -1;
}

/* The time timeout_ms from now. */
static struct timespec deadline_in(int timeout_ms)
{
	struct timespec end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	return end;
}

/*
 * A connection to the daemon listening at path, which must be root's
 * (the kernel says who listens: SO_PEERCRED, its pid in this pid
 * namespace into *pid).  The fd; -2 when nobody listens there (a socket
 * left by a killed irqbalance); -1 with err.
 */
static int connect_to(const char *path, const struct timespec *end, long *pid, char *err,
		      size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred peer;
	socklen_t len = sizeof(peer);
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return ERR("lwk: irqbalance: socket path too long: %.64s...", path);
	memcpy(a.sun_path, path, strlen(path) + 1);
	/* Non-blocking throughout: irqbalance 1.9.2 serves its socket from
	 * the loop that sleeps between passes, with a backlog of one. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ERR("lwk: irqbalance: socket: %s", strerror(errno));
	/* A full backlog is EAGAIN on a Unix socket: again until the time
	 * is up. */
	while (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };

		if (errno == EINTR || (errno == EAGAIN && ms_left(end) > 0)) {
			nanosleep(&pause, NULL);
			continue;
		}
		int e = errno;

		close(fd);
		if (e == ECONNREFUSED || e == ENOENT)
			return -2;
		return ERR("lwk: irqbalance: connect %s: %s", path, strerror(e));
	}
	/* Root's, or this process's own user's (a test's stand-in). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) || (peer.uid != 0 && peer.uid != geteuid()) ||
	    peer.pid <= 0) {
		close(fd);
		return ERR("lwk: irqbalance: %s is not a root daemon's socket", path);
	}
	if (pid)
		*pid = peer.pid;
	return fd;
}

/* msg sent on fd, and the reply read (reply not NULL) until the daemon
 * closes: 0 or -1 with err. */
static int exchange(int fd, const char *msg, char *reply, size_t replylen,
		    const struct timespec *end, char *err, size_t errlen)
{
	size_t got = 0;

	if (wait_for(fd, POLLOUT, end))
		return ERR("lwk: irqbalance: it did not take '%.40s' in time", msg);
	if (send_with_credentials(fd, msg))
		return ERR("lwk: irqbalance: sending '%.40s': %s", msg, strerror(errno));
	/* It answers "setup" and closes; "settings" it closes unanswered. */
	while (reply && got + 1 < replylen) {
		ssize_t n;

		if (wait_for(fd, POLLIN, end)) {
			reply[got] = '\0';
			return ERR("lwk: irqbalance: it did not answer '%.40s' in time", msg);
		}
		n = read(fd, reply + got, replylen - 1 - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (reply && replylen)
		reply[got] = '\0';
	return 0;
}

int lwk_irqbalance_ask(const char *path, const char *msg, char *reply, size_t replylen,
		       int timeout_ms, char *err, size_t errlen)
{
	struct timespec end = deadline_in(timeout_ms);
	int fd, rc;

	if (reply && replylen)
		reply[0] = '\0';
	if (strlen(msg) > MSG_MAX)
		return ERR("lwk: irqbalance: message of %zu bytes, more than its %d", strlen(msg), MSG_MAX);
	fd = connect_to(path, &end, NULL, err, errlen);
	if (fd == -2)
		return ERR("lwk: irqbalance: nobody listens on %s", path);
	if (fd < 0)
		return -1;
	rc = exchange(fd, msg, reply, replylen, &end, err, errlen);
	close(fd);
	return rc;
}

int lwk_irqbalance_parse_mask(const char *text, struct lwk_cpuset *out)
{
	const char *words[LWK_MAX_CPUS / 32 + 1];
	size_t lens[LWK_MAX_CPUS / 32 + 1];
	int n = 0;

	lwk_cpuset_zero(out);
	/* As irqbalance reads it (the kernel's bitmap syntax): words of at
	 * most eight hex digits (32 CPUs each), the most significant first,
	 * separated by commas; blanks around it are allowed. */
	text += strspn(text, " \t\n");
	for (const char *w = text;; w++) {
		size_t l = strspn(w, "0123456789abcdefABCDEF");

		/* Leading zeros are no bits: a word may have more digits. */
		while (l > 8 && *w == '0')
			w++, l--;
		if (l == 0 || l > 8 || n == (int)(sizeof(words) / sizeof(words[0])))
			return -1;
		words[n] = w;
		lens[n++] = l;
		w += l;
		if (*w != ',') {
			if (w[strspn(w, " \t\n")])
				return -1;
			break;
		}
	}
	for (int i = 0; i < n; i++) {
		unsigned int base = (unsigned int)(n - 1 - i) * 32;

		for (size_t d = 0; d < lens[i]; d++) {
			char c = words[i][lens[i] - 1 - d];
			int v = isdigit((unsigned char)c) ? c - '0' : tolower((unsigned char)c) - 'a' + 10;

			for (unsigned int b = 0; b < 4; b++) {
				unsigned int cpu = base + (unsigned int)d * 4 + b;

				if (!(v & (1 << b)))
					continue;
				if (cpu >= LWK_MAX_CPUS)
					return -1;
				lwk_cpuset_set(out, cpu);
			}
		}
	}
	return 0;
}

/* A whole small file (environ, a sysfs list) into buf: its length, or
 * -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t got = 0;
	ssize_t n = 0;

	if (fd < 0)
		return -1;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (n < 0)
		return -1;
	buf[got] = '\0';
	return (ssize_t)got;
}

/* sysfs's CPU list file name (isolated, nohz_full) added to out. */
static void add_sysfs_list(const char *sysfs, const char *name, struct lwk_cpuset *out)
{
	char path[4096], text[4096];
	struct lwk_cpuset s;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/%s", sysfs, name);
	if (read_small(path, text, sizeof(text)) > 0 && lwk_cpulist_parse(text, LWK_MAX_CPUS, &s) == 0)
		lwk_cpuset_or(out, &s);
}

int lwk_irqbalance_own(const char *proc, const char *sysfs, long pid, struct lwk_cpuset *out)
{
	char path[4096], env[65536];
	ssize_t n;

	lwk_cpuset_zero(out);
	snprintf(path, sizeof(path), "%s/%ld/environ", proc, pid);
	n = read_small(path, env, sizeof(env));
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(env + i) + 1) {
		const char *v = env + i;

		/* Its order: the mask, then the list, each when not empty. */
		if (!strncmp(v, "IRQBALANCE_BANNED_CPUS=", 23) && v[23])
			return lwk_irqbalance_parse_mask(v + 23, out) ? -1 : 0;
	}
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(env + i) + 1) {
		const char *v = env + i;

		if (!strncmp(v, "IRQBALANCE_BANNED_CPULIST=", 26) && v[26])
			return lwk_cpulist_parse(v + 26, LWK_MAX_CPUS, out) ? -1 : 0;
	}
	add_sysfs_list(sysfs, "isolated", out);
	add_sysfs_list(sysfs, "nohz_full", out);
	return n < 0 ? 1 : 0;
}

int lwk_irqbalance_ban(const char *dir, const char *proc, const char *sysfs,
		       const struct lwk_cpuset *app, char *err, size_t errlen)
{
	struct timespec end = deadline_in(2000);
	char pattern[4096], msg[MSG_MAX + 1];
	struct lwk_cpuset ban;
	int fd = -2, rc = -1;
	long pid = 0;
	glob_t g;

	if ((size_t)snprintf(pattern, sizeof(pattern), "%s/irqbalance*.sock", dir) >= sizeof(pattern))
		return ERR("lwk: irqbalance: socket path too long below %.64s", dir);
	if (glob(pattern, 0, NULL, &g))
		return 0;
	/* The one a live daemon listens on: a socket left by a killed
	 * irqbalance may sort first. */
	for (size_t i = 0; i < g.gl_pathc && fd == -2; i++)
		fd = connect_to(g.gl_pathv[i], &end, &pid, err, errlen);
	globfree(&g);
	if (fd < 0)
		return fd == -2 ? 0 : -1;
	if (!app) {
		snprintf(msg, sizeof(msg), "settings cpus NULL");
	} else if (lwk_irqbalance_own(proc, sysfs, pid, &ban)) {
		/* What it keeps IRQs off by itself, which the ban replaces,
		 * is kept in it: unknown, nothing is sent. */
		snprintf(err, errlen, "lwk: irqbalance: cannot tell which CPUs it bans by itself "
		    "(pid %ld: its environment unreadable or its ban unparsable)", pid);
		goto out;
	} else {
		lwk_cpuset_or(&ban, app);
		if (lwk_cpulist_format(&ban, msg + 14, sizeof(msg) - 14) >= sizeof(msg) - 14) {
			snprintf(err, errlen, "lwk: irqbalance: the CPUs to ban do not fit its message");
			goto out;
		}
		memcpy(msg, "settings cpus ", 14);
	}
	rc = exchange(fd, msg, NULL, 0, &end, err, errlen) ? -1 : 1;
out:
	close(fd);
	return rc;
}
