/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node/procfs.c: a job's cgroups and processes, the node's counters. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_lwk.h"
#include "node/procfs.h"


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
	/* A v1 slurmstepd, as Slurm 22.05 places it (proctrack/cgroup,
	 * task/cgroup): in the freezer job level, the cpuset and memory
	 * step levels, in no cpuacct job cgroup (jobacct_gather/cgroup puts
	 * only tasks there); the freezer one holds every process of the
	 * job.  A cpuacct one, where a slurmstepd is in it, is taken first
	 * (it gives the job's CPU total). */
	{
		const char *freezer = "6:freezer:/slurm_node1/uid_0/job_12\n"
				      "4:memory:/slurm_node1/uid_0/job_12/step_batch\n"
				      "3:cpuset:/slurm_node1/uid_0/job_12/step_batch\n"
				      "2:cpu,cpuacct:/\n"
				      "1:name=systemd:/job_12/step_0\n";
		const char *both = "11:freezer:/slurm/uid_0/job_12\n"
				   "4:cpu,cpuacct:/slurm/uid_0/job_12/step_0/task_0\n";
		const char *lookalike = "11:freezer2:/slurm/uid_0/job_12/step_0\n"
					"1:name=freezer:/slurm/uid_0/job_12/step_0\n";

		ck_assert_int_eq(lwk_job_cgroup(freezer, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
		ck_assert_str_eq(out, "/sys/fs/cgroup/freezer/slurm_node1/uid_0/job_12");
		ck_assert_int_eq(lwk_job_cgroup(both, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
		ck_assert_str_eq(out, "/sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_12");
		/* Only a hierarchy with the controller itself: not a named one. */
		ck_assert_int_eq(lwk_job_cgroup(lookalike, 12, "/x", out, sizeof(out)), -1);
	}
	/* job_1 is not job_12, and linuxproc makes no job cgroup at all. */
	ck_assert_int_eq(lwk_job_cgroup(v2, 1, "/sys/fs/cgroup", out, sizeof(out)), -1);
	ck_assert_int_eq(lwk_job_cgroup("0::/user.slice/session-3.scope\n", 12, "/x", out, sizeof(out)), -1);
}
END_TEST

/* The directory of a process's own v2 cgroup (slurmd's, at its start). */
START_TEST(v2_dir_of_a_process)
{
	char out[512];

	ck_assert_int_eq(lwk_cgroup_v2_dir("0::/system.slice/slurmd.service\n", "/sys/fs/cgroup", out,
					   sizeof(out)),
			 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/system.slice/slurmd.service");
	/* Hybrid: the v1 lines first, the unified one last. */
	ck_assert_int_eq(lwk_cgroup_v2_dir("4:cpuset:/a\n0::/b/slurmd\n", "/r", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/r/b/slurmd");
	/* At the root of the hierarchy (or of a container's namespace). */
	ck_assert_int_eq(lwk_cgroup_v2_dir("0::/\n", "/r", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/r");
	/* v1 alone, nothing, or a path that is no path. */
	ck_assert_int_eq(lwk_cgroup_v2_dir("4:cpuset:/a\n", "/r", out, sizeof(out)), -1);
	ck_assert_int_eq(lwk_cgroup_v2_dir("", "/r", out, sizeof(out)), -1);
	ck_assert_int_eq(lwk_cgroup_v2_dir("0::x\n", "/r", out, sizeof(out)), -1);
}
END_TEST

/* Slurm's scope for the steps, judged at slurmd's start: the one slurmd
 * sits in when it made it by hand, else system.slice's, named by the
 * node where slurmd runs several per host. */
START_TEST(slurm_scope_of_a_slurmd)
{
	char out[4800], want[600];

	tree_make("scope");
	/* slurmd started by hand: Slurm moved it into <scope>/slurmd. */
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/system.slice/n1_slurmstepd.scope/slurmd\n", tree_root,
					     "n1", out, sizeof(out)),
			 0);
	snprintf(want, sizeof(want), "%s/system.slice/n1_slurmstepd.scope", tree_root);
	ck_assert_str_eq(out, want);
	/* Started by systemd, or from a login shell: none made yet here. */
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/system.slice/slurmd.service\n", tree_root, "n1", out,
					     sizeof(out)),
			 -1);
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/user.slice/user-0.slice/session-3.scope\n", tree_root,
					     "n1", out, sizeof(out)),
			 -1);
	tree_mkdir("system.slice/slurmstepd.scope");
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/user.slice/user-0.slice/session-3.scope\n", tree_root,
					     "n1", out, sizeof(out)),
			 0);
	snprintf(want, sizeof(want), "%s/system.slice/slurmstepd.scope", tree_root);
	ck_assert_str_eq(out, want);
	/* Several slurmd a host: the node's own first. */
	tree_mkdir("system.slice/n1_slurmstepd.scope");
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/system.slice/slurmd.service\n", tree_root, "n1", out,
					     sizeof(out)),
			 0);
	snprintf(want, sizeof(want), "%s/system.slice/n1_slurmstepd.scope", tree_root);
	ck_assert_str_eq(out, want);
	/* A "slurmd" cgroup below no scope is not Slurm's. */
	ck_assert_int_eq(lwk_slurm_scope_dir("0::/x/slurmd\n", tree_root, "n2", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/system.slice/slurmstepd.scope", tree_root);
	ck_assert_str_eq(out, want);
	tree_remove();
}
END_TEST

/* 26.05's cgroup v2 names the job's cgroup by its SLUID ("s" and 13
 * base-32 digits: cgroup_p_step_create, src/plugins/cgroup/v2/cgroup_v2.c,
 * slurm-26-05-3-1), unless CgroupJobIdPaths=yes. */
#define SLUID "sEKNKTV3WPV500"
START_TEST(job_cgroup_named_by_sluid)
{
	char out[512], esc[LWK_ESCAPE_MAX][512];
	const char *stepd = "0::/system.slice/slurmstepd.scope/" SLUID "/step_0/slurm\n";
	const char *batch = "0::/system.slice/n1_slurmstepd.scope/" SLUID "/step_batch/user/task_0\n";

	ck_assert_int_eq(lwk_job_cgroup(stepd, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/system.slice/slurmstepd.scope/" SLUID);
	ck_assert_int_eq(lwk_job_cgroup(batch, 12, "/sys/fs/cgroup", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope/" SLUID);
	/* Not a job level: no step below it, or not a SLUID as Slurm prints
	 * it (upper case, 13 digits), or another job's job_<n>. */
	ck_assert_int_eq(lwk_job_cgroup("0::/user.slice/" SLUID "\n", 12, "/x", out, sizeof(out)), -1);
	ck_assert_int_eq(lwk_job_cgroup("0::/s.scope/seknktv3wpv500/step_0/slurm\n", 12, "/x", out,
					sizeof(out)), -1);
	ck_assert_int_eq(lwk_job_cgroup("0::/s.scope/sEKNKTV3WPV50/step_0/slurm\n", 12, "/x", out,
					sizeof(out)), -1);
	ck_assert_int_eq(lwk_job_cgroup("0::/s.scope/job_13/step_0/slurm\n", 12, "/x", out, sizeof(out)),
			 -1);
	ck_assert_int_eq(lwk_cgroup_escape_paths(stepd, 12, "/sys/fs/cgroup", esc, LWK_ESCAPE_MAX), 1);
	ck_assert_str_eq(esc[0], "/sys/fs/cgroup/system.slice/slurmstepd.scope/system/cgroup.procs");
}
END_TEST

/* A SLUID printed as Slurm does (print_sluid, src/common/sluid.c): "s"
 * and 13 base-32 digits, most significant first; the job level's name of
 * any job, and whether a name is a given job's. */
START_TEST(sluid_names)
{
	char s[15], name[32];

	lwk_sluid_format(0, s);
	ck_assert_str_eq(s, "s0000000000000");
	lwk_sluid_format(32 + 31, s);
	ck_assert_str_eq(s, "s000000000001Z");
	lwk_sluid_format(UINT64_MAX, s);
	ck_assert_str_eq(s, "sFZZZZZZZZZZZZ");
	ck_assert(lwk_sluid_shaped(SLUID, 14));
	ck_assert(!lwk_sluid_shaped("sEKNKTV3WPV5I0", 14)); /* no I in Crockford's */
	ck_assert(!lwk_sluid_shaped("job_12", 6));
	ck_assert_int_eq(lwk_cgroup_job_name("/a.scope/job_12/step_0/user/task_0", name, sizeof(name)), 1);
	ck_assert_str_eq(name, "job_12");
	ck_assert_int_eq(lwk_cgroup_job_name("/a.scope/" SLUID "/step_extern/slurm", name, sizeof(name)), 1);
	ck_assert_str_eq(name, SLUID);
	ck_assert_int_eq(lwk_cgroup_job_name("/a.scope/system", name, sizeof(name)), 0);
	ck_assert_int_eq(lwk_cgroup_job_name("/user.slice/job_012/step_0", name, sizeof(name)), 0);
	ck_assert(lwk_cgroup_job_name_is("job_12", 6, 12, NULL));
	ck_assert(!lwk_cgroup_job_name_is("job_12", 6, 1, NULL));
	ck_assert(lwk_cgroup_job_name_is(SLUID, 14, 12, NULL));
	ck_assert(lwk_cgroup_job_name_is(SLUID, 14, 12, SLUID));
	ck_assert(!lwk_cgroup_job_name_is(SLUID, 14, 12, "s0000000000001"));
	/* Any process's cgroup, for the liveness check (joblive.c): the
	 * job's, another's, none, or a SLUID that cannot be told without the
	 * job's own. */
	ck_assert_int_eq(lwk_cgroup_job_of("0::/a.scope/job_12/step_0/user/task_0\n", 12, NULL), 1);
	ck_assert_int_eq(lwk_cgroup_job_of("0::/a.scope/job_13/step_0/user/task_0\n", 12, SLUID), 0);
	ck_assert_int_eq(lwk_cgroup_job_of("0::/user.slice/session-3.scope\n", 12, SLUID), -1);
	ck_assert_int_eq(lwk_cgroup_job_of("0::/a.scope/" SLUID "/step_0/user/task_0\n", 12, SLUID), 1);
	ck_assert_int_eq(lwk_cgroup_job_of("0::/a.scope/sEKNKTV3WPV501/step_0/user/task_0\n", 12, SLUID),
			 0);
	ck_assert_int_eq(lwk_cgroup_job_of("0::/a.scope/" SLUID "/step_0/user/task_0\n", 12, ""), -1);
	ck_assert_int_eq(lwk_cgroup_job_of("4:cpuset:/\n3:freezer:/slurm/uid_5/job_12/step_0\n", 12, NULL),
			 1);
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

/* Write text to root/rel, making its directories. */
static void put_file(const char *root, const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	ck_assert_int_eq(system(cmd), 0);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(cgroup_walk_and_escape)
{
	char tmpl[] = "/tmp/lwk-cg.XXXXXX", path[512], esc[LWK_ESCAPE_MAX][512];
	char *root = mkdtemp(tmpl);
	pid_t pids[8];
	size_t n, own;
	int count;

	ck_assert_ptr_nonnull(root);
	/* As Slurm places them: slurmstepd in the job level (v1's
	 * freezer: 100) or in step_0/slurm (v2: 104), the tasks in the
	 * step (101, 102) and in task_0 (103); a job user's own cgroup
	 * named slurm deeper down is the job's (105). */
	put_file(root, "job_5/step_0/task_0/slurm/cgroup.procs", "105\n");
	put_file(root, "job_5/step_0/slurm/cgroup.procs", "104\n");
	put_file(root, "job_5/cgroup.procs", "100\n");
	put_file(root, "job_5/step_0/cgroup.procs", "101\n102\n");
	put_file(root, "job_5/step_0/task_0/cgroup.procs", "103\n");
	snprintf(path, sizeof(path), "%s/job_5", root);
	ck_assert_int_eq(lwk_cgroup_pids(path, pids, 8, &n), 0);
	ck_assert_uint_eq(n, 6);
	/* Not a cgroup v2 directory (no cgroup.controllers): v1, where the
	 * job user owns the step directories and a step_0/slurm of theirs
	 * is the job's. */
	ck_assert_int_eq(lwk_cgroup_job_pids(path, pids, 8, &n, &own), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(own, 1);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(pids[i] != 100, "slurmstepd's pid %d listed", (int)pids[i]);
	/* v2: step_0/slurm is slurmstepd's. */
	put_file(root, "job_5/cgroup.controllers", "");
	snprintf(path, sizeof(path), "%s/job_5", root);
	ck_assert_int_eq(lwk_cgroup_job_pids(path, pids, 8, &n, &own), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(own, 2);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(pids[i] != 100 && pids[i] != 104, "slurmstepd's pid %d listed", (int)pids[i]);
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

Suite *procfs_suite(void)
{
	Suite *s = suite_create("procfs");
	TCase *tc = tcase_create("procfs");

	tcase_add_test(tc, job_cgroup_from_proc_self_cgroup);
	tcase_add_test(tc, job_cgroup_named_by_sluid);
	tcase_add_test(tc, v2_dir_of_a_process);
	tcase_add_test(tc, slurm_scope_of_a_slurmd);
	tcase_add_test(tc, sluid_names);
	tcase_add_test(tc, environ_names_job_and_node);
	tcase_add_test(tc, node_files_parse);
	tcase_add_test(tc, cgroup_walk_and_escape);
	suite_add_tcase(s, tc);
	return s;
}
