# testsuite/unit/casas: the tests of spank/casas/, listed by the top Makefile.am.
# node_tree.h: the guest node and records the casas tests share.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/casas/check_arbiter.c \
	testsuite/unit/casas/check_record.c \
	testsuite/unit/casas/check_apply.c \
	testsuite/unit/casas/node_tree.h
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/casas/check_liveness.c \
	testsuite/unit/casas/check_replan.c \
	testsuite/unit/casas/check_membership.c \
	testsuite/unit/casas/check_probe.c \
	testsuite/unit/casas/node_tree.h
