/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/lwk-quiet's parsing and classification: see lwk_quiet.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lwk_quiet.h"

const char *const quiet_kind_name[QUIET_NKINDS] = {"job", "idle", "user", "unbound", "percpu"};
const char *const quiet_col_name[QUIET_NCOLS] = {"job",	    "idle",    "user",	"unbound", "percpu",
						 "irq",	    "softirq", "timer", "ipi"};

/* Copy the n bytes at s into a NUL-terminated buffer (cut to fit). */
static void copy_span(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* The events counted, as the trace prints them (": <name>: "). */
static const struct {
	const char *tag;
	enum quiet_event ev;
} events[] = {
	{": sched_switch: ", QUIET_EV_SWITCH},
	{": irq_handler_entry: ", QUIET_EV_IRQ},
	{": softirq_entry: ", QUIET_EV_SOFTIRQ},
	{": local_timer_entry: ", QUIET_EV_TIMER},
	{": reschedule_entry: ", QUIET_EV_IPI},
	{": call_function_entry: ", QUIET_EV_IPI},
	{": call_function_single_entry: ", QUIET_EV_IPI},
};

/* The header before the event: "<comm>-<pid> [(<tgid>)] [<cpu>] <flags> <ts>".
 * The tag is 16 bytes or more and a comm at most 15, so the first tag
 * found is the event's, never a comm's; the CPU is the last "[...]"
 * before the timestamp, as a comm may hold brackets. */
static int parse_header(const char *line, const char *tag, struct quiet_rec *r)
{
	const char *ts = tag, *br;
	char *end;
	long cpu;

	while (ts > line && ts[-1] != ' ')
		ts--;
	r->ts = strtod(ts, &end);
	if (end == ts || end != tag)
		return -1;
	for (br = ts; br > line && *br != '['; br--)
		;
	if (*br != '[' || !isdigit((unsigned char)br[1]))
		return -1;
	errno = 0;
	cpu = strtol(br + 1, &end, 10);
	if (errno || *end != ']' || cpu < 0 || cpu >= LWK_MAX_CPUS)
		return -1;
	r->cpu = (int)cpu;
	return 0;
}

/* An int right after key in s ("prev_pid=42"), else -1. */
static int int_after(const char *s, const char *key, int *out)
{
	const char *p = strstr(s, key);
	char *end;
	long v;

	if (!p)
		return -1;
	p += strlen(key);
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || v < 0 || v > INT32_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

/* The last occurrence of needle in [s, end), or NULL. */
static const char *last_in(const char *s, const char *end, const char *needle)
{
	const char *last = NULL;

	for (const char *p = strstr(s, needle); p && p < end; p = strstr(p + 1, needle))
		last = p;
	return last;
}

/*
 * "prev_comm=<c> prev_pid=<n> prev_prio=<n> prev_state=<s> ==> next_comm=<c> next_pid=<n> next_prio=<n>".
 * A comm may hold blanks: the previous one ends at the first
 * " prev_pid=", the next one at the last " next_pid=".  Only a process
 * that names itself like these fields can mislead it (a benchmark need
 * not defend against that; it never reads out of bounds).
 */
static int parse_switch(const char *f, struct quiet_rec *r)
{
	const char *pc = strstr(f, "prev_comm="), *pp, *nc, *np;

	if (!pc)
		return -1;
	pc += strlen("prev_comm=");
	pp = strstr(pc, " prev_pid=");
	if (!pp || int_after(pp, " prev_pid=", &r->prev_pid))
		return -1;
	copy_span(r->prev_comm, sizeof(r->prev_comm), pc, (size_t)(pp - pc));
	nc = strstr(pp, " ==> next_comm=");
	if (!nc)
		return -1;
	nc += strlen(" ==> next_comm=");
	np = last_in(nc, nc + strlen(nc), " next_pid=");
	if (!np || int_after(np, " next_pid=", &r->next_pid))
		return -1;
	copy_span(r->next_comm, sizeof(r->next_comm), nc, (size_t)(np - nc));
	return 0;
}

/* The name of an IRQ or softirq: "irq=<n> name=<name>", "vec=<n> [action=<NAME>]". */
static int parse_name(const char *f, enum quiet_event ev, const char *tag, struct quiet_rec *r)
{
	const char *p, *end;

	if (ev == QUIET_EV_TIMER || ev == QUIET_EV_IPI) {
		/* ": reschedule_entry: " -> "reschedule" */
		p = tag + 2;
		end = strstr(p, "_entry: ");
	} else if (ev == QUIET_EV_IRQ) {
		p = strstr(f, " name=");
		if (!p)
			return -1;
		p += strlen(" name=");
		end = p + strcspn(p, "\r\n");
	} else {
		p = strstr(f, "[action=");
		if (!p)
			return -1;
		p += strlen("[action=");
		end = strchr(p, ']');
	}
	if (!end)
		return -1;
	copy_span(r->name, sizeof(r->name), p, (size_t)(end - p));
	return 0;
}

int quiet_parse_line(const char *line, struct quiet_rec *r)
{
	const char *p = line + strspn(line, " \t"), *tag = NULL;
	size_t i;

	if (*p == '\0' || *p == '\n' || *p == '#')
		return 0;
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		tag = strstr(line, events[i].tag);
		if (tag)
			break;
	}
	if (!tag)
		return 0;
	memset(r, 0, sizeof(*r));
	r->ev = events[i].ev;
	if (parse_header(line, tag, r))
		return -1;
	p = tag + strlen(events[i].tag);
	if (r->ev == QUIET_EV_SWITCH)
		return parse_switch(p, r) ? -1 : 1;
	return parse_name(p, r->ev, tag, r) ? -1 : 1;
}

int quiet_stat_parse(const char *stat, char *comm, size_t commlen, int *ppid,
		     unsigned long *flags)
{
	const char *open = strchr(stat, '('), *close = strrchr(stat, ')');
	char state;

	if (!open || !close || close < open)
		return -1;
	copy_span(comm, commlen, open + 1, (size_t)(close - open - 1));
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (sscanf(close + 1, " %c %d %*d %*d %*d %*d %lu", &state, ppid, flags) != 3)
		return -1;
	return 0;
}

uint32_t quiet_stepd_job(const char *cmdline)
{
	static const char title[] = "slurmstepd: [";
	char *end;
	unsigned long job;

	if (strncmp(cmdline, title, sizeof(title) - 1) ||
	    !isdigit((unsigned char)cmdline[sizeof(title) - 1]))
		return 0;
	errno = 0;
	job = strtoul(cmdline + sizeof(title) - 1, &end, 10);
	if (errno || *end != '.' || job == 0 || job > UINT32_MAX)
		return 0;
	return (uint32_t)job;
}

int quiet_task_format(const struct quiet_task *t, char *buf, size_t len)
{
	return snprintf(buf, len, "%d %d %d %lx %d %" PRIu32 " %s\n", t->tid, t->tgid, t->ppid,
			t->flags, t->ncpus, t->stepd_job, t->comm);
}

int quiet_task_parse(const char *line, struct quiet_task *t)
{
	int at = 0;

	memset(t, 0, sizeof(*t));
	if (sscanf(line, "%d %d %d %lx %d %" SCNu32 " %n", &t->tid, &t->tgid, &t->ppid, &t->flags,
		   &t->ncpus, &t->stepd_job, &at) != 6 ||
	    at == 0 || t->tid <= 0 || t->tgid <= 0)
		return -1;
	copy_span(t->comm, sizeof(t->comm), line + at, strcspn(line + at, "\r\n"));
	return 0;
}

int quiet_table_add(struct quiet_table *tb, const struct quiet_task *t)
{
	if (tb->n == tb->cap) {
		size_t cap = tb->cap ? 2 * tb->cap : 256;
		struct quiet_task *n = realloc(tb->tasks, cap * sizeof(*n));

		if (!n)
			return -1;
		tb->tasks = n;
		tb->cap = cap;
	}
	tb->tasks[tb->n] = *t;
	tb->tasks[tb->n].seq = tb->n;
	tb->n++;
	return 0;
}

/* By tid, then in the order added: a later snapshot's entry after an
 * earlier one of the same thread. */
static int by_tid(const void *a, const void *b)
{
	const struct quiet_task *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void quiet_table_seal(struct quiet_table *tb)
{
	size_t out = 0;

	qsort(tb->tasks, tb->n, sizeof(*tb->tasks), by_tid);
	for (size_t i = 0; i < tb->n; i++) {
		if (out && tb->tasks[out - 1].tid == tb->tasks[i].tid)
			out--; /* the latest snapshot's wins */
		tb->tasks[out++] = tb->tasks[i];
	}
	tb->n = out;
}

const struct quiet_task *quiet_table_find(const struct quiet_table *tb, int tid)
{
	if (!tb || !tb->n)
		return NULL;
	for (size_t lo = 0, hi = tb->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (tb->tasks[mid].tid == tid)
			return &tb->tasks[mid];
		if (tb->tasks[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void quiet_table_free(struct quiet_table *tb)
{
	free(tb->tasks);
	memset(tb, 0, sizeof(*tb));
}

/* Is process pid, or one of its ancestors, the job's?  The walk stops at
 * init, at a process no snapshot saw, and after 64 levels (a loop in
 * inconsistent snapshots must not hang it). */
static bool of_job(const struct quiet_table *tb, int pid, uint32_t job, int root_pid)
{
	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		const struct quiet_task *p = quiet_table_find(tb, pid);

		if (root_pid && pid == root_pid)
			return true;
		if (!p)
			return false;
		if (job && p->stepd_job == job)
			return true;
		pid = p->ppid;
	}
	return false;
}

void quiet_mark_job(struct quiet_table *tb, uint32_t job, int root_pid)
{
	for (size_t i = 0; i < tb->n; i++) {
		struct quiet_task *t = &tb->tasks[i];

		t->job = !quiet_is_kthread(t) && of_job(tb, t->tgid, job, root_pid);
	}
}

bool quiet_is_kthread(const struct quiet_task *t)
{
	return (t->flags & QUIET_PF_KTHREAD) || t->tid == 2 || t->ppid == 2;
}

static bool prefixed(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* "<digits>" followed by stop (a ':' for kworkers, '\0' at the end). */
static bool digits_then(const char *s, char stop)
{
	const char *p = s;

	while (isdigit((unsigned char)*p))
		p++;
	return p > s && *p == stop;
}

/* The kworker patterns: the pool's CPU or "u" (unbound) is in the name,
 * whatever the thread's affinity is at the moment.  -1: not a kworker. */
static int kworker_kind(const char *comm)
{
	if (!prefixed(comm, "kworker/"))
		return -1;
	comm += strlen("kworker/");
	if (digits_then(comm, ':'))
		return QUIET_PERCPU;
	return QUIET_UNBOUND; /* u<n>:<m>, R-<wq> (a rescuer) */
}

/* Kernel threads that no per-CPU pattern names, as they are called on
 * the kernels of the guests (6.1, 6.12, 7.x) and this host. */
static const char *const unbound_names[] = {
	"kthreadd", "rcu_",  "rcuo",	 "kswapd",   "kcompactd", "khugepaged", "ksmd",
	"kauditd",  "khungtaskd", "oom_reaper", "kdevtmpfs", "jbd2/", "irq/", "scsi_eh_",
	"hwrng",    "psimon", "pool_workqueue_", "ext4-rsv-conver", "napi/", "kthrotld",
};

enum quiet_kind quiet_kind_by_name(int pid, const char *comm)
{
	const char *slash = strrchr(comm, '/');
	int k;

	if (pid == 0)
		return QUIET_IDLE;
	if (pid == 2)
		return QUIET_UNBOUND;
	k = kworker_kind(comm);
	if (k >= 0)
		return (enum quiet_kind)k;
	for (size_t i = 0; i < sizeof(unbound_names) / sizeof(unbound_names[0]); i++)
		if (prefixed(comm, unbound_names[i]))
			return QUIET_UNBOUND;
	/* migration/3, ksoftirqd/3, cpuhp/3, rcuc/3, watchdog/3, idle_inject/3 */
	if (slash && slash > comm && digits_then(slash + 1, '\0'))
		return QUIET_PERCPU;
	return QUIET_USER;
}

enum quiet_kind quiet_classify(int pid, const char *comm, const struct quiet_task *t,
			       bool *by_name)
{
	enum quiet_kind k;
	int kw;

	*by_name = false;
	if (pid == 0)
		return QUIET_IDLE;
	if (!t) {
		*by_name = true;
		return quiet_kind_by_name(pid, comm);
	}
	if (t->job)
		return QUIET_JOB;
	if (!quiet_is_kthread(t))
		return QUIET_USER;
	/* An unbound kworker may be allowed a single CPU for a while (the
	 * unbound cpumask of a node with one housekeeping CPU): its name,
	 * not its affinity, says which pool it serves. */
	kw = kworker_kind(comm);
	if (kw >= 0)
		return (enum quiet_kind)kw;
	if (t->ncpus == 1)
		return QUIET_PERCPU;
	if (t->ncpus > 1)
		return QUIET_UNBOUND;
	k = quiet_kind_by_name(pid, comm);
	return k == QUIET_USER ? QUIET_UNBOUND : k; /* a kthread all the same */
}

int quiet_tally_init(struct quiet_tally *q, const struct lwk_cpuset *app,
		     const struct quiet_table *tasks)
{
	int last = -1;

	memset(q, 0, sizeof(*q));
	for (int c = lwk_cpuset_first(app); c >= 0; c = lwk_cpuset_next(app, c))
		last = c;
	q->app = app;
	q->tasks = tasks;
	q->ncpu = (size_t)(last + 1);
	q->cpu = calloc(q->ncpu ? q->ncpu : 1, sizeof(*q->cpu));
	if (!q->cpu)
		return -1;
	for (size_t i = 0; i < q->ncpu; i++)
		q->cpu[i].kind = -1;
	return 0;
}

void quiet_tally_free(struct quiet_tally *q)
{
	free(q->cpu);
	q->cpu = NULL;
}

static bool foreign(int kind)
{
	return kind == QUIET_USER || kind == QUIET_UNBOUND || kind == QUIET_PERCPU;
}

/* One more of name in column col; past QUIET_NAMES distinct names the
 * column's count still counts it, the list does not. */
static void count_name(struct quiet_tally *q, int col, const char *name)
{
	size_t i;

	for (i = 0; i < q->nnames; i++)
		if (q->names[i].col == col && !strcmp(q->names[i].name, name)) {
			q->names[i].n++;
			return;
		}
	if (q->nnames == QUIET_NAMES) {
		q->names_dropped++;
		return;
	}
	q->names[i].col = col;
	copy_span(q->names[i].name, sizeof(q->names[i].name), name, strlen(name));
	q->names[i].n = 1;
	q->nnames++;
}

/* A switch on an App CPU: what it put there, and for how long what it
 * took off had run (records of one CPU come in time order: the trace is
 * read one CPU's file at a time). */
static void add_switch(struct quiet_tally *q, const struct quiet_rec *r)
{
	struct quiet_cpu *c = &q->cpu[r->cpu];
	bool by_name;
	enum quiet_kind k = quiet_classify(r->next_pid, r->next_comm,
					   quiet_table_find(q->tasks, r->next_pid), &by_name);

	if (c->kind >= 0 && foreign(c->kind) && r->ts >= c->ts)
		q->foreign_s += r->ts - c->ts;
	c->ts = r->ts;
	c->kind = (int)k;
	q->n[k]++;
	if (!foreign(k))
		return;
	q->by_name += by_name;
	count_name(q, (int)k, r->next_comm);
}

void quiet_tally_add(struct quiet_tally *q, const struct quiet_rec *r)
{
	static const int col[] = {
		[QUIET_EV_IRQ] = QUIET_C_IRQ,
		[QUIET_EV_SOFTIRQ] = QUIET_C_SOFTIRQ,
		[QUIET_EV_TIMER] = QUIET_C_TIMER,
		[QUIET_EV_IPI] = QUIET_C_IPI,
	};

	if (r->cpu < 0 || (size_t)r->cpu >= q->ncpu || !lwk_cpuset_isset(q->app, (unsigned)r->cpu))
		return;
	if (r->ev == QUIET_EV_SWITCH) {
		add_switch(q, r);
		return;
	}
	q->n[col[r->ev]]++;
	count_name(q, col[r->ev], r->name);
}

void quiet_tally_line(struct quiet_tally *q, const char *line)
{
	struct quiet_rec r;
	int rc = quiet_parse_line(line, &r);

	if (rc < 0)
		q->unreadable++;
	else if (rc > 0)
		quiet_tally_add(q, &r);
}

size_t quiet_cpumask_format(const struct lwk_cpuset *s, char *buf, size_t len)
{
	int last = 0, groups;
	size_t o = 0;

	for (int c = lwk_cpuset_first(s); c >= 0; c = lwk_cpuset_next(s, c))
		last = c;
	groups = last / 32 + 1;
	if (len)
		buf[0] = '\0';
	for (int g = groups - 1; g >= 0; g--) {
		uint32_t word = 0;

		for (int b = 0; b < 32; b++)
			if (lwk_cpuset_isset(s, (unsigned)(g * 32 + b)))
				word |= (uint32_t)1 << b;
		o += (size_t)snprintf(o < len ? buf + o : NULL, o < len ? len - o : 0, "%s%08" PRIx32,
				      g == groups - 1 ? "" : ",", word);
	}
	return o;
}
