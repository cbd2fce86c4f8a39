# spank/sweep: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/sweep/gone.c \
	spank/sweep/gone.h
