/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The unit suites that need root: root-owned state directories and
 * tools are what they check, so as anyone else they could only fail.
 * Not root: exit 77, which automake and scripts/test count as a skip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_lwk.h"

int main(void)
{
	SRunner *sr;
	int failed;

	if (geteuid() != 0) {
		printf("SKIP: the --lwk partition, --contention-aware record and sampler start tests need root (root-owned state and tools)\n");
		return 77;
	}
	sr = srunner_create(lwk_record_suite());
	srunner_add_suite(sr, lwk_state_suite());
	srunner_add_suite(sr, lwk_setup_suite());
	srunner_add_suite(sr, lwk_teardown_suite());
	srunner_add_suite(sr, lwk_owncgroup_suite());
	srunner_add_suite(sr, lwk_charge_suite());
	srunner_add_suite(sr, lwk_place_suite());
	srunner_add_suite(sr, lwk_isolate_suite());
	srunner_add_suite(sr, lwk_owner_suite());
	srunner_add_suite(sr, lwk_mckernel_suite());
	srunner_add_suite(sr, casas_replan_root_suite());
	srunner_add_suite(sr, casas_liveness_root_suite());
	srunner_add_suite(sr, casas_membership_root_suite());
	srunner_add_suite(sr, casas_probe_root_suite());
	srunner_add_suite(sr, start_root_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
