# spank/casas: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/casas/arbiter.c \
	spank/casas/arbiter.h \
	spank/casas/casasnode.c \
	spank/casas/casasnode.h
