# spank/casas: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/casas/arbiter.c \
	spank/casas/arbiter.h \
	spank/casas/record.c \
	spank/casas/liveness.c \
	spank/casas/apply.c \
	spank/casas/replan.c \
	spank/casas/membership.c \
	spank/casas/probe.c \
	spank/casas/casasnode.h \
	spank/casas/internal.h
