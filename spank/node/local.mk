# spank/node: listed by the top Makefile.am (include).
spank_liblwkcore_la_SOURCES += \
	spank/node/cgroup.c \
	spank/node/cgroup.h \
	spank/node/cgroup_kill.c \
	spank/node/cgroup_killusers.c \
	spank/node/cgroup_takeback.c \
	spank/node/cgroup_users.h \
	spank/node/cgroup_walk.c \
	spank/node/cgtree.c \
	spank/node/hugepages.c \
	spank/node/hugepages.h \
	spank/node/irqaff.c \
	spank/node/irqaff.h \
	spank/node/irqbalance.c \
	spank/node/irqbalance.h \
	spank/node/child.c \
	spank/node/child.h \
	spank/node/joblive.c \
	spank/node/joblive.h \
	spank/node/nodename.c \
	spank/node/nodename.h \
	spank/node/perfcount.c \
	spank/node/perfcount.h \
	spank/node/procfs.c \
	spank/node/procfs.h \
	spank/node/procstat.c \
	spank/node/procstat.h \
	spank/node/slurmcg.c \
	spank/node/slurmcg.h \
	spank/node/statedir.c \
	spank/node/statedir.h \
	spank/node/taskstats.c \
	spank/node/taskstats.h \
	spank/node/xpart.c \
	spank/node/xpart.h
# The sampler's BPF walks: a library of their own, linked by
# lwk-syncmon, its benchmark and its tests, never by the plugin (no
# libbpf in slurmstepd).  Their kernel side, taskiter.bpf.c and
# cgiter.bpf.c, is compiled with clang -target bpf into skeleton headers
# (Makefile.am); a build without clang, libbpf or bpftool has
# taskiter_none.c instead.
noinst_LTLIBRARIES += spank/liblwkbpf.la
spank_liblwkbpf_la_SOURCES = \
	spank/node/taskiter.h \
	spank/node/taskiter_rec.h
if HAVE_BPF
spank_liblwkbpf_la_SOURCES += spank/node/taskiter.c spank/node/taskiter_load.c \
	spank/node/taskiter_load.h
else
spank_liblwkbpf_la_SOURCES += spank/node/taskiter_none.c
endif
EXTRA_spank_liblwkbpf_la_SOURCES = spank/node/taskiter.c spank/node/taskiter_none.c
spank_liblwkbpf_la_LIBADD = $(LIBBPF_LIBS)
