/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job liveness (joblive.c) with a stand-in for libslurm: slurmctld's
 * answers (yes, no, unknown, completing, elsewhere), no libslurm at all,
 * a query from a process running as another user for now, tasks left
 * without a slurmstepd, and whose slurmstepd counts. */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
static uint32_t job_state;
static const char *job_nodes = "n1";
static uid_t job_uid = 3999999;

static int fake_load(job_info_msg_t **msg, lwk_job_key_t key, uint16_t flags)
{
	uint32_t job = lwk_job_key_id(key);
	job_info_msg_t *m;

	(void)flags;
	calls++;
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
	calls = 0;
	job_state = JOB_RUNNING;
	job_nodes = "n0,n1";
	job_uid = 3999999;
	setenv("SLURMD_NODENAME", "n1", 1);
}

static void teardown(void)
{
	lwk_slurm_api_override = NULL;
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
	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		close(fds[0]);
		if (dup2(fds[1], 3) < 0)
			_exit(3);
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
	suite_add_tcase(s, tc);
	return s;
}
