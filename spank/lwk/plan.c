/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk plan of one node: see lwk/plan.h. */
#include "lwk/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define MIB (1024ULL * 1024)

/* A core is the job's when all its hardware threads are. */
static bool core_is_jobs(const struct lwk_topo_core *c, const struct lwk_cpuset *job)
{
	struct lwk_cpuset both = c->cpus;

	lwk_cpuset_and(&both, job);
	return lwk_cpuset_equal(&both, &c->cpus);
}

/* Which cores are the job's (jobs[]), none an OS core yet: how many. */
static unsigned int job_cores(const struct lwk_topology *t, const struct lwk_cpuset *job_cpus,
			      bool *jobs, bool *is_os)
{
	unsigned int njob = 0;

	for (unsigned int i = 0; i < t->ncores; i++) {
		jobs[i] = core_is_jobs(&t->cores[i], job_cpus);
		is_os[i] = false;
		njob += jobs[i];
	}
	return njob;
}

/* The partition's NUMA nodes (app_node[], by index): asked for (numa=,
 * each one the node has and the job has a core on), or all the job has. */
static int app_numa_nodes(const struct lwk_topology *t, const struct lwk_opts *o,
			  const bool *jobs, bool *app_node, char *err, size_t errlen)
{
	for (unsigned int n = 0; n < t->nnuma; n++) {
		int id = t->numa[n].node;

		app_node[n] = lwk_cpuset_count(&o->numa) ? lwk_cpuset_isset(&o->numa, (unsigned)id)
							 : true;
		if (id < 0 || id >= LWK_MAX_NUMA)
			return ERR("lwk: --lwk: NUMA node %d is past the %d this plugin handles", id,
				   LWK_MAX_NUMA);
	}
	for (int id = lwk_cpuset_first(&o->numa); id >= 0; id = lwk_cpuset_next(&o->numa, id)) {
		bool known = false, has = false;

		for (unsigned int n = 0; n < t->nnuma; n++)
			if (t->numa[n].node == id)
				known = true;
		for (unsigned int i = 0; i < t->ncores; i++)
			if (jobs[i] && t->dies[t->cores[i].die].numa >= 0 &&
			    t->numa[t->dies[t->cores[i].die].numa].node == id)
				has = true;
		if (!known || !has)
			return ERR("lwk: --lwk: numa=%d: %s", id,
				   known ? "the job has no core on that NUMA node here"
					 : "this node has no such NUMA node");
	}
	return 0;
}

/*
 * Whether job core i may become an OS core in pass `pass` of
 * pick_os_cores: 0, a core that is not boot-isolated (with whole dies:
 * on a die none of whose job cores is); 1, a core that is not
 * boot-isolated (its die may take some that are); 2, any.  Without boot
 * isolation every core passes at 0, and the plan is the NUMA rule alone.
 */
static bool os_candidate(const struct lwk_topology *t, const bool *jobs, const bool *boot,
			 bool whole_dies, unsigned int i, int pass)
{
	if (pass >= 2)
		return true;
	if (boot[i])
		return false;
	if (pass == 1 || !whole_dies)
		return true;
	for (unsigned int j = 0; j < t->ncores; j++)
		if (jobs[j] && boot[j] && t->cores[j].die == t->cores[i].die)
			return false;
	return true;
}

/*
 * OS cores (is_os[]): want of them, cores not isolated at boot first
 * (boot[], see os_candidate), then within each pass lowest NUMA node
 * first (system memory lives there), from its first core; whole dies
 * when asked.  Cores are ordered by first CPU, so this also walks the
 * node's dies in order.  Then the job cores on nodes outside numa=:
 * Linux's too.
 */
static void pick_os_cores(const struct lwk_topology *t, const bool *jobs, const bool *boot,
			  const bool *app_node, unsigned int want, bool whole_dies, bool *is_os)
{
	unsigned int got = 0;

	for (int pass = 0; pass < 3 && got < want; pass++) {
		for (unsigned int n = 0; n < t->nnuma && got < want; n++) {
			for (unsigned int i = 0; i < t->ncores && got < want; i++) {
				const struct lwk_topo_core *c = &t->cores[i];

				if (!jobs[i] || is_os[i] || t->dies[c->die].numa != (int)n ||
				    !os_candidate(t, jobs, boot, whole_dies, i, pass))
					continue;
				if (!whole_dies) {
					is_os[i] = true;
					got++;
					continue;
				}
				/* The whole die: its job cores all become OS cores. */
				for (unsigned int j = 0; j < t->ncores; j++)
					if (jobs[j] && !is_os[j] && t->cores[j].die == c->die) {
						is_os[j] = true;
						got++;
					}
			}
		}
	}
	for (unsigned int i = 0; i < t->ncores; i++) {
		int n = t->dies[t->cores[i].die].numa;

		if (jobs[i] && !is_os[i] && n >= 0 && !app_node[n]) {
			is_os[i] = true;
			got++;
		}
	}
}

/* Boot isolation only orders the choice: where it would take more OS
 * cores than the NUMA rule alone (whole dies), the NUMA rule's choice
 * stands. */
static void choose_os_cores(const struct lwk_topology *t, const bool *jobs, const bool *boot,
			    const bool *app_node, unsigned int want, bool whole_dies, bool *is_os)
{
	bool *plain = calloc(t->ncores, sizeof(bool)), *none = calloc(t->ncores, sizeof(bool));
	unsigned int with = 0, without = 0;

	pick_os_cores(t, jobs, boot, app_node, want, whole_dies, is_os);
	if (!plain || !none) {
		free(plain);
		free(none);
		return;
	}
	pick_os_cores(t, jobs, none, app_node, want, whole_dies, plain);
	for (unsigned int i = 0; i < t->ncores; i++) {
		with += is_os[i];
		without += plain[i];
	}
	if (with > without)
		memcpy(is_os, plain, t->ncores * sizeof(bool));
	free(plain);
	free(none);
}

/*
 * Which cores the OS cores avoid (boot[]): any of their CPUs is in
 * nohz_full= or isolcpus=, and they are on an App node (a core on a
 * node outside numa= is Linux's anyway: taking it as an OS core spares
 * an App core).  Returns the boot-isolated CPUs, empty when none.
 */
static struct lwk_cpuset boot_cores(const struct lwk_topology *t, const bool *app_node, bool *boot)
{
	struct lwk_cpuset all;

	lwk_topology_boot_isolated(t, &all);
	for (unsigned int i = 0; i < t->ncores; i++) {
		struct lwk_cpuset both = t->cores[i].cpus;
		int n = t->dies[t->cores[i].die].numa;

		lwk_cpuset_and(&both, &all);
		boot[i] = lwk_cpuset_count(&both) > 0 && n >= 0 && app_node[n];
	}
	return all;
}

/* What boot isolation became: the App CPUs it covers and those it does
 * not, and the boot-isolated CPUs that stayed Linux's. */
static void note_boot(const struct lwk_cpuset *boot, struct lwk_plan *p)
{
	p->boot_isolated_app = p->app_cpus;
	lwk_cpuset_and(&p->boot_isolated_app, boot);
	p->boot_isolated_os = p->os_cpus;
	lwk_cpuset_and(&p->boot_isolated_os, boot);
	p->app_cpus_not_boot = lwk_cpuset_count(&p->app_cpus) -
			       lwk_cpuset_count(&p->boot_isolated_app);
}

/* The plan's CPUs, cores and App nodes from the job's cores and the OS
 * ones; app_per_node[] (by NUMA index) counts the App cores. */
static void fill_cpus(const struct lwk_topology *t, const bool *jobs, const bool *is_os,
		      struct lwk_plan *p, uint64_t *app_per_node)
{
	for (unsigned int i = 0; i < t->ncores; i++) {
		int n = t->dies[t->cores[i].die].numa;

		if (!jobs[i])
			continue;
		if (is_os[i]) {
			lwk_cpuset_or(&p->os_cpus, &t->cores[i].cpus);
			p->os_cores++;
		} else {
			lwk_cpuset_or(&p->app_cpus, &t->cores[i].cpus);
			p->app_cores++;
			app_per_node[n]++;
			lwk_cpuset_set(&p->app_nodes, (unsigned)t->numa[n].node);
		}
	}
}

/* Memory: mem= over the App nodes by App cores, whole hugepages. */
static int split_mem(const struct lwk_topology *t, const struct lwk_opts *o,
		     const uint64_t *app_per_node, struct lwk_plan *p, char *err, size_t errlen)
{
	uint64_t page = p->page_kb ? (uint64_t)p->page_kb * 1024 : 4096, given = 0;
	unsigned int left = p->app_cores;
	char list[256];

	for (unsigned int n = 0; n < t->nnuma; n++) {
		uint64_t share;

		if (!app_per_node[n])
			continue;
		/* The last node takes the rest, so the sum is exact before
		 * rounding. */
		left -= (unsigned int)app_per_node[n];
		share = left ? o->mem / p->app_cores * app_per_node[n] : o->mem - given;
		given += share;
		share = (share + page - 1) / page * page;
		if (t->numa[n].mem_free && share > t->numa[n].mem_free) {
			lwk_cpulist_format(&p->app_nodes, list, sizeof(list));
			return ERR("lwk: --lwk: mem=%lluM puts %lluM on NUMA node %d, which has "
				   "%lluM free (App nodes: %s); ask for less memory (mem=)",
				   (unsigned long long)(o->mem / MIB),
				   (unsigned long long)(share / MIB), t->numa[n].node,
				   (unsigned long long)(t->numa[n].mem_free / MIB), list);
		}
		p->node_mem[t->numa[n].node] = share;
	}
	return 0;
}

int lwk_plan_make(const struct lwk_topology *t, const struct lwk_cpuset *job_cpus,
		  const struct lwk_opts *o, bool whole_dies, struct lwk_plan *p, char *err,
		  size_t errlen)
{
	bool jobs[t->ncores], is_os[t->ncores], boot[t->ncores], app_node[t->nnuma];
	unsigned int njob;
	uint64_t app_per_node[t->nnuma];
	struct lwk_cpuset boot_cpus;

	memset(p, 0, sizeof(*p));
	if (!t->ncores || !t->nnuma)
		return ERR("lwk: --lwk: this node's topology has no cores or NUMA nodes");
	njob = job_cores(t, job_cpus, jobs, is_os);
	if (o->os_cores > njob || o->os_cores == njob)
		return ERR("lwk: --lwk: os=%llu leaves no App core: the job has %u core(s) on "
			   "this node; ask for fewer OS cores (os=) or more CPUs",
			   (unsigned long long)o->os_cores, njob);
	if (app_numa_nodes(t, o, jobs, app_node, err, errlen))
		return -1;
	boot_cpus = boot_cores(t, app_node, boot);
	choose_os_cores(t, jobs, boot, app_node, (unsigned int)o->os_cores, whole_dies, is_os);
	memset(app_per_node, 0, sizeof(app_per_node));
	fill_cpus(t, jobs, is_os, p, app_per_node);
	note_boot(&boot_cpus, p);
	if (!p->app_cores)
		return ERR("lwk: --lwk: os=%llu%s leaves no App core on the requested NUMA nodes; "
			   "ask for fewer OS cores (os=)%s",
			   (unsigned long long)o->os_cores, whole_dies ? " rounded up to whole dies" : "",
			   lwk_cpuset_count(&o->numa) ? " or other NUMA nodes (numa=)" : "");
	p->page_kb = o->hugepage == LWK_HUGEPAGE_1G ? 1048576 : o->hugepage == LWK_HUGEPAGE_2M ? 2048 : 0;
	if (o->mem && split_mem(t, o, app_per_node, p, err, errlen))
		return -1;
	p->deleg_mem = o->deleg_mem;
	p->deleg_period_us = 100000;
	/* deleg_cpu is in 1/100 % of one core. */
	p->deleg_quota_us = o->deleg_cpu * p->deleg_period_us / 10000;
	if (p->deleg_quota_us > p->os_cores * p->deleg_period_us)
		p->deleg_quota_us = p->os_cores * p->deleg_period_us;
	return 0;
}

int lwk_plan_ikc_map(const struct lwk_topology *t, const struct lwk_plan *p, char *out,
		     size_t len)
{
	size_t o = 0;
	int first_os = lwk_cpuset_first(&p->os_cpus);

	out[0] = '\0';
	if (first_os < 0)
		return -1;
	for (unsigned int n = 0; n < t->nnuma; n++) {
		struct lwk_cpuset app = t->numa[n].cpus, os = t->numa[n].cpus;
		char a[1024];
		int to;
		int w;

		lwk_cpuset_and(&app, &p->app_cpus);
		if (!lwk_cpuset_count(&app))
			continue;
		lwk_cpuset_and(&os, &p->os_cpus);
		to = lwk_cpuset_count(&os) ? lwk_cpuset_first(&os) : first_os;
		lwk_cpulist_format(&app, a, sizeof(a));
		w = snprintf(out + o, len - o, "%s%s:%d", o ? "+" : "", a, to);
		if (w < 0 || (size_t)w >= len - o)
			return -1;
		o += (size_t)w;
	}
	return 0;
}

/* snprintf at out + *o, *o kept within len (a cut note stays terminated). */
static void append(char *out, size_t len, size_t *o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *out, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*o >= len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(out + *o, len - *o, fmt, ap);
	va_end(ap);
	*o = w < 0 ? len : *o + (size_t)w;
}

void lwk_plan_boot_note(const struct lwk_plan *p, char *out, size_t len)
{
	char list[1024];
	size_t o = 0;

	if (!len)
		return;
	out[0] = '\0';
	if (lwk_cpuset_count(&p->boot_isolated_app)) {
		lwk_cpulist_format(&p->boot_isolated_app, list, sizeof(list));
		append(out, len, &o, ", boot-isolated (nohz_full/isolcpus) App CPUs %s", list);
		if (p->app_cpus_not_boot)
			append(out, len, &o, " (%u App CPUs are not)", p->app_cpus_not_boot);
	}
	if (lwk_cpuset_count(&p->boot_isolated_os)) {
		lwk_cpulist_format(&p->boot_isolated_os, list, sizeof(list));
		append(out, len, &o, ", boot-isolated CPUs %s kept as OS cores: os=, numa= or whole "
		       "dies needed them", list);
	}
}

int lwk_plan_mem_arg(const struct lwk_plan *p, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int id = lwk_cpuset_first(&p->app_nodes); id >= 0 && id < LWK_MAX_NUMA;
	     id = lwk_cpuset_next(&p->app_nodes, id)) {
		int w;

		if (!p->node_mem[id])
			continue;
		w = snprintf(out + o, len - o, "%s%lluM@%d", o ? "," : "",
			     (unsigned long long)((p->node_mem[id] + MIB - 1) / MIB), id);
		if (w < 0 || (size_t)w >= len - o)
			return -1;
		o += (size_t)w;
	}
	return 0;
}
