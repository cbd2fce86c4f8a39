/* SPDX-License-Identifier: GPL-2.0-or-later */
/* perf_event_open counting of a cgroup or a task tree: see perfcount.h. */
#include "node/perfcount.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} generic[] = {
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
};

int lwk_perf_resolve(const char *name, struct lwk_perf_event *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	if (!name || !name[0] || strlen(name) >= sizeof(ev->name))
		return ERR("lwk: perf event name '%s' is empty or too long", name ? name : "");
	snprintf(ev->name, sizeof(ev->name), "%s", name);
	/* The generic names first: they mean the same on every PMU, and
	 * software events are not libpfm4's. */
	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++) {
		if (strcmp(name, generic[i].name) == 0) {
			ev->type = generic[i].type;
			ev->config = generic[i].config;
			ev->generic = true;
			return 0;
		}
	}
#ifdef HAVE_LIBPFM
	{
		struct perf_event_attr attr;
		pfm_perf_encode_arg_t arg;
		int rc;

		if (pfm_initialize() != PFM_SUCCESS)
			return ERR("lwk: libpfm4 did not initialise: cannot resolve event '%s'", name);
		memset(&attr, 0, sizeof(attr));
		memset(&arg, 0, sizeof(arg));
		arg.attr = &attr;
		arg.size = sizeof(arg);
		rc = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
		if (rc != PFM_SUCCESS)
			return ERR("lwk: event '%s' is not known to libpfm4 on this CPU (%s); generic "
				   "names: instructions, cycles, cache-misses, task-clock",
				   name, pfm_strerror(rc));
		ev->type = attr.type;
		ev->config = attr.config;
		return 0;
	}
#else
	return ERR("lwk: event '%s' is not a generic perf event and this build has no libpfm4; "
		   "generic names: instructions, cycles, cache-misses, task-clock", name);
#endif
}

uint64_t lwk_perf_scale(uint64_t count, uint64_t enabled, uint64_t running)
{
	if (!running)
		return 0;
	if (running >= enabled)
		return count;
	return (uint64_t)((unsigned __int128)count * enabled / running);
}

void lwk_perf_attr(const struct lwk_perf_event *ev, struct perf_event_attr *a, bool inherit)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->type;
	a->config = ev->config;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a->exclude_hv = 1;
	/* Root opens the counters for the job, with an event the user
	 * chose: what it counts is the job's own user mode, never what the
	 * kernel does (perf_event_paranoid keeps users from that).  Only
	 * the clocks, which count time, not kernel events, keep it. */
	a->exclude_kernel = !(ev->type == PERF_TYPE_SOFTWARE &&
			      (ev->config == PERF_COUNT_SW_TASK_CLOCK ||
			       ev->config == PERF_COUNT_SW_CPU_CLOCK));
	a->inherit = inherit;
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);
}

int lwk_perf_open_cgroup(struct lwk_perf_counter *c, const struct lwk_perf_event *ev,
			 const char *cgroup_dir, const struct lwk_cpuset *cpus, char *err,
			 size_t errlen)
{
	struct perf_event_attr a;
	int cg;

	c->n = 0;
	cg = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return ERR("lwk: cannot open cgroup %s: %s", cgroup_dir, strerror(errno));
	lwk_perf_attr(ev, &a, false);
	for (int cpu = lwk_cpuset_first(cpus); cpu >= 0; cpu = lwk_cpuset_next(cpus, cpu)) {
		int fd;

		if (c->n == LWK_PERF_MAX_FDS) {
			close(cg);
			lwk_perf_close(c);
			return ERR("lwk: more than %d CPUs to count on", LWK_PERF_MAX_FDS);
		}
		fd = perf_open(&a, cg, cpu, PERF_FLAG_PID_CGROUP);
		if (fd < 0) {
			int e = errno;

			close(cg);
			lwk_perf_close(c);
			return ERR("lwk: perf_event_open(%s, cgroup %s, CPU %d): %s%s", ev->name,
				   cgroup_dir, cpu, strerror(e),
				   e == ENOENT || e == EOPNOTSUPP ? " (this CPU has no such counter)"
								  : "");
		}
		c->fds[c->n++] = fd;
	}
	close(cg);
	if (!c->n)
		return ERR("lwk: no CPU to count %s on", ev->name);
	return 0;
}

int lwk_perf_open_task(struct lwk_perf_counter *c, const struct lwk_perf_event *ev, pid_t pid,
		       bool inherit, char *err, size_t errlen)
{
	c->n = 0;
	return lwk_perf_add_task(c, ev, pid, inherit, err, errlen);
}

int lwk_perf_add_task(struct lwk_perf_counter *c, const struct lwk_perf_event *ev, pid_t tid,
		      bool inherit, char *err, size_t errlen)
{
	struct perf_event_attr a;
	int fd;

	if (c->n == LWK_PERF_MAX_FDS)
		return ERR("lwk: more than %d threads to count", LWK_PERF_MAX_FDS);
	lwk_perf_attr(ev, &a, inherit);
	fd = perf_open(&a, tid, -1, 0);
	if (fd < 0) {
		int e = errno;

		(void)ERR("lwk: perf_event_open(%s, pid %d): %s%s", ev->name, (int)tid, strerror(e),
		    e == ENOENT || e == EOPNOTSUPP ? " (this CPU has no such counter)" : "");
		errno = e;
		return -1;
	}
	c->fds[c->n++] = fd;
	return 0;
}

int lwk_perf_read(const struct lwk_perf_counter *c, struct lwk_perf_reading *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < c->n; i++) {
		uint64_t v[3];

		if (read(c->fds[i], v, sizeof(v)) != (ssize_t)sizeof(v))
			return -1;
		r->raw += v[0];
		r->scaled += lwk_perf_scale(v[0], v[1], v[2]);
		r->enabled += v[1];
		r->running += v[2];
	}
	return 0;
}

void lwk_perf_close(struct lwk_perf_counter *c)
{
	for (int i = 0; i < c->n; i++)
		close(c->fds[i]);
	c->n = 0;
}
