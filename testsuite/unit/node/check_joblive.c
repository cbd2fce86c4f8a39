/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job liveness (joblive.c) with a stand-in for libslurm: slurmctld's
 * answers (yes, no, unknown, completing, elsewhere), no libslurm at all,
 * a query from a process running as another user for now, tasks left
 * without a slurmstepd, and whose slurmstepd counts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm_errno.h>

#include "check_lwk.h"
#include "node/joblive.h"

/* A job id no real job here has. */
#define JOB 3999999901u

/* What the stand-in slurmctld says: load() fails with errno fail_errno
 * when set, else one record with this state, nodes and user. */
static int fail_errno, calls;
/* What load() does instead of answering: 1 exits as Slurm's fatal()
 * does, 2 never returns. */
static int load_dies;
static uint32_t job_state;
static const char *job_nodes = "n1";
static uid_t job_uid = 3999999;

static int fake_load(job_info_msg_t **msg, lwk_job_key_t key, uint16_t flags)
{
	uint32_t job = lwk_job_key_id(key);
	job_info_msg_t *m;

	(void)flags;
	calls++;
	if (load_dies == 1)
		exit(1);
	while (load_dies == 2)
		pause();
	if (fail_errno) {
		errno = fail_errno;
		return -1;
	}
	m = calloc(1, sizeof(*m));
	m->record_count = 1;
	m->job_array = calloc(1, sizeof(*m->job_array));
	/* Where this Slurm's record has the job id (lwk_job_info_id). */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	m->job_array[0].step_id.job_id = job;
#else
	m->job_array[0].job_id = job;
#endif
	m->job_array[0].job_state = job_state;
	m->job_array[0].nodes = strdup(job_nodes);
	m->job_array[0].user_id = job_uid;
	*msg = m;
	return 0;
}

static void fake_free(job_info_msg_t *m)
{
	free(m->job_array[0].nodes);
	free(m->job_array);
	free(m);
}

/* A host list: the comma-separated names, no ranges. */
static lwk_hostlist_t fake_hl_create(const char *s)
{
	return (lwk_hostlist_t)(void *)strdup(s);
}

static int fake_hl_find(lwk_hostlist_t hl, const char *name)
{
	char *copy = strdup((const char *)(void *)hl), *save = NULL;
	int at = -1, i = 0;

	for (char *w = strtok_r(copy, ",", &save); w && at < 0; w = strtok_r(NULL, ",", &save), i++)
		if (!strcmp(w, name))
			at = i;
	free(copy);
	return at;
}

static void fake_hl_destroy(lwk_hostlist_t hl)
{
	free((void *)hl);
}

static const struct lwk_slurm_api fake = { fake_load, fake_free, fake_hl_create, fake_hl_find,
					   fake_hl_destroy };
static const struct lwk_slurm_api none = { 0 };

static void setup(void)
{
	lwk_slurm_api_override = &fake;
	fail_errno = 0;
	load_dies = 0;
	calls = 0;
	job_state = JOB_RUNNING;
	job_nodes = "n0,n1";
	job_uid = 3999999;
	setenv("SLURMD_NODENAME", "n1", 1);
}

static void teardown(void)
{
	lwk_slurm_api_override = NULL;
	lwk_job_alive_ask_apart(0);
}

START_TEST(slurmctlds_answers)
{
	uid_t uid = 0;

	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", &uid), LWK_ALLOC_YES);
	ck_assert_uint_eq(uid, 3999999);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_YES); /* between two steps */
	job_state = JOB_SUSPENDED;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_YES);
	/* Completing: its epilog runs here. */
	job_state = JOB_RUNNING | JOB_COMPLETING;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_NO);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	job_state = JOB_COMPLETE;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_NO);
	/* Running, on other nodes only. */
	job_state = JOB_RUNNING;
	job_nodes = "n0,n2";
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_NO);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	/* Purged: gone.  slurmctld down: cannot tell, kept. */
	fail_errno = ESLURM_INVALID_JOB_ID;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_NO);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	fail_errno = SLURM_COMMUNICATIONS_CONNECTION_ERROR;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_UNKNOWN);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	ck_assert(lwk_job_alive(JOB));
}
END_TEST

/* Without libslurm (lwk-sweep where libslurmfull would not load) a job
 * between two steps must not be taken for gone. */
START_TEST(no_libslurm_is_unknown_and_kept)
{
	lwk_slurm_api_override = &none;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_NO_API);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	ck_assert(lwk_job_alive(JOB));
}
END_TEST

/* slurmstepd sets its effective uid to the job's user for a while (for
 * the whole process): slurmctld is not asked as that user. */
START_TEST(not_asked_while_running_as_another_user)
{
	pid_t child;
	int status;

	if (getuid() != 0) {
		printf("SKIP: joblive: the effective-uid case needs root\n");
		return;
	}
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		int rc;

		if (seteuid(65534))
			_exit(3);
		rc = lwk_job_allocated_here(JOB, "n1", NULL);
		_exit(rc == LWK_ALLOC_UNKNOWN && calls == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "asked slurmctld as another user (exit %d)", WEXITSTATUS(status));
}
END_TEST

/* Whether process pid runs sleep now (its comm). */
static bool child_is_sleep(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strcmp(comm, "sleep\n");
}

/* A child whose fd 3 is the write end of fds (the parent reads fds[0]
 * for its word); 0 in the child. */
static pid_t fork_saying_on_fd3(int fds[2])
{
	pid_t child;

	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		close(fds[0]);
		if (dup2(fds[1], 3) < 0)
			_exit(3);
	}
	return child;
}

/* A process of the job's user with the job's environment and no
 * slurmstepd: its slurmstepd was killed, the job is gone here. */
START_TEST(tasks_left_without_a_slurmstepd_mean_gone)
{
	char id[16];
	pid_t child;
	int fds[2];
	char c;

	{
		char cg[4096] = "";
		FILE *f = fopen("/proc/self/cgroup", "re");

		if (f) {
			size_t n = fread(cg, 1, sizeof(cg) - 1, f);

			cg[n] = '\0';
			fclose(f);
		}
		if (strstr(cg, "/job_")) {
			printf("SKIP: joblive: this test runs in a Slurm job's cgroup (its tasks are judged by it)\n");
			return;
		}
	}
	job_uid = getuid();
	snprintf(id, sizeof(id), "%u", JOB);
	child = fork_saying_on_fd3(fds);
	if (!child) {
		setenv("SLURM_JOB_ID", id, 1);
		setenv("SLURMD_NODENAME", "n1", 1);
		execl("/bin/sh", "sh", "-c", "echo x >&3; exec sleep 30", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* The shell has its environment once it writes; then it execs
	 * sleep, and while a process execs its environ cannot be read (a
	 * loaded run saw the job alive): until it is sleep, up to 10 s. */
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	for (int i = 0; i < 1000 && !child_is_sleep(child); i++)
		usleep(10000);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_YES);
}
END_TEST

/* A slurmstepd of the job counts only when it is root's: any user can
 * run the binary with that title. */
START_TEST(only_roots_slurmstepd_counts)
{
	char dir[] = "/tmp/joblive.XXXXXX", exe[64], title[48], cmd[160];
	pid_t child;

	if (getuid() != 0) {
		printf("SKIP: joblive: the slurmstepd owner case needs root\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(exe, sizeof(exe), "%s/slurmstepd", dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && chmod 0755 %s", exe, exe);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(title, sizeof(title), "slurmstepd: [%u.0]", JOB);
	fail_errno = ESLURM_INVALID_JOB_ID; /* slurmctld: gone */
	for (int as_root = 0; as_root < 2; as_root++) {
		struct timespec ts = { 0, 200000000 };

		child = fork();
		ck_assert_int_ge(child, 0);
		if (!child) {
			if (!as_root && (setgid(65534) || setuid(65534)))
				_exit(3);
			execl(exe, title, "30", (char *)NULL);
			_exit(127);
		}
		/* Until it runs the copy (a loaded machine: up to 10 s). */
		for (int i = 0; i < 50; i++) {
			char p[64], l[128] = "";

			snprintf(p, sizeof(p), "/proc/%d/exe", (int)child);
			if (readlink(p, l, sizeof(l) - 1) > 0 && !strcmp(l, exe))
				break;
			nanosleep(&ts, NULL);
		}
		ck_assert_int_eq(lwk_job_liveness(JOB), as_root ? LWK_LIVE_YES : LWK_LIVE_GONE);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	unlink(exe);
	rmdir(dir);
}
END_TEST

/* lwk-sweep loads libslurmfull into a root process: only a file that
 * root alone could have written, in a directory root alone writes. */
START_TEST(only_a_root_only_library_is_loaded)
{
	char dir[] = "/tmp/joblive.XXXXXX", lib[64], link[80], real[4096], e[4400];

	if (getuid() != 0) {
		printf("SKIP: joblive: the library owner case needs root\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(lib, sizeof(lib), "%s/libslurmfull.so", dir);
	{
		FILE *f = fopen(lib, "w");

		ck_assert_ptr_nonnull(f);
		fclose(f);
	}
	chmod(lib, 0644);
	ck_assert_int_eq(lwk_lib_is_safe(lib, real, sizeof(real), e, sizeof(e)), 0);
	ck_assert_str_eq(real, lib);
	/* A link from anywhere is followed: the file it names is checked. */
	snprintf(link, sizeof(link), "%s.link", dir);
	ck_assert_int_eq(symlink(lib, link), 0);
	ck_assert_int_eq(lwk_lib_is_safe(link, real, sizeof(real), e, sizeof(e)), 0);
	ck_assert_str_eq(real, lib);
	unlink(link);
	chmod(lib, 0664);
	ck_assert_int_eq(lwk_lib_is_safe(lib, real, sizeof(real), e, sizeof(e)), -1);
	ck_assert_ptr_nonnull(strstr(e, "not root's only"));
	chmod(lib, 0644);
	ck_assert_int_eq(chown(lib, 65534, 65534), 0);
	ck_assert_int_eq(lwk_lib_is_safe(lib, real, sizeof(real), e, sizeof(e)), -1);
	ck_assert_int_eq(chown(lib, 0, 0), 0);
	chmod(dir, 0777);
	ck_assert_int_eq(lwk_lib_is_safe(lib, real, sizeof(real), e, sizeof(e)), -1);
	ck_assert_ptr_nonnull(strstr(e, "directory"));
	ck_assert_int_eq(lwk_job_alive_load_slurm(lib, e, sizeof(e)), -1);
	unlink(lib);
	rmdir(dir);
}
END_TEST

/*
 * A FUSE file system whose one file, f, is never read: every READ is
 * left unanswered, as a user's FUSE server can leave it.  serve_stalled
 * answers the kernel on fd (root, a child of the test) until unmounted.
 */
static void fuse_reply(int fd, uint64_t unique, int error, const void *arg, size_t len)
{
	char buf[256];
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = error, .unique = unique };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), arg, len);
	if (write(fd, buf, h.len) < 0) {
		/* The request was interrupted: nothing to do. */
	}
}

static void fuse_attr_of(uint64_t ino, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = ino == 1 ? S_IFDIR | 0755 : S_IFREG | 0644;
	a->nlink = ino == 1 ? 2 : 1;
	a->size = ino == 1 ? 0 : 65536;
	a->blksize = 4096;
}

static void serve_stalled(int fd)
{
	static char req[1 << 17];

	for (;;) {
		struct fuse_in_header *in = (struct fuse_in_header *)req;
		ssize_t n = read(fd, req, sizeof(req));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0); /* unmounted */
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION, .minor = 31,
						   .max_readahead = 65536, .max_write = 4096,
						   .time_gran = 1 };

			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { .nodeid = 2, .generation = 1, .entry_valid = 3600,
						    .attr_valid = 3600 };

			if (strcmp(req + sizeof(*in), "f")) {
				fuse_reply(fd, in->unique, -ENOENT, NULL, 0);
				break;
			}
			fuse_attr_of(2, &o.attr);
			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { .attr_valid = 3600 };

			fuse_attr_of(in->nodeid, &o.attr);
			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = { .fh = 1 };

			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: /* never */
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_DESTROY:
			fuse_reply(fd, in->unique, 0, NULL, 0);
			break;
		default:
			fuse_reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

/*
 * check_lwk --stalled-environ FILE: a process of user 65534 (dumpable,
 * as a user's are) one page of whose environment is FILE, mapped over
 * it: a read of its environ waits on FILE.  Says 'r' on fd 3 once set,
 * then waits to be killed.
 */
int joblive_stalled_environ_process(const char *file)
{
	unsigned long start = 0, end = 0, page;
	char stat[4096], *p;
	ssize_t n;
	int fd, field;

	fd = open("/proc/self/stat", O_RDONLY);
	if (fd < 0 || (n = read(fd, stat, sizeof(stat) - 1)) <= 0)
		return 2;
	stat[n] = '\0';
	/* Fields 50 and 51 (env_start, env_end), counted after the comm. */
	p = strrchr(stat, ')');
	for (field = 2; p && field < 50; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu", &start, &end) != 2)
		return 3;
	page = (start + 4095) & ~4095UL;
	if (page + 4096 > end)
		return 4;
	fd = open(file, O_RDONLY);
	if (fd < 0 || mmap((void *)page, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
		return 5;
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return 6;
	if (write(3, "r", 1) != 1)
		return 7;
	for (;;)
		pause();
}

/* Its user's process in no job cgroup with a page of its environment on
 * a FUSE file whose server never answers: liveness reads environ as
 * root, which a stalled read would hang (and other jobs' epilogs with
 * it).  Linux reads a process's environ (and cmdline) from its anonymous
 * memory only (since 4.18): the file-backed page is not read, nothing
 * waits, and the process, whose environment says nothing, does not make
 * the job gone. */
START_TEST(an_environ_on_a_stalled_file_does_not_stall_liveness)
{
	char dir[] = "/tmp/joblive-fuse.XXXXXX", file[64], opts[128], big[3 * 4096 + 32], c;
	char *env[] = { big, NULL };
	struct timespec t0, t1;
	int fds[2], fuse, live, status = 0;
	pid_t server, child;

	if (getuid() != 0) {
		printf("SKIP: joblive: the stalled environment needs root (a FUSE mount)\n");
		return;
	}
	fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse);
	if (fuse < 0 || mount("lwk-stall", dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		printf("SKIP: joblive: cannot mount a FUSE file system here (%s)\n", strerror(errno));
		rmdir(dir);
		return;
	}
	server = fork();
	ck_assert_int_ge(server, 0);
	if (!server)
		serve_stalled(fuse);
	close(fuse);
	snprintf(file, sizeof(file), "%s/f", dir);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "PAD=", 4);
	child = fork_saying_on_fd3(fds);
	if (!child) {
		execle("/proc/self/exe", "check_lwk", "--stalled-environ", file, (char *)NULL, env);
		_exit(127);
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		waitpid(child, &status, 0);
		child = 0;
	}
	close(fds[0]);
	if (child) {
		job_uid = 65534; /* slurmctld: the job is its, allocated here */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		live = lwk_job_liveness(JOB);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	umount2(dir, MNT_DETACH);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	rmdir(dir);
	ck_assert_msg(child, "the stalled-environment process did not start (status %d)", status);
	ck_assert_msg(t1.tv_sec - t0.tv_sec < 10, "liveness took %ld s", (long)(t1.tv_sec - t0.tv_sec));
	ck_assert_int_eq(live, LWK_LIVE_YES);
}
END_TEST

/* The epilog asks from a child: the same answers, none of the child's
 * state in this process (the stand-in's call count stays 0). */
START_TEST(asked_apart_the_answers_are_the_same)
{
	uid_t uid = 0;
	char why[256];

	lwk_job_alive_ask_apart(5000);
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", &uid), LWK_ALLOC_YES);
	ck_assert_uint_eq(uid, 3999999);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_YES);
	job_state = JOB_RUNNING | JOB_COMPLETING;
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	fail_errno = ESLURM_INVALID_JOB_ID;
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_GONE);
	ck_assert_int_eq(lwk_job_alive_apart_failure(why, sizeof(why)), 0);
	/* slurmctld down: kept, and not asked again by this process. */
	fail_errno = SLURM_COMMUNICATIONS_CONNECTION_ERROR;
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	ck_assert_int_eq(lwk_job_alive_apart_failure(why, sizeof(why)), -1);
	ck_assert_str_eq(why, "it did not answer");
	fail_errno = ESLURM_INVALID_JOB_ID;
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	ck_assert_int_eq(calls, 0);
	fail_errno = SLURM_COMMUNICATIONS_CONNECTION_ERROR;
	lwk_job_alive_ask_apart(0);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	ck_assert_int_eq(calls, 1);
}
END_TEST

/* libslurm exits when a client plugin will not load (slurm_init's
 * fatal()), and an RPC may hang: asked apart, either ends the child,
 * never the caller, and the job is kept.  After one such question the
 * process asks no more (20 s a job would add up), and says why. */
START_TEST(a_child_that_dies_or_hangs_is_cannot_tell)
{
	struct timespec t0, t1;
	char why[256];

	lwk_job_alive_ask_apart(300);
	ck_assert_int_eq(lwk_job_alive_apart_failure(why, sizeof(why)), 0);
	load_dies = 1;
	ck_assert_int_eq(lwk_job_allocated_here(JOB, "n1", NULL), LWK_ALLOC_UNKNOWN);
	ck_assert(lwk_job_alive(JOB));
	ck_assert_int_eq(lwk_job_alive_apart_failure(why, sizeof(why)), -1);
	ck_assert_str_eq(why, "libslurm ended the asking process with exit status 1");
	/* Not asked again, even once slurmctld would answer. */
	load_dies = 0;
	job_state = JOB_COMPLETE;
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	/* A hang: no answer in time. */
	lwk_job_alive_ask_apart(300);
	load_dies = 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(lwk_job_liveness(JOB), LWK_LIVE_UNKNOWN);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_msg(t1.tv_sec - t0.tv_sec < 10, "a hung question took %ld s", (long)(t1.tv_sec - t0.tv_sec));
	ck_assert_int_eq(lwk_job_alive_apart_failure(why, sizeof(why)), -1);
	ck_assert_str_eq(why, "no answer within 0.3 s");
}
END_TEST

Suite *joblive_suite(void)
{
	Suite *s = suite_create("joblive");
	TCase *tc = tcase_create("liveness");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, slurmctlds_answers);
	tcase_add_test(tc, no_libslurm_is_unknown_and_kept);
	tcase_add_test(tc, not_asked_while_running_as_another_user);
	tcase_add_test(tc, tasks_left_without_a_slurmstepd_mean_gone);
	tcase_add_test(tc, only_roots_slurmstepd_counts);
	tcase_add_test(tc, only_a_root_only_library_is_loaded);
	tcase_add_test(tc, asked_apart_the_answers_are_the_same);
	tcase_add_test(tc, a_child_that_dies_or_hangs_is_cannot_tell);
	suite_add_tcase(s, tc);
	/* Its own bound, above the 10 s it asserts. */
	tc = tcase_create("stalled environment");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, an_environ_on_a_stalled_file_does_not_stall_liveness);
	suite_add_tcase(s, tc);
	return s;
}
