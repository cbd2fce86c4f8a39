/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fixture of the --lwk partition's tests (testsuite/unit/lwk/
 * check_<module>.c, run by check_lwk_root): a node of the guest cluster
 * in a temporary tree (check_tree.c), the roots pointing into it, and
 * job 42's setup there.
 *
 * The tests call these by short names (err, roots, setup(), put() ...);
 * the macros give them lwk_fx_ link names, so that no other suite's
 * file in the same binary meets them.  Include this last.
 */
#ifndef LWK_FIXTURE_H
#define LWK_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lwk/part.h"
#include "node/statedir.h"

#define err lwk_fx_err
#define roots lwk_fx_roots
#define node_tree lwk_fx_node_tree
#define chmod_tree lwk_fx_chmod_tree
#define tree_path lwk_fx_tree_path
#define hugepages lwk_fx_hugepages
#define all_alive lwk_fx_all_alive
#define only_42_alive lwk_fx_only_42_alive
#define setup lwk_fx_setup
#define put lwk_fx_put

/* The last error of a call under test. */
extern char err[1024];
/* The node's roots in the tree node_tree made (node "n1"). */
extern struct lwk_node_roots roots;

/* A node of the guest cluster: 8 CPUs, NUMA nodes 0 (0-3) and 1 (4-7),
 * three IRQs, 10 hugepages on each node, a cgroup v2 tree with Slurm's
 * step cgroup of job 42. */
void node_tree(void);
/* Job 42's SLUID, 26.05's name of its cgroup in node_tree. */
#define LWK_FX_SLUID "sEKNKTV3WPV500"
void chmod_tree(const char *rel, mode_t mode);
/* The absolute path of rel in the tree (4 rotating buffers). */
const char *tree_path(const char *rel);
/* The 2048kB hugepages of NUMA node `node` in the tree. */
long hugepages(int node);
/* alive() of the setup and the sweep: every job, or job 42 alone. */
bool all_alive(uint32_t job);
bool only_42_alive(uint32_t job);
/* lwk_part_setup of job 42 on guest8's CPUs 0-7 with --lwk=arg. */
int setup(const char *arg, struct lwk_part *p);
/* tree_put with the parent directories made. */
void put(const char *rel, const char *text);

#endif
