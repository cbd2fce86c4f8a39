/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncmon/start.c, for real (root: root-owned state and sampler), with
 * the stop of syncmon/stop.c right after. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_lwk.h"
#include "common/config.h"
#include "syncmon/control.h"

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
	struct lwk_config site;

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
	/* The bounds a site gets without saying any. */
	lwk_config_defaults(&site);
	a.memory_max = site.syncmon_memory;
	a.cpu_max = site.syncmon_cpu;
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

/* Every argument reaches the sampler, with the most of them: a job
 * cgroup, CPUs to run on and the site's bounds. */
START_TEST(the_sampler_gets_every_argument)
{
	const char *program = sampler_path();
	struct lwk_syncmon_start a = starter_args(4100030, program);
	static const char *const want[] = { "--job", "4100030", "--node", "n1", "--options",
					    "interval=50ms", "--ready-fd", "5", "--memory-max",
					    "134217728", "--cpu-max", "1000", "--cgroup", "", "--cpus",
					    "0", NULL };
	char err[512], state[256], path[300], cmd[8192], cg[256];
	pid_t pids[8];
	ssize_t len;
	int fd, n;

	snprintf(cg, sizeof(cg), "%s/cg", starter_root);
	ck_assert_int_eq(mkdir(cg, 0755), 0);
	a.cgroup = cg;
	a.cpus = "0";
	snprintf(state, sizeof(state), "%s/n1/4100030", starter_root);
	ck_assert_int_eq(lwk_syncmon_start(&a, err, sizeof(err)), 1);
	n = samplers_of(state, pids, 8);
	ck_assert_int_eq(n, 1);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pids[0]);
	fd = open(path, O_RDONLY);
	len = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
	if (fd >= 0)
		close(fd);
	ck_assert_int_gt(len, 0);
	cmd[len] = '\0';
	for (const char *const *w = want; *w; w++) {
		const char *value = **w ? *w : cg; /* "": the cgroup made here */
		bool found = false;

		for (ssize_t off = 0; off < len; off += (ssize_t)strlen(cmd + off) + 1)
			if (!strcmp(cmd + off, value))
				found = true;
		ck_assert_msg(found, "the sampler's command line lacks '%s'", value);
	}
	ck_assert_int_eq(lwk_syncmon_stop(starter_root, "n1", 4100030, 2000, NULL, 0), 1);
	kill_samplers(state);
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

/*
 * A sampler that runs but stops before it says its source is open
 * (crashed, its loader failed, older than the plugin): with source=bpf
 * (must_open) the job's error, with where to look; with another source
 * the start's error, logged, and the job goes on.  The stand-in exits at
 * once without a word (a copy of false(1), root's like the real one;
 * fexecve cannot run a script).
 */
static void gone_sampler(uint32_t job, bool must_open, int want_rc)
{
	char program[128], err[512] = "", buf[65536];
	struct lwk_syncmon_start a;
	int fd, in, rc;
	ssize_t n;

	snprintf(program, sizeof(program), "%s/gone-sampler-%u", starter_root, job);
	fd = open(program, O_WRONLY | O_CREAT | O_EXCL, 0755);
	in = open("/bin/false", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(in, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(fd, buf, (size_t)n), n);
	close(in);
	close(fd);
	a = starter_args(job, program);
	a.must_open = must_open;
	rc = lwk_syncmon_start(&a, err, sizeof(err));
	lwk_syncmon_stop(starter_root, "n1", job, 0, NULL, 0);
	ck_assert_msg(rc == want_rc, "rc %d, message: %s", rc, err);
	ck_assert_msg(strstr(err, "stopped before its source was open") && strstr(err, "slurmd log"),
		      "message: %s", err);
}

START_TEST(a_sampler_gone_before_its_report_fails_a_source_bpf_job)
{
	gone_sampler(4100040, true, -2);
}
END_TEST

START_TEST(a_sampler_gone_before_its_report_is_logged_for_other_sources)
{
	gone_sampler(4100041, false, -1);
}
END_TEST

/*
 * source=bpf where BPF cannot work is the job's error, not a silent
 * fallback: the sampler says why on --ready-fd and exits, and the start
 * returns -2 with the reason, for the job's tasks to fail with.  Made
 * real by starting the real sampler without the capabilities to load
 * BPF (dropped from this test process's bounding set: Check runs each
 * test in its own process); a build without BPF refuses as well.
 */
START_TEST(source_bpf_that_cannot_work_is_refused_with_the_reason)
{
	const char *program = sampler_path();
	static const int caps[] = { 21 /* SYS_ADMIN */, 38 /* PERFMON */, 39 /* BPF */ };
	struct lwk_syncmon_start a = starter_args(4100030, program);
	char err[512] = "";
	int rc;

	for (size_t i = 0; i < sizeof(caps) / sizeof(*caps); i++)
		prctl(PR_CAPBSET_DROP, caps[i], 0, 0, 0); /* EINVAL: an older kernel's unknown cap */
	a.options = "source=bpf";
	rc = lwk_syncmon_start(&a, err, sizeof(err));
	lwk_syncmon_stop(starter_root, "n1", 4100030, 1000, NULL, 0);
	ck_assert_int_eq(rc, -2);
	ck_assert_msg(strstr(err, "lwk: --sync-monitor source=bpf cannot work on this node: bpf: ") &&
			      (strstr(err, "no permission") || strstr(err, "not built")),
		      "message: %s", err);
}
END_TEST

Suite *start_root_suite(void)
{
	Suite *s = suite_create("start");
	TCase *tc = tcase_create("start");

	tcase_add_checked_fixture(tc, starter_setup, starter_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, start_then_immediate_stop_stops_the_sampler);
	tcase_add_test(tc, the_sampler_gets_every_argument);
	tcase_add_test(tc, the_pid_is_recorded_before_start_returns);
	tcase_add_test(tc, a_sampler_that_cannot_run_is_an_error);
	tcase_add_test(tc, source_bpf_that_cannot_work_is_refused_with_the_reason);
	tcase_add_test(tc, a_sampler_gone_before_its_report_fails_a_source_bpf_job);
	tcase_add_test(tc, a_sampler_gone_before_its_report_is_logged_for_other_sources);
	suite_add_tcase(s, tc);
	return s;
}
