# testsuite/unit/node: the tests of spank/node/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/node/check_cgroup.c \
	testsuite/unit/node/check_cgroup_kill.c \
	testsuite/unit/node/check_hugepages.c \
	testsuite/unit/node/check_perfcount.c \
	testsuite/unit/node/check_irqaff.c \
	testsuite/unit/node/check_irqbalance.c \
	testsuite/unit/node/check_procfs.c \
	testsuite/unit/node/check_procstat.c \
	testsuite/unit/node/check_statedir.c \
	testsuite/unit/node/check_slurmcg.c \
	testsuite/unit/node/check_joblive.c \
	testsuite/unit/node/check_nodename.c
