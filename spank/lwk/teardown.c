/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition undone: what a state records (for the teardown and
 * for a setup cut short), the teardown, the sweep.  See lwk/part.h. */
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

/*
 * Slurm's cgroup of the job (the "jobcg" lines): at the teardown the job
 * is over, so whatever still runs there was left by a slurmstepd that
 * died (nothing else kills it), and its cgroups with it.  Only a path
 * ending in this job's level ("/job_<id>", or the SLUID a task of it was
 * in on 26.05: lwk_part_is_job_cgroup) is touched.
 */
static void clear_job_cgroups(const struct lwk_node_roots *r, uint32_t job, const char *state,
			      char *log, size_t loglen, struct lwk_part_remains *k,
			      struct lwk_part_clear *c)
{
	static const char *const v1[] = { "cpuset", "memory", "freezer", "cpu", "cpuacct",
					  "devices", "hugetlb", "pids" };
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);

	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char path[800], hier[400];

		if (len > 6 && len - 6 < sizeof(path) && !strncmp(line, "jobcg ", 6)) {
			memcpy(path, line + 6, len - 6);
			path[len - 6] = '\0';
			if (path[0] == '/' && !strstr(path, "/..") && lwk_part_is_job_cgroup(path, job)) {
				bool left = false;

				/* v1: every hierarchy, each killed in (a process
				 * may sit deeper in one than in another); they
				 * share the teardown's deadline. */
				for (size_t i = 0; i < (v == LWK_CGROUP_V1 ? 8 : 1); i++) {
					int killed;

					snprintf(hier, sizeof(hier), "%s%s%s", r->cgroup_root,
						 v == LWK_CGROUP_V1 ? "/" : "", v == LWK_CGROUP_V1 ? v1[i] : "");
					killed = lwk_part_clear_tree(r, hier,
								     v == LWK_CGROUP_V1 ? v1[i] : NULL,
								     path, c);
					left |= killed < 0;
					if (killed > 0)
						lwk_log_append(log, loglen, "killed %d process(es) a dead slurmstepd left in %s",
						      killed, path);
				}
				if (left) {
					lwk_log_append(log, loglen, "cannot remove %s yet: %s", path, c->why);
					lwk_part_keep(k, true, "jobcg %s\n", path);
				}
			}
		}
		line += len + (nl ? 1 : 0);
	}
}

/* With kill false: the lines of the cgroups and the charge, left for the
 * job's final teardown. */
static void keep_cgroup_lines(const char *state, struct lwk_part_remains *k)
{
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (!strncmp(line, "cgroup ", 7) || !strncmp(line, "jobcg ", 6) ||
		    !strncmp(line, "memcharge ", 10))
			lwk_part_keep(k, false, "%.*s\n", (int)len, line);
		line += len + (nl ? 1 : 0);
	}
}

static void stop_mckernel(const struct lwk_node_roots *r, char *log, size_t loglen,
			  struct lwk_part_remains *k)
{
	char out[2048];

	if (lwk_mck_shutdown(r->mck_prefix, out, sizeof(out))) {
		lwk_log_append(log, loglen, "McKernel did not stop: mcstop+release.sh: %s", out);
		lwk_part_keep(k, true, "mck booted\n");
	} else {
		lwk_log_append(log, loglen, "McKernel stopped, its CPUs and memory released");
	}
}

/* The hugepages the state says were added (or asked for), given back;
 * err is the caller's buffer for the release's error. */
static void give_back_hugepages(const struct lwk_node_roots *r, const struct lwk_part *p,
				char *err, size_t errlen, char *log, size_t loglen,
				struct lwk_part_remains *k)
{
	for (int n = 0; n < LWK_MAX_NUMA; n++) {
		struct lwk_hugepages h = { .node = n, .page_kb = p->plan.page_kb,
					   .added = p->huge_added[n] };

		if (!h.page_kb || (!p->huge_wanted[n] && p->huge_before[n] < 0))
			continue;
		if (p->huge_before[n] >= 0) {
			/* Cut short between asking and recording: what was
			 * added since, up to what was asked. */
			long now = lwk_hugepages_count(r->sysfs, n, h.page_kb);

			h.added = now > p->huge_before[n] ? now - p->huge_before[n] : 0;
			if (h.added > p->huge_wanted[n])
				h.added = p->huge_wanted[n];
		}
		if (!h.added)
			continue;
		if (lwk_hugepages_release(r->sysfs, &h, err, errlen)) {
			lwk_log_append(log, loglen, "%s", err);
			lwk_part_keep(k, true, "huge %d %ld %ld\n", n, h.added, h.added);
		} else {
			lwk_log_append(log, loglen, "gave back %ld hugepages of %lukB on NUMA node %d",
				       h.added, h.page_kb, n);
		}
	}
}

/* mem= charged to the job's memory limit: Slurm's limit back, where the
 * job's cgroup is still there and holds what we wrote. */
static void uncharge_all(const struct lwk_node_roots *r, uint32_t job, const char *state,
			 char *log, size_t loglen)
{
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len > 10 && !strncmp(line, "memcharge ", 10))
			lwk_part_uncharge(r, job, line, len, log, loglen);
		line += len + (nl ? 1 : 0);
	}
}

/* The "irq <n> <old> <new>" lines, as irqaff saved them, restored; err is the
 * caller's buffer (what the restore says goes into the log).  -1 (one
 * more failure in k) when out of memory. */
static int restore_irqs(const struct lwk_node_roots *r, const char *state, char *err,
			size_t errlen, char *log, size_t loglen, struct lwk_part_remains *k)
{
	char *irqs = malloc(strlen(state) + 1);
	size_t o = 0;
	int left;

	if (!irqs) {
		k->failed++;
		return -1;
	}
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);

		if (!strncmp(line, "irq ", 4)) {
			memcpy(irqs + o, line + 4, len - 4);
			o += len - 4;
		}
		line += len;
	}
	irqs[o] = '\0';
	if (o) {
		/* Not tried again: an IRQ gone or refused stays so.  err
		 * may hold an earlier step's words: only the restore's. */
		err[0] = '\0';
		left = lwk_irq_restore(r->proc, irqs, err, errlen);
		lwk_log_append(log, loglen, "restored the affinity of the IRQs moved%s%s%s",
			       left ? " (not all: gone, refused or torn lines" : "",
			       left && err[0] ? "; " : "", left ? (err[0] ? err : ")") : "");
	}
	free(irqs);
	return 0;
}

/*
 * irqbalance given back the App CPUs, when the state says it was told
 * to keep off them (whatever lwk_irqbalance= says now): what it bans
 * by itself again ("settings cpus NULL"), by the one running now (a
 * restarted irqbalance forgot the ban).  Not tried again, and the
 * teardown not failed for it: an irqbalance that does not answer
 * needs a restart, which forgets the ban, and a kept state would
 * refuse the node's next --lwk job.  A failure is said in the log.
 */
static void give_back_irqbalance(const struct lwk_node_roots *r, const char *state, char *log,
				 size_t loglen)
{
	char err[256];
	int rc;

	if (!r->irqbalance_dir ||
	    (strncmp(state, "irqbalance told\n", 16) && !strstr(state, "\nirqbalance told\n")) ||
	    strstr(state, "\nirqbalance untold\n"))
		return;
	rc = lwk_irqbalance_ban(r->irqbalance_dir, r->proc, r->sysfs, NULL, err, sizeof(err));
	if (rc > 0)
		lwk_log_append(log, loglen, "irqbalance given back the App CPUs");
	else if (rc < 0)
		lwk_log_append(log, loglen, "irqbalance not given back the App CPUs: %s", err);
}

/*
 * Undo what the state records, in the reverse order of setup.  kill is
 * false when a setup redoes one cut short: the job is running then, and
 * its processes are not to be touched.
 *
 * What is still to undo goes to k: the state's header, what failed here
 * (to be tried again, once, by the next teardown), and with kill false
 * the cgroup lines left for the job's final teardown.  Returns -1 when
 * something failed.
 */
int lwk_part_undo(const struct lwk_node_roots *r, uint32_t job, const char *state, bool kill,
		  char *log, size_t loglen, struct lwk_part_remains *k)
{
	struct lwk_part p;
	char err[512];

	lwk_part_parse_lenient(state, &p, log, loglen);
	lwk_part_keep(k, false, "job %" PRIu32 "\nbackend %s\npage_kb %lu\n", job,
		      p.backend[0] ? p.backend : "linux", p.plan.page_kb);
	if (p.mcexec[0])
		lwk_part_keep(k, false, "mcexec %s\n", p.mcexec);
	/* First what still runs (mcexec holds McKernel busy). */
	if (kill) {
		struct lwk_part_clear c;

		lwk_part_clear_start(&c);
		lwk_part_remove_own_cgroups(r, state, log, loglen, k, &c);
		clear_job_cgroups(r, job, state, log, loglen, k, &c);
	} else {
		keep_cgroup_lines(state, k);
	}
	/* The App cores back from their partition once nothing runs there. */
	lwk_part_unisolate(r, state, kill, log, loglen, k);
	if (p.mck_booted)
		stop_mckernel(r, log, loglen, k);
	give_back_hugepages(r, &p, err, sizeof(err), log, loglen, k);
	if (kill)
		uncharge_all(r, job, state, log, loglen);
	if (restore_irqs(r, state, err, sizeof(err), log, loglen, k)) {
		give_back_irqbalance(r, state, log, loglen);
		return -1;
	}
	give_back_irqbalance(r, state, log, loglen);
	return k->failed ? -1 : 0;
}

int lwk_part_teardown(const struct lwk_node_roots *r, uint32_t job, char *log, size_t loglen)
{
	char err[512], *state;
	int fd, nfd, rc;

	if (log && loglen)
		log[0] = '\0';
	fd = lwk_part_lock_job(r, job, false, err, sizeof(err));
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* no --lwk here: one failed open() */
		lwk_log_append(log, loglen, "%s", err);
		return -1;
	}
	nfd = lwk_node_lock(r->state_root);
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, job, state, STATE_MAX)) {
		free(state);
		close(fd);
		if (nfd >= 0)
			close(nfd);
		lwk_log_append(log, loglen, "cannot read the state of job %" PRIu32 " (not root's only?)", job);
		return -1;
	}
	{
		struct lwk_part_remains k = { malloc(STATE_MAX), STATE_MAX, 0 };

		if (!k.text) {
			free(state);
			close(fd);
			if (nfd >= 0)
				close(nfd);
			return -1;
		}
		k.text[0] = '\0';
		rc = lwk_part_undo(r, job, state, true, log, loglen, &k);
		/* What could not be undone stays recorded, alone: the next
		 * teardown (a sweep, slurmd's start) tries that again, and
		 * nothing that was undone twice. */
		if (rc == 0)
			lwk_part_remove_state(r, job);
		else if (lwk_part_rewrite_state(r, job, k.text))
			lwk_log_append(log, loglen, "cannot rewrite the state of job %" PRIu32, job);
		free(k.text);
	}
	free(state);
	close(fd);
	if (nfd >= 0)
		close(nfd);
	return rc < 0 ? -1 : 1;
}

/* ---- sweep ---------------------------------------------------------------- */

int lwk_part_sweep(const struct lwk_node_roots *r, bool (*alive)(uint32_t job), char *log,
		   size_t loglen)
{
	char path[4400], one[2048];
	uint32_t jobs[4096];
	int n = lwk_state_jobs(r->state_root, r->node, jobs, 4096), swept = 0;

	if (log && loglen)
		log[0] = '\0';
	for (int i = 0; i < n; i++) {
		lwk_part_state_file(r, jobs[i], "lwk.state", path, sizeof(path));
		if (access(path, F_OK) || alive(jobs[i]))
			continue;
		if (lwk_part_teardown(r, jobs[i], one, sizeof(one)) != 0)
			swept++;
		lwk_log_append(log, loglen, "lwk: swept job %" PRIu32 ": %s", jobs[i],
		      one[0] ? one : "nothing to undo");
	}
	return swept;
}
