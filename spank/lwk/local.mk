# spank/lwk: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/lwk/mckernel.c \
	spank/lwk/mckernel.h \
	spank/lwk/owner.c \
	spank/lwk/part.h \
	spank/lwk/plan.c \
	spank/lwk/plan.h
