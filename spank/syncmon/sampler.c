/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sampler's run (syncmon/sampler.h), for lwk-syncmon's main; one
 * tick's sample is syncmon/sample.c.
 *
 * Each tick t_k = offset + k * interval (wall clock, the same on every
 * node) it reads the job's processes and the node's totals, appends
 * one JSON line to a fixed buffer, and writes the buffer out only at
 * flush ticks, which are also the same on every node (seeds 000, 002).
 * The output file is opened by a child that has become the job's user:
 * root never opens a path the user chose.  The format is
 * doc/syncmon-format.md.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "syncmon/sampler.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/options.h"
#include "node/procfs.h"
#include "node/taskstats.h"
#include "syncmon/json.h"
#include "syncmon/sample.h"
#include "syncmon/sampbuf.h"
#include "syncmon/tick.h"

static volatile sig_atomic_t stop;
static FILE *log_file; /* <state>/syncmon.log, read back by the epilog */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	FILE *f = log_file ? log_file : stderr;

	va_start(ap, fmt);
	fprintf(f, "lwk-syncmon: ");
	vfprintf(f, fmt, ap);
	fprintf(f, "\n");
	fflush(f);
	va_end(ap);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static ssize_t fd_write(void *ctx, const void *buf, size_t len)
{
	return write(*(int *)ctx, buf, len);
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
static int receive_fd(int sock, uid_t uid, const char *dir, char *chosen, size_t len)
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

	while (!stop && (now = now_ns(CLOCK_MONOTONIC)) < deadline) {
		r = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		if (r >= 0 || errno != EINTR)
			break;
	}
	if (r <= 0) {
		say(stop ? "stopped while opening the output directory %s"
			 : "gave up opening the output directory %s after %d s",
		    dir, OPEN_SECONDS);
		return -1;
	}
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return -1;
	msg[n] = '\0';
	take_fds(&m, &fd);
	if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC) || msg[0] != 'o') {
		say("%s", msg[0] == 'e' ? msg + 1 : "the output file did not come back whole");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1 ||
	    (fcntl(fd, F_GETFL) & O_ACCMODE) != O_WRONLY) {
		say("the output file handed back is not the one created as uid %u in %s", (unsigned)uid,
		    dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = (ssize_t)strnlen(msg + 1, len - 1);
	memcpy(chosen, msg + 1, (size_t)n);
	chosen[n] = '\0';
	return fd;
}

static int open_as_user(const char *dir, const char *base, uid_t uid, gid_t gid,
			char *chosen, size_t len)
{
	int sv[2], fd;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		say("cannot open the output file: socketpair: %s", strerror(errno));
		return -1;
	}
	child = fork();
	if (child < 0) {
		say("cannot open the output file: fork: %s", strerror(errno));
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
	fd = receive_fd(sv[0], uid, dir, chosen, len);
	close(sv[0]);
	/* Done with it, whatever its user did to it (stopped it, say);
	 * reaped at once unless stuck in the kernel (a stalled mount):
	 * then it ends when the kernel lets it. */
	kill(child, SIGKILL);
	for (int i = 0; i < 200 && waitpid(child, NULL, WNOHANG) == 0; i++)
		usleep(10000);
	return fd;
}

/* A run of the sampler: the samples' state, where the lines go, the
 * schedule, and what the footer counts. */
struct run {
	struct lwk_sampling s;
	int out_fd;
	struct lwk_sampbuf buf;
	struct lwk_ticker tick;
	uint64_t samples, flush_cost, last_full;
	uint64_t orphan_after; /* s */
	bool said_source_error;
	bool said_walk_fallback;
};

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
static bool bpf_fds_need_caps(void)
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
static int drop_after_open(bool keep_bpf)
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
static int confine(bool keep_ptrace, bool keep_bpf)
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

/* Keep the sampler's own noise off the application's cores.  0, or
 * the exit status (2: not a CPU list, 1: the kernel refused). */
static int pin_to_cpus(const char *cpus)
{
	struct lwk_cpuset want;
	cpu_set_t set;

	if (lwk_cpulist_parse(cpus, CPU_SETSIZE, &want) || !lwk_cpuset_count(&want)) {
		say("--cpus '%s' is not a CPU list", cpus);
		return 2;
	}
	CPU_ZERO(&set);
	for (int cpu = lwk_cpuset_first(&want); cpu >= 0; cpu = lwk_cpuset_next(&want, cpu))
		CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		say("cannot run on CPUs %s: %s", cpus, strerror(errno));
		return 1;
	}
	return 0;
}

/* Signals, timer slack and open-file limit of the sampler's process. */
static void prepare_process(void)
{
	struct rlimit rl;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the tick, not up to 50 us later */
	/* One open /proc file per job process. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 70000 ? rl.rlim_max : 70000;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The starter records the pid before the step goes on (a job may end
 * at once); this is for a sampler started by hand.  Never over the
 * starter's file: it may be reading it.
 */
static void record_pid(const char *state)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "%d\n", (int)getpid());
		close(fd);
	}
}

/* Give up what loading the source needed, and create the output file
 * as the job's user (in r->out_fd).  0, or -1 (logged). */
static int open_output(struct run *r, const struct lwk_sampler_args *a)
{
	char base[512], chosen[600];

	if (drop_after_open(r->s.use_bpf && bpf_fds_need_caps()))
		say("cannot drop CAP_SYS_RESOURCE, CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON: %s",
		    strerror(errno));
	snprintf(base, sizeof(base), "syncmon-%u-%s", r->s.job, r->s.node);
	r->out_fd = open_as_user(a->dir, base, a->uid, a->gid, chosen, sizeof(chosen));
	if (r->out_fd < 0)
		return -1;
	say("job %u node %s: writing %s/%s", r->s.job, r->s.node, a->dir, chosen);
	return 0;
}

/* All the sampler's memory, once, and its sources.  0, or -1 (logged). */
static int set_up(struct run *r)
{
	struct lwk_sampling *s = &r->s;

	if (lwk_sampling_alloc(s) ||
	    lwk_sampbuf_init(&r->buf, (size_t)s->o.buffer, fd_write, &r->out_fd) ||
	    lwk_nodestat_open(&s->ns, s->proc_root)) {
		say("cannot set up: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Open the per-process source while the sampler is still whole root
 * (loading BPF needs CAP_BPF and CAP_PERFMON or CAP_SYS_ADMIN, and
 * before 5.11 a memlock limit that CAP_SYS_RESOURCE may raise).  The
 * starter waits on ready_fd only for source=bpf, whose failure fails
 * the job: "o" once open, or "r" and the reason; then the fd closes.
 * 0, or the exit status 3 when source=bpf cannot work.
 */
/* Tell the starter the source is open ("o"), then let go of the fd. */
static void report_ready(int ready_fd)
{
	if (ready_fd < 0)
		return;
	if (write(ready_fd, "o", 1) != 1)
		say("cannot tell the starter: %s", strerror(errno));
	close(ready_fd);
}

static int open_source(struct run *r, int ready_fd)
{
	struct lwk_sampling *s = &r->s;
	char err[700];
	uint64_t cg_us;

	s->cgroup_cpu = s->cgroup && lwk_cgroup_cpu_us(s->cgroup, &cg_us) == 0;
	if (s->cgroup_cpu)
		lwk_sample_cgroup_cpu(s);
	if (lwk_sample_source_open(s, err, sizeof(err))) {
		say("%s", err);
		if (ready_fd >= 0 && dprintf(ready_fd, "r%s", err) < 0)
			say("cannot tell the starter: %s", strerror(errno));
		if (ready_fd >= 0)
			close(ready_fd);
		return 3;
	}
	report_ready(ready_fd);
	if (s->fallback[0])
		say("reading processes from %s: %s", lwk_sample_source_name(s), s->fallback);
	else if (s->use_bpf) {
		const char *why, *walk = lwk_sample_source_walk(s, &why);

		say("reading processes from bpf, walking %s%s%s", walk, why[0] ? ": " : "", why);
	}
	return 0;
}

/* The header line: the job, the settings, the clock's state. */
static void write_header(struct run *r)
{
	struct lwk_sampling *s = &r->s;
	struct timex tx = { .modes = 0 };
	char host[256], node_json[600], hj[600], fb[1100], wj[800];
	const char *walk, *walk_why;
	int clock_state, n;

	clock_state = adjtimex(&tx);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	lwk_json_string(s->node, node_json, sizeof(node_json));
	lwk_json_string(host, hj, sizeof(hj));
	lwk_json_string(s->fallback, fb, sizeof(fb));
	walk = lwk_sample_source_walk(s, &walk_why);
	lwk_json_string(walk_why, wj, sizeof(wj));
	n = snprintf(s->line, s->line_cap,
		     "{\"format\":\"slurm-lwk-syncmon\",\"version\":1,\"job\":%u,\"node\":%s,"
		     "\"host\":%s,\"interval_us\":%llu,\"offset_us\":%llu,\"flush_every\":%llu,"
		     "\"fullscan_every\":%llu,\"buffer_bytes\":%llu,\"source\":\"%s\",\"source_fallback\":%s,"
		     "\"bpf_walk\":\"%s\",\"bpf_walk_why\":%s,"
		     "\"idle_threshold_pct\":%.2f,\"clock\":{\"synced\":%s,\"status\":%d,"
		     "\"maxerror_us\":%ld,\"esterror_us\":%ld},\"clk_tck\":%ld,"
		     "\"job_cgroup\":%s,\"job_cgroup_cpu\":%s,\"start_ns\":%llu}\n",
		     s->job, node_json, hj, (unsigned long long)s->o.interval,
		     (unsigned long long)s->o.offset, (unsigned long long)s->o.flush,
		     (unsigned long long)s->o.fullscan, (unsigned long long)s->o.buffer,
		     lwk_sample_source_name(s), fb, walk, wj, (double)s->o.idle / 100.0,
		     (clock_state == TIME_ERROR || (tx.status & STA_UNSYNC)) ? "false" : "true",
		     tx.status, tx.maxerror, tx.esterror, s->clk_tck, s->cgroup ? "true" : "false",
		     s->cgroup_cpu ? "true" : "false",
		     (unsigned long long)now_ns(CLOCK_REALTIME));
	lwk_sampbuf_add(&r->buf, s->line, (size_t)n, true);
}

/*
 * The tick the sampler woke for: take its sample, write the sample's
 * cost into it, hand it to the buffer.  false when the sampler should
 * stop (its job has gone).
 */
static bool sample_tick(struct run *r)
{
	struct lwk_sampling *s = &r->s;
	uint64_t k, t, late, t_ideal, cpu0, cost;
	bool flush, full;
	size_t len, cost_at;
	char cost_txt[16];

	t_ideal = r->tick.next;
	t = now_ns(CLOCK_REALTIME);
	late = lwk_ticker_fire(&r->tick, t, &k);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	flush = lwk_tick_is_flush(k, s->o.flush);
	/* A full scan at least every 10 s whatever fullscan= says: it is
	 * also how the sampler notices that the job has gone. */
	full = r->samples == 0 || k % s->o.fullscan == 0 || t - r->last_full >= 10000000000ULL;
	if (full)
		r->last_full = t;
	len = lwk_sample_take(s, k, t_ideal, t, late, flush, full, &cost_at);
	cost = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	if (s->ti_failures && !r->said_source_error) {
		say("the task iterator failed: %s (a failed read lists no process that tick; "
		    "the footer's source_errors counts the failures)", s->ti_error);
		r->said_source_error = true;
	}
	if (s->ti && !r->said_walk_fallback) {
		const char *first, *now_why, *walk;

		if (lwk_taskiter_fallbacks(s->ti, &first)) {
			walk = lwk_sample_source_walk(s, &now_why);
			say("the cgroup walk could not read a tick whole: %s (read by the walk of "
			    "every task; the footer's bpf_walk_fallbacks counts such ticks)%s%s",
			    first, strcmp(walk, "cgroup") ? "; every task from now on: " : "",
			    strcmp(walk, "cgroup") ? now_why : "");
			r->said_walk_fallback = true;
		}
	}
	/* Write the cost into its place, padded to the same width. */
	snprintf(cost_txt, sizeof(cost_txt), "%-12llu", (unsigned long long)cost);
	memcpy(s->line + cost_at, cost_txt, 12);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (lwk_sampbuf_add(&r->buf, s->line, len, flush))
		say("write failed: %s", strerror(errno));
	r->flush_cost += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	r->samples++;
	/* The job epilog stops the sampler.  This is the safety net for
	 * a job whose epilog never runs here (slurmd killed): no job
	 * process on the node for --orphan-after seconds.  It must be
	 * long: between two steps of a job whose batch script runs on
	 * another node, this node has no job process at all. */
	if (s->empty_since && t - s->empty_since >= r->orphan_after * 1000000000ULL) {
		say("job %u has had no process on %s for %llu s: stopping", s->job, s->node,
		    (unsigned long long)r->orphan_after);
		return false;
	}
	return true;
}

/* Sample at every tick on the grid until SIGTERM or SIGINT, or until
 * the job has gone. */
static void run_ticks(struct run *r)
{
	struct lwk_sampling *s = &r->s;

	lwk_nodestat_read(&s->ns);
	s->prev_busy = s->ns.busy;
	s->prev_total = s->ns.total;
	lwk_ticker_init(&r->tick, s->o.interval * 1000, s->o.offset * 1000,
			now_ns(CLOCK_REALTIME));
	while (!stop) {
		struct timespec due = { .tv_sec = (time_t)(r->tick.next / 1000000000ULL),
					.tv_nsec = (long)(r->tick.next % 1000000000ULL) };

		if (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &due, NULL) == EINTR)
			continue;
		if (!sample_tick(r))
			break;
	}
}

/* The footer line: what the run counted. */
static void write_footer(struct run *r)
{
	const char *why;
	int n = snprintf(r->s.line, r->s.line_cap,
			 "{\"end\":true,\"samples\":%llu,\"ticks_skipped\":%llu,\"flushes\":%llu,"
			 "\"early_flushes\":%llu,\"oversize\":%llu,\"dropped\":%llu,"
			 "\"source_errors\":%llu,\"bpf_walk_fallbacks\":%llu,\"bpf_walk_end\":\"%s\","
			 "\"flush_cost_ns\":%llu,\"stop_ns\":%llu}\n",
			 (unsigned long long)r->samples, (unsigned long long)r->tick.skipped,
			 (unsigned long long)r->buf.flushes, (unsigned long long)r->buf.early_flushes,
			 (unsigned long long)r->buf.oversize, (unsigned long long)r->buf.dropped,
			 (unsigned long long)r->s.ti_failures,
			 (unsigned long long)(r->s.ti ? lwk_taskiter_fallbacks(r->s.ti, &why) : 0),
			 lwk_sample_source_walk(&r->s, &why),
			 (unsigned long long)r->flush_cost, (unsigned long long)now_ns(CLOCK_REALTIME));

	lwk_sampbuf_add(&r->buf, r->s.line, (size_t)n, true);
}

int lwk_sampler_run(const struct lwk_sampler_args *a)
{
	struct run r = { .s = { .job = a->job, .node = a->node, .cgroup = a->cgroup,
				.proc_root = a->proc_root },
			 .orphan_after = a->orphan_after };
	char err[512], path[4096];
	int rc;

	/* Before any word to the starter: a starter that gave up waiting
	 * has closed its end. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(path, sizeof(path), "%s/syncmon.log", a->state);
	log_file = fopen(path, "ae");
	if (lwk_option_parse(&lwk_grammar_syncmon, a->options, &r.s.o, err, sizeof(err))) {
		say("%s", err);
		return 2;
	}
	/* Only source=bpf can fail the job: the starter waits for no other
	 * source to open. */
	if (r.s.o.source != LWK_SOURCE_BPF)
		report_ready(a->ready_fd);
	if (a->cpus && (rc = pin_to_cpus(a->cpus)))
		return rc;
	prepare_process();
	record_pid(a->state);
	if ((rc = open_source(&r, r.s.o.source == LWK_SOURCE_BPF ? a->ready_fd : -1)))
		return rc;
	if (open_output(&r, a) || set_up(&r)) {
		lwk_sample_source_close(&r.s);
		return 1;
	}
	/* Never on with more than it needs: no sampler rather than one
	 * that keeps root's capabilities for the job's life. */
	if (confine(!r.s.cgroup, r.s.use_bpf && bpf_fds_need_caps())) {
		say("cannot give up the capabilities sampling does not need (%s): stopping", strerror(errno));
		close(r.out_fd);
		lwk_sample_source_close(&r.s);
		return 1;
	}
	write_header(&r);
	run_ticks(&r);
	write_footer(&r);
	lwk_sampbuf_flush(&r.buf);
	close(r.out_fd);
	lwk_sample_source_close(&r.s); /* nothing of it stays in the kernel */
	say("job %u node %s: stopped after %llu samples", r.s.job, r.s.node,
	    (unsigned long long)r.samples);
	snprintf(path, sizeof(path), "%s/syncmon.pid", a->state);
	unlink(path);
	return 0;
}
