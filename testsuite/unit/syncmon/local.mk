# testsuite/unit/syncmon: the tests of spank/syncmon/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/syncmon/check_monitor.c
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/syncmon/check_monitor.c
