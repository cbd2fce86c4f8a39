/* SPDX-License-Identifier: GPL-2.0-or-later */
/* IRQ affinity off the App cores and back: see irqaff.h. */
#include "node/irqaff.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

bool lwk_irq_new_affinity(const struct lwk_cpuset *cur, const struct lwk_cpuset *app,
			  const struct lwk_cpuset *os, struct lwk_cpuset *out)
{
	struct lwk_cpuset on_app = *cur;

	lwk_cpuset_and(&on_app, app);
	if (!lwk_cpuset_count(&on_app))
		return false;
	lwk_cpuset_zero(out);
	for (int c = lwk_cpuset_first(cur); c >= 0; c = lwk_cpuset_next(cur, c))
		if (!lwk_cpuset_isset(app, (unsigned)c))
			lwk_cpuset_set(out, (unsigned)c);
	if (!lwk_cpuset_count(out))
		*out = *os;
	return true;
}

static int read_list(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_list(const char *path, const char *list)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, list, strlen(list));
	close(fd);
	return n == (ssize_t)strlen(list) ? 0 : -1;
}

/* Walk <proc>/irq: each IRQ that may land on app is saved, and moved
 * when apply is true. */
static int walk(const char *proc_root, const struct lwk_cpuset *app, const struct lwk_cpuset *os,
		char *save, size_t savelen, struct lwk_irq_result *r, bool apply, char *err,
		size_t errlen)
{
	char dir[512], path[600], old[4096], want[4096];
	size_t used = strlen(save);
	DIR *d;
	struct dirent *e;

	memset(r, 0, sizeof(*r));
	if (!savelen || used >= savelen)
		return ERR("lwk: IRQ affinity: no room to remember what is moved");
	if (!lwk_cpuset_count(os))
		return ERR("lwk: IRQ affinity: no OS CPU to move IRQs to");
	snprintf(dir, sizeof(dir), "%s/irq", proc_root);
	d = opendir(dir);
	if (!d)
		return ERR("lwk: IRQ affinity: cannot read %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		struct lwk_cpuset cur, next;
		char *end;
		long irq = strtol(e->d_name, &end, 10);
		int w;

		if (!isdigit((unsigned char)e->d_name[0]) || *end || irq < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%ld/smp_affinity_list", dir, irq);
		if (read_list(path, old, sizeof(old)) ||
		    lwk_cpulist_parse(old, LWK_MAX_CPUS, &cur) ||
		    !lwk_irq_new_affinity(&cur, app, os, &next)) {
			r->untouched++;
			continue;
		}
		lwk_cpulist_format(&next, want, sizeof(want));
		/* The old affinity, and the one written instead: the restore
		 * puts back only what still holds ours. */
		w = snprintf(save + used, savelen - used, "%ld %s %s\n", irq, old, want);
		if (w < 0 || (size_t)w >= savelen - used) {
			save[used] = '\0';
			closedir(d);
			return ERR("lwk: IRQ affinity: too many IRQs to remember (%u moved)",
				   r->moved);
		}
		if (apply && write_list(path, want)) {
			/* Per-CPU and managed IRQs refuse (EIO): leave them. */
			save[used] = '\0';
			r->refused++;
			continue;
		}
		used += (size_t)w;
		r->moved++;
	}
	closedir(d);
	return 0;
}

int lwk_irq_move_off(const char *proc_root, const struct lwk_cpuset *app,
		     const struct lwk_cpuset *os, char *save, size_t savelen,
		     struct lwk_irq_result *r, char *err, size_t errlen)
{
	return walk(proc_root, app, os, save, savelen, r, true, err, errlen);
}

int lwk_irq_list_off(const char *proc_root, const struct lwk_cpuset *app,
		     const struct lwk_cpuset *os, char *save, size_t savelen, char *err,
		     size_t errlen)
{
	struct lwk_irq_result r;

	return walk(proc_root, app, os, save, savelen, &r, false, err, errlen);
}

int lwk_irq_restore(const char *proc_root, const char *saved, char *err, size_t errlen)
{
	const char *line = saved;
	int failed = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char buf[8400], path[600], now[4096], *sp, *end, *ours;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		struct lwk_cpuset check, set, cur;
		long irq;

		if (len >= sizeof(buf))
			return ERR("lwk: IRQ affinity: saved line too long");
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : NULL;
		if (!len)
			continue;
		irq = strtol(buf, &end, 10);
		sp = end;
		ours = *sp == ' ' ? strchr(sp + 1, ' ') : NULL;
		if (ours)
			*ours++ = '\0';
		/* Only what this module wrote: "<irq> <old> <ours>" (or, saved
		 * by an earlier version, "<irq> <old>").  A line torn by a
		 * crash is counted and skipped: the others still go back. */
		if (end == buf || irq < 0 || *sp != ' ' ||
		    lwk_cpulist_parse(sp + 1, LWK_MAX_CPUS, &check) ||
		    (ours && lwk_cpulist_parse(ours, LWK_MAX_CPUS, &set))) {
			if (!failed)
				snprintf(err, errlen, "lwk: IRQ affinity: malformed saved line '%.100s'",
					 buf);
			failed++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/irq/%ld/smp_affinity_list", proc_root, irq);
		/* Changed since by someone else (irqbalance, an admin): theirs
		 * is newer than what was saved, and stays. */
		if (ours && read_list(path, now, sizeof(now)) == 0 &&
		    lwk_cpulist_parse(now, LWK_MAX_CPUS, &cur) == 0 && !lwk_cpuset_equal(&cur, &set))
			continue;
		if (write_list(path, sp + 1))
			failed++;
	}
	return failed;
}
