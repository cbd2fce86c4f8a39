# spank/syncmon: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/syncmon/control.h \
	spank/syncmon/json.c \
	spank/syncmon/json.h \
	spank/syncmon/sampbuf.c \
	spank/syncmon/sampbuf.h \
	spank/syncmon/start.c \
	spank/syncmon/stop.c \
	spank/syncmon/tick.c \
	spank/syncmon/tick.h
# The sampler program's own files: linked into lwk-syncmon only, never
# into the plugin that root's slurmstepd loads.
lwk_syncmon_SOURCES = \
	spank/syncmon/lwk-syncmon.c \
	spank/syncmon/privs.c \
	spank/syncmon/privs.h \
	spank/syncmon/sample.c \
	spank/syncmon/sample.h \
	spank/syncmon/sampler.c \
	spank/syncmon/sampler.h \
	spank/syncmon/source.c
