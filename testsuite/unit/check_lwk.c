/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs every unit suite; exit status is Check's verdict. */
#include <stdlib.h>
#include <string.h>

#include "check_lwk.h"

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	/* A process a joblive test starts (check_joblive.c). */
	if (argc == 3 && !strcmp(argv[1], "--stalled-environ"))
		return joblive_stalled_environ_process(argv[2]);
	sr = srunner_create(cpulist_suite());

	srunner_add_suite(sr, options_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, slurmconf_suite());
	srunner_add_suite(sr, topology_suite());
	srunner_add_suite(sr, tick_suite());
	srunner_add_suite(sr, sampbuf_suite());
	srunner_add_suite(sr, procstat_suite());
	srunner_add_suite(sr, procfs_suite());
	srunner_add_suite(sr, json_suite());
	srunner_add_suite(sr, statedir_suite());
	srunner_add_suite(sr, stop_suite());
	srunner_add_suite(sr, cgroup_suite());
	srunner_add_suite(sr, cgroup_kill_suite());
	srunner_add_suite(sr, hugepages_suite());
	srunner_add_suite(sr, perfcount_suite());
	srunner_add_suite(sr, lwk_plan_suite());
	srunner_add_suite(sr, lwk_bind_suite());
	srunner_add_suite(sr, irqaff_suite());
	srunner_add_suite(sr, irqbalance_suite());
	srunner_add_suite(sr, arbiter_suite());
	srunner_add_suite(sr, casas_record_suite());
	srunner_add_suite(sr, casas_apply_suite());
	srunner_add_suite(sr, slurmcg_suite());
	srunner_add_suite(sr, joblive_suite());
	srunner_add_suite(sr, nodename_suite());
	srunner_add_suite(sr, lwk_quiet_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
