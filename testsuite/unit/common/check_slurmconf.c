/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Finding slurm.conf and plugstack.conf as Slurm's commands do. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check_lwk.h"
#include "common/slurmconf.h"

static char path[2][4200];

/* The candidates of a tree: etc/slurm.conf, then run/conf/slurm.conf. */
static const char *const *cands(void)
{
	static const char *c[3];

	snprintf(path[0], sizeof(path[0]), "%s/etc/slurm.conf", tree_root);
	snprintf(path[1], sizeof(path[1]), "%s/run/conf/slurm.conf", tree_root);
	c[0] = path[0];
	c[1] = path[1];
	c[2] = NULL;
	return c;
}

START_TEST(slurm_conf_env_then_default_then_configless_cache)
{
	char buf[4200], want[4200];

	tree_make("slurmconf");
	tree_mkdir("etc");
	tree_mkdir("run/conf");
	/* Nothing there: -1, naming both places looked at. */
	ck_assert_int_eq(lwk_slurm_conf_find(NULL, cands(), buf, sizeof(buf)), -1);
	ck_assert_ptr_nonnull(strstr(buf, path[0]));
	ck_assert_ptr_nonnull(strstr(buf, " or "));
	ck_assert_ptr_nonnull(strstr(buf, path[1]));
	/* A configless node: only slurmd's cached copy. */
	tree_put("run/conf/slurm.conf", "ClusterName=c\n");
	ck_assert_int_eq(lwk_slurm_conf_find(NULL, cands(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, path[1]);
	/* The installed file comes first; an empty $SLURM_CONF is unset. */
	tree_put("etc/slurm.conf", "ClusterName=c\n");
	ck_assert_int_eq(lwk_slurm_conf_find("", cands(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, path[0]);
	/* $SLURM_CONF wins, whether or not its file exists. */
	snprintf(want, sizeof(want), "%s/elsewhere.conf", tree_root);
	ck_assert_int_eq(lwk_slurm_conf_find(want, cands(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(lwk_slurm_conf_find(want, cands(), buf, 8), -2);
	tree_remove();
}
END_TEST

/* lwk_plugstack_of on tree_root/rel, expecting want (below the tree
 * when relative). */
static void expect_plugstack(const char *rel, const char *want)
{
	char conf[4200], buf[4200], full[4200];

	snprintf(conf, sizeof(conf), "%s/%s", tree_root, rel);
	if (want[0] == '/')
		snprintf(full, sizeof(full), "%s", want);
	else
		snprintf(full, sizeof(full), "%s/%s", tree_root, want);
	ck_assert_int_eq(lwk_plugstack_of(conf, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, full);
}

START_TEST(plugstack_beside_slurm_conf_unless_plugstackconfig_says)
{
	char conf[4200], buf[4200];

	tree_make("plugstackof");
	/* No PlugStackConfig: beside slurm.conf (a configless node's cached
	 * copy, as Slurm ships it). */
	tree_put("slurm.conf", "ClusterName=c\n# PlugStackConfig=/commented/out\n");
	expect_plugstack("slurm.conf", "plugstack.conf");
	/* Given, absolute, any case, spaces around '=', a comment after. */
	tree_put("slurm.conf", "ClusterName=c\nplugstackconfig = /opt/slurm/etc/ps.conf # site\n");
	expect_plugstack("slurm.conf", "/opt/slurm/etc/ps.conf");
	/* Relative: below slurm.conf's directory. */
	tree_put("slurm.conf", "PlugStackConfig=spank/plugstack.conf\n");
	expect_plugstack("slurm.conf", "spank/plugstack.conf");
	/* A key that only starts the same is another key. */
	tree_put("slurm.conf", "PlugStackConfigX=/no\n");
	expect_plugstack("slurm.conf", "plugstack.conf");
	/* In a file an Include line names (relative: below slurm.conf's
	 * directory); a glob is a name, as in Slurm. */
	tree_mkdir("slurm.conf.d");
	tree_put("slurm.conf.d/10-spank.conf", "PlugStackConfig=/etc/site/plugstack.conf\n");
	tree_put("slurm.conf", "ClusterName=c\nInclude slurm.conf.d/*.conf\n");
	expect_plugstack("slurm.conf", "plugstack.conf");
	tree_put("slurm.conf", "ClusterName=c\nInclude\tslurm.conf.d/10-spank.conf\n");
	expect_plugstack("slurm.conf", "/etc/site/plugstack.conf");
	/* The last one counts, as in Slurm; a quoted value keeps blanks. */
	tree_put("slurm.conf", "PlugStackConfig=/first.conf\nPlugStackConfig=\"/a b/last.conf\"\n");
	expect_plugstack("slurm.conf", "/a b/last.conf");
	/* An include loop ends (depth bound): plugstack.conf beside it. */
	tree_put("slurm.conf", "include slurm.conf\n");
	expect_plugstack("slurm.conf", "plugstack.conf");
	/* A file that includes itself ten times: at most 64 files are read
	 * (eight deep, 10^8 otherwise). */
	tree_put("slurm.conf.d/loop.conf", "Include slurm.conf.d/loop.conf\nInclude slurm.conf.d/loop.conf\n"
					   "Include slurm.conf.d/loop.conf\nInclude slurm.conf.d/loop.conf\n"
					   "Include slurm.conf.d/loop.conf\nInclude slurm.conf.d/loop.conf\n"
					   "Include slurm.conf.d/loop.conf\nInclude slurm.conf.d/loop.conf\n"
					   "Include slurm.conf.d/loop.conf\nInclude slurm.conf.d/loop.conf\n");
	tree_put("slurm.conf", "Include slurm.conf.d/loop.conf\nPlugStackConfig=/after.conf\n");
	expect_plugstack("slurm.conf", "/after.conf");
	/* Only regular files are read: a device or a FIFO an Include
	 * names is never opened (a FIFO would block the sweep). */
	snprintf(conf, sizeof(conf), "%s/fifo", tree_root);
	ck_assert_int_eq(mkfifo(conf, 0600), 0);
	tree_put("slurm.conf", "Include /dev/null\nInclude fifo\n");
	expect_plugstack("slurm.conf", "plugstack.conf");
	/* No slurm.conf: -1, naming it. */
	snprintf(conf, sizeof(conf), "%s/missing.conf", tree_root);
	ck_assert_int_eq(lwk_plugstack_of(conf, buf, sizeof(buf)), -1);
	ck_assert_str_eq(buf, conf);
	tree_remove();
}
END_TEST

/* A value as Slurm takes it: the last, through Include, the key's
 * case aside; unset is 0. */
START_TEST(a_key_is_read_as_slurm_reads_it)
{
	char conf[4200], buf[256];

	tree_make("slurmconf");
	tree_put("slurm.conf", "TaskPlugin=task/affinity\n# TaskPlugin=task/none\ninclude more.conf\n");
	tree_put("more.conf", "taskplugin = task/cgroup,task/affinity # the site's\n");
	snprintf(conf, sizeof(conf), "%s/slurm.conf", tree_root);
	ck_assert_int_eq(lwk_slurm_conf_value(conf, "TaskPlugin", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "task/cgroup,task/affinity");
	ck_assert_int_eq(lwk_slurm_conf_value(conf, "ProctrackType", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(lwk_slurm_conf_value(conf, "TaskPlugin", buf, 8), -1);
	tree_remove();
}
END_TEST

/* A slurm.conf and the cgroup.conf beside it, in a tree of their own;
 * conf gets slurm.conf's path. */
static void conf_pair(char *conf, size_t len, const char *slurm, const char *cgroup)
{
	tree_make("slurmconf");
	snprintf(conf, len, "%s/slurm.conf", tree_root);
	tree_put("slurm.conf", slurm);
	tree_put("cgroup.conf", cgroup);
}

/* --contention-aware's settings: task/cgroup in TaskPlugin and
 * ConstrainCores=yes in the cgroup.conf beside slurm.conf; each
 * problem names the setting and the file. */
START_TEST(contention_aware_needs_task_cgroup_and_constraincores)
{
	char conf[4200], why[1200];

	conf_pair(conf, sizeof(conf), "TaskPlugin=task/affinity\n", "ConstrainCores=yes\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "TaskPlugin=task/affinity: task/cgroup is needed"));
	tree_put("slurm.conf", "TaskPlugin=task/cgroup,task/affinity\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	/* Slurm's other words for yes. */
	tree_put("cgroup.conf", "ConstrainCores=True\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), 0);
	tree_put("cgroup.conf", "ConstrainCores=1\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), 0);
	tree_put("cgroup.conf", "ConstrainCores=no\nConstrainRAMSpace=yes\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "cgroup.conf has ConstrainCores=no: ConstrainCores=yes is needed"));
	tree_put("cgroup.conf", "ConstrainRAMSpace=yes\n");
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "has no ConstrainCores"));
	/* Unreadable slurm.conf: not judged. */
	snprintf(conf, sizeof(conf), "%s/none.conf", tree_root);
	ck_assert_int_eq(lwk_casas_conf_problem(conf, why, sizeof(why)), 0);
	tree_remove();
}
END_TEST

/* IgnoreSystemd=yes (Slurm's words for yes) on a node systemd runs is
 * named with its file; not on a node without systemd, nor for cgroup/v1,
 * nor with IgnoreSystemd=no or unset. */
START_TEST(ignoresystemd_is_named_where_systemd_runs)
{
	char conf[4200], why[1200];

	conf_pair(conf, sizeof(conf), "TaskPlugin=task/cgroup\n", "CgroupPlugin=cgroup/v2\nIgnoreSystemd=Yes\n");
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, true, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "cgroup.conf has IgnoreSystemd=Yes while systemd manages this node"));
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, false, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	tree_put("cgroup.conf", "IgnoreSystemd=1\n"); /* CgroupPlugin autodetect */
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, true, why, sizeof(why)), -1);
	tree_put("cgroup.conf", "CgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\n");
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, true, why, sizeof(why)), 0);
	tree_put("cgroup.conf", "IgnoreSystemd=no\n");
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, true, why, sizeof(why)), 0);
	tree_put("cgroup.conf", "ConstrainCores=yes\n");
	ck_assert_int_eq(lwk_systemd_conf_problem(conf, true, why, sizeof(why)), 0);
	tree_remove();
}
END_TEST

Suite *slurmconf_suite(void)
{
	Suite *s = suite_create("slurmconf");
	TCase *tc = tcase_create("slurmconf");

	tcase_add_test(tc, slurm_conf_env_then_default_then_configless_cache);
	tcase_add_test(tc, plugstack_beside_slurm_conf_unless_plugstackconfig_says);
	tcase_add_test(tc, a_key_is_read_as_slurm_reads_it);
	tcase_add_test(tc, contention_aware_needs_task_cgroup_and_constraincores);
	tcase_add_test(tc, ignoresystemd_is_named_where_systemd_runs);
	suite_add_tcase(s, tc);
	return s;
}
