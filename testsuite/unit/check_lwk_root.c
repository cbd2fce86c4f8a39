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
		printf("SKIP: lwkpart, casasnode and sampler starter tests need root (root-owned state and tools)\n");
		return 77;
	}
	sr = srunner_create(record_suite());
	srunner_add_suite(sr, state_suite());
	srunner_add_suite(sr, setup_suite());
	srunner_add_suite(sr, teardown_suite());
	srunner_add_suite(sr, owncgroup_suite());
	srunner_add_suite(sr, charge_suite());
	srunner_add_suite(sr, place_suite());
	srunner_add_suite(sr, owner_suite());
	srunner_add_suite(sr, mckernel_suite());
	srunner_add_suite(sr, casasnode_root_suite());
	srunner_add_suite(sr, starter_root_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
