# spank/lwk: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/lwk/bind.c \
	spank/lwk/bind.h \
	spank/lwk/charge.c \
	spank/lwk/isolate.c \
	spank/lwk/mckernel.c \
	spank/lwk/mckernel.h \
	spank/lwk/owncgroup.c \
	spank/lwk/owner.c \
	spank/lwk/part.h \
	spank/lwk/part_int.h \
	spank/lwk/place.c \
	spank/lwk/plan.c \
	spank/lwk/plan.h \
	spank/lwk/record.c \
	spank/lwk/setup.c \
	spank/lwk/state.c \
	spank/lwk/teardown.c \
	spank/lwk/xlines.c
