/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The three job options and their grammars:
 *
 *   --lwk[=os=N,mem=SIZE,numa=LIST,backend=B,hugepage=P,deleg_mem=SIZE,deleg_cpu=PCT]
 *   --sync-monitor[=interval=D,offset=D,dir=PATH,source=S,idle=PCT,fullscan=N,flush=N,buffer=SIZE]
 *   --contention-aware[=probe=D,min_dies=N,max_dies=N,event=NAME,objective=O]
 *
 * Pure: no Slurm, no system calls.  The same parser runs in sbatch/srun
 * (to refuse a bad value before a job exists) and in slurmstepd (which
 * must not trust what arrives in the job's environment).
 */
#ifndef LWK_OPTIONS_H
#define LWK_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpulist.h"
#include "common/kv.h"

enum lwk_backend { LWK_BACKEND_AUTO, LWK_BACKEND_LINUX, LWK_BACKEND_MCKERNEL };
enum lwk_hugepage { LWK_HUGEPAGE_NONE, LWK_HUGEPAGE_2M, LWK_HUGEPAGE_1G };
enum lwk_source { LWK_SOURCE_AUTO, LWK_SOURCE_TASKSTATS, LWK_SOURCE_PROC, LWK_SOURCE_BPF };
enum lwk_objective { LWK_OBJECTIVE_ANTT, LWK_OBJECTIVE_STP };

#define LWK_MAX_NUMA_NODES 1024
#define LWK_MAX_DIES 1024

/* --lwk: split the job's cores on each node into OS and App cores. */
struct lwk_opts {
	uint64_t os_cores;	/* OS cores per node                        */
	uint64_t mem;		/* bytes per node for the partition, 0=none */
	struct lwk_cpuset numa;	/* App NUMA nodes, empty = auto             */
	int backend;		/* enum lwk_backend                         */
	int hugepage;		/* enum lwk_hugepage                        */
	uint64_t deleg_mem;	/* delegation cgroup memory limit, bytes    */
	uint64_t deleg_cpu;	/* delegation CPU quota, 1/100 % of a core  */
};

/* --sync-monitor: one aligned, cheap, bounded sampler per node. */
struct lwk_syncmon_opts {
	uint64_t interval;	/* us between ticks                         */
	uint64_t offset;	/* us after each multiple of interval       */
	char dir[1024];		/* output directory, "" = submit directory  */
	int source;		/* enum lwk_source                          */
	uint64_t idle;		/* skip threshold, 1/100 % CPU share        */
	uint64_t fullscan;	/* ticks between full process scans         */
	uint64_t flush;		/* ticks between flushes                    */
	uint64_t buffer;	/* sample buffer bytes                      */
};

/* --contention-aware: CaSAS die split on co-scheduled nodes. */
struct lwk_casas_opts {
	uint64_t probe;		/* us per probe window                      */
	uint64_t min_dies;
	uint64_t max_dies;	/* 0 = as many as the node has              */
	char event[64];		/* libpfm4 event name or "instructions"     */
	int objective;		/* enum lwk_objective                       */
};

struct lwk_option_grammar {
	const char *name;		/* the option, without "--"        */
	const char *arginfo;		/* shown in --help                  */
	const char *usage;		/* one line for --help              */
	const struct lwk_kv_key *keys;
	size_t size;			/* of the opts struct               */
	void (*defaults)(void *opts);
	/* Checks across keys; 0 or -1 with a message. */
	int (*check)(const void *opts, char *err, size_t errlen);
};

extern const struct lwk_option_grammar lwk_grammar_lwk;
extern const struct lwk_option_grammar lwk_grammar_syncmon;
extern const struct lwk_option_grammar lwk_grammar_casas;

/* Defaults, then arg ("k=v,...", NULL/""/"(null)" for none), then checks. */
int lwk_option_parse(const struct lwk_option_grammar *g, const char *arg,
		     void *opts, char *err, size_t errlen);

/* Canonical "k=v,..." of every key; parses back to the same opts. */
size_t lwk_option_format(const struct lwk_option_grammar *g, const void *opts,
			 char *buf, size_t len);

/*
 * Rules across options: --lwk takes whole nodes while
 * --contention-aware shares nodes by dies, so one job cannot ask both.
 * 0, or -1 with a message.
 */
int lwk_options_combination_check(bool lwk, bool syncmon, bool casas,
				  char *err, size_t errlen);

#endif
