/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cgroup writers for cgroup v2 and v1: the knobs --lwk and
 * --contention-aware set on a job's cgroups (cpus, mems, an isolated
 * partition, a CPU quota, memory and hugetlb limits) and the memory a
 * cgroup holds per NUMA node.
 *
 * A cgroup is named by the cgroup root (/sys/fs/cgroup, or a test tree)
 * and a path below each hierarchy's root, as /proc/<pid>/cgroup gives it.
 * On v1 the same path is used in each controller's hierarchy
 * (<root>/cpuset/<path>, <root>/memory/<path>, ...), which is how Slurm
 * lays out its job cgroups there.
 *
 * Every path is built from the root, a path Slurm made, and fixed knob
 * names: nothing a user typed.  Files are opened O_NOFOLLOW, never
 * created: a missing file is a missing controller, reported by name.
 *
 * Also the kill of every process in a cgroup tree (node/cgroup_kill.c),
 * of a job's users' processes (node/cgroup_killusers.c), the take-back
 * of a v1 job's tree (node/cgroup_takeback.c), both over the walk of
 * node/cgroup_walk.c; the rest is node/cgroup.c.
 */
#ifndef LWK_CGROUP_H
#define LWK_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpulist.h"

enum lwk_cgroup_version { LWK_CGROUP_NONE = 0, LWK_CGROUP_V1 = 1, LWK_CGROUP_V2 = 2 };

struct lwk_cgroup {
	enum lwk_cgroup_version version;
	char root[256]; /* /sys/fs/cgroup */
	char path[768]; /* /system.slice/node1_slurmstepd.scope/job_7/lwk_app */
};

#define LWK_MAX_NUMA 64

/* The directory of cg in one hierarchy (v1: controller's; v2: the one
 * tree, controller ignored). */
void lwk_cgroup_dir(const struct lwk_cgroup *cg, const char *controller, char *out, size_t len);

/* v2 when <root>/cgroup.controllers exists, v1 when <root>/cpuset does. */
enum lwk_cgroup_version lwk_cgroup_detect(const char *root);
const char *lwk_cgroup_version_name(enum lwk_cgroup_version v);

/* Fill cg; path must start with '/' and hold no "..", no "//". */
int lwk_cgroup_init(struct lwk_cgroup *cg, const char *root, const char *path, char *err,
		    size_t errlen);

/* Create the cgroup (in each v1 hierarchy it uses: cpuset, cpu, memory,
 * and hugetlb where mounted).  On v2 also enables, in the parent's
 * cgroup.subtree_control, the controllers a child needs.  An existing
 * cgroup is fine: setup is idempotent. */
int lwk_cgroup_create(const struct lwk_cgroup *cg, char *err, size_t errlen);
/* v2: enable in the parent's cgroup.subtree_control what the knobs need
 * (for a cgroup someone else made, e.g. Slurm's task leaf); v1: nothing. */
int lwk_cgroup_enable(const struct lwk_cgroup *cg, char *err, size_t errlen);
/* Does the cgroup exist in this controller's hierarchy (v1), or at all
 * (v2)?  Slurm makes v1 step cgroups only where it constrains. */
bool lwk_cgroup_has(const struct lwk_cgroup *cg, const char *controller);
/* v2: without the cpuset controller in dir's cgroup.controllers (dir a
 * cgroup directory), no cgroup below dir can have CPUs of its own: the
 * tree was not delegated that controller.  Says so in why and returns 1;
 * 0 when it is there or dir is no v2 cgroup (nothing to judge). */
int lwk_cgroup_lacks_cpuset(const char *dir, char *why, size_t len);
/* Remove the cgroup (empty of processes) and its v1 twins. */
int lwk_cgroup_remove(const struct lwk_cgroup *cg, char *err, size_t errlen);

/* The knobs.  Each write is read back where the kernel may refuse it
 * silently (cpus, mems, partition). */
int lwk_cgroup_set_cpus(const struct lwk_cgroup *cg, const struct lwk_cpuset *cpus, char *err,
			size_t errlen);
int lwk_cgroup_set_mems(const struct lwk_cgroup *cg, const struct lwk_cpuset *mems, char *err,
			size_t errlen);
/* v2: cpuset.cpus.partition=isolated (the kernel's load balancer and
 * unbound work stay off these CPUs); v1: cpuset.cpu_exclusive=1 plus
 * sched_load_balance=0.  Fails, with the kernel's reason, where the
 * kernel leaves the partition invalid.  The plugin's isolated partitions
 * are lwk/isolate.c's (remote partitions under Slurm's cgroups); this
 * one, and lwk_cgroup_set_hugetlb_max below, are what check_kpath asks
 * of a node's kernel, with the writers the plugin's own use. */
int lwk_cgroup_set_isolated(const struct lwk_cgroup *cg, char *err, size_t errlen);
/* quota_us per period_us of CPU time; quota_us 0 means no limit. */
int lwk_cgroup_set_cpu_quota(const struct lwk_cgroup *cg, uint64_t quota_us, uint64_t period_us,
			     char *err, size_t errlen);
/* bytes 0 means no limit. */
int lwk_cgroup_set_memory_max(const struct lwk_cgroup *cg, uint64_t bytes, char *err,
			      size_t errlen);
/* hugetlb.<size>.max (v1 limit_in_bytes): check_kpath's, see above. */
int lwk_cgroup_set_hugetlb_max(const struct lwk_cgroup *cg, unsigned long page_kb, uint64_t bytes,
			       char *err, size_t errlen);
/* cpuset.cpus and cpuset.mems of the cgroup. */
int lwk_cgroup_get_cpuset(const struct lwk_cgroup *cg, struct lwk_cpuset *cpus,
			  struct lwk_cpuset *mems, char *err, size_t errlen);
/* node/cgtree.c: set cpuset.cpus (or cpuset.mems) on cg and on every
 * cgroup below it that has the cpuset files, at any depth, hidden names
 * too (more than 4096 cgroups: refused, nothing written), in an order v1
 * accepts (a child always within its parent): first the union of old
 * and new top down, then the new set bottom up; nothing where it is set
 * already; a write that fails half way puts back what each level had.
 * --contention-aware moves a job's steps and tasks to its dies this way,
 * --lwk a v1 step's.  A new cpuset.mems on v2 migrates the tasks' memory
 * and waits for every CPU to drain its page lists: it can take long on a
 * busy node.  0 or -1 with a message. */
int lwk_cgroup_set_cpus_tree(const struct lwk_cgroup *cg, const struct lwk_cpuset *cpus,
			     char *err, size_t errlen);
int lwk_cgroup_set_mems_tree(const struct lwk_cgroup *cg, const struct lwk_cpuset *mems,
			     char *err, size_t errlen);
/*
 * node/cgroup_kill.c: SIGKILL every process in the cgroup at path and
 * in the cgroups below it, and never one outside: hier is the hierarchy's root (the cgroup
 * root on v2, <root>/<controller> on v1), controller NULL on v2, proc
 * the /proc to read.  Where the kernel has cgroup.kill (v2, 5.14+) it
 * kills the subtree itself.  Otherwise each pid of cgroup.procs is
 * pinned with a pidfd first (from then on a reused pid is another
 * pidfd's), then <proc>/<pid>/cgroup must still place it in the tree (a
 * pid reused before the pidfd names another cgroup), and only then is
 * it signalled, through the pidfd.  Without pidfds (kernels before 5.3)
 * the same check precedes a kill(): the window left is the check's.
 * Returns how many processes were signalled: 0 when none is left.
 */
int lwk_cgroup_kill_tree(const char *hier, const char *controller, const char *path,
			 const char *proc);

/* Does the text of a /proc/<pid>/cgroup file (cut up in place) place the
 * process in the cgroup path or below it: on v2 (controller NULL) its
 * "0::" line, on v1 the line naming the controller? */
bool lwk_cgroup_text_places(char *text, const char *controller, const char *path);

/*
 * Stopping a job that keeps CPUs it was not given (node/cgroup_takeback.c:
 * lwk_cgroup_foreign, lwk_cgroup_take_back; node/cgroup_killusers.c:
 * lwk_cgroup_kill_users).  Each takes a deadline (CLOCK_MONOTONIC
 * seconds, see lwk_cgroup_clock): the caller holds the node lock.
 *
 * lwk_cgroup_foreign: is a cgroup below cg (its cpuset tree, at any
 * depth, up to 65536) one Slurm does not make: a name or a place other
 * than Slurm's (step_N, step_N+M of a heterogeneous job, step_batch,
 * step_extern, step_interactive; then slurm, user or task_N; then task_N
 * below user; nothing deeper)?  On v1, where Slurm gives the job's user
 * the step's directories: one its user made (its files theirs, a
 * take-back's mark, or a name Slurm does not use there: steps, then
 * tasks from 24.11.3 on, nothing deeper).  It looks half a second at
 * least; cut at the deadline, v2 says what was seen, v1 "cannot tell"
 * (true).
 */
bool lwk_cgroup_foreign(const struct lwk_cgroup *cg, double deadline);

/*
 * lwk_cgroup_take_back (v1, where Slurm 22.05 gives the job's user the
 * step's directories): every cgroup of cg's cpuset tree and every file
 * in it made root's and writable by root alone, so that the user can no
 * longer make cgroups there, write its cpusets or move a process in;
 * then every cgroup the user made there (as lwk_cgroup_foreign tells
 * it, before its files are root's; marked root's 0700 for the next
 * time) is removed, children first, its processes
 * killed first (pinned, listed again, signalled through the pidfd, but
 * slurmstepd), which makes the files the user opened before fail
 * (cgroupfs checks rights when a file is opened).  Moving a process out,
 * into a cgroup of theirs elsewhere, stays possible: it then runs on
 * that cgroup's CPUs.  Returns changed + removed.
 */
struct lwk_take_back {
	int changed; /* directories and files made root's */
	int removed; /* cgroups of the user's removed */
	int left; /* cgroups of the user's that could not be removed */
	int killed; /* signals sent to the processes in them (again to one slow to exit) */
	bool whole; /* every cgroup was walked */
};
int lwk_cgroup_take_back(const struct lwk_cgroup *cg, const char *proc, double deadline,
			 struct lwk_take_back *tb);

/*
 * lwk_cgroup_kill_users: SIGKILL every process of the job but
 * slurmstepd (root's, its executable slurmstepd*: it ends the job once
 * its tasks are gone).  On v1 the lists of the job's tree come first
 * (after the take-back they say every process in it), for at most
 * 0.4 s of a round.  Then every process of <proc>, from the pid after
 * kl->cursor on, is pinned with a pidfd, then judged by its threads'
 * cgroup lines (one thread in the job's tree is enough: on v1 threads
 * may sit apart; the user can rename or move the cgroups below the
 * step, never the job's path).  One whose path the kernel
 * cannot print (deeper than 4096 bytes) is looked for in the lists of
 * the job's cgroups, walked relative to each parent.  Each listed pid is
 * pinned, then listed again, then signalled through the pidfd.  Without
 * pidfds (before 5.3) nothing is killed.  A round is cut at 1 s or at
 * kl->deadline; kl->cursor then says where the next goes on.
 * kl->whole is false when some process or cgroup could not be judged.
 * Returns how many processes of the job it found (killed or dying),
 * adding those it signalled to kl->signalled: call again until it finds
 * none and kl->whole, as a process may fork meanwhile.
 */
struct lwk_kill {
	double deadline; /* in */
	long cursor; /* in and out: 0 at first */
	int signalled; /* added to */
	bool whole; /* out */
};
int lwk_cgroup_kill_users(const struct lwk_cgroup *cg, const char *proc, struct lwk_kill *kl);

/* CLOCK_MONOTONIC, in seconds: the deadlines above. */
double lwk_cgroup_clock(void);

/* Is name prefix followed by a decimal number, as Slurm names its
 * cgroups (job_7, uid_1000, step_0, task_3; prefix "": a number)? */
bool lwk_cgroup_numbered(const char *name, const char *prefix);

/* One knob file of a cgroup directory (an absolute directory, a fixed
 * file name): written whole, opened O_NOFOLLOW, never created; read
 * with its trailing newline and blanks cut.  0 or -1 with err. */
int lwk_cgroup_write_knob(const char *dir, const char *file, const char *value, char *err,
			  size_t errlen);
int lwk_cgroup_read_knob(const char *dir, const char *file, char *buf, size_t len, char *err,
			 size_t errlen);

/* Move a process (all its threads) into the cgroup. */
int lwk_cgroup_attach(const struct lwk_cgroup *cg, pid_t pid, char *err, size_t errlen);

/* Bytes of anonymous plus file memory the cgroup holds on each NUMA
 * node, from memory.numa_stat (v2: "anon N0=.. N1=..", "file ..."; v1:
 * "total=.. N0=..", pages).  node_bytes has LWK_MAX_NUMA entries. */
int lwk_cgroup_numa_bytes(const struct lwk_cgroup *cg, uint64_t *node_bytes, char *err,
			  size_t errlen);
/* Parse memory.numa_stat text; unit is 1 for v2 (bytes), the page size
 * for v1 (pages).  Sums the lines named in keys (NULL-terminated). */
int lwk_parse_numa_stat(const char *text, const char *const *keys, uint64_t unit,
			uint64_t *node_bytes);

#endif
