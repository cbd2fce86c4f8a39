/* SPDX-License-Identifier: GPL-2.0-or-later */
/* --contention-aware on one node over a temporary tree: the record, the
 * job's cgroup, arrivals, departures, a crashed job, decisions from
 * curves written to each job's cgroup tree. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "casas/casasnode.h"
#include "check_lwk.h"

static char err[1024], sysfs[300], cgroot[300], state[300], logbuf[16384];
static char rec_path[700];
static struct lwk_node_roots roots;

#define JOBCG "cg/s.slice/n1.scope/job_%u"

/* The guest node: 8 CPUs in 4 dies (0-1, 2-3 on NUMA node 0; 4-5, 6-7 on
 * node 1), a cgroup v2 tree with Slurm's cgroups of jobs 41, 42, 43. */
static void node_tree(void)
{
	char p[300];

	tree_make("casas");
	tree_mkdir("cg");
	tree_put("cg/cgroup.controllers", "cpuset cpu memory\n");
	for (unsigned int j = 41; j <= 43; j++) {
		static const char *const dirs[] = { "", "/step_0", "/step_0/user", "/step_0/user/task_0",
						    NULL };

		for (int d = 0; dirs[d]; d++) {
			snprintf(p, sizeof(p), JOBCG "%s", j, dirs[d]);
			tree_mkdir(p);
			snprintf(p, sizeof(p), JOBCG "%s/cpuset.cpus", j, dirs[d]);
			tree_put(p, "0-7\n");
			snprintf(p, sizeof(p), JOBCG "%s/cpuset.mems", j, dirs[d]);
			tree_put(p, "0-1\n");
		}
	}
	tree_mkdir("state");
	chmod(tree_root, 0755);
	snprintf(sysfs, sizeof(sysfs), "%s/guest8", getenv("FIXTURES"));
	snprintf(cgroot, sizeof(cgroot), "%s/cg", tree_root);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ sysfs, "/proc", cgroot, state, "n1", NULL, 0, 0 };
	logbuf[0] = '\0';
}

static bool all_alive(uint32_t job)
{
	(void)job;
	return true;
}

static uint32_t gone_job;
static bool alive_but_one(uint32_t job)
{
	return job != gone_job;
}

/* An alive() that notes whether the node lock was held when it was
 * asked (a second open file of the lock cannot take it then): it may
 * wait on slurmctld for seconds, and everything on the node waits for
 * that lock. */
static int asked_under_lock, asked;
static bool alive_lock_free(uint32_t job)
{
	char p[400];
	int fd;

	asked++;
	snprintf(p, sizeof(p), "%s/.node.lock", state);
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		if (flock(fd, LOCK_EX | LOCK_NB))
			asked_under_lock++;
		close(fd);
	}
	return job != gone_job;
}

static struct lwk_casas_record arriving(uint32_t job)
{
	struct lwk_casas_record r;

	memset(&r, 0, sizeof(r));
	r.job = job;
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, "event=task-clock", &r.opts, err,
					  sizeof(err)),
			 0);
	snprintf(r.status, sizeof(r.status), "probing");
	snprintf(r.cgroup, sizeof(r.cgroup), "/s.slice/n1.scope/job_%u", job);
	r.allowed_cpus = cpus_of("0-7");
	r.allowed_mems = cpus_of("0-1");
	return r;
}

static struct lwk_casas_record load(uint32_t job)
{
	struct lwk_casas_record r;

	ck_assert_int_eq(lwk_casas_load(&roots, job, &r), 1);
	return r;
}


static unsigned int ndies(uint32_t job)
{
	struct lwk_casas_record r = load(job);

	return lwk_cpuset_count(&r.dies);
}

static const char *dies_of(uint32_t job)
{
	struct lwk_casas_record r = load(job);

	return cpus_text(&r.dies);
}

/* Every cgroup of the job holds what its record says. */
static void assert_cgroup_matches(uint32_t job)
{
	struct lwk_casas_record r = load(job);
	static const char *const dirs[] = { "", "/step_0", "/step_0/user", "/step_0/user/task_0", NULL };
	char p[300];

	for (int d = 0; dirs[d]; d++) {
		for (int m = 0; m < 2; m++) {
			struct lwk_cpuset have;
			const struct lwk_cpuset *want = m ? &r.mems : &r.cpus;

			snprintf(p, sizeof(p), JOBCG "%s/cpuset.%s", job, dirs[d], m ? "mems" : "cpus");
			ck_assert_ptr_nonnull(tree_get(p));
			ck_assert_int_eq(lwk_cpulist_parse(tree_get(p), LWK_MAX_CPUS, &have), 0);
			ck_assert_msg(lwk_cpuset_equal(&have, want), "%s is '%s', record '%s'", p,
				      tree_get(p), cpus_text(want));
		}
	}
}

/* A record as a probe would have left it: curve shape over 1..4 dies. */
static void put_probed(uint32_t job, const double *rel)
{
	struct lwk_casas_record r = load(job);
	char text[8192], p[300];

	r.probing = 0;
	r.curve.n = 4;
	for (int k = 1; k <= 4; k++)
		r.curve.ips[k] = rel[k - 1] * 1e9;
	lwk_casas_record_format(&r, text, sizeof(text));
	snprintf(p, sizeof(p), "state/n1/casas/%u", job);
	tree_put(p, text);
}

START_TEST(record_text_reads_back_and_bad_records_are_refused)
{
	static const char *const bad[] = {
		"job=0\nstatus=placed\n", "job=7\nstatus=sleeping\n", "job=7\n",
		"job=7\nstatus=placed\ncgroup=/a/../b\n", "job=7\nstatus=placed\ncgroup=rel\n",
		"job=7\nstatus=placed\ndies=0-99999\n", "job=7\nstatus=placed\nips=2:1\n",
		"job=7\nstatus=placed\noptions=probe=1h\n", "job=7\nstatus=placed\nprobing=x\n",
		"job=-7\nstatus=placed\n", "no equals\n", NULL
	};
	struct lwk_casas_record a = arriving(7), b;
	char text[8192];

	a.dies = cpus_of("1,3");
	a.cpus = cpus_of("2-3,6-7");
	a.curve.n = 2;
	a.curve.ips[1] = 1e9;
	a.curve.ips[2] = 1.5e9;
	snprintf(a.why, sizeof(a.why), "line\nbreak");
	lwk_casas_record_format(&a, text, sizeof(text));
	ck_assert_int_eq(lwk_casas_record_parse(text, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(b.job, 7);
	ck_assert_str_eq(b.status, "probing");
	ck_assert_str_eq(b.cgroup, a.cgroup);
	ck_assert_str_eq(cpus_text(&b.dies), "1,3");
	ck_assert_str_eq(cpus_text(&b.cpus), "2-3,6-7");
	ck_assert_uint_eq(b.curve.n, 2);
	ck_assert_str_eq(b.why, "line break"); /* one line in the file */
	ck_assert_str_eq(b.opts.event, "task-clock");
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(lwk_casas_record_parse(bad[i], &b, err, sizeof(err)) == -1 &&
				      !strncmp(err, "lwk: ", 5),
			      "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(the_jobs_cgroup_is_found_in_proc_cgroup)
{
	char path[768];

	ck_assert_int_eq(lwk_casas_job_cgroup("0::/system.slice/n2_slurmstepd.scope/job_42/step_0/user/task_1\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/system.slice/n2_slurmstepd.scope/job_42");
	/* v1: the cpuset line, whatever else the hierarchy holds. */
	ck_assert_int_eq(lwk_casas_job_cgroup("12:memory:/slurm_n1/uid_0/job_42/step_batch\n"
					      "4:cpuset,cpu:/slurm_n1/uid_0/job_42/step_batch\n"
					      "0::/init.scope\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/slurm_n1/uid_0/job_42");
	/* Not another job's, not a prefix of one. */
	ck_assert_int_eq(lwk_casas_job_cgroup("0::/s/job_420/step_0\n", 42, path, sizeof(path)), -1);
	ck_assert_int_eq(lwk_casas_job_cgroup("0::/s/job_43/step_0\n", 42, path, sizeof(path)), -1);
	/* v1 before slurmstepd joined the cpuset hierarchy: the same path
	 * from another one. */
	ck_assert_int_eq(lwk_casas_job_cgroup("4:cpuset:/\n3:freezer:/slurm_n1/uid_0/job_42/step_0\n",
					      42, path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/slurm_n1/uid_0/job_42");
	ck_assert_int_eq(lwk_casas_job_cgroup("", 42, path, sizeof(path)), -1);
}
END_TEST

START_TEST(arrivals_departures_and_a_crash_move_dies_between_jobs)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), c = arriving(43), r;

	node_tree();
	/* The first job is held on one die for its probe, the node's first. */
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(a.status, "probing");
	ck_assert_str_eq(cpus_text(&a.dies), "0");
	assert_cgroup_matches(41);
	/* A second step of the same job finds the record. */
	r = arriving(41);
	ck_assert_int_eq(lwk_casas_join(&roots, &r, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 0);
	ck_assert_str_eq(cpus_text(&r.dies), "0");
	/* No counters: no curve, an equal split; alone, all four dies. */
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	ck_assert_str_eq(r.status, "equal");
	ck_assert_str_eq(cpus_text(&r.dies), "0-3");
	assert_cgroup_matches(41);
	/* A second job: held on one die, the first keeps the rest. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(lwk_cpuset_count(&b.dies), 1);
	ck_assert_uint_eq(ndies(41), 3);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(ndies(41), 2);
	ck_assert_uint_eq(ndies(42), 2);
	assert_cgroup_matches(41);
	assert_cgroup_matches(42);
	/* Curves decide: 41 scales, 42 does not. */
	{
		static const double scales[] = { 1, 2, 3, 4 }, flat[] = { 1, 1.01, 1.01, 1.01 };

		put_probed(41, scales);
		put_probed(42, flat);
	}
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	ck_assert_str_eq(r.status, "placed");
	ck_assert_uint_eq(lwk_cpuset_count(&r.dies), 3);
	ck_assert_uint_eq(ndies(42), 1);
	assert_cgroup_matches(41);
	assert_cgroup_matches(42);
	/* Job 42 leaves: 41 gets the node. */
	ck_assert_int_eq(lwk_casas_leave(&roots, 42, all_alive, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_eq(lwk_casas_load(&roots, 42, &r), 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	assert_cgroup_matches(41);
	/* Job 43 arrives, then its slurmstepd is killed: the next re-plan
	 * (here a sweep) drops it and 41 gets its die back. */
	ck_assert_int_eq(lwk_casas_join(&roots, &c, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(ndies(41), 3);
	gone_job = 43;
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, alive_but_one, logbuf, sizeof(logbuf)), 0);
	ck_assert_int_eq(lwk_casas_load(&roots, 43, &r), 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	ck_assert_ptr_nonnull(strstr(logbuf, "job 43 is gone: its dies return to the others"));
	/* The record is for the job's user to read. */
	{
		struct stat st;

		snprintf(rec_path, sizeof(rec_path), "%s/n1/casas/41", state);
		ck_assert_int_eq(stat(rec_path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0644);
	}
	tree_remove();
}
END_TEST

START_TEST(job_liveness_is_asked_without_the_node_lock)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), c = arriving(43);
	volatile int stop = 1;

	node_tree();
	gone_job = 0;
	asked = asked_under_lock = 0;
	ck_assert_int_eq(lwk_casas_join(&roots, &a, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_join(&roots, &b, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, alive_lock_free, logbuf, sizeof(logbuf)), 0);
	ck_assert_int_eq(lwk_casas_probe(&roots, 42, &stop, alive_lock_free, logbuf, sizeof(logbuf),
					 NULL),
			 0);
	ck_assert_int_eq(lwk_casas_join(&roots, &c, alive_lock_free, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	/* Gone jobs are still dropped, and their dies go to the others. */
	gone_job = 42;
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, alive_lock_free, logbuf, sizeof(logbuf)), 0);
	ck_assert_int_eq(lwk_casas_load(&roots, 42, &b), 0);
	ck_assert_int_eq(lwk_casas_leave(&roots, 43, alive_lock_free, logbuf, sizeof(logbuf)), 1);
	ck_assert_int_gt(asked, 0);
	ck_assert_int_eq(asked_under_lock, 0);
	ck_assert_str_eq(dies_of(41), "0-3");
	gone_job = 0;
	tree_remove();
}
END_TEST

/* What the cgroup file of job (below its cgroup) holds, as a cpulist. */
static const char *cg_cpus(uint32_t job, const char *below)
{
	struct lwk_cpuset have;
	char p[300];

	snprintf(p, sizeof(p), JOBCG "%s/cpuset.cpus", job, below);
	ck_assert_ptr_nonnull(tree_get(p));
	ck_assert_int_eq(lwk_cpulist_parse(tree_get(p), LWK_MAX_CPUS, &have), 0);
	return cpus_text(&have);
}

/* Slurm binds a step's tasks to its CPUs after forking them: while a
 * step starts them, the job's cgroups keep all of Slurm's CPUs, whatever
 * a re-plan decides meanwhile; its last task bound, the decision. */
START_TEST(a_step_starting_its_tasks_has_all_of_slurms_cpus)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42);

	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(cpus_text(&a.cpus), "0-1"); /* held on one die */
	ck_assert_int_eq(lwk_casas_launch(&roots, 41, err, sizeof(err)), 0);
	ck_assert_str_eq(cg_cpus(41, ""), "0-7");
	ck_assert_str_eq(cg_cpus(41, "/step_0/user/task_0"), "0-7");
	ck_assert_uint_eq(load(41).launcher_pid, (unsigned int)getpid());
	/* Another job arrives: the re-plan leaves the launch alone. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(cg_cpus(41, "/step_0"), "0-7");
	ck_assert_uint_gt(ndies(41), 0);
	/* Its tasks are bound: the decision. */
	ck_assert_int_eq(lwk_casas_reapply(&roots, 41, err, sizeof(err)), 0);
	ck_assert_uint_eq(load(41).launcher_pid, 0);
	assert_cgroup_matches(41);
	/* A step that died while starting its tasks: the next re-plan
	 * narrows the job again. */
	{
		pid_t child = fork();

		ck_assert_int_ge(child, 0);
		if (!child)
			_exit(lwk_casas_launch(&roots, 42, err, sizeof(err)) ? 1 : 0);
		ck_assert_int_eq(waitpid(child, NULL, 0), child);
	}
	ck_assert_str_eq(cg_cpus(42, "/step_0"), "0-7");
	ck_assert_uint_ne(load(42).launcher_pid, 0);
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(load(42).launcher_pid, 0);
	assert_cgroup_matches(42);
	ck_assert_str_ne(cg_cpus(42, "/step_0"), "0-7");
	tree_remove();
}
END_TEST

START_TEST(a_job_without_a_cgroup_is_off_and_never_touched)
{
	struct lwk_casas_record a = arriving(41), off = arriving(42), r;

	node_tree();
	snprintf(off.status, sizeof(off.status), "off");
	snprintf(off.why, sizeof(off.why), "no job cgroup");
	off.cgroup[0] = '\0';
	ck_assert_int_eq(lwk_casas_join(&roots, &off, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_str_eq(off.status, "off");
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	/* The job that is off takes no die from the others. */
	ck_assert_str_eq(dies_of(41), "0-3");
	r = load(42);
	ck_assert_str_eq(r.status, "off");
	ck_assert_uint_eq(lwk_cpuset_count(&r.dies), 0);
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_42/cpuset.cpus"), "0-7\n");
	tree_remove();
}
END_TEST

/* The node's lock file name in the casas directory, taken by the test. */
static int take(const char *name)
{
	char p[700];
	int fd;

	snprintf(p, sizeof(p), "%s/n1/casas/%s", state, name);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	return fd;
}

static void put_record(const struct lwk_casas_record *r, const char *extra)
{
	char text[8192], p[300];

	lwk_casas_record_format(r, text, sizeof(text));
	strncat(text, extra, sizeof(text) - strlen(text) - 1);
	snprintf(p, sizeof(p), "state/n1/casas/%u", r->job);
	tree_put(p, text);
}

START_TEST(a_probe_that_never_began_gives_the_hold_back)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42), r;
	volatile int stop = 1;
	int lock;

	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_uint_eq(a.probing, 1);
	/* Another job probes; this job's step ends while it waits. */
	lock = take(".probe.lock");
	ck_assert_int_eq(lwk_casas_probe(&roots, 41, &stop, all_alive, logbuf, sizeof(logbuf), NULL),
			 0);
	close(lock);
	r = load(41);
	ck_assert_uint_eq(r.probing, 0);
	ck_assert_str_ne(r.status, "probing");
	ck_assert_str_eq(dies_of(41), "0-3");
	/* A probe killed with its slurmstepd (the process that holds the
	 * job is gone): the next re-plan gives the hold back. */
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	{
		pid_t child = fork();
		char extra[64];

		ck_assert_int_ge(child, 0);
		if (!child)
			_exit(0);
		waitpid(child, NULL, 0);
		r = load(42);
		ck_assert_uint_eq(r.probing, 1);
		snprintf(extra, sizeof(extra), "prober=%d:12345\n", (int)child);
		put_record(&r, extra);
	}
	/* A next step of the job finds it so and re-plans. */
	logbuf[0] = '\0';
	b = arriving(42);
	ck_assert_int_eq(lwk_casas_join(&roots, &b, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(b.probing, 0);
	r = load(42);
	ck_assert_uint_eq(r.probing, 0);
	ck_assert_str_ne(r.status, "probing");
	ck_assert_ptr_nonnull(strstr(logbuf, "job 42: its probe (process"));
	/* While its prober lives, the hold stands. */
	r = load(41);
	r.probing = 2;
	put_record(&r, "");
	{
		char extra[64];
		struct lwk_casas_record me = arriving(43);

		ck_assert_int_eq(lwk_casas_join(&roots, &me, all_alive, logbuf, sizeof(logbuf), err,
						sizeof(err)),
				 1);
		/* 43's prober is this process: put it on 41 too. */
		snprintf(extra, sizeof(extra), "prober=%u:%llu\n", me.prober_pid, me.prober_start);
		put_record(&r, extra);
	}
	ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
	ck_assert_uint_eq(load(41).probing, 2);
	ck_assert_uint_eq(load(43).probing, 1);
	/* A live process with the pid but another start time (the pid was
	 * reused): that probe is gone. */
	{
		char extra[64];

		r = load(41);
		snprintf(extra, sizeof(extra), "prober=%u:%llu\n", r.prober_pid, r.prober_start - 1);
		put_record(&r, extra);
		ck_assert_int_eq(lwk_casas_leave(&roots, 0, all_alive, logbuf, sizeof(logbuf)), 0);
		ck_assert_uint_eq(load(41).probing, 0);
		ck_assert_uint_eq(load(43).probing, 1);
	}
	tree_remove();
}
END_TEST

struct reapplier {
	int rc;
	char e[512];
};

static void *reapply_41(void *arg)
{
	struct reapplier *ra = arg;

	ra->rc = lwk_casas_reapply(&roots, 41, ra->e, sizeof(ra->e));
	return NULL;
}

START_TEST(reapply_writes_memory_nodes_under_the_memory_lock)
{
	struct lwk_casas_record a = arriving(41), r;
	struct reapplier ra = { 0, "" };
	struct timespec ms300 = { 0, 300000000 };
	pthread_t t;
	int lock;

	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, &a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, 41, all_alive, logbuf, sizeof(logbuf)), 0);
	r = load(41);
	r.mems = cpus_of("1");
	put_record(&r, "");
	/* A bind_memory of another thread is writing memory nodes. */
	lock = take(".mems.lock");
	ck_assert_int_eq(pthread_create(&t, NULL, reapply_41, &ra), 0);
	nanosleep(&ms300, NULL);
	ck_assert_str_eq(tree_get("cg/s.slice/n1.scope/job_41/cpuset.mems"), "0-1\n");
	close(lock);
	pthread_join(t, NULL);
	ck_assert_msg(ra.rc == 0, "%s", ra.e);
	assert_cgroup_matches(41);
	r = load(41);
	ck_assert_str_eq(cpus_text(&r.mems), "1");
	tree_remove();
}
END_TEST

/* ---- two threads (the probe's and the step's main one) ------------------ */

struct racer {
	uint32_t job;
	const char *text;		/* parse this, or */
	const struct lwk_node_roots *roots; /* load job's record from here */
	struct lwk_cpuset want_dies;
	char want_cgroup[64];
	int bad;			/* results that were not this job's */
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char e[256];

	for (int i = 0; i < 4000; i++) {
		struct lwk_casas_record got;
		int rc = r->text ? lwk_casas_record_parse(r->text, &got, e, sizeof(e))
				 : lwk_casas_load(r->roots, r->job, &got) == 1 ? 0 : -1;

		if (rc || got.job != r->job || strcmp(got.cgroup, r->want_cgroup) ||
		    !lwk_cpuset_equal(&got.dies, &r->want_dies))
			r->bad++;
	}
	return NULL;
}

/* Each job's own record, also while another thread reads another's: a
 * shared buffer once mixed them (job 41's memory nodes onto job 42). */
static void race_two(struct racer *a, struct racer *b)
{
	pthread_t ta, tb;

	ck_assert_int_eq(pthread_create(&ta, NULL, race, a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, race, b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_msg(!a->bad && !b->bad, "mixed records: %d of job %u's, %d of job %u's", a->bad,
		      a->job, b->bad, b->job);
}

static struct racer racer_of(uint32_t job, const char *dies)
{
	struct racer r;

	memset(&r, 0, sizeof(r));
	r.job = job;
	r.want_dies = cpus_of(dies);
	snprintf(r.want_cgroup, sizeof(r.want_cgroup), "/s.slice/n1.scope/job_%u", job);
	return r;
}

START_TEST(two_threads_parse_and_load_their_own_records)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42);
	struct racer ra = racer_of(41, "0"), rb = racer_of(42, "1-3");
	char ta[8192], tb[8192];

	a.dies = ra.want_dies;
	b.dies = rb.want_dies;
	snprintf(a.split, sizeof(a.split), "%0500d", 1); /* long lines, long copies */
	snprintf(b.split, sizeof(b.split), "%0400d", 2);
	lwk_casas_record_format(&a, ta, sizeof(ta));
	lwk_casas_record_format(&b, tb, sizeof(tb));
	ra.text = ta;
	rb.text = tb;
	race_two(&ra, &rb);
	/* The same through the files. */
	tree_make("casasrace");
	tree_mkdir("state/n1/casas");
	tree_put("state/n1/casas/41", ta);
	tree_put("state/n1/casas/42", tb);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ "/sys", "/proc", "/nonexistent", state, "n1", NULL, 0, 0 };
	ra = racer_of(41, "0");
	rb = racer_of(42, "1-3");
	ra.roots = rb.roots = &roots;
	race_two(&ra, &rb);
	tree_remove();
}
END_TEST

Suite *casasnode_suite(void)
{
	Suite *s = suite_create("casasnode");
	TCase *tc = tcase_create("node");

	tcase_add_test(tc, record_text_reads_back_and_bad_records_are_refused);
	tcase_add_test(tc, the_jobs_cgroup_is_found_in_proc_cgroup);
	tcase_add_test(tc, two_threads_parse_and_load_their_own_records);
	suite_add_tcase(s, tc);
	return s;
}

/* Run by check_lwk_root: the state directories must be root's. */
Suite *casasnode_root_suite(void)
{
	Suite *s = suite_create("casasnode (root)");
	TCase *tc = tcase_create("node");

	tcase_add_test(tc, arrivals_departures_and_a_crash_move_dies_between_jobs);
	tcase_add_test(tc, job_liveness_is_asked_without_the_node_lock);
	tcase_add_test(tc, a_step_starting_its_tasks_has_all_of_slurms_cpus);
	tcase_add_test(tc, a_job_without_a_cgroup_is_off_and_never_touched);
	tcase_add_test(tc, a_probe_that_never_began_gives_the_hold_back);
	tcase_add_test(tc, reapply_writes_memory_nodes_under_the_memory_lock);
	suite_add_tcase(s, tc);
	return s;
}
