# testsuite/unit/casas: the tests of spank/casas/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/casas/check_arbiter.c \
	testsuite/unit/casas/check_casasnode.c
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/casas/check_casasnode.c
