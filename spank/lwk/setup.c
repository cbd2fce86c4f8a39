/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition set up: backend linux (IRQs, hugepages) or
 * mckernel, under the job's lock and the node's.  See lwk/part.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lwk/mckernel.h"
#include "lwk/part_int.h"
#include "node/hugepages.h"
#include "node/irqaff.h"
#include "node/irqbalance.h"

/* Append the lines of text, each prefixed with prefix. */
static int append_prefixed(const struct lwk_node_roots *r, uint32_t job, const char *prefix,
			   const char *text, char *err, size_t errlen)
{
	size_t n = 0, plen = strlen(prefix), o = 0;
	char *out;
	int rc;

	for (const char *c = text; *c; c++)
		n += *c == '\n';
	out = malloc(strlen(text) + plen * n + 1);
	if (!out)
		return ERR("lwk: out of memory");
	for (const char *line = text, *nl; *line && (nl = strchr(line, '\n')); line = nl + 1) {
		memcpy(out + o, prefix, plen);
		memcpy(out + o + plen, line, (size_t)(nl - line) + 1);
		o += plen + (size_t)(nl - line) + 1;
	}
	out[o] = '\0';
	rc = o ? lwk_part_append_state(r, job, out, err, errlen) : 0;
	free(out);
	return rc;
}

/*
 * irqbalance, where it runs, told to keep IRQs off the App CPUs too
 * (node/irqbalance.h): else its next rescan moves them back.  Written
 * down first, so that the teardown gives it back its own ("untold" when
 * nothing was sent).  Its failure is said in p->irqbalance (the step's
 * log line), not the job's: the IRQs are off the App CPUs until its
 * next rescan.  -1 only when the state cannot be written.
 */
static int ban_irqbalance(const struct lwk_node_roots *r, uint32_t job, struct lwk_part *p,
			  char *err, size_t errlen)
{
	char why[256], path[4096];
	int rc;

	if (!r->irqbalance_dir || !r->irqbalance_ban ||
	    lwk_irqbalance_socket(r->irqbalance_dir, path, sizeof(path)) <= 0)
		return 0;
	if (lwk_part_append_state(r, job, "irqbalance told\n", err, errlen))
		return -1;
	rc = lwk_irqbalance_ban(r->irqbalance_dir, r->proc, r->sysfs, &p->plan.app_cpus, why, sizeof(why));
	if (rc > 0) {
		snprintf(p->irqbalance, sizeof(p->irqbalance), "; irqbalance told to keep off the App CPUs");
		return 0;
	}
	snprintf(p->irqbalance, sizeof(p->irqbalance), "; irqbalance not told (%.160s)",
		 rc < 0 ? why : "no daemon listens on its socket");
	/* Nothing was sent: nothing to give back (a ban set by hand stays). */
	return lwk_part_append_state(r, job, "irqbalance untold\n", err, errlen);
}

/* backend linux: IRQs off the App CPUs, hugepages for mem=.  Each action
 * is written down before it is done, so that a crash in the middle
 * leaves nothing the teardown does not know of. */
static int setup_linux(const struct lwk_node_roots *r, uint32_t job, struct lwk_part *p, char *err,
		       size_t errlen)
{
	size_t cap = 64 * 1024;
	char *save = malloc(cap), line[128];
	struct lwk_irq_result ir = { 0 };
	int rc;

	if (!save)
		return ERR("lwk: out of memory");
	/* mem= first, before anything is done: hugepages are memory outside
	 * the job's cgroup, so each node must have them free now, and the
	 * node where the OS runs keeps a floor (node/hugepages.h). */
	for (int n = 0; n < LWK_MAX_NUMA && p->plan.page_kb; n++) {
		uint64_t page = (uint64_t)p->plan.page_kb * 1024,
			 bytes = (p->plan.node_mem[n] + page - 1) / page * page;

		if (bytes && lwk_hugepages_fit(r->sysfs, n,
					       lwk_hugepages_node_has(r->sysfs, n, &p->plan.os_cpus),
					       bytes, err, errlen)) {
			free(save);
			return -1;
		}
	}
	/* First the list of what will move, with the old affinities. */
	save[0] = '\0';
	rc = lwk_irq_list_off(r->proc, &p->plan.app_cpus, &p->plan.os_cpus, save, cap, err, errlen);
	if (!rc)
		rc = append_prefixed(r, job, "irq ", save, err, errlen);
	save[0] = '\0';
	if (!rc)
		rc = lwk_irq_move_off(r->proc, &p->plan.app_cpus, &p->plan.os_cpus, save, cap, &ir,
				      err, errlen);
	free(save);
	if (rc)
		return -1;
	p->irq_moved = ir.moved;
	p->irq_refused = ir.refused;
	snprintf(line, sizeof(line), "irqs %u %u\n", ir.moved, ir.refused);
	if (lwk_part_append_state(r, job, line, err, errlen) || ban_irqbalance(r, job, p, err, errlen))
		return -1;

	/* Hugepages for mem=, per App node, compacted first. */
	for (int n = 0; n < LWK_MAX_NUMA && p->plan.page_kb; n++) {
		struct lwk_hugepages h;
		uint64_t page = (uint64_t)p->plan.page_kb * 1024;
		long pages = (long)((p->plan.node_mem[n] + page - 1) / page),
		     before = lwk_hugepages_count(r->sysfs, n, p->plan.page_kb);

		if (!pages)
			continue;
		if (before < 0)
			return ERR("lwk: --lwk: NUMA node %d has no %lukB hugepages here", n,
				   p->plan.page_kb);
		snprintf(line, sizeof(line), "hugeask %d %ld %ld\n", n, before, pages);
		if (lwk_part_append_state(r, job, line, err, errlen) ||
		    lwk_hugepages_reserve(r->sysfs, n, p->plan.page_kb, pages, &h, err, errlen))
			return -1;
		p->huge_wanted[n] = pages;
		p->huge_added[n] = h.added;
		snprintf(line, sizeof(line), "huge %d %ld %ld\n", n, pages, h.added);
		if (lwk_part_append_state(r, job, line, err, errlen))
			return -1;
	}
	return 0;
}

/* backend mckernel: IHK takes the App CPUs and memory away from Linux
 * itself (their IRQs go with them). */
static int setup_mckernel(const struct lwk_node_roots *r, uint32_t job, const struct lwk_topology *t,
			  struct lwk_part *p, char *err, size_t errlen)
{
	char log[2048];

	/* One McKernel per node: one that runs is another job's (or left by
	 * a crash, for the sweep); never take it over, never stop it. */
	if (lwk_mck_running(r->mck_prefix))
		return ERR("lwk: --lwk: McKernel is already running on %s; it is not this job's",
			   r->node);
	if (lwk_part_append_state(r, job, "mck booting\n", err, errlen) ||
	    lwk_mck_boot(r->mck_prefix, t, &p->plan, r->uid, r->gid, log, sizeof(log), err, errlen) ||
	    lwk_part_append_state(r, job, "mck booted\n", err, errlen))
		return -1;
	return 0;
}

static int do_setup(const struct lwk_node_roots *r, uint32_t job, const struct lwk_topology *t,
		    const struct lwk_cpuset *job_cpus, const struct lwk_opts *o, bool whole_dies,
		    struct lwk_part *p, char *err, size_t errlen)
{
	bool mck = o->backend == LWK_BACKEND_MCKERNEL ||
		   (o->backend == LWK_BACKEND_AUTO && lwk_mck_installed(r->mck_prefix));
	char text[16384];

	memset(p, 0, sizeof(*p));
	p->job = job;
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		p->huge_before[n] = -1;
	if (mck && !lwk_mck_installed(r->mck_prefix))
		return ERR("lwk: --lwk: backend=mckernel: IHK/McKernel is not installed on %s "
			   "(no %s/sbin/mcreboot.sh); use backend=linux or backend=auto",
			   r->node, r->mck_prefix);
	snprintf(p->backend, sizeof(p->backend), "%s", mck ? "mckernel" : "linux");
	if (mck)
		snprintf(p->mcexec, sizeof(p->mcexec), "%s/bin/mcexec", r->mck_prefix);
	if (lwk_plan_make(t, job_cpus, o, whole_dies, &p->plan, err, errlen))
		return -1;
	if (lwk_part_format(p, text, sizeof(text)) >= sizeof(text))
		return ERR("lwk: --lwk: the plan does not fit its state file");
	if (lwk_part_append_state(r, job, text, err, errlen) ||
	    (mck ? setup_mckernel(r, job, t, p, err, errlen) : setup_linux(r, job, p, err, errlen)) ||
	    lwk_part_append_state(r, job, "ready\n", err, errlen))
		return -1;
	p->ready = true;
	return 1;
}

/*
 * The partition moves the node's IRQs and takes its memory (McKernel:
 * its CPUs), and the IRQ affinities it saves are what the node gets
 * back: one job per node, whatever Slurm allocated (an oversubscribed
 * partition gives every job all the CPUs).  0 when the node is the
 * job's alone; else -1 with err (log: what the sweep said), and an
 * empty state of the job removed.  Under the node lock.
 */
static int refuse_unless_alone(const struct lwk_node_roots *r, uint32_t job,
			       bool (*alive)(uint32_t), const char *state, const char *log,
			       char *err, size_t errlen)
{
	char other[400];
	int o_rc = lwk_node_other_job(r, job, alive, other, sizeof(other)), rc;

	if (!o_rc)
		return 0;
	if (o_rc == 2)
		rc = ERR("lwk: --lwk: node problem on %s: %s; an administrator should look "
			 "at it (slurm-lwk(8))%s%.900s", r->node, other, log[0] ? ": " : "",
			 log);
	else
		rc = ERR("lwk: --lwk: %s is not this job's alone: %s; --lwk needs a node no "
			 "other job uses (submit with --exclusive, outside a co-scheduling "
			 "partition)", r->node, other);
	if (!state[0])
		lwk_part_remove_state(r, job);
	return rc;
}

/*
 * A setup cut short (slurmstepd killed in it): undo what it did (the job
 * runs: kill nothing), so that it is set up anew; the cgroup lines stay
 * for the job's final teardown.  0, or -1 with err.
 */
static int undo_cut_short(const struct lwk_node_roots *r, uint32_t job, const char *state,
			  struct lwk_part_remains *k, char *log, size_t loglen, char *err,
			  size_t errlen)
{
	if (lwk_part_undo(r, job, state, false, log, loglen, k)) {
		lwk_part_rewrite_state(r, job, k->text);
		return ERR("lwk: --lwk: %s still holds what a setup of job %" PRIu32 " cut short "
			   "left and could not be undone; lwk-sweep(8) tries again", r->node, job);
	}
	lwk_part_rewrite_state(r, job, "");
	for (char *line = k->text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		if (!strncmp(line, "cgroup ", 7) || !strncmp(line, "jobcg ", 6)) {
			char one[900];

			snprintf(one, sizeof(one), "%.*s", (int)(nl - line) + 1, line);
			lwk_part_append_state(r, job, one, err, errlen);
		}
	return 0;
}

/* A setup that failed: nothing half set up, undo what the state records
 * (state: a buffer of STATE_MAX for it). */
static void undo_failed_setup(const struct lwk_node_roots *r, uint32_t job, char *state,
			      struct lwk_part_remains *k, char *log, size_t loglen)
{
	k->text[0] = '\0';
	k->failed = 0;
	if (lwk_part_read_state(r, job, state, STATE_MAX) == 0)
		lwk_part_undo(r, job, state, false, log, loglen, k);
	/* What failed, and cgroups of earlier steps, stay for the epilog or
	 * the sweep. */
	if (k->failed || strstr(k->text, "\ncgroup ") || strstr(k->text, "\njobcg "))
		lwk_part_rewrite_state(r, job, k->text);
	else
		lwk_part_remove_state(r, job);
}

int lwk_part_setup(const struct lwk_node_roots *r, uint32_t job, const struct lwk_topology *t,
		   const struct lwk_cpuset *job_cpus, const struct lwk_opts *o, bool whole_dies,
		   bool (*alive)(uint32_t), lwk_sweep_fn *sweep, struct lwk_part *p, char *err,
		   size_t errlen)
{
	char *state, log[2048] = "";
	struct lwk_part_remains k = { NULL, STATE_MAX, 0 };
	int fd, nfd, rc;

	fd = lwk_part_lock_job(r, job, true, err, errlen);
	if (fd < 0)
		return -1;
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, job, state, STATE_MAX)) {
		free(state);
		close(fd);
		return ERR("lwk: cannot read the state of job %" PRIu32 " (not root's only?)", job);
	}
	if (lwk_part_state_ready(state, p)) {
		free(state);
		close(fd);
		return 0; /* an earlier step did it */
	}
	sweep(r, job, alive, log, sizeof(log));
	nfd = lwk_node_lock(r->state_root);
	k.text = malloc(STATE_MAX);
	if (nfd < 0 || !k.text) {
		free(state);
		free(k.text);
		if (nfd >= 0)
			close(nfd);
		close(fd);
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	}
	k.text[0] = '\0';
	rc = refuse_unless_alone(r, job, alive, state, log, err, errlen);
	if (!rc && state[0])
		rc = undo_cut_short(r, job, state, &k, log, sizeof(log), err, errlen);
	if (!rc) {
		rc = do_setup(r, job, t, job_cpus, o, whole_dies, p, err, errlen);
		if (rc < 0)
			undo_failed_setup(r, job, state, &k, log, sizeof(log));
	}
	free(state);
	free(k.text);
	close(nfd);
	close(fd);
	return rc;
}
