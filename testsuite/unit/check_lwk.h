/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CHECK_LWK_H
#define CHECK_LWK_H

#include <check.h>

#include "common/cpulist.h"
#include "common/options.h"

Suite *cpulist_suite(void);
Suite *slurmconf_suite(void);
Suite *options_suite(void);
Suite *config_suite(void);
Suite *topology_suite(void);
Suite *tick_suite(void);
Suite *sampbuf_suite(void);
Suite *procstat_suite(void);
Suite *procfs_suite(void);
Suite *json_suite(void);
Suite *statedir_suite(void);
Suite *stop_suite(void);
Suite *cgroup_suite(void);
Suite *cgroup_kill_suite(void);
Suite *hugepages_suite(void);
Suite *perfcount_suite(void);
Suite *lwk_plan_suite(void);
Suite *lwk_bind_suite(void);
Suite *irqaff_suite(void);
Suite *irqbalance_suite(void);
Suite *arbiter_suite(void);
Suite *casas_record_suite(void);
Suite *casas_apply_suite(void);
Suite *slurmcg_suite(void);
Suite *joblive_suite(void);
Suite *nodename_suite(void);
int joblive_stalled_environ_process(const char *file);
Suite *lwk_quiet_suite(void);
/* check_lwk_root: suites that need root. */
Suite *lwk_record_suite(void);
Suite *lwk_state_suite(void);
Suite *lwk_setup_suite(void);
Suite *lwk_teardown_suite(void);
Suite *lwk_owncgroup_suite(void);
Suite *lwk_charge_suite(void);
Suite *lwk_place_suite(void);
Suite *lwk_isolate_suite(void);
Suite *lwk_owner_suite(void);
Suite *lwk_mckernel_suite(void);
Suite *casas_liveness_root_suite(void);
Suite *casas_replan_root_suite(void);
Suite *casas_membership_root_suite(void);
Suite *casas_probe_root_suite(void);
Suite *start_root_suite(void);

/* check_tree.c: a temporary tree at tree_root; paths are relative to it. */
extern char tree_root[256];
void tree_make(const char *tag);
void tree_put(const char *rel, const char *text);
const char *tree_get(const char *rel); /* NULL when missing */
void tree_mkdir(const char *rel);      /* with its parents */
void tree_remove(void);
/* <tree>/proc/<pid>/cgroup, as the kernel would show pid's cgroups. */
void tree_proc_cgroup(int pid, const char *text);
/* A child process that sleeps until killed. */
int tree_sleeper(void);
/* An --lwk option value parsed (the test fails on a refusal), a cpulist. */
struct lwk_opts opts_of(const char *arg);
struct lwk_cpuset cpus_of(const char *list);
/* A set as a cpulist, in one of 4 rotating buffers. */
const char *cpus_text(const struct lwk_cpuset *s);
/* A topology fixture (testsuite/fixtures/mkfixture.sh) by machine name. */
struct lwk_topology;
struct lwk_topology *fixture_load(const char *machine);

#endif
