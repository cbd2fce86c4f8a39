/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/lwk-quiet's counting, as pure functions over text: a line of a
 * tracefs trace file parsed into a record, a thread of a /proc snapshot
 * parsed into a task, and each context switch onto an App CPU sorted by
 * what it switched to.  Nothing here reads the system; the program
 * (bench/lwk-quiet-count.c) does, and testsuite/unit/bench/ feeds these
 * recorded text.
 *
 * Why count rather than time: under emulation (the TCG guests) and on a
 * 2-CPU VM, a loop's timings mostly measure the host.  Which tasks the
 * kernel ran on an App CPU, and which interrupts it took there, does not
 * depend on how fast the CPU is.
 */
#ifndef LWK_QUIET_H
#define LWK_QUIET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpulist.h"

/* The trace's comm is at most 15 bytes (TASK_COMM_LEN); /proc's may be
 * longer on newer kernels (a kworker's workqueue name). */
#define QUIET_COMM 64
/* task_struct->flags: the kernel's own threads (include/linux/sched.h). */
#define QUIET_PF_KTHREAD 0x00200000UL

/* What a trace line recorded, of the events bench/lwk-quiet enables. */
enum quiet_event {
	QUIET_EV_SWITCH,  /* sched/sched_switch */
	QUIET_EV_IRQ,     /* irq/irq_handler_entry: a device's hard IRQ */
	QUIET_EV_SOFTIRQ, /* irq/softirq_entry */
	QUIET_EV_TIMER,   /* irq_vectors/local_timer_entry (x86): the tick */
	QUIET_EV_IPI,     /* irq_vectors/reschedule_entry, call_function*_entry */
};

struct quiet_rec {
	enum quiet_event ev;
	int cpu;
	double ts;
	/* sched_switch */
	char prev_comm[QUIET_COMM], next_comm[QUIET_COMM];
	int prev_pid, next_pid;
	/* irq: the handler's name ("virtio0-input.0"); softirq: its
	 * action ("TIMER"); timer and IPIs: the event's name */
	char name[QUIET_COMM];
};

/*
 * One line of a trace file (/sys/kernel/tracing/trace or
 * per_cpu/cpuN/trace):
 *   "  <comm>-<pid> [<cpu>] <flags> <ts>: <event>: <fields>"
 * with an optional "(<tgid>)" before the CPU (options/record-tgid).
 * Returns 1 with *r filled for an event above, 0 for a line to pass
 * over (a "#" header, an empty line, another event), -1 for a line that
 * looks like an event but cannot be read (counted, never guessed at).
 */
int quiet_parse_line(const char *line, struct quiet_rec *r);

/* What a thread was, from /proc, while the trace ran. */
struct quiet_task {
	int tid, tgid, ppid;    /* ppid: of the process (tgid) */
	unsigned long flags;    /* /proc/<pid>/stat field 9 */
	int ncpus;              /* CPUs in its Cpus_allowed_list (0: unread) */
	uint32_t stepd_job;     /* a root slurmstepd of this job (its title), else 0 */
	bool job;               /* of the job being measured (quiet_mark_job) */
	char comm[QUIET_COMM];
	size_t seq;             /* quiet_table_add's order */
};

/* The fields bench/lwk-quiet-count reads from /proc/<pid>/task/<tid>/stat:
 * comm (between the first "(" and the last ")": a comm may hold either),
 * the parent (field 4) and the flags (field 9).  0, or -1. */
int quiet_stat_parse(const char *stat, char *comm, size_t commlen, int *ppid,
		     unsigned long *flags);
/* The job of a slurmstepd from its title ("slurmstepd: [42.0]",
 * "slurmstepd: [42.batch]", "[42.extern]"), or 0 when cmdline is not one. */
uint32_t quiet_stepd_job(const char *cmdline);

/* A snapshot line: "<tid> <tgid> <ppid> <flags hex> <ncpus> <stepd job> <comm>"
 * (comm last: it may hold blanks). */
int quiet_task_format(const struct quiet_task *t, char *buf, size_t len);
int quiet_task_parse(const char *line, struct quiet_task *t);

/* Snapshots taken during the trace, one entry per thread id (the latest
 * snapshot's when a thread was seen more than once). */
struct quiet_table {
	struct quiet_task *tasks; /* sorted by tid once quiet_table_seal ran */
	size_t n, cap;
};
int quiet_table_add(struct quiet_table *tb, const struct quiet_task *t);
void quiet_table_seal(struct quiet_table *tb);
const struct quiet_task *quiet_table_find(const struct quiet_table *tb, int tid);
void quiet_table_free(struct quiet_table *tb);
/*
 * Mark the job's threads: those whose process, or an ancestor of it, is
 * a root slurmstepd of job (its steps' slurmstepds and everything they
 * started: the batch script, the tasks, the extern step's sleep), or is
 * root_pid (bench/lwk-quiet --no-slurm: the spinners' parent).  job or
 * root_pid may be 0.
 */
void quiet_mark_job(struct quiet_table *tb, uint32_t job, int root_pid);

/* What ran on an App CPU when a switch put it there. */
enum quiet_kind {
	QUIET_JOB,     /* the job's own (its tasks, its slurmstepds) */
	QUIET_IDLE,    /* nothing: pid 0 */
	QUIET_USER,    /* a process not of the job */
	QUIET_UNBOUND, /* a kernel thread allowed on several CPUs */
	QUIET_PERCPU,  /* a kernel thread bound to one CPU */
	QUIET_NKINDS
};
extern const char *const quiet_kind_name[QUIET_NKINDS];

/* A kernel thread: PF_KTHREAD, or kthreadd (pid 2) and its children. */
bool quiet_is_kthread(const struct quiet_task *t);
/*
 * The kind of the task (pid, comm) a switch put on a CPU.  t is what a
 * snapshot said of that thread, or NULL when none saw it (it came and
 * went between two snapshots): then the kind is guessed from the name
 * (quiet_kind_by_name) and *by_name is set.
 */
enum quiet_kind quiet_classify(int pid, const char *comm, const struct quiet_task *t,
			       bool *by_name);
/*
 * The kernel's thread names, for threads no snapshot saw: per-CPU ones
 * end in "/<cpu>" or are "kworker/<cpu>:<n>" (migration/3, ksoftirqd/3,
 * cpuhp/3, rcuc/3, watchdog/3, kworker/3:1H); unbound ones are
 * "kworker/u<n>:<m>", "kworker/R-<wq>" (rescuers) and a few known names
 * (rcu_preempt, rcuog/N and rcuop/N are not bound to their CPU: they are
 * NOCB offload threads that run on the housekeeping CPUs).  Anything
 * else is taken for a user process: short-lived kernel threads are
 * kworkers, which the patterns catch.
 */
enum quiet_kind quiet_kind_by_name(int pid, const char *comm);

/* The columns bench/lwk-quiet prints: the kinds, then interrupts. */
enum quiet_col {
	QUIET_C_IRQ = QUIET_NKINDS,
	QUIET_C_SOFTIRQ,
	QUIET_C_TIMER,
	QUIET_C_IPI,
	QUIET_NCOLS
};
extern const char *const quiet_col_name[QUIET_NCOLS];

#define QUIET_NAMES 256
/* The App CPUs' counts over one trace window. */
struct quiet_tally {
	const struct lwk_cpuset *app;
	const struct quiet_table *tasks;
	unsigned long n[QUIET_NCOLS];
	unsigned long by_name;  /* switches classified by name alone */
	unsigned long unreadable; /* lines quiet_parse_line refused */
	/* time the App CPUs ran a task not the job's (nor idle), from one
	 * switch to the next on the same CPU: a lower bound (what ran
	 * before a CPU's first switch or after its last is not seen) */
	double foreign_s;
	/* per column, the names seen most (comm, IRQ handler, softirq) */
	struct quiet_name {
		int col;
		char name[QUIET_COMM];
		unsigned long n;
	} names[QUIET_NAMES];
	size_t nnames;
	unsigned long names_dropped; /* counted, but past QUIET_NAMES distinct names */
	/* per App CPU: when the last switch was, and what it put there */
	struct quiet_cpu {
		double ts;
		int kind; /* -1 before the first switch */
	} *cpu;
	size_t ncpu;
};
/* A tally for the App CPUs app over snapshots tasks; -1 without memory. */
int quiet_tally_init(struct quiet_tally *q, const struct lwk_cpuset *app,
		     const struct quiet_table *tasks);
/* Count one record (records of other CPUs are passed over). */
void quiet_tally_add(struct quiet_tally *q, const struct quiet_rec *r);
/* Count one line of a trace file. */
void quiet_tally_line(struct quiet_tally *q, const char *line);
void quiet_tally_free(struct quiet_tally *q);

/* The kernel's hex mask of a CPU set, 32 bits a group, groups joined by
 * "," (tracing_cpumask, irq smp_affinity).  Like snprintf's return. */
size_t quiet_cpumask_format(const struct lwk_cpuset *s, char *buf, size_t len);

#endif
