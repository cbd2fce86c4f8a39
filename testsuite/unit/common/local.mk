# testsuite/unit/common: the tests of spank/common/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/common/check_cpulist.c \
	testsuite/unit/common/check_options.c \
	testsuite/unit/common/check_config.c \
	testsuite/unit/common/check_slurmconf.c \
	testsuite/unit/common/check_topology.c
