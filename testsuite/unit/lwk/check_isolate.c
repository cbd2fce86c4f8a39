/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The App cores an isolated remote partition, and its undoing
 * (lwk/isolate.c), over the guest node's tree: plain files take any
 * write, so these check what is written, in which order, what is
 * recorded first and what is put back; the kernel's own verdict is
 * t60's on the guests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_lwk.h"
#include "lwk/part.h"
#include "lwk/part_int.h"
#include "lwk_fixture.h"

#define JOB "cg/s.slice/n1.scope/job_42"
#define TASK0(step) "0::/s.slice/n1.scope/job_42/" step "/user/task_0\n"

static const char *const levels[] = { "cg/s.slice", "cg/s.slice/n1.scope", JOB, JOB "/step_0",
				      JOB "/step_0/user", NULL };

/* A kernel with remote partitions (6.7+): every cgroup has
 * cpuset.cpus.exclusive, empty; step_1 is a second step of the job. */
static void remote_kernel(void)
{
	char p[300];

	node_tree();
	tree_mkdir(JOB "/step_1/user/task_0");
	tree_put(JOB "/step_1/user/cpuset.cpus", "");
	tree_put(JOB "/step_1/user/cpuset.mems", "");
	tree_put(JOB "/step_1/user/cpuset.cpus.partition", "member\n");
	tree_put(JOB "/step_1/cgroup.controllers", "cpuset cpu memory\n");
	tree_put(JOB "/step_1/cgroup.subtree_control", "cpuset cpu memory\n");
	tree_put(JOB "/step_0/user/cpuset.cpus.partition", "member\n");
	for (int i = 0; levels[i]; i++) {
		snprintf(p, sizeof(p), "%s/cpuset.cpus.exclusive", levels[i]);
		tree_put(p, "\n");
	}
	tree_put(JOB "/step_1/cpuset.cpus.exclusive", "\n");
	tree_put(JOB "/step_1/user/cpuset.cpus.exclusive", "\n");
	tree_put(JOB "/step_0/user/cgroup.events", "populated 1\nfrozen 0\n");
	tree_put(JOB "/step_1/user/cgroup.events", "populated 1\nfrozen 0\n");
	/* The kernel says "populated 1" at every level above a process. */
	tree_put(JOB "/step_0/cgroup.events", "populated 1\nfrozen 0\n");
	tree_put(JOB "/step_1/cgroup.events", "populated 1\nfrozen 0\n");
	tree_mkdir("cg/other.slice");
	tree_put("cg/other.slice/cpuset.cpus.exclusive", "\n");
}

static const char *x(const char *level)
{
	static char p[300];
	const char *v;

	snprintf(p, sizeof(p), "%s/cpuset.cpus.exclusive", level);
	v = tree_get(p);
	return v ? v : "(missing)";
}

/* Unset: what the kernel shows after "" or "\n" is written. */
static bool unset(const char *v)
{
	return !strcmp(v, "") || !strcmp(v, "\n");
}

/* A task of the step placed (the step's slurmstepd), then starting (the
 * task itself): what its isolation is, "kind (why)". */
static int place(int mode, const char *task, char *iso, size_t isolen, struct lwk_part *p)
{
	char where[800], kind[16], why[600];

	if (lwk_part_place(&roots, p, LWK_ROLE_APP, task, 4242, where, sizeof(where), err,
			   sizeof(err)) ||
	    lwk_part_isolate_task(&roots, p, mode, task, kind, sizeof(kind), why, sizeof(why), err,
				  sizeof(err)))
		return -1;
	snprintf(iso, isolen, "%s%s%s%s", kind, why[0] ? " (" : "", why, why[0] ? ")" : "");
	return 0;
}

START_TEST(the_app_cores_become_a_partition_recorded_before_each_write)
{
	struct lwk_part p;
	char iso[700], log[4096];
	const char *state;

	remote_kernel();
	tree_put("cg/s.slice/cpuset.cpus.exclusive", "0\n"); /* a site's, not the App cores */
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	/* Every level from the root's child down holds the App CPUs, and
	 * what a level held before stays. */
	ck_assert_str_eq(x("cg/s.slice"), "0,2-7");
	for (int i = 1; levels[i]; i++)
		ck_assert_str_eq(x(levels[i]), "2-7");
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "isolated");
	state = tree_get("state/n1/42/lwk.state");
	/* Each line says what was added, before it was. */
	ck_assert_ptr_nonnull(strstr(state, "appcg /s.slice/n1.scope/job_42/step_0/user\n"
					    "xcpus /s.slice 2-7\nxcpus /s.slice/n1.scope 2-7\n"
					    "xcpus /s.slice/n1.scope/job_42 2-7\n"
					    "xcpus /s.slice/n1.scope/job_42/step_0 2-7\n"
					    "xcpus /s.slice/n1.scope/job_42/step_0/user 2-7\n"
					    "xpart /s.slice/n1.scope/job_42/step_0/user\n"));
	/* The next task of the step finds it made: nothing more recorded. */
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	ck_assert_str_eq(tree_get("state/n1/42/lwk.state"), state);
	/* The teardown takes out what was added, whatever a level got
	 * from someone else since (the job's cgroup itself cannot go in
	 * this tree: its line stays). */
	tree_put("cg/s.slice/cpuset.cpus.exclusive", "0-1,3-7\n"); /* 2 given away, 1 taken */
	lwk_part_teardown(&roots, 42, log, sizeof(log));
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "member");
	ck_assert_str_eq(x("cg/s.slice"), "0-1");
	for (int i = 1; levels[i]; i++)
		ck_assert_msg(unset(x(levels[i])), "%s: '%s'", levels[i], x(levels[i]));
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "xcpus"));
	tree_remove();
}
END_TEST

START_TEST(another_cgroup_holding_app_cpus_fails_the_step_and_nothing_is_written)
{
	struct lwk_part p;
	char iso[700];

	for (int mode = LWK_ISOLATE_AUTO; mode <= LWK_ISOLATE_PARTITION; mode++) {
		remote_kernel();
		tree_put("cg/other.slice/cpuset.cpus.exclusive", "6-7\n");
		ck_assert_int_eq(setup("os=2", &p), 1);
		ck_assert_int_eq(place(mode, TASK0("step_0"), iso, sizeof(iso), &p), -1);
		ck_assert_msg(strstr(err, "/other.slice (cpuset.cpus.exclusive 6-7) holds App CPUs 2-7 "
					  "of the job exclusively on n1; the App cores cannot be the job's"),
			      "%s", err);
		for (int i = 0; levels[i]; i++)
			ck_assert_str_eq(x(levels[i]), "\n");
		ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "xcpus"));
		tree_remove();
	}
}
END_TEST

START_TEST(without_remote_partitions_the_app_cores_are_a_cpuset)
{
	struct lwk_part p;
	char iso[700];

	/* 6.1: no cpuset.cpus.exclusive anywhere. */
	node_tree();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_msg(strstr(iso, "cpuset (this kernel has no cpuset.cpus.exclusive") == iso, "%s",
		      iso);
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus"), "2-7");
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "");
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "xpart"));
	/* lwk_isolate=partition: the step fails, naming the switch. */
	ck_assert_int_eq(place(LWK_ISOLATE_PARTITION, TASK0("step_0"), iso, sizeof(iso), &p), -1);
	ck_assert_msg(strstr(err, "lwk_isolate=partition") && strstr(err, "Linux 6.7"), "%s", err);
	tree_remove();

	/* lwk_isolate=cpuset: never a partition, nothing written. */
	remote_kernel();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_CPUSET, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "cpuset (lwk_isolate=cpuset)");
	for (int i = 0; levels[i]; i++)
		ck_assert_str_eq(x(levels[i]), "\n");
	tree_remove();
}
END_TEST

START_TEST(a_partition_the_kernel_refuses_is_undone)
{
	struct lwk_part p;
	char iso[700];

	for (int mode = LWK_ISOLATE_AUTO; mode <= LWK_ISOLATE_PARTITION; mode++) {
		remote_kernel();
		/* A partition file that takes no write: the kernel's refusal. */
		unlink(tree_path(JOB "/step_0/user/cpuset.cpus.partition"));
		tree_mkdir(JOB "/step_0/user/cpuset.cpus.partition");
		ck_assert_int_eq(setup("os=2", &p), 1);
		ck_assert_int_eq(place(mode, TASK0("step_0"), iso, sizeof(iso), &p),
				 mode == LWK_ISOLATE_AUTO ? 0 : -1);
		if (mode == LWK_ISOLATE_AUTO) {
			ck_assert_msg(strstr(iso, "cpuset (lwk: cannot open") == iso, "%s", iso);
			/* The step's next task does not ask the kernel again. */
			ck_assert_int_eq(place(mode, TASK0("step_0"), iso, sizeof(iso), &p), 0);
			ck_assert_str_eq(iso, "cpuset (the kernel refused the step's first task a partition)");
		} else
			ck_assert_msg(strstr(err, "the kernel refused it"), "%s", err);
		for (int i = 0; levels[i]; i++)
			ck_assert_msg(unset(x(levels[i])), "%s: '%s'", levels[i], x(levels[i]));
		tree_remove();
	}
}
END_TEST

START_TEST(steps_running_at_once_share_the_app_cores_as_a_cpuset)
{
	struct lwk_part p;
	char iso[700];

	remote_kernel();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	/* lwk_isolate=partition: the second step is refused, the first
	 * keeps its partition. */
	ck_assert_int_eq(place(LWK_ISOLATE_PARTITION, TASK0("step_1"), iso, sizeof(iso), &p), -1);
	ck_assert_msg(strstr(err, "another step of the job (/s.slice/n1.scope/job_42/step_0/user)"),
		      "%s", err);
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "isolated");
	/* auto: both run on the App cores, as a plain cpuset. */
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_1"), iso, sizeof(iso), &p), 0);
	ck_assert_msg(strstr(iso, "cpuset (another step of the job") == iso, "%s", iso);
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "member");
	ck_assert(unset(x(JOB "/step_0/user")));
	ck_assert(unset(x(JOB "/step_0")));
	ck_assert_str_eq(x(JOB), "2-7"); /* shared: the teardown's */
	ck_assert_str_eq(tree_get(JOB "/step_1/user/cpuset.cpus"), "2-7");
	ck_assert_str_eq(x(JOB "/step_1/user"), "\n");
	/* The step's next task, and step 0's, find it so: no partition
	 * while both run. */
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_1"), iso, sizeof(iso), &p), 0);
	ck_assert_msg(strstr(iso, "cpuset (another step of the job") == iso, "%s", iso);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_msg(strstr(iso, "cpuset (another step of the job (/s.slice/n1.scope/job_42/step_1/user)") == iso,
		      "%s", iso);
	ck_assert_str_eq(x(JOB "/step_1/user"), "\n");
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "member");
	ck_assert_str_eq(tree_get(JOB "/step_1/user/cpuset.cpus.partition"), "member\n");
	/* step 0 ends: the next task of step 1 makes it a partition. */
	tree_put(JOB "/step_0/user/cgroup.events", "populated 0\nfrozen 0\n");
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_1"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	tree_remove();
}
END_TEST

START_TEST(a_later_step_takes_the_partition_over_from_an_ended_one)
{
	struct lwk_part p;
	char iso[700];

	remote_kernel();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_PARTITION, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	/* step 0's tasks are gone, its cgroup not removed yet. */
	tree_put(JOB "/step_0/user/cgroup.events", "populated 0\nfrozen 0\n");
	ck_assert_int_eq(place(LWK_ISOLATE_PARTITION, TASK0("step_1"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	ck_assert_str_eq(tree_get(JOB "/step_0/user/cpuset.cpus.partition"), "member");
	ck_assert(unset(x(JOB "/step_0")));
	ck_assert_str_eq(tree_get(JOB "/step_1/user/cpuset.cpus.partition"), "isolated");
	ck_assert_str_eq(x(JOB "/step_1"), "2-7");
	ck_assert_str_eq(x(JOB "/step_1/user"), "2-7");
	ck_assert_str_eq(x(JOB), "2-7");
	tree_remove();
}
END_TEST

/* Before the tasks, as the user (reads only), from the step's
 * slurmstepd's cgroups: what the placement would refuse is said then,
 * so that the job's output says it. */
START_TEST(refusals_are_judged_before_the_tasks)
{
	struct lwk_part p;
	char iso[700];
	const char *stepd0 = "0::/s.slice/n1.scope/job_42/step_0/slurm\n";
	const char *stepd1 = "0::/s.slice/n1.scope/job_42/step_1/slurm\n";

	remote_kernel();
	tree_put(JOB "/step_1/cgroup.events", "populated 0\n"); /* not started yet */
	ck_assert_int_eq(setup("os=2", &p), 1);
	tree_put("cg/other.slice/cpuset.cpus.exclusive", "7\n");
	for (int mode = LWK_ISOLATE_AUTO; mode <= LWK_ISOLATE_PARTITION; mode++) {
		ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, mode, stepd0, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "/other.slice (cpuset.cpus.exclusive 7) holds App CPUs"), "%s", err);
	}
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_CPUSET, stepd0, err, sizeof(err)), 0);
	tree_put("cg/other.slice/cpuset.cpus.exclusive", "0-1\n"); /* the OS cores: fine */
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_PARTITION, stepd0, err, sizeof(err)), 0);
	/* The job's own partition (step 0's, and the levels above it)
	 * does not count against its next step ... */
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_AUTO, stepd1, err, sizeof(err)), 0);
	/* ... but with lwk_isolate=partition a step running at once is. */
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_PARTITION, stepd1, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "another step of the job (/s.slice/n1.scope/job_42/step_0) runs on n1"), "%s", err);
	tree_put(JOB "/step_0/user/cgroup.events", "populated 0\n");
	tree_put(JOB "/step_0/cgroup.events", "populated 0\n");
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_PARTITION, stepd1, err, sizeof(err)), 0);
	tree_remove();

	/* A kernel without remote partitions: refused only when the site
	 * asks for one. */
	node_tree();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_AUTO, stepd0, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_part_isolation_refused(&roots, &p, LWK_ISOLATE_PARTITION, stepd0, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "(lwk_isolate=partition), but on n1 this kernel has no cpuset.cpus.exclusive"), "%s", err);
	tree_remove();
}
END_TEST

START_TEST(a_task_learns_its_isolation_from_the_kernel)
{
	remote_kernel();
	tree_put(JOB "/step_0/user/cpuset.cpus.partition", "isolated\n");
	ck_assert_str_eq(lwk_part_isolation_of(roots.cgroup_root, TASK0("step_0")), "partition");
	ck_assert_str_eq(lwk_part_isolation_of(roots.cgroup_root, TASK0("step_1")), "cpuset");
	ck_assert_str_eq(lwk_part_isolation_of(roots.cgroup_root,
					       "4:cpuset:/s.slice/n1.scope/job_42/step_0/user\n"),
			 "cpuset");
	tree_put(JOB "/step_0/user/cpuset.cpus.partition", "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n");
	ck_assert_str_eq(lwk_part_isolation_of(roots.cgroup_root, TASK0("step_0")), "cpuset");
	tree_remove();
}
END_TEST

/* The lines of steps whose cgroups are gone are dropped as a new step
 * starts, so the state stays the size of what runs; a state cut short
 * (no newline at its end) is never acted on; any number of steps. */
START_TEST(the_state_holds_what_runs_and_only_whole_lines)
{
	struct lwk_part p;
	char iso[700], log[2048], *state = malloc(256 * 1024), line[200];
	struct lwk_part_remains k = { malloc(65536), 65536, 0 };

	remote_kernel();
	ck_assert_int_eq(setup("os=2", &p), 1);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_0"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	/* Step 0 ends; Slurm removes its cgroups. */
	tree_put(JOB "/step_0/cgroup.events", "populated 0\n");
	snprintf(line, sizeof(line), "rm -rf %s", tree_path(JOB "/step_0"));
	ck_assert_int_eq(system(line), 0);
	ck_assert_int_eq(place(LWK_ISOLATE_AUTO, TASK0("step_1"), iso, sizeof(iso), &p), 0);
	ck_assert_str_eq(iso, "partition");
	ck_assert_ptr_null(strstr(tree_get("state/n1/42/lwk.state"), "step_0"));
	ck_assert_ptr_nonnull(strstr(tree_get("state/n1/42/lwk.state"), "xpart /s.slice/n1.scope/job_42/step_1/user\n"));
	tree_remove();

	/* A cut line is not undone; whole ones are, past any count. */
	remote_kernel();
	tree_put("cg/s.slice/cpuset.cpus.exclusive", "6-7\n");
	state[0] = '\0';
	for (int i = 0; i < 100; i++)
		strcat(state, "appcg /s.slice/n1.scope/job_42/step_1/user\n");
	strcat(state, "xcpus /s.slice 7\nxcpus /s.slice 6");
	k.text[0] = '\0';
	log[0] = '\0';
	lwk_part_unisolate(&roots, state, true, log, sizeof(log), &k);
	ck_assert_str_eq(x("cg/s.slice"), "6");
	tree_remove();
	free(k.text);
	free(state);
}
END_TEST

Suite *lwk_isolate_suite(void)
{
	Suite *s = suite_create("lwk_isolate");
	TCase *tc = tcase_create("isolate");

	tcase_add_test(tc, the_app_cores_become_a_partition_recorded_before_each_write);
	tcase_add_test(tc, another_cgroup_holding_app_cpus_fails_the_step_and_nothing_is_written);
	tcase_add_test(tc, without_remote_partitions_the_app_cores_are_a_cpuset);
	tcase_add_test(tc, a_partition_the_kernel_refuses_is_undone);
	tcase_add_test(tc, steps_running_at_once_share_the_app_cores_as_a_cpuset);
	tcase_add_test(tc, a_later_step_takes_the_partition_over_from_an_ended_one);
	tcase_add_test(tc, refusals_are_judged_before_the_tasks);
	tcase_add_test(tc, a_task_learns_its_isolation_from_the_kernel);
	tcase_add_test(tc, the_state_holds_what_runs_and_only_whole_lines);
	suite_add_tcase(s, tc);
	return s;
}
