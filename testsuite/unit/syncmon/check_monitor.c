/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --sync-monitor core: ticks, the bounded buffer, /proc reading. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_lwk.h"
#include "node/procstat.h"
#include "syncmon/sampbuf.h"
#include "syncmon/tick.h"

#define MS 1000000ULL
#define S 1000000000ULL

/* Two nodes that start at different moments tick at the same instants
 * and agree on the tick numbers and on which ticks flush. */
START_TEST(ticks_align_across_nodes)
{
	struct lwk_ticker a, b;
	uint64_t base = 1790000000ULL * S, ka, kb;

	lwk_ticker_init(&a, 500 * MS, 0, base + 123 * MS);
	lwk_ticker_init(&b, 500 * MS, 0, base + 377 * MS + 1);
	ck_assert_uint_eq(a.next, b.next);
	ck_assert_uint_eq(a.k, b.k);
	ck_assert_uint_eq(a.next % (500 * MS), 0);
	for (int i = 0; i < 10; i++) {
		lwk_ticker_fire(&a, a.next + 2 * MS, &ka);
		lwk_ticker_fire(&b, b.next + 7 * MS, &kb);
		ck_assert_uint_eq(ka, kb);
		ck_assert_uint_eq(a.next, b.next);
		ck_assert_int_eq(lwk_tick_is_flush(ka, 4), lwk_tick_is_flush(kb, 4));
	}
}
END_TEST

START_TEST(ticks_honour_offset_and_report_lateness)
{
	struct lwk_ticker t;
	uint64_t k, late;

	lwk_ticker_init(&t, 100 * MS, 30 * MS, 10 * S + 31 * MS);
	ck_assert_uint_eq(t.next, 10 * S + 130 * MS);
	late = lwk_ticker_fire(&t, 10 * S + 130 * MS + 250000, &k);
	ck_assert_uint_eq(late, 250000);
	ck_assert_uint_eq(t.next, 10 * S + 230 * MS);
	/* An exact multiple is not "after now": the next one is. */
	lwk_ticker_init(&t, 100 * MS, 0, 10 * S);
	ck_assert_uint_eq(t.next, 10 * S + 100 * MS);
	/* An offset of a whole interval or more folds back into it. */
	lwk_ticker_init(&t, 100 * MS, 250 * MS, 0);
	ck_assert_uint_eq(t.offset, 50 * MS);
}
END_TEST

START_TEST(ticks_skip_after_a_stall_or_forward_jump)
{
	struct lwk_ticker t;
	uint64_t k, k2;

	lwk_ticker_init(&t, 100 * MS, 0, 0);
	/* Woke 350 ms after tick 1: ticks 2, 3, 4 are past and skipped. */
	lwk_ticker_fire(&t, 100 * MS + 350 * MS, &k);
	ck_assert_uint_eq(k, 1);
	ck_assert_uint_eq(t.skipped, 3);
	ck_assert_uint_eq(t.k, 5);
	/* The clock stepped back: the tick is taken (lateness 0), the
	 * schedule moves on one tick and stays on the grid. */
	ck_assert_uint_eq(lwk_ticker_fire(&t, 1 * MS, &k2), 0);
	ck_assert_uint_eq(k2, 5);
	ck_assert_uint_eq(t.k, 6);
	ck_assert_uint_eq(t.next % (100 * MS), 0);
	ck_assert_uint_eq(t.skipped, 3);
}
END_TEST

struct sink {
	char data[4096];
	size_t len;
	int writes;
	int fail;
};

static ssize_t sink_write(void *ctx, const void *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail) {
		errno = ENOSPC;
		return -1;
	}
	if (len > 7) /* short writes happen: the buffer must loop */
		len = 7;
	memcpy(s->data + s->len, buf, len);
	s->len += len;
	s->writes++;
	return (ssize_t)len;
}

START_TEST(buffer_flushes_only_at_flush_ticks)
{
	struct lwk_sampbuf b;
	struct sink s = { .len = 0 };

	ck_assert_int_eq(lwk_sampbuf_init(&b, 64, sink_write, &s), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "one\n", 4, false), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "two\n", 4, false), 0);
	ck_assert_uint_eq(s.len, 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "three\n", 6, true), 0);
	ck_assert_uint_eq(s.len, 14);
	ck_assert_int_eq(memcmp(s.data, "one\ntwo\nthree\n", 14), 0);
	ck_assert_uint_eq(b.flushes, 1);
	ck_assert_uint_eq(b.early_flushes, 0);
	ck_assert_uint_eq(b.len, 0);
	lwk_sampbuf_free(&b);
}
END_TEST

START_TEST(buffer_never_grows_and_loses_nothing)
{
	struct lwk_sampbuf b;
	struct sink s = { .len = 0 };
	char rec[40], big[100];

	memset(rec, 'a', sizeof(rec));
	memset(big, 'b', sizeof(big));
	ck_assert_int_eq(lwk_sampbuf_init(&b, 64, sink_write, &s), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	/* 40 + 40 > 64: the first is flushed early, and counted. */
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	ck_assert_uint_eq(b.early_flushes, 1);
	ck_assert_uint_eq(s.len, 40);
	ck_assert_uint_eq(b.len, 40);
	/* Larger than the whole buffer: written through, counted. */
	ck_assert_int_eq(lwk_sampbuf_add(&b, big, 100, false), 0);
	ck_assert_uint_eq(b.oversize, 1);
	ck_assert_uint_eq(s.len, 180);
	ck_assert_uint_eq(b.cap, 64);
	ck_assert_int_eq(lwk_sampbuf_flush(&b), 0);
	ck_assert_uint_eq(b.bytes_written, 180);
	/* A failing disk: what could not be kept is counted, not hidden. */
	s.fail = 1;
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), -1);
	ck_assert_uint_eq(b.dropped, 1);
	ck_assert_int_eq(lwk_sampbuf_flush(&b), -1);
	ck_assert_uint_eq(b.len, 40); /* kept for the next try */
	s.fail = 0;
	ck_assert_int_eq(lwk_sampbuf_flush(&b), 0);
	lwk_sampbuf_free(&b);
}
END_TEST

START_TEST(procstat_parses_hostile_comm)
{
	struct lwk_procstat st;
	const char *line = "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
			   "1234 567 0 0 20 0 3 0 987654 12345678 321 18446744073709551615\n";

	ck_assert_int_eq(lwk_procstat_parse(line, strlen(line), &st), 0);
	ck_assert_int_eq(st.pid, 4242);
	ck_assert_str_eq(st.comm, "a) b) (c");
	ck_assert_int_eq(st.state, 'S');
	ck_assert_int_eq(st.ppid, 1);
	ck_assert_uint_eq(st.utime, 1234);
	ck_assert_uint_eq(st.stime, 567);
	ck_assert_uint_eq(st.num_threads, 3);
	ck_assert_uint_eq(st.starttime, 987654);
	ck_assert_uint_eq(st.rss_pages, 321);
	ck_assert_int_eq(lwk_procstat_parse("12 (x) S 1 2", 12, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("12 x S 1", 8, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("(x) S", 5, &st), -1);
	ck_assert_int_eq(lwk_procstat_parse("1 ) (x S 1 2 3", 14, &st), -1); /* found by libFuzzer */
	line = "99999999999999999999 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22";
	ck_assert_int_eq(lwk_procstat_parse(line, strlen(line), &st), -1);
}
END_TEST

START_TEST(proctab_keeps_files_open_and_forgets_the_dead)
{
	struct lwk_proctab *t = lwk_proctab_new("/proc", 8);
	struct lwk_procstat st;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lwk_proctab_read(t, getpid(), &st), 0);
	ck_assert_int_eq(st.pid, getpid());
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), 0);
	ck_assert_int_eq(st.ppid, getpid());
	ck_assert_uint_eq(lwk_proctab_count(t), 2);
	/* Re-reading uses the open file: still 2 entries. */
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), 0);
	ck_assert_uint_eq(lwk_proctab_count(t), 2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(lwk_proctab_read(t, child, &st), -1);
	ck_assert_uint_eq(lwk_proctab_count(t), 1);
	/* Not seen since the last sweep: closed. */
	lwk_proctab_sweep(t);
	lwk_proctab_sweep(t);
	ck_assert_uint_eq(lwk_proctab_count(t), 0);
	/* Sized once: a full table refuses instead of growing. */
	for (int i = 0; i < 8; i++)
		lwk_proctab_read(t, getpid(), &st);
	ck_assert_int_eq(lwk_proctab_read(t, 999999999, &st), -1);
	lwk_proctab_free(t);
}
END_TEST

START_TEST(idle_skip_rule)
{
	/* 1% threshold: 5 ticks of CPU over 1000 ticks of life is idle. */
	ck_assert(lwk_procstat_skip(5, 0, 1000, 100, false));
	ck_assert(!lwk_procstat_skip(10, 0, 1000, 100, false));
	/* A new process appeared: everything is read. */
	ck_assert(!lwk_procstat_skip(0, 0, 1000, 100, true));
	/* Born this tick: read. */
	ck_assert(!lwk_procstat_skip(0, 1000, 1000, 100, false));
	/* Threshold 0 skips nothing. */
	ck_assert(!lwk_procstat_skip(0, 0, 1000, 0, false));
}
END_TEST

Suite *monitor_suite(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("monitor");

	tcase_add_test(tc, ticks_align_across_nodes);
	tcase_add_test(tc, ticks_honour_offset_and_report_lateness);
	tcase_add_test(tc, ticks_skip_after_a_stall_or_forward_jump);
	tcase_add_test(tc, buffer_flushes_only_at_flush_ticks);
	tcase_add_test(tc, buffer_never_grows_and_loses_nothing);
	tcase_add_test(tc, procstat_parses_hostile_comm);
	tcase_add_test(tc, proctab_keeps_files_open_and_forgets_the_dead);
	tcase_add_test(tc, idle_skip_rule);
	suite_add_tcase(s, tc);
	return s;
}

/* ---- the sampler's readers (syncmon.c, syncmon_ctl.c) ------------------ */
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>

#include "node/procfs.h"
#include "syncmon/json.h"
#include "syncmon/control.h"

START_TEST(job_cgroup_from_proc_self_cgroup)
{
	char out[512];
	const char *v2 = "0::/system.slice/node1_slurmstepd.scope/job_12/step_0/slurm\n";
	const char *v1 = "12:pids:/slurm/uid_0/job_12/step_batch\n"
			 "4:cpu,cpuacct:/slurm/uid_0/job_12/step_batch\n"
			 "1:name=systemd:/\n";

	ck_assert_int_eq(lwk_job_cgroup(v2, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/system.slice/node1_slurmstepd.scope/job_12");
	ck_assert_int_eq(lwk_job_cgroup(v1, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_12");
	/* job_1 is not job_12, and linuxproc makes no job cgroup at all. */
	ck_assert_int_eq(lwk_job_cgroup(v2, 1, "/sys/fs/cgroup", out, sizeof(out)), -1);
	ck_assert_int_eq(lwk_job_cgroup("0::/user.slice/session-3.scope\n", 12, "/x", out, sizeof(out)), -1);
}
END_TEST

START_TEST(environ_names_job_and_node)
{
	const char env[] = "A=1\0SLURM_JOB_ID=77\0SLURMD_NODENAME=node2\0";
	const char other[] = "SLURM_JOB_ID=770\0SLURMD_NODENAME=node2\0";

	ck_assert(lwk_environ_matches(env, sizeof(env) - 1, 77, "node2"));
	ck_assert(lwk_environ_matches(env, sizeof(env) - 1, 77, NULL));
	ck_assert(!lwk_environ_matches(env, sizeof(env) - 1, 77, "node1"));
	ck_assert(!lwk_environ_matches(env, sizeof(env) - 1, 7, "node2"));
	ck_assert(!lwk_environ_matches(other, sizeof(other) - 1, 77, "node2"));
	/* No terminating NUL at the end of the block: never read past it. */
	ck_assert(!lwk_environ_matches("SLURM_JOB_ID=7", 13, 7, NULL));
}
END_TEST

START_TEST(node_files_parse)
{
	uint64_t busy, total, forks, mt, ma;
	const char *stat = "cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 50 2 25 400 10 0 1 1 0 0\n"
			   "intr 1\nctxt 2\nbtime 3\nprocesses 4242\nprocs_running 1\n";

	ck_assert_int_eq(lwk_parse_proc_stat(stat, &busy, &total, &forks), 0);
	ck_assert_uint_eq(total, 100 + 5 + 50 + 800 + 20 + 1 + 2 + 3);
	ck_assert_uint_eq(busy, total - 800 - 20);
	ck_assert_uint_eq(forks, 4242);
	ck_assert_int_eq(lwk_parse_proc_stat("intr 1\n", &busy, &total, &forks), -1);
	ck_assert_int_eq(lwk_parse_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 600 kB\n",
					   &mt, &ma), 0);
	ck_assert_uint_eq(mt, 1000);
	ck_assert_uint_eq(ma, 600);
}
END_TEST

START_TEST(json_strings_stay_valid)
{
	char buf[64];

	lwk_json_string("a\"b\\c\n\x01\xe9", buf, sizeof(buf));
	ck_assert_str_eq(buf, "\"a\\\"b\\\\c\\u000a\\u0001\\u00e9\"");
	/* Too long: cut between characters, still a closed string. */
	ck_assert_uint_eq(lwk_json_string("abcdef", buf, 4), 3);
	ck_assert_str_eq(buf, "\"a\"");
	lwk_json_string("\xe9\xe9", buf, 10);
	ck_assert_str_eq(buf, "\"\\u00e9\"");
	{
		/* The worst comm the kernel gives (15 bytes to escape) fits
		 * the sampler's 128-byte buffer whole. */
		char comm[128];

		ck_assert_uint_eq(lwk_json_string("\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e",
						  comm, sizeof(comm)), 92);
	}
}
END_TEST

START_TEST(cgroup_walk_and_escape)
{
	char tmpl[] = "/tmp/lwk-cg.XXXXXX", path[512], esc[LWK_ESCAPE_MAX][512];
	char *root = mkdtemp(tmpl);
	pid_t pids[8];
	size_t n;
	FILE *f;
	int count;

	ck_assert_ptr_nonnull(root);
	snprintf(path, sizeof(path), "%s/job_5/step_0/task_0", root);
	ck_assert_int_eq(system((snprintf(path + 256, 256, "mkdir -p %s", path), path + 256)), 0);
	snprintf(path, sizeof(path), "%s/job_5/cgroup.procs", root);
	f = fopen(path, "w");
	fclose(f);
	snprintf(path, sizeof(path), "%s/job_5/step_0/cgroup.procs", root);
	f = fopen(path, "w");
	fputs("101\n102\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/job_5/step_0/task_0/cgroup.procs", root);
	f = fopen(path, "w");
	fputs("103\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/job_5", root);
	ck_assert_int_eq(lwk_cgroup_pids(path, pids, 8, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(lwk_cgroup_pids("/nonexistent-cgroup", pids, 8, &n), -1);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);

	count = lwk_cgroup_escape_paths("0::/system.slice/n1_slurmstepd.scope/job_5/step_0/slurm\n",
					5, "/sys/fs/cgroup", esc, LWK_ESCAPE_MAX);
	ck_assert_int_eq(count, 1);
	ck_assert_str_eq(esc[0], "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope/system/cgroup.procs");
	count = lwk_cgroup_escape_paths("7:freezer:/slurm/uid_0/job_5/step_0\n"
					"4:cpu,cpuacct:/slurm/uid_0/job_5/step_0\n"
					"1:name=systemd:/slurm/job_5\n3:memory:/user.slice\n",
					5, "/sys/fs/cgroup", esc, LWK_ESCAPE_MAX);
	ck_assert_int_eq(count, 2);
	ck_assert_str_eq(esc[0], "/sys/fs/cgroup/freezer/cgroup.procs");
	ck_assert_str_eq(esc[1], "/sys/fs/cgroup/cpu,cpuacct/cgroup.procs");
}
END_TEST

START_TEST(state_dir_refuses_odd_names)
{
	char out[512], err[256];

	ck_assert_int_eq(lwk_state_dir("relative", "n", 1, out, sizeof(out), err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_state_dir("/tmp", "../etc", 1, out, sizeof(out), err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_state_dir("/tmp", "", 1, out, sizeof(out), err, sizeof(err)), -1);
}
END_TEST

Suite *sampler_suite(void)
{
	Suite *s = suite_create("sampler");
	TCase *tc = tcase_create("sampler");

	tcase_add_test(tc, job_cgroup_from_proc_self_cgroup);
	tcase_add_test(tc, environ_names_job_and_node);
	tcase_add_test(tc, node_files_parse);
	tcase_add_test(tc, json_strings_stay_valid);
	tcase_add_test(tc, cgroup_walk_and_escape);
	tcase_add_test(tc, state_dir_refuses_odd_names);
	suite_add_tcase(s, tc);
	return s;
}

START_TEST(cgroup_cpu_stat_and_sweep)
{
	uint64_t us = 0;
	char tmpl[] = "/tmp/lwk-sweep.XXXXXX", path[512];
	char *root = mkdtemp(tmpl);
	int fd;

	ck_assert_int_eq(lwk_parse_cpu_stat("usage_usec 123456\nuser_usec 1\n", &us), 0);
	ck_assert_uint_eq(us, 123456);
	ck_assert_int_eq(lwk_parse_cpu_stat("xusage_usec 5\n", &us), -1);
	ck_assert_int_eq(lwk_cgroup_cpu_us("/nonexistent", &us), -1);

	/* Two jobs' state: one whose sampler (the lock holder) is gone, one
	 * whose lock is held.  The sweep removes only the first. */
	ck_assert_ptr_nonnull(root);
	chmod(root, 0755);
	for (int job = 1; job <= 2; job++) {
		snprintf(path, sizeof(path), "%s/n1", root);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/n1/%d", root, job);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/n1/%d/syncmon.lock", root, job);
		fd = open(path, O_CREAT | O_RDWR, 0600);
		ck_assert_int_ge(fd, 0);
		if (job == 2)
			ck_assert_int_eq(flock(fd, LOCK_EX), 0); /* kept open: held */
		else
			close(fd);
	}
	ck_assert_int_eq(lwk_syncmon_sweep(root, "n1"), 1);
	snprintf(path, sizeof(path), "%s/n1/1", root);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/n1/2/syncmon.lock", root);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

Suite *sweep_suite(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");

	tcase_add_test(tc, cgroup_cpu_stat_and_sweep);
	suite_add_tcase(s, tc);
	return s;
}

/* ---- the starter, for real (root: root-owned state and sampler) -------- */
#include <dirent.h>
#include <limits.h>

/* The built sampler (make check sets SYNCMON), as an absolute path. */
static const char *sampler_path(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("SYNCMON");

	if (!realpath(env && *env ? env : "lwk-syncmon", path))
		ck_abort_msg("no lwk-syncmon at %s (set SYNCMON)", env ? env : "./lwk-syncmon");
	return path;
}

/* The pids of processes whose command line has "--state <state>". */
static int samplers_of(const char *state, pid_t *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (n < max && (e = readdir(d))) {
		char path[300], buf[8192];
		ssize_t len;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		for (char *a = buf; a < buf + len; a += strlen(a) + 1)
			if (!strcmp(a, "--state") && a + strlen(a) + 1 < buf + len &&
			    !strcmp(a + strlen(a) + 1, state))
				pids[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

/* Kill what a failed test left running (one may still be on its way
 * to exec: look for a while); how many there were. */
static int kill_samplers(const char *state)
{
	pid_t pids[8];
	int n = 0;

	for (int i = 0; i < 20 && !(n = samplers_of(state, pids, 8)); i++)
		usleep(10000);

	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	return n;
}

static char starter_root[64];

static struct lwk_syncmon_start starter_args(uint32_t job, const char *program)
{
	static char out[128];
	struct lwk_syncmon_start a = { 0 };

	snprintf(out, sizeof(out), "%s/out", starter_root);
	mkdir(out, 0755);
	a.program = program;
	a.state_root = starter_root;
	a.node = "n1";
	a.job = job;
	a.uid = 0;
	a.gid = 0;
	a.dir = out;
	a.options = "interval=50ms";
	return a;
}

static void starter_setup(void)
{
	snprintf(starter_root, sizeof(starter_root), "/tmp/lwk-starter.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(starter_root));
	chmod(starter_root, 0755);
}

static void starter_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", starter_root);
	if (system(cmd)) {
		/* best effort */
	}
}

/*
 * A job that ends right after its sampler started: the epilog's stop
 * comes at once.  The starter must have recorded the sampler's pid
 * before it returned, so the stop finds and stops it, and nothing of it
 * is left (no process, no state).  Several times: one lucky order of
 * events must not hide the race.
 */
START_TEST(start_then_immediate_stop_stops_the_sampler)
{
	const char *program = sampler_path();
	char err[512], log[4096], state[256];
	int stopped = 0, left = 0, started = 0;

	for (uint32_t job = 4100001; job <= 4100005; job++) {
		struct lwk_syncmon_start a = starter_args(job, program);
		pid_t pids[8];
		int n = 0;

		snprintf(state, sizeof(state), "%s/n1/%u", starter_root, job);
		started += lwk_syncmon_start(&a, err, sizeof(err)) == 1;
		stopped += lwk_syncmon_stop(starter_root, "n1", job, 2000, log, sizeof(log)) == 1;
		/* None may show up in the next half second (a sampler the stop
		 * missed may still be on its way to exec). */
		for (int i = 0; i < 50 && !(n = samplers_of(state, pids, 8)); i++)
			usleep(10000);
		/* One that was stopped may still await its reaping by init. */
		for (int i = 0; i < 200 && n && (n = samplers_of(state, pids, 8)); i++)
			usleep(10000);
		left += n;
		kill_samplers(state);
		ck_assert_msg(access(state, F_OK) != 0, "state %s left behind", state);
	}
	ck_assert_int_eq(started, 5);
	ck_assert_msg(stopped == 5 && left == 0,
		      "start then stop at once: %d of 5 samplers found and stopped, %d still ran",
		      stopped, left);
}
END_TEST

/* While it runs, the sampler's pid is on record and a second start on
 * the node starts nothing. */
START_TEST(the_pid_is_recorded_before_start_returns)
{
	const char *program = sampler_path();
	struct lwk_syncmon_start a = starter_args(4100010, program);
	char err[512], path[256], buf[32] = "", state[256];
	pid_t pids[8];
	ssize_t len;
	int fd, n;

	snprintf(state, sizeof(state), "%s/n1/4100010", starter_root);
	ck_assert_int_eq(lwk_syncmon_start(&a, err, sizeof(err)), 1);
	snprintf(path, sizeof(path), "%s/syncmon.pid", state);
	fd = open(path, O_RDONLY);
	len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[len > 0 ? len : 0] = '\0';
	n = samplers_of(state, pids, 8);
	ck_assert_int_eq(lwk_syncmon_start(&a, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_syncmon_stop(starter_root, "n1", 4100010, 2000, NULL, 0), 1);
	kill_samplers(state);
	ck_assert_msg(len > 0, "no %s when start returned", path);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(atoi(buf), pids[0]);
}
END_TEST

/* A sampler that cannot be run is an error of the start, not a silent
 * success: the job's log then says why there is no sampler. */
START_TEST(a_sampler_that_cannot_run_is_an_error)
{
	char program[128], err[512] = "", state[256];
	struct lwk_syncmon_start a;
	int fd, rc;

	snprintf(program, sizeof(program), "%s/not-a-program", starter_root);
	fd = open(program, O_WRONLY | O_CREAT | O_EXCL, 0755);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\177ELF garbage\n", 13), 13);
	close(fd);
	a = starter_args(4100020, program);
	rc = lwk_syncmon_start(&a, err, sizeof(err));
	snprintf(state, sizeof(state), "%s/n1/4100020", starter_root);
	lwk_syncmon_stop(starter_root, "n1", 4100020, 0, NULL, 0);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err, "cannot run") && strstr(err, program), "message: %s", err);
}
END_TEST

Suite *starter_root_suite(void)
{
	Suite *s = suite_create("starter");
	TCase *tc = tcase_create("starter");

	tcase_add_checked_fixture(tc, starter_setup, starter_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, start_then_immediate_stop_stops_the_sampler);
	tcase_add_test(tc, the_pid_is_recorded_before_start_returns);
	tcase_add_test(tc, a_sampler_that_cannot_run_is_an_error);
	suite_add_tcase(s, tc);
	return s;
}
