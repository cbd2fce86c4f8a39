/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF walks' programs, loaded (node/taskiter_load.h). */
#define _GNU_SOURCE /* vasprintf */
#include "node/taskiter_load.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
/* skel_internal.h, which the light skeletons include, needs errno and
 * the string functions first. */
#include <bpf/skel_internal.h>

#include "node/taskiter_rec.h"
#include "node/taskiter.skel.h"
#include "node/cgiter.skel.h"
#include "node/taskiter.lskel.h"
#include "node/cgiter.lskel.h"

/* The reader takes the cgroup walk's records through libbpf's type. */
#define SAME_FIELD(f)                                                                         \
	_Static_assert(offsetof(struct lwk_cgiter_bpf__bss, f) ==                               \
			       offsetof(struct lwk_cgiter_lbpf__bss, f),                        \
		       "both skeletons place " #f " alike")
SAME_FIELD(stopped);
SAME_FIELD(ncgroups);
SAME_FIELD(nrecs);
SAME_FIELD(recs);
SAME_FIELD(nthreads);
_Static_assert(sizeof(struct lwk_cgiter_bpf__bss) == sizeof(struct lwk_cgiter_lbpf__bss),
	       "both skeletons of the cgroup walk lay its records out alike");

/*
 * libbpf's messages while loading: the first warning names the step
 * that failed (libbpf's last one only says the skeleton did not load),
 * and the verifier's log, when there is one, ends with its reason.
 * libbpf's print callback takes no argument of ours, hence statics:
 * the sampler opens its source once, from its one thread.
 */
static char first_msg[512], verifier_msg[512];

static void keep_line(char *dst, size_t len, const char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	while (n && (*s == '\n' || *s == ' ')) {
		s++;
		n--;
	}
	snprintf(dst, len, "%.*s", (int)n, s);
}

static int keep_msg(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *text, *end, *line;

	if (level == LIBBPF_DEBUG || vasprintf(&text, fmt, ap) < 0)
		return 0;
	end = strstr(text, "-- END PROG LOAD LOG --");
	if (end && strstr(text, "-- BEGIN PROG LOAD LOG --")) {
		/* The log's last line before its end marker and the
		 * verifier's statistics ("processed N insns ...",
		 * "verification time ..."), never its begin marker's
		 * line: the reason. */
		const char *begin = strstr(text, "-- BEGIN PROG LOAD LOG --");

		begin = strchr(begin, '\n') ? strchr(begin, '\n') + 1 : end;
		do {
			while (end > begin && (end[-1] == '\n' || end[-1] == ' '))
				end--;
			for (line = end; line > begin && line[-1] != '\n'; line--)
				;
			keep_line(verifier_msg, sizeof(verifier_msg), line, (size_t)(end - line));
			end = line;
		} while (line > begin && (!strncmp(line, "processed ", 10) ||
					  !strncmp(line, "verification time ", 18)));
	} else if (!first_msg[0]) {
		line = text + strspn(text, "\n ");
		end = strchr(line, '\n');
		keep_line(first_msg, sizeof(first_msg), line, end ? (size_t)(end - line) : strlen(line));
	}
	free(text);
	return 0;
}

static void why_not(int e, char *err, size_t errlen)
{
	/* The verifier refuses with EACCES too: its log tells the two
	 * apart. */
	if ((e == EPERM || e == EACCES) && !verifier_msg[0])
		snprintf(err, errlen,
			 "bpf: no permission to load the task iterator (needs CAP_BPF and "
			 "CAP_PERFMON, or CAP_SYS_ADMIN): %s", strerror(e));
	else
		snprintf(err, errlen, "bpf: verifier or loader refused the task iterator: %s%s%s%s%s",
			 strerror(e), first_msg[0] ? ": " : "", first_msg,
			 verifier_msg[0] ? "; verifier: " : "", verifier_msg);
}

void lwk_taskiter_progs_init(struct lwk_taskiter_progs *p)
{
	memset(p, 0, sizeof(*p));
	p->task_link = p->map_fd = p->cg_prog = -1;
}

int lwk_taskiter_load_tasks(struct lwk_taskiter_progs *p, size_t max, char *err, size_t errlen)
{
	libbpf_print_fn_t old;
	int e;

	/* The light skeleton's map is as the program defines it; libbpf's
	 * is sized before its load. */
	if (max <= LWK_TASKITER_MAP_MAX && (p->light = lwk_taskiter_lbpf__open_and_load()) &&
	    lwk_taskiter_lbpf__attach(p->light) == 0) {
		p->task_link = p->light->links.job_tasks_fd;
		p->map_fd = p->light->maps.job_tgids.map_fd;
		return 0;
	}
	if (p->light)
		lwk_taskiter_lbpf__destroy(p->light);
	p->light = NULL;
	first_msg[0] = verifier_msg[0] = '\0';
	old = libbpf_set_print(keep_msg);
	p->skel = lwk_taskiter_bpf__open();
	e = p->skel ? 0 : errno;
	if (!e && bpf_map__set_max_entries(p->skel->maps.job_tgids, (__u32)max))
		e = errno;
	if (!e && lwk_taskiter_bpf__load(p->skel))
		e = errno;
	if (!e && lwk_taskiter_bpf__attach(p->skel))
		e = errno;
	libbpf_set_print(old);
	if (e) {
		why_not(e, err, errlen);
		return -1;
	}
	p->task_link = bpf_link__fd(p->skel->links.job_tasks);
	p->map_fd = bpf_map__fd(p->skel->maps.job_tgids);
	return 0;
}

int lwk_taskiter_load_cgroup(struct lwk_taskiter_progs *p, char *why, size_t len)
{
	libbpf_print_fn_t old;
	int e;

	p->cg_light = lwk_cgiter_lbpf__open_and_load();
	if (p->cg_light) {
		p->cg_prog = p->cg_light->progs.job_cgroup.prog_fd;
		p->bss = (struct lwk_cgiter_bpf__bss *)p->cg_light->bss;
		return 0;
	}
	first_msg[0] = verifier_msg[0] = '\0';
	old = libbpf_set_print(keep_msg);
	p->cg = lwk_cgiter_bpf__open();
	e = p->cg ? 0 : errno;
	if (!e && lwk_cgiter_bpf__load(p->cg))
		e = errno;
	libbpf_set_print(old);
	if (e) {
		/* Before 6.7 libbpf finds no bpf_iter_css_task_new in the
		 * kernel's BTF: its first warning says so. */
		snprintf(why, len,
			 "the cgroup walk (css_task and task iterators, Linux 6.7+) did not load: "
			 "%s%s%s%s%s",
			 strerror(e), first_msg[0] ? ": " : "", first_msg,
			 verifier_msg[0] ? "; verifier: " : "", verifier_msg);
		return -1;
	}
	p->cg_prog = bpf_program__fd(p->cg->progs.job_cgroup);
	p->bss = p->cg->bss;
	return 0;
}

void lwk_taskiter_unload_cgroup(struct lwk_taskiter_progs *p)
{
	if (p->cg_light)
		lwk_cgiter_lbpf__destroy(p->cg_light);
	if (p->cg)
		lwk_cgiter_bpf__destroy(p->cg);
	p->cg_light = NULL;
	p->cg = NULL;
	p->cg_prog = -1;
	p->bss = NULL;
}

void lwk_taskiter_unload(struct lwk_taskiter_progs *p)
{
	lwk_taskiter_unload_cgroup(p);
	if (p->light)
		lwk_taskiter_lbpf__destroy(p->light);
	if (p->skel)
		lwk_taskiter_bpf__destroy(p->skel);
	p->light = NULL;
	p->skel = NULL;
	p->task_link = p->map_fd = -1;
}
