# testsuite/unit/syncmon: the tests of spank/syncmon/, listed by the top Makefile.am.
testsuite_unit_check_lwk_SOURCES += \
	testsuite/unit/syncmon/check_json.c \
	testsuite/unit/syncmon/check_sampbuf.c \
	testsuite/unit/syncmon/check_stop.c \
	testsuite/unit/syncmon/check_tick.c
testsuite_unit_check_lwk_root_SOURCES += \
	testsuite/unit/syncmon/check_start.c
