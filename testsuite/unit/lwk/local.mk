# testsuite/unit/lwk: the tests of spank/lwk/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/lwk/check_plan.c
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/lwk/check_part.c
