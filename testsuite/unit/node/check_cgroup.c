/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup writers over temporary trees laid out like cgroupfs: the
 * right file of the right hierarchy gets the right text.  The kernel's
 * own answers (trimming, invalid partitions) are checked for real by
 * testsuite/kernel/check_kpath on the guests. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/cgroup.h"
#include "node/xpart.h"
#include "check_lwk.h"

static char err[1024];

/* The files a kernel shows in a new cgroup: here, made by hand. */
static void knobs(const char *d, const char *const *files)
{
	char p[512];

	for (; *files; files++) {
		snprintf(p, sizeof(p), "%s/%s", d, *files);
		tree_put(p, "");
	}
}

static const char *const v2_files[] = { "cgroup.procs", "cgroup.controllers",
					"cgroup.subtree_control", "cpuset.cpus",
					"cpuset.mems", "cpuset.cpus.partition",
					"cpu.max", "memory.max", "hugetlb.2MB.max",
					"memory.numa_stat", NULL };

static void setup_v2(void)
{
	tree_make("cg");
	tree_put("cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	tree_put("cgroup.subtree_control", "");
	tree_mkdir("job_7");
	tree_put("job_7/cgroup.controllers", "cpuset cpu memory\n");
	tree_put("job_7/cgroup.subtree_control", "");
	tree_mkdir("job_7/app");
	knobs("job_7/app", v2_files);
}

static void setup_v1(void)
{
	static const char *const hier[] = { "cpuset", "cpu", "memory", NULL };

	tree_make("cg");
	for (const char *const *h = hier; *h; h++) {
		char p[256];

		tree_mkdir(*h);
		snprintf(p, sizeof(p), "%s/slurm", *h);
		tree_mkdir(p);
		snprintf(p, sizeof(p), "%s/slurm/cgroup.procs", *h);
		tree_put(p, "");
	}
	tree_put("cpuset/cpuset.cpus", "0-7\n");
	tree_put("cpuset/slurm/cpuset.cpus", "0-3\n");
	tree_put("cpuset/slurm/cpuset.mems", "0\n");
	tree_put("cpuset/slurm/cpuset.cpu_exclusive", "");
	tree_put("cpuset/slurm/cpuset.sched_load_balance", "");
	tree_put("cpu/slurm/cpu.cfs_period_us", "");
	tree_put("cpu/slurm/cpu.cfs_quota_us", "");
	tree_put("memory/slurm/memory.limit_in_bytes", "");
}

START_TEST(detects_the_version_of_a_tree)
{
	struct lwk_cgroup cg;

	setup_v2();
	ck_assert_int_eq(lwk_cgroup_detect(tree_root), LWK_CGROUP_V2);
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/job_7/app", err, sizeof(err)), 0);
	ck_assert_str_eq(lwk_cgroup_version_name(cg.version), "v2");
	tree_remove();
	setup_v1();
	ck_assert_int_eq(lwk_cgroup_detect(tree_root), LWK_CGROUP_V1);
	tree_remove();
	ck_assert_int_eq(lwk_cgroup_detect("/nonexistent"), LWK_CGROUP_NONE);
	ck_assert_int_eq(lwk_cgroup_init(&cg, "/nonexistent", "/a", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no cgroup v2 or v1 cpuset hierarchy under /nonexistent"));
}
END_TEST

START_TEST(refuses_paths_that_could_leave_the_tree)
{
	static const char *const bad[] = { "job_7/../..", "/job_7/../../etc", "/a//b", "relative",
					   "", NULL };
	struct lwk_cgroup cg;

	setup_v2();
	for (const char *const *b = bad; *b; b++) {
		ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, *b, err, sizeof(err)), -1);
		ck_assert_ptr_nonnull(strstr(err, "is not a clean absolute path"));
	}
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_cgroup_create(&cg, err, sizeof(err)), -1);
	ck_assert_int_eq(lwk_cgroup_remove(&cg, err, sizeof(err)), -1);
	tree_remove();
}
END_TEST

START_TEST(v2_create_enables_what_the_parent_has)
{
	struct lwk_cgroup cg;

	setup_v2();
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/job_7/app", err, sizeof(err)), 0);
	/* job_7 offers cpuset, cpu, memory (no hugetlb) and enables cpu
	 * and memory: only cpuset is written ("cpu" must not pass for it). */
	tree_put("job_7/cgroup.subtree_control", "cpu memory");
	ck_assert_int_eq(lwk_cgroup_create(&cg, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/cgroup.subtree_control"), "+cpuset");
	tree_put("job_7/cgroup.subtree_control", "cpuset cpu memory");
	ck_assert_int_eq(lwk_cgroup_create(&cg, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/cgroup.subtree_control"), "cpuset cpu memory");
	tree_remove();
}
END_TEST

START_TEST(v2_knobs_go_to_their_files)
{
	struct lwk_cgroup cg;
	struct lwk_cpuset s;

	setup_v2();
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/job_7/app", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_cpulist_parse("2-3,6", LWK_MAX_CPUS, &s), 0);
	ck_assert_int_eq(lwk_cgroup_set_cpus(&cg, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cpuset.cpus"), "2-3,6");
	ck_assert_int_eq(lwk_cpulist_parse("1", LWK_MAX_CPUS, &s), 0);
	ck_assert_int_eq(lwk_cgroup_set_mems(&cg, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cpuset.mems"), "1");
	ck_assert_int_eq(lwk_cgroup_set_isolated(&cg, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cpuset.cpus.partition"), "isolated");
	ck_assert_int_eq(lwk_cgroup_set_cpu_quota(&cg, 50000, 100000, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cpu.max"), "50000 100000");
	ck_assert_int_eq(lwk_cgroup_set_memory_max(&cg, 128ULL << 20, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/memory.max"), "134217728");
	ck_assert_int_eq(lwk_cgroup_set_hugetlb_max(&cg, 2048, 4ULL << 20, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/hugetlb.2MB.max"), "4194304");
	ck_assert_int_eq(lwk_cgroup_attach(&cg, 4242, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cgroup.procs"), "4242");
	/* No 1 GB pages here: the missing file is named. */
	ck_assert_int_eq(lwk_cgroup_set_hugetlb_max(&cg, 1048576, 1ULL << 30, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/job_7/app/hugetlb.1GB.max"));
	/* Out of range: refused before any write. */
	ck_assert_int_eq(lwk_cgroup_set_cpu_quota(&cg, 500, 100000, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "below the kernel's 1000 us"));
	ck_assert_int_eq(lwk_cgroup_attach(&cg, 0, err, sizeof(err)), -1);
	lwk_cpuset_zero(&s);
	ck_assert_int_eq(lwk_cgroup_set_cpus(&cg, &s, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "will not set an empty cpuset.cpus"));
	tree_remove();
}
END_TEST

START_TEST(v2_limits_can_be_lifted)
{
	struct lwk_cgroup cg;

	setup_v2();
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/job_7/app", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_cgroup_set_cpu_quota(&cg, 0, 100000, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/cpu.max"), "max 100000");
	ck_assert_int_eq(lwk_cgroup_set_memory_max(&cg, 0, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("job_7/app/memory.max"), "max");
	tree_remove();
}
END_TEST

START_TEST(v1_uses_one_hierarchy_per_controller)
{
	struct lwk_cgroup cg;
	struct lwk_cpuset s;

	setup_v1();
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/slurm", err, sizeof(err)), 0);
	ck_assert_int_eq(cg.version, LWK_CGROUP_V1);
	ck_assert_int_eq(lwk_cpulist_parse("1-2", LWK_MAX_CPUS, &s), 0);
	ck_assert_int_eq(lwk_cgroup_set_cpus(&cg, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("cpuset/slurm/cpuset.cpus"), "1-2");
	ck_assert_int_eq(lwk_cgroup_set_isolated(&cg, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("cpuset/slurm/cpuset.cpu_exclusive"), "1");
	ck_assert_str_eq(tree_get("cpuset/slurm/cpuset.sched_load_balance"), "0");
	ck_assert_int_eq(lwk_cgroup_set_cpu_quota(&cg, 100000, 100000, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("cpu/slurm/cpu.cfs_period_us"), "100000");
	ck_assert_str_eq(tree_get("cpu/slurm/cpu.cfs_quota_us"), "100000");
	ck_assert_int_eq(lwk_cgroup_set_memory_max(&cg, 1 << 20, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("memory/slurm/memory.limit_in_bytes"), "1048576");
	/* No hugetlb hierarchy: attach skips it, and joins the other three. */
	ck_assert_int_eq(lwk_cgroup_attach(&cg, 99, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("cpuset/slurm/cgroup.procs"), "99");
	ck_assert_str_eq(tree_get("cpu/slurm/cgroup.procs"), "99");
	ck_assert_str_eq(tree_get("memory/slurm/cgroup.procs"), "99");
	ck_assert_int_eq(lwk_cgroup_set_hugetlb_max(&cg, 2048, 1 << 21, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "hugetlb/slurm/hugetlb.2MB.limit_in_bytes"));
	tree_remove();
}
END_TEST

START_TEST(v1_create_starts_from_the_parents_cpus_and_mems)
{
	struct lwk_cgroup cg;

	setup_v1();
	tree_put("cpuset/slurm/cpuset.cpus", "0-3\n");
	tree_mkdir("cpuset/slurm/job_3");
	tree_put("cpuset/slurm/job_3/cpuset.cpus", "");
	tree_put("cpuset/slurm/job_3/cpuset.mems", "");
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/slurm/job_3", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_cgroup_create(&cg, err, sizeof(err)), 0);
	ck_assert_str_eq(tree_get("cpuset/slurm/job_3/cpuset.cpus"), "0-3");
	ck_assert_str_eq(tree_get("cpuset/slurm/job_3/cpuset.mems"), "0");
	/* Made in the other hierarchies too; gone from all after remove. */
	{
		char p[600];
		struct stat st;

		snprintf(p, sizeof(p), "%s/memory/slurm/job_3", tree_root);
		ck_assert_int_eq(stat(p, &st), 0);
		/* A real cgroupfs removes the knob files with the directory. */
		snprintf(p, sizeof(p), "rm -f %s/cpuset/slurm/job_3/*", tree_root);
		ck_assert_int_eq(system(p), 0);
		ck_assert_int_eq(lwk_cgroup_remove(&cg, err, sizeof(err)), 0);
		snprintf(p, sizeof(p), "%s/memory/slurm/job_3", tree_root);
		ck_assert_int_ne(stat(p, &st), 0);
		snprintf(p, sizeof(p), "%s/cpuset/slurm/job_3", tree_root);
		ck_assert_int_ne(stat(p, &st), 0);
	}
	tree_remove();
}
END_TEST

START_TEST(numa_stat_of_both_versions)
{
	static const char *const v2_keys[] = { "anon", "file", NULL };
	static const char *const v1_keys[] = { "total", NULL };
	uint64_t b[LWK_MAX_NUMA];

	ck_assert_int_eq(lwk_parse_numa_stat("anon N0=4096 N1=67108864\nfile N0=8192 N1=0\n"
					     "kernel_stack N0=16384 N1=0\n",
					     v2_keys, 1, b),
			 0);
	ck_assert_uint_eq(b[0], 12288);
	ck_assert_uint_eq(b[1], 67108864);
	ck_assert_int_eq(lwk_parse_numa_stat("total=300 N0=100 N1=200\nfile=0 N0=0 N1=0\n"
					     "hierarchical_total=300 N0=100 N1=200\n",
					     v1_keys, 4096, b),
			 0);
	ck_assert_uint_eq(b[0], 409600);
	ck_assert_uint_eq(b[1], 819200);
	/* "total" must not match "hierarchical_total"; nothing found: error. */
	ck_assert_int_eq(lwk_parse_numa_stat("hierarchical_total=3 N0=3\n", v1_keys, 4096, b), -1);
	ck_assert_int_eq(lwk_parse_numa_stat("anon N0=x\n", v2_keys, 1, b), -1);
	ck_assert_int_eq(lwk_parse_numa_stat("anon N0=12junk\n", v2_keys, 1, b), -1);
	/* A node past LWK_MAX_NUMA is ignored, not written past the array. */
	ck_assert_int_eq(lwk_parse_numa_stat("anon N0=1 N9999=5\n", v2_keys, 1, b), 0);
	ck_assert_uint_eq(b[0], 1);
}
END_TEST

/* A v1 cpuset directory with CPUs 0-3 and memory node 0, as Slurm's
 * step directories below which a job's user may make its own. */
static void v1_cpuset_dir(const char *rel)
{
	char p[1024];

	/* mkdir(2), not tree_mkdir's shell: thousands of them. */
	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
	snprintf(p, sizeof(p), "%s/cpuset.cpus", rel);
	tree_put(p, "0-3\n");
	snprintf(p, sizeof(p), "%s/cpuset.mems", rel);
	tree_put(p, "0\n");
}

/* Nested cgroups a job's user made, deeper than 8 levels and more than
 * 256 of them, are all narrowed: none keeps CPUs given to others. */
START_TEST(v1_tree_narrows_every_cgroup_of_a_deep_wide_tree)
{
	struct lwk_cgroup cg;
	struct lwk_cpuset one;
	char rel[1024] = "cpuset/slurm/job_1";

	setup_v1();
	v1_cpuset_dir(rel);
	for (int depth = 0; depth < 12; depth++) {
		strcat(rel, "/d");
		v1_cpuset_dir(rel);
	}
	for (int i = 0; i < 300; i++) {
		char wide[256];

		snprintf(wide, sizeof(wide), "cpuset/slurm/job_1/d/w%d", i);
		v1_cpuset_dir(wide);
	}
	/* One hidden behind a leading dot. */
	v1_cpuset_dir("cpuset/slurm/job_1/.h");
	lwk_cpuset_zero(&one);
	lwk_cpuset_set(&one, 1);
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/slurm/job_1", err, sizeof(err)), 0);
	ck_assert_msg(lwk_cgroup_set_cpus_tree(&cg, &one, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/cpuset.cpus"), "1");
	strcat(rel, "/cpuset.cpus");
	ck_assert_str_eq(tree_get(rel), "1");
	strcpy(strrchr(rel, '/'), "/cpuset.mems");
	ck_assert_str_eq(tree_get(rel), "0\n"); /* the memory nodes untouched */
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/d/w299/cpuset.cpus"), "1");
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/.h/cpuset.cpus"), "1");
	/* A level that cannot be read (its file a directory here) refuses
	 * the tree before anything is written: none is left wider. */
	ck_assert_int_eq(unlink(strcat(strcpy(rel, tree_root), "/cpuset/slurm/job_1/d/w7/cpuset.cpus")), 0);
	ck_assert_int_eq(mkdir(rel, 0755), 0);
	lwk_cpuset_set(&one, 2);
	ck_assert_int_eq(lwk_cgroup_set_cpus_tree(&cg, &one, err, sizeof(err)), -1);
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/cpuset.cpus"), "1");
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/d/w8/cpuset.cpus"), "1");
	tree_remove();
}
END_TEST

/* Past 4096 cgroups the walk refuses and writes nothing: a cgroup left
 * out could keep the CPUs. */
START_TEST(v1_tree_refuses_more_cgroups_than_it_walks)
{
	struct lwk_cgroup cg;
	struct lwk_cpuset one;

	setup_v1();
	v1_cpuset_dir("cpuset/slurm/job_1");
	for (int i = 0; i < 4100; i++) {
		char wide[256];

		snprintf(wide, sizeof(wide), "cpuset/slurm/job_1/w%d", i);
		v1_cpuset_dir(wide);
	}
	lwk_cpuset_zero(&one);
	lwk_cpuset_set(&one, 1);
	ck_assert_int_eq(lwk_cgroup_init(&cg, tree_root, "/slurm/job_1", err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_cgroup_set_cpus_tree(&cg, &one, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/slurm/job_1 has more than 4096 cgroups below it"), "%s", err);
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/cpuset.cpus"), "0-3\n");
	ck_assert_str_eq(tree_get("cpuset/slurm/job_1/w7/cpuset.cpus"), "0-3\n");
	tree_remove();
}
END_TEST

/* Who holds CPUs exclusively: found at any depth the walk takes, and
 * below that not passed over but said to be unknown. */
START_TEST(exclusive_cpus_below_the_walk_are_not_known_not_free)
{
	char rel[1024] = "cg", what[600];
	struct lwk_cpuset cpus;

	tree_make("xpart");
	tree_mkdir("cg/a/b");
	tree_put("cg/a/b/cpuset.cpus.exclusive", "2-3\n");
	lwk_cpuset_zero(&cpus);
	lwk_cpuset_set(&cpus, 3);
	snprintf(rel, sizeof(rel), "%s/cg", tree_root);
	ck_assert_int_eq(lwk_xpart_holder(rel, &cpus, NULL, NULL, what, sizeof(what)), 1);
	ck_assert_msg(strstr(what, "/a/b (cpuset.cpus.exclusive 2-3)"), "%s", what);
	tree_remove();

	tree_make("xpart");
	strcpy(rel, "cg");
	for (int depth = 0; depth < 18; depth++)
		strcat(rel, "/d");
	tree_mkdir(rel);
	strcat(rel, "/cpuset.cpus.exclusive");
	tree_put(rel, "3\n");
	snprintf(rel, sizeof(rel), "%s/cg", tree_root);
	ck_assert_int_eq(lwk_xpart_holder(rel, &cpus, NULL, NULL, what, sizeof(what)), -1);
	ck_assert_msg(strstr(what, "deeper than 16 levels"), "%s", what);
	tree_remove();
}
END_TEST

Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("writers");

	tcase_add_test(tc, detects_the_version_of_a_tree);
	tcase_add_test(tc, refuses_paths_that_could_leave_the_tree);
	tcase_add_test(tc, v2_create_enables_what_the_parent_has);
	tcase_add_test(tc, v2_knobs_go_to_their_files);
	tcase_add_test(tc, v2_limits_can_be_lifted);
	tcase_add_test(tc, v1_uses_one_hierarchy_per_controller);
	tcase_add_test(tc, v1_create_starts_from_the_parents_cpus_and_mems);
	tcase_add_test(tc, numa_stat_of_both_versions);
	tcase_add_test(tc, v1_tree_narrows_every_cgroup_of_a_deep_wide_tree);
	tcase_add_test(tc, v1_tree_refuses_more_cgroups_than_it_walks);
	tcase_add_test(tc, exclusive_cpus_below_the_walk_are_not_known_not_free);
	suite_add_tcase(s, tc);
	return s;
}
