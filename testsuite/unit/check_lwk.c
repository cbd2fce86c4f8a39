/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs every unit suite; exit status is Check's verdict. */
#include <stdlib.h>

#include "check_lwk.h"

int main(void)
{
	SRunner *sr = srunner_create(cpulist_suite());
	int failed;

	srunner_add_suite(sr, options_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, topology_suite());
	srunner_add_suite(sr, monitor_suite());
	srunner_add_suite(sr, sampler_suite());
	srunner_add_suite(sr, sweep_suite());
	srunner_add_suite(sr, cgroup_suite());
	srunner_add_suite(sr, hugeperf_suite());
	srunner_add_suite(sr, plan_suite());
	srunner_add_suite(sr, irqaff_suite());
	srunner_add_suite(sr, casas_suite());
	srunner_add_suite(sr, casasnode_suite());
	srunner_add_suite(sr, slurmcg_suite());
	srunner_add_suite(sr, joblive_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
