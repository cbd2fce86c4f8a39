# testsuite/unit/lwk: the tests of spank/lwk/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/lwk/check_bind.c \
	testsuite/unit/lwk/check_plan.c
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/lwk/lwk_fixture.c \
	testsuite/unit/lwk/lwk_fixture.h \
	testsuite/unit/lwk/check_record.c \
	testsuite/unit/lwk/check_state.c \
	testsuite/unit/lwk/check_setup.c \
	testsuite/unit/lwk/check_teardown.c \
	testsuite/unit/lwk/check_owncgroup.c \
	testsuite/unit/lwk/check_charge.c \
	testsuite/unit/lwk/check_place.c \
	testsuite/unit/lwk/check_isolate.c \
	testsuite/unit/lwk/check_owner.c \
	testsuite/unit/lwk/check_mckernel.c
