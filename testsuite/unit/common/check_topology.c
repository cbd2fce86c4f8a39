/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Topology over fixture trees with real machines' sysfs shapes
 * (testsuite/fixtures/mkfixture.sh), and over this machine's /sys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_lwk.h"
#include "common/topology.h"

static char err[512];

static void assert_list(const struct lwk_cpuset *s, const char *expect)
{
	char buf[1024];

	lwk_cpulist_format(s, buf, sizeof(buf));
	ck_assert_str_eq(buf, expect);
}

static void assert_map(const struct lwk_topology *t, enum lwk_slurm_socket kind,
		       const char *abstract, const char *expect)
{
	struct lwk_cpuset cpus;

	ck_assert_msg(lwk_topology_map_slurm_cores(t, kind, abstract, &cpus, err, sizeof(err)) == 0,
		      "%s", err);
	assert_list(&cpus, expect);
}

START_TEST(opteron6172)
{
	struct lwk_topology *t = fixture_load("opteron6172");
	unsigned s, c;

	ck_assert_uint_eq(t->npackages, 4);
	ck_assert_uint_eq(t->ncpus, 48);
	/* core_id repeats across the two dies of a package: still 48 cores. */
	ck_assert_uint_eq(t->ncores, 48);
	ck_assert_uint_eq(t->threads_per_core, 1);
	ck_assert_uint_eq(t->ndies, 8);
	ck_assert_uint_eq(t->nnuma, 8);
	ck_assert_str_eq(t->source, "L3 cache");
	for (unsigned d = 0; d < 8; d++) {
		char expect[32];

		snprintf(expect, sizeof(expect), "%u-%u", d * 6, d * 6 + 5);
		assert_list(&t->dies[d].cpus, expect);
		ck_assert_uint_eq(t->dies[d].ncores, 6);
		ck_assert_int_eq(t->dies[d].package, (int)d / 2);
		ck_assert_int_eq(t->numa[t->dies[d].numa].node, (int)d);
	}
	ck_assert_uint_eq(t->numa[3].mem_total, UINT64_C(16384) << 20);
	ck_assert_uint_eq(t->numa[3].mem_free, (UINT64_C(16384) * 1024 * 9 / 10) * 1024);
	lwk_topology_slurm_shape(t, LWK_SOCKET_PACKAGE, &s, &c);
	ck_assert_uint_eq(s, 4);
	ck_assert_uint_eq(c, 12);
	lwk_topology_slurm_shape(t, LWK_SOCKET_L3CACHE, &s, &c);
	ck_assert_uint_eq(s, 8);
	ck_assert_uint_eq(c, 6);
	assert_map(t, LWK_SOCKET_PACKAGE, "0-5", "0-5");
	assert_map(t, LWK_SOCKET_PACKAGE, "12,47", "12,47");
	lwk_topology_free(t);
}
END_TEST

START_TEST(xeon2s_ht)
{
	struct lwk_topology *t = fixture_load("xeon2s-ht");
	unsigned s, c;

	ck_assert_uint_eq(t->npackages, 2);
	ck_assert_uint_eq(t->ncpus, 72);
	ck_assert_uint_eq(t->ncores, 36);
	ck_assert_uint_eq(t->threads_per_core, 2);
	ck_assert_uint_eq(t->ndies, 2);
	ck_assert_uint_eq(t->nnuma, 2);
	assert_list(&t->dies[0].cpus, "0-17,36-53");
	assert_list(&t->dies[1].cpus, "18-35,54-71");
	ck_assert_uint_eq(t->dies[1].ncores, 18);
	assert_list(&t->cores[0].cpus, "0,36");
	lwk_topology_slurm_shape(t, LWK_SOCKET_PACKAGE, &s, &c);
	ck_assert_uint_eq(s, 2);
	ck_assert_uint_eq(c, 18);
	/* Abstract core 18 is the first core of socket 1: Linux CPUs 18 and
	 * 54, not CPU 18's hyperthread sibling order. */
	assert_map(t, LWK_SOCKET_PACKAGE, "0", "0,36");
	assert_map(t, LWK_SOCKET_PACKAGE, "17-18", "17-18,53-54");
	assert_map(t, LWK_SOCKET_PACKAGE, "0-35", "0-71");
	lwk_topology_free(t);
}
END_TEST

START_TEST(epyc7702)
{
	struct lwk_topology *t = fixture_load("epyc7702");
	unsigned s, c;

	ck_assert_uint_eq(t->npackages, 2);
	ck_assert_uint_eq(t->ncpus, 256);
	ck_assert_uint_eq(t->ncores, 128);
	ck_assert_uint_eq(t->ndies, 32);
	ck_assert_uint_eq(t->nnuma, 2);
	assert_list(&t->dies[1].cpus, "4-7,132-135");
	assert_list(&t->dies[31].cpus, "124-127,252-255");
	ck_assert_int_eq(t->numa[t->dies[16].numa].node, 1);
	for (unsigned d = 0; d < 32; d++)
		ck_assert_uint_eq(t->dies[d].ncores, 4);
	lwk_topology_slurm_shape(t, LWK_SOCKET_L3CACHE, &s, &c);
	ck_assert_uint_eq(s, 32);
	ck_assert_uint_eq(c, 4);
	lwk_topology_slurm_shape(t, LWK_SOCKET_NUMA, &s, &c);
	ck_assert_uint_eq(s, 2);
	ck_assert_uint_eq(c, 64);
	assert_map(t, LWK_SOCKET_L3CACHE, "4-7", "4-7,132-135");
	assert_map(t, LWK_SOCKET_PACKAGE, "64", "64,192");
	lwk_topology_free(t);
}
END_TEST

START_TEST(vm2)
{
	struct lwk_topology *t = fixture_load("vm2");

	ck_assert_uint_eq(t->ncpus, 2);
	ck_assert_uint_eq(t->ncores, 2);
	ck_assert_uint_eq(t->ndies, 1);
	ck_assert_uint_eq(t->nnuma, 1);
	/* No cache directory: the kernel's die stands in for L3. */
	ck_assert_str_eq(t->source, "kernel die");
	assert_map(t, LWK_SOCKET_PACKAGE, "1", "1");
	lwk_topology_free(t);
}
END_TEST

START_TEST(guest8)
{
	struct lwk_topology *t = fixture_load("guest8");

	/* L3 per die, NUMA per socket: 4 dies, 2 on each NUMA node. */
	ck_assert_uint_eq(t->ndies, 4);
	ck_assert_uint_eq(t->nnuma, 2);
	assert_list(&t->dies[1].cpus, "2-3");
	ck_assert_int_eq(t->numa[t->dies[1].numa].node, 0);
	ck_assert_int_eq(t->numa[t->dies[2].numa].node, 1);
	lwk_topology_free(t);
}
END_TEST

/* A socket with an offline CPU: Slurm's numbering keeps its holes. */
START_TEST(uneven_sockets_keep_slurm_numbering)
{
	const char *dir = getenv("FIXTURES");
	char cmd[1024], root[512];
	struct lwk_topology *t;

	snprintf(root, sizeof(root), "%s/opteron6172-cpu5-off", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s && cp -r %s/opteron6172 %s && echo 0-4,6-47 > %s/devices/system/cpu/online",
		 root, dir, root, root);
	ck_assert_int_eq(system(cmd), 0);
	t = lwk_topology_read(root, err, sizeof(err));
	ck_assert_msg(t != NULL, "%s", err);
	/* l3cache sockets: 8 of 6 cores, the first with 5. Core 6 is
	 * socket 1's first core, CPU 6; core 5 does not exist. */
	assert_map(t, LWK_SOCKET_L3CACHE, "6", "6");
	assert_map(t, LWK_SOCKET_L3CACHE, "47", "47");
	assert_map(t, LWK_SOCKET_L3CACHE, "0-4", "0-4");
	{
		struct lwk_cpuset cpus;

		ck_assert_int_eq(lwk_topology_map_slurm_cores(t, LWK_SOCKET_L3CACHE, "5", &cpus, err,
							      sizeof(err)), -1);
	}
	lwk_topology_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Abstract indices past the hardware never map to a CPU. */
START_TEST(map_refuses_foreign_cores)
{
	struct lwk_topology *t = fixture_load("vm2");
	struct lwk_cpuset cpus;

	ck_assert_int_eq(lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, "0-3", &cpus, err,
						      sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "declared topology differs"));
	ck_assert_uint_eq(lwk_cpuset_count(&cpus), 0);
	ck_assert_int_eq(lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, "x", &cpus, err,
						      sizeof(err)), -1);
	ck_assert_int_eq(lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, NULL, &cpus, err,
						      sizeof(err)), -1);
	lwk_topology_free(t);
}
END_TEST

/*
 * guest8 with the boot-time lists: each text is written to
 * devices/system/cpu/nohz_full and .../isolated as is, NULL leaves the
 * file out (a kernel without CONFIG_NO_HZ_FULL has no nohz_full).
 */
static struct lwk_topology *guest8_booted(const char *nohz_full, const char *isolated)
{
	const char *dir = getenv("FIXTURES");
	const char *texts[2] = { nohz_full, isolated }, *files[2] = { "nohz_full", "isolated" };
	char cmd[2048], root[512], path[600];
	struct lwk_topology *t;

	snprintf(root, sizeof(root), "%s/guest8-booted", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s && cp -r %s/guest8 %s", root, dir, root);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 0; i < 2; i++) {
		FILE *f;

		if (!texts[i])
			continue;
		snprintf(path, sizeof(path), "%s/devices/system/cpu/%s", root, files[i]);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(texts[i], f);
		ck_assert_int_eq(fclose(f), 0);
	}
	t = lwk_topology_read(root, err, sizeof(err));
	ck_assert_msg(t != NULL, "%s", err);
	/* The rest of the node reads as always. */
	ck_assert_uint_eq(t->ncpus, 8);
	ck_assert_uint_eq(t->ndies, 4);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
	return t;
}

START_TEST(boot_isolated_cpus_are_read)
{
	struct lwk_topology *t = guest8_booted("4-7\n", "6-7\n");
	struct lwk_cpuset all;

	assert_list(&t->nohz_full, "4-7");
	assert_list(&t->isolated, "6-7");
	lwk_topology_free(t);
	/* isolcpus= alone; and the two together are one set. */
	t = guest8_booted(NULL, "1,3\n");
	ck_assert_uint_eq(lwk_cpuset_count(&t->nohz_full), 0);
	assert_list(&t->isolated, "1,3");
	lwk_topology_free(t);
	t = guest8_booted("2-3\n", "5\n");
	lwk_topology_boot_isolated(t, &all);
	assert_list(&all, "2-3,5");
	lwk_topology_free(t);
	/* Only online CPUs: a list naming CPUs the node does not have. */
	t = guest8_booted("6-9\n", "0-63\n");
	assert_list(&t->nohz_full, "6-7");
	assert_list(&t->isolated, "0-7");
	lwk_topology_free(t);
}
END_TEST

/* No boot isolation, in each way a kernel says so. */
START_TEST(no_boot_isolation_reads_empty)
{
	const char *none[][2] = {
		{ NULL, NULL },		/* no CONFIG_NO_HZ_FULL, no isolated file */
		{ "(null)\n", "\n" },	/* nohz_full= not given, empty isolated */
		{ "\n", "" },		/* empty line, empty file */
	};

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		struct lwk_topology *t = guest8_booted(none[i][0], none[i][1]);
		struct lwk_cpuset all;

		lwk_topology_boot_isolated(t, &all);
		ck_assert_msg(lwk_cpuset_count(&all) == 0, "case %zu: %s", i, cpus_text(&all));
		lwk_topology_free(t);
	}
	/* The fixtures have none. */
	{
		struct lwk_topology *t = fixture_load("guest8");

		ck_assert_uint_eq(lwk_cpuset_count(&t->nohz_full), 0);
		ck_assert_uint_eq(lwk_cpuset_count(&t->isolated), 0);
		lwk_topology_free(t);
	}
}
END_TEST

/* A list sysfs garbles is none, never a failed read or a wrong CPU. */
START_TEST(garbled_boot_lists_read_as_none)
{
	const char *garbage[] = { "4-x\n", "7-3\n", "99999999\n", "-1\n", "4,,5\n",
				  "(nul\n", "4-7\n\n", "\xff\xfe", "0-7:0\n" };

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		struct lwk_topology *t = guest8_booted(garbage[i], garbage[i]);

		ck_assert_msg(lwk_cpuset_count(&t->nohz_full) == 0, "'%s': nohz_full %s", garbage[i],
			      cpus_text(&t->nohz_full));
		ck_assert_msg(lwk_cpuset_count(&t->isolated) == 0, "'%s': isolated %s", garbage[i],
			      cpus_text(&t->isolated));
		lwk_topology_free(t);
	}
}
END_TEST

START_TEST(missing_root)
{
	ck_assert_ptr_null(lwk_topology_read("/nonexistent-sysfs", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "cannot read /nonexistent-sysfs/devices/system/cpu/online"));
}
END_TEST

START_TEST(this_machine)
{
	struct lwk_topology *t = lwk_topology_read("/sys", err, sizeof(err));
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	ck_assert_msg(t != NULL, "%s", err);
	ck_assert_int_eq((long)t->ncpus, online);
	ck_assert_uint_ge(t->ndies, 1);
	ck_assert_uint_le(t->ndies, t->ncores);
	ck_assert_uint_ge(t->nnuma, 1);
	lwk_topology_free(t);
}
END_TEST

Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("topology");

	tcase_add_test(tc, opteron6172);
	tcase_add_test(tc, xeon2s_ht);
	tcase_add_test(tc, epyc7702);
	tcase_add_test(tc, vm2);
	tcase_add_test(tc, guest8);
	tcase_add_test(tc, map_refuses_foreign_cores);
	tcase_add_test(tc, uneven_sockets_keep_slurm_numbering);
	tcase_add_test(tc, boot_isolated_cpus_are_read);
	tcase_add_test(tc, no_boot_isolation_reads_empty);
	tcase_add_test(tc, garbled_boot_lists_read_as_none);
	tcase_add_test(tc, missing_root);
	tcase_add_test(tc, this_machine);
	suite_add_tcase(s, tc);
	return s;
}
