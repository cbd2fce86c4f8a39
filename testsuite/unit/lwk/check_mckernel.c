/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Backend mckernel (lwk/mckernel.c): the boot command line, and tools
 * run only when root owns them. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check_lwk.h"
#include "lwk/mckernel.h"
#include "lwk/plan.h"
#include "common/options.h"
#include "common/topology.h"
#include "lwk_fixture.h"

START_TEST(mckernel_boot_command_line)
{
	static char store[LWK_MCK_ARGS][4096];
	const char *argv[LWK_MCK_ARGS + 1];
	struct lwk_topology *t = fixture_load("guest8");
	struct lwk_opts o = opts_of("os=2,mem=40M");
	struct lwk_cpuset all = cpus_of("0-7");
	struct lwk_plan p;
	char line[1024] = "";

	ck_assert_int_eq(lwk_plan_make(t, &all, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_mck_boot_argv("/opt/mck", t, &p, 1000, 100, store, argv, err,
					   sizeof(err)),
			 0);
	for (int i = 0; argv[i]; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", i ? " " : "", argv[i]);
	/* App CPUs; memory on their nodes; each node's App CPUs send IKC to
	 * an OS CPU of that node, else the first OS CPU; the user owns it. */
	ck_assert_str_eq(line, "/opt/mck/sbin/mcreboot.sh -c 2-7 -m 14M@0,28M@1 -r 2-3:0+4-7:0 "
			       "-o 1000:100");
	o = opts_of("os=2");
	ck_assert_int_eq(lwk_plan_make(t, &all, &o, false, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(lwk_mck_boot_argv("/opt/mck", t, &p, 1000, 100, store, argv, err,
					   sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "backend=mckernel needs memory for McKernel: give mem="));
	lwk_topology_free(t);
}
END_TEST

START_TEST(mckernel_tools_run_only_when_root_owns_them)
{
	const char *echo[] = { "/bin/echo", "booted", NULL };
	const char *sleep5[] = { "/bin/sleep", "5", NULL };
	const char *no[] = { "/bin/false", NULL };
	const char *mine[] = { NULL, NULL };
	char out[256], path[300];

	ck_assert_int_eq(lwk_mck_run(echo, out, sizeof(out), 10), 0);
	ck_assert_str_eq(out, "booted");
	ck_assert_int_eq(lwk_mck_run(no, out, sizeof(out), 10), 1);
	ck_assert_int_ne(lwk_mck_run(sleep5, out, sizeof(out), 1), 0);
	ck_assert_ptr_nonnull(strstr(out, "killed after 1 s"));
	/* A tool others can write is never run as root. */
	tree_make("mck");
	tree_put("tool", "#!/bin/sh\necho ran\n");
	snprintf(path, sizeof(path), "%s/tool", tree_root);
	chmod(path, 0777);
	mine[0] = path;
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), -1);
	ck_assert_ptr_nonnull(strstr(out, "not a root-owned executable that only root can change"));
	/* Nor one in a directory others can change (a sticky one, like
	 * /tmp, is fine: only root may rename root's entries there). */
	chmod(path, 0755);
	chmod(tree_root, 0777);
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), -1);
	ck_assert_ptr_nonnull(strstr(out, "in directories only root can change"));
	chmod(tree_root, 01777);
	ck_assert_int_eq(lwk_mck_run(mine, out, sizeof(out), 10), 0);
	ck_assert_str_eq(out, "ran");
	ck_assert(!lwk_mck_installed(tree_root));
	tree_remove();
}
END_TEST

/* Run by check_lwk_root: the state directories and tools must be root's. */
Suite *lwk_mckernel_suite(void)
{
	Suite *s = suite_create("mckernel");
	TCase *tc = tcase_create("mckernel");

	tcase_add_test(tc, mckernel_boot_command_line);
	tcase_add_test(tc, mckernel_tools_run_only_when_root_owns_them);
	suite_add_tcase(s, tc);
	return s;
}
