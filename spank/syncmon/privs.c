/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the root sampler holds, and for how long (syncmon/privs.h): its
 * output file, opened by a child that has become the job's user; the
 * capabilities loading its source needed, given up once it is open; and
 * for the job's life only what sampling needs.
 */
#define _GNU_SOURCE /* setresuid, CMSG_* */
#include "syncmon/privs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/*
 * The output file is created by a child that has become the job's user
 * for good (ids, groups, no capability left, no new privileges): root's
 * file-system identity alone (setfsuid) keeps CAP_SYS_PTRACE, with
 * which /proc/<pid>/cwd, root and fd/N of any process are followed
 * past directories the user cannot enter.  The child opens dir refusing
 * /proc's magic links (openat2 RESOLVE_NO_MAGICLINKS; without openat2,
 * the kernel's own check on another user's links), then the file
 * relative to it with O_EXCL|O_NOFOLLOW, and passes the fd back
 * (SCM_RIGHTS).  An existing file is never reused: a numbered name is
 * taken instead.  The parent waits OPEN_SECONDS at most (a stalled
 * NFS or FUSE mount), then kills the child.
 */
#define OPEN_SECONDS 10

static int open_dir_no_magic(const char *dir)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));

	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		/* No openat2 (before 5.6), or a seccomp filter without it. */
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return (int)fd;
}

/* Whether something traces this process (/proc/self/status). */
static bool traced(void)
{
	char buf[4096], *t;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	t = strstr(buf, "\nTracerPid:");
	return !t || strtol(t + 11, NULL, 10) != 0;
}

/* In the child: the job's user for good, or a message in why. */
static int become_user(uid_t uid, gid_t gid, char *why, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (!pw || initgroups(pw->pw_name, gid)) {
		snprintf(why, len, "cannot find the groups of uid %u", (unsigned)uid);
		return -1;
	}
	if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		snprintf(why, len, "cannot become uid %u gid %u: %s", (unsigned)uid, (unsigned)gid,
			 strerror(errno));
		return -1;
	}
	/* The change of ids made it as dumpable as fs.suid_dumpable says
	 * (1: the user could ptrace it): not dumpable, and no tracer that
	 * came in between. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || traced()) {
		snprintf(why, len, "cannot keep the user from tracing the opening of the output as uid %u",
			 (unsigned)uid);
		return -1;
	}
	return 0;
}

/* In the child, before it becomes the user: every fd but the socket
 * closed (the BPF objects, the taskstats socket, the log, the starter's
 * pipe are root's business). */
static void close_other_fds(int keep)
{
	if (keep > 3)
		syscall(SYS_close_range, 3U, (unsigned int)keep - 1, 0);
	if (syscall(SYS_close_range, (unsigned int)keep + 1, ~0U, 0) && errno == ENOSYS) {
		/* Before 5.9: one by one. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = 1024;
		for (unsigned int fd = 3; fd < rl.rlim_cur; fd++)
			if ((int)fd != keep)
				close((int)fd);
	}
}

/* The child's part: as the user, open; send "o<name>" with the fd, or
 * "e<why>" without one. */
static void open_in_child(int sock, const char *dir, const char *base, uid_t uid, gid_t gid)
{
	char msg[1200];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { .iov_base = msg };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;
	int dfd, fd = -1;

	close_other_fds(sock);
	msg[0] = 'e';
	if (become_user(uid, gid, msg + 1, sizeof(msg) - 1))
		goto send;
	dfd = open_dir_no_magic(dir);
	if (dfd < 0) {
		snprintf(msg + 1, sizeof(msg) - 1, "cannot open the output directory %s as uid %u: %s", dir,
			 (unsigned)uid,
			 errno == ELOOP ? "it goes through a /proc magic link or a loop of links"
					: strerror(errno));
		goto send;
	}
	for (int i = 0; i < 100 && fd < 0; i++) {
		char name[600];

		if (i == 0)
			snprintf(name, sizeof(name), "%s.jsonl", base);
		else
			snprintf(name, sizeof(name), "%s.%d.jsonl", base, i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			msg[0] = 'o';
			snprintf(msg + 1, sizeof(msg) - 1, "%s", name);
		} else if (errno != EEXIST) {
			snprintf(msg + 1, sizeof(msg) - 1, "cannot create %s/%s as uid %u: %s", dir, name,
				 (unsigned)uid, strerror(errno));
			break;
		}
	}
	close(dfd);
	if (fd < 0 && msg[0] == 'o')
		msg[0] = 'e';
send:
	iov.iov_len = strlen(msg) + 1;
	if (fd >= 0) {
		m.msg_control = control.buf;
		m.msg_controllen = sizeof(control.buf);
		cmsg = CMSG_FIRSTHDR(&m);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	(void)!sendmsg(sock, &m, MSG_NOSIGNAL);
}

/* The fds of a message's SCM_RIGHTS: the first into *fd if it is the
 * only one, every other closed. */
static void take_fds(struct msghdr *m, int *fd)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0 && n == 1)
				*fd = got;
			else
				close(got);
		}
	}
}

/* The parent's part: the fd the child sent, checked to be the file it
 * created (the user's, regular, one link, write-only), or -1 (said). */
static int receive_fd(int sock, uid_t uid, const char *dir, const volatile sig_atomic_t *stop, char *chosen,
		      size_t len, char *err, size_t errlen)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} control;
	char msg[1200];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = control.buf, .msg_controllen = sizeof(control.buf) };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + OPEN_SECONDS * 1000000000ULL, now;
	struct stat st;
	ssize_t n;
	int fd = -1, r = 0;

	while (!*stop && (now = now_ns(CLOCK_MONOTONIC)) < deadline) {
		r = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		if (r >= 0 || errno != EINTR)
			break;
	}
	if (r < 0 && errno != EINTR) {
		snprintf(err, errlen, "cannot wait for the output directory %s: poll: %s", dir, strerror(errno));
		return -1;
	}
	if (r <= 0) {
		if (*stop)
			snprintf(err, errlen, "stopped while opening the output directory %s", dir);
		else
			snprintf(err, errlen, "gave up opening the output directory %s after %d s", dir,
				 OPEN_SECONDS);
		return -1;
	}
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		snprintf(err, errlen, "the child opening %s as uid %u said nothing", dir, (unsigned)uid);
		return -1;
	}
	msg[n] = '\0';
	take_fds(&m, &fd);
	if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC) || msg[0] != 'o') {
		snprintf(err, errlen, "%s", msg[0] == 'e' ? msg + 1 : "the output file did not come back whole");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1 ||
	    (fcntl(fd, F_GETFL) & O_ACCMODE) != O_WRONLY) {
		snprintf(err, errlen, "the output file handed back is not the one created as uid %u in %s",
			 (unsigned)uid, dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = (ssize_t)strnlen(msg + 1, len - 1);
	memcpy(chosen, msg + 1, (size_t)n);
	chosen[n] = '\0';
	return fd;
}

int lwk_syncmon_open_as_user(const char *dir, const char *base, uid_t uid, gid_t gid,
			     const volatile sig_atomic_t *stop, char *chosen, size_t len, char *err,
			     size_t errlen)
{
	int sv[2], fd;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		snprintf(err, errlen, "cannot open the output file: socketpair: %s", strerror(errno));
		return -1;
	}
	child = fork();
	if (child < 0) {
		snprintf(err, errlen, "cannot open the output file: fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (child == 0) {
		close(sv[0]);
		open_in_child(sv[1], dir, base, uid, gid);
		_exit(0);
	}
	close(sv[1]);
	fd = receive_fd(sv[0], uid, dir, stop, chosen, len, err, errlen);
	close(sv[0]);
	/* Done with it, whatever its user did to it (stopped it, say);
	 * reaped at once unless stuck in the kernel (a stalled mount):
	 * then it ends when the kernel lets it. */
	kill(child, SIGKILL);
	for (int i = 0; i < 200 && waitpid(child, NULL, WNOHANG) == 0; i++)
		usleep(10000);
	return fd;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/*
 * Before 5.19, kernel.unprivileged_bpf_disabled (on by default in
 * Debian and RHEL) refuses every bpf() call without CAP_BPF or
 * CAP_SYS_ADMIN, even on objects already loaded; 5.19 let a process use
 * the fds it holds.
 */
bool lwk_syncmon_bpf_fds_need_caps(void)
{
	struct utsname u;
	unsigned int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return true;
	return major < 5 || (major == 5 && minor < 19);
}

/*
 * What the sampler needs no more once its source is open: root writing
 * into the user's file system must not go past the user's quota or into
 * the blocks reserved for root (CAP_SYS_RESOURCE); loading BPF is done,
 * and its fds need no capability to read the iterator or update the map
 * (CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON; kept where keep_bpf says the
 * kernel still asks), so a sampler that parses the job's /proc for the
 * job's whole life holds none of them.  It keeps CAP_NET_ADMIN for
 * taskstats, CAP_SYS_PTRACE for the job's /proc, and the rest of root
 * for its state directory and the user's identity.
 */
int lwk_syncmon_drop_after_open(bool keep_bpf)
{
	static const int caps[] = { CAP_SYS_RESOURCE, CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON };
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	for (size_t i = 0; i < (keep_bpf ? 1 : sizeof(caps) / sizeof(*caps)); i++) {
		unsigned int bit = 1u << (caps[i] % 32);

		data[caps[i] / 32].effective &= ~bit;
		data[caps[i] / 32].permitted &= ~bit;
		data[caps[i] / 32].inheritable &= ~bit;
	}
	return (int)syscall(SYS_capset, &hdr, data);
}

/*
 * Once its source, its output and its memory are set up, the sampler
 * keeps for the job's whole life only what sampling needs:
 * CAP_DAC_READ_SEARCH (the job user's 0400 /proc/<pid>/environ, and
 * cgroup v1 step directories the user owns and may close), CAP_NET_ADMIN
 * (taskstats), CAP_SYS_PTRACE while it finds the job's processes by
 * their environment (no job cgroup), and the BPF capabilities where
 * keep_bpf says the kernel still asks for them to read its fds.  The
 * bounding, inheritable and ambient sets emptied and no_new_privs set:
 * nothing it could exec gives any back.  It stays uid 0, the owner of
 * its state directory.  Every step is tried; -1 when one failed.
 */
int lwk_syncmon_confine(bool keep_ptrace, bool keep_bpf)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	int keep[6], n = 0, rc = 0;

	keep[n++] = CAP_DAC_READ_SEARCH;
	keep[n++] = CAP_NET_ADMIN;
	if (keep_ptrace)
		keep[n++] = CAP_SYS_PTRACE;
	if (keep_bpf) {
		keep[n++] = CAP_SYS_ADMIN;
		keep[n++] = CAP_BPF;
		keep[n++] = CAP_PERFMON;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		rc = -1;
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL)
			rc = -1;
	for (int i = 0; i < n; i++) {
		data[keep[i] / 32].effective |= 1u << (keep[i] % 32);
		data[keep[i] / 32].permitted |= 1u << (keep[i] % 32);
	}
	if (syscall(SYS_capset, &hdr, data))
		rc = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		rc = -1;
	return rc;
}
