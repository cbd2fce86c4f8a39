/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The casas tests' guest node over a temporary tree, and their records:
 * shared by testsuite/unit/casas/check_*.c (the helpers of the one file
 * they came from).  Each file that includes it has its own copy, all
 * static (inline: a file need not use every helper).
 */
#ifndef CHECK_CASAS_NODE_TREE_H
#define CHECK_CASAS_NODE_TREE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "casas/casasnode.h"
#include "check_lwk.h"

static char err[1024], sysfs[300], cgroot[300], state[300], logbuf[16384];
static struct lwk_node_roots roots;

#define JOBCG "cg/s.slice/n1.scope/job_%u"

/* The guest node: 8 CPUs in 4 dies (0-1, 2-3 on NUMA node 0; 4-5, 6-7 on
 * node 1), a cgroup v2 tree with Slurm's cgroups of jobs 41, 42, 43. */
static inline void node_tree(void)
{
	char p[300];

	tree_make("casas");
	tree_mkdir("cg");
	tree_put("cg/cgroup.controllers", "cpuset cpu memory\n");
	for (unsigned int j = 41; j <= 43; j++) {
		static const char *const dirs[] = { "", "/step_0", "/step_0/user", "/step_0/user/task_0",
						    NULL };

		for (int d = 0; dirs[d]; d++) {
			snprintf(p, sizeof(p), JOBCG "%s", j, dirs[d]);
			tree_mkdir(p);
			snprintf(p, sizeof(p), JOBCG "%s/cpuset.cpus", j, dirs[d]);
			tree_put(p, "0-7\n");
			snprintf(p, sizeof(p), JOBCG "%s/cpuset.mems", j, dirs[d]);
			tree_put(p, "0-1\n");
		}
	}
	tree_mkdir("state");
	chmod(tree_root, 0755);
	snprintf(sysfs, sizeof(sysfs), "%s/guest8", getenv("FIXTURES"));
	snprintf(cgroot, sizeof(cgroot), "%s/cg", tree_root);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ sysfs, "/proc", cgroot, state, "n1", NULL, 0, 0, NULL, false };
	logbuf[0] = '\0';
}

static inline bool all_alive(uint32_t job)
{
	(void)job;
	return true;
}

static inline struct lwk_casas_record arriving(uint32_t job)
{
	struct lwk_casas_record r;

	memset(&r, 0, sizeof(r));
	r.job = job;
	ck_assert_int_eq(lwk_option_parse(&lwk_grammar_casas, "event=task-clock", &r.opts, err,
					  sizeof(err)),
			 0);
	snprintf(r.status, sizeof(r.status), "probing");
	snprintf(r.cgroup, sizeof(r.cgroup), "/s.slice/n1.scope/job_%u", job);
	r.allowed_cpus = cpus_of("0-7");
	r.allowed_mems = cpus_of("0-1");
	return r;
}

static inline struct lwk_casas_record load(uint32_t job)
{
	struct lwk_casas_record r;

	ck_assert_int_eq(lwk_casas_load(&roots, job, &r), 1);
	return r;
}

static inline unsigned int ndies(uint32_t job)
{
	struct lwk_casas_record r = load(job);

	return lwk_cpuset_count(&r.dies);
}

static inline const char *dies_of(uint32_t job)
{
	struct lwk_casas_record r = load(job);

	return cpus_text(&r.dies);
}

/* Job a joins the node alone and, without counters, gets it whole
 * after its probe. */
static inline void alone_on_the_node(struct lwk_casas_record *a)
{
	node_tree();
	ck_assert_int_eq(lwk_casas_join(&roots, a, all_alive, logbuf, sizeof(logbuf), err,
					sizeof(err)),
			 1);
	ck_assert_int_eq(lwk_casas_unhold(&roots, a->job, all_alive, logbuf, sizeof(logbuf)), 0);
}

/* Every cgroup of the job holds what its record says. */
static inline void assert_cgroup_matches(uint32_t job)
{
	struct lwk_casas_record r = load(job);
	static const char *const dirs[] = { "", "/step_0", "/step_0/user", "/step_0/user/task_0", NULL };
	char p[300];

	for (int d = 0; dirs[d]; d++) {
		for (int m = 0; m < 2; m++) {
			struct lwk_cpuset have;
			const struct lwk_cpuset *want = m ? &r.mems : &r.cpus;

			snprintf(p, sizeof(p), JOBCG "%s/cpuset.%s", job, dirs[d], m ? "mems" : "cpus");
			ck_assert_ptr_nonnull(tree_get(p));
			ck_assert_int_eq(lwk_cpulist_parse(tree_get(p), LWK_MAX_CPUS, &have), 0);
			ck_assert_msg(lwk_cpuset_equal(&have, want), "%s is '%s', record '%s'", p,
				      tree_get(p), cpus_text(want));
		}
	}
}

/* The node's lock file name in the casas directory, taken by the test. */
static inline int take(const char *name)
{
	char p[700];
	int fd;

	snprintf(p, sizeof(p), "%s/n1/casas/%s", state, name);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	return fd;
}

static inline void put_record(const struct lwk_casas_record *r, const char *extra)
{
	char text[8192], p[300];

	lwk_casas_record_format(r, text, sizeof(text));
	strncat(text, extra, sizeof(text) - strlen(text) - 1);
	snprintf(p, sizeof(p), "state/n1/casas/%u", r->job);
	tree_put(p, text);
}

#endif
