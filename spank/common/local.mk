# spank/common: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/common/config.c \
	spank/common/config.h \
	spank/common/cpulist.c \
	spank/common/cpulist.h \
	spank/common/kv.c \
	spank/common/kv.h \
	spank/common/options.c \
	spank/common/options.h \
	spank/common/slurmconf.c \
	spank/common/slurmconf.h \
	spank/common/topology.c \
	spank/common/topology.h
