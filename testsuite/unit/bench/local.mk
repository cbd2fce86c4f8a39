# testsuite/unit/bench: the tests of bench/'s pure parts (what a
# benchmark counts must be right before its numbers mean anything),
# listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/bench/check_lwk_quiet.c \
	bench/lwk_quiet.c \
	bench/lwk_quiet.h
