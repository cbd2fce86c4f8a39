/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state lines of the App cores' isolated partition (lwk/isolate.c
 * writes them, each before what it records) and their undoing:
 *
 *   xcpus <path> <cpus>  the CPUs about to be added to the
 *                        cpuset.cpus.exclusive of a level (an ancestor
 *                        of a step's App cgroup, or that cgroup)
 *   xpart <path>         the App cgroup about to become "isolated"
 *   appcg <path>         a step's App cgroup (each step's, partition or
 *                        not: a later step sees whether it still runs)
 *   xfail <path>         the kernel refused that cgroup a partition: the
 *                        step's later tasks do not ask again
 *
 * The undoing puts each xpart back to "member", then takes each xcpus
 * line's CPUs out of its level again, the deepest (last written) first,
 * where the cgroup is still there.  Only what was added is taken out:
 * what the level held before, or got from someone else since, stays.
 * Only whole lines count: a last line without its newline (a state cut
 * short) is never acted on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lwk/part_int.h"

bool lwk_xrecorded(const char *state, const char *key, const char *path)
{
	size_t kl = strlen(key), pl = strlen(path);

	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n;

		if (!nl)
			break;
		n = (size_t)(nl - line);
		if (n >= kl + 1 + pl && !strncmp(line, key, kl) && line[kl] == ' ' &&
		    !strncmp(line + kl + 1, path, pl) &&
		    (n == kl + 1 + pl || line[kl + 1 + pl] == ' '))
			return true;
		line = nl + 1;
	}
	return false;
}

/* One whole line "<key> <path>[ <list>]" into x: 1, or 0 when it is not
 * one (another key, a path that is not clean, too long). */
static int one_line(const char *line, size_t len, const char *key, struct lwk_xline *x)
{
	size_t kl = strlen(key);
	const char *p, *sp;
	size_t pl;

	if (len <= kl + 1 || strncmp(line, key, kl) || line[kl] != ' ')
		return 0;
	p = line + kl + 1;
	sp = memchr(p, ' ', len - kl - 1);
	pl = sp ? (size_t)(sp - p) : len - kl - 1;
	if (p[0] != '/' || pl >= sizeof(x->path))
		return 0;
	memcpy(x->path, p, pl);
	x->path[pl] = '\0';
	if (strstr(x->path, "/..") || strstr(x->path, "//"))
		return 0;
	x->list[0] = '\0';
	if (sp) {
		size_t ll = len - (size_t)(sp + 1 - line);

		if (ll >= sizeof(x->list))
			return 0;
		memcpy(x->list, sp + 1, ll);
		x->list[ll] = '\0';
		if (!strcmp(x->list, "-"))
			x->list[0] = '\0';
	}
	return 1;
}

int lwk_xlines(const char *state, const char *key, struct lwk_xline **out)
{
	int n = 0, max = 0;

	*out = NULL;
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');

		if (!nl)
			break;
		if (n == max) {
			struct lwk_xline *more = realloc(*out, sizeof(**out) * (size_t)(max = max ? 2 * max : 16));

			if (!more) {
				free(*out);
				*out = NULL;
				return -1;
			}
			*out = more;
		}
		n += one_line(line, (size_t)(nl - line), key, &(*out)[n]);
		line = nl + 1;
	}
	return n;
}

/* The CPUs of list taken out of the cgroup's cpuset.cpus.exclusive. */
static int take_out(const char *dir, const char *list, char *err, size_t errlen)
{
	char cur[16384], now[16384];
	struct lwk_cpuset have, drop;

	if (lwk_cgroup_read_knob(dir, "cpuset.cpus.exclusive", cur, sizeof(cur), err, errlen))
		return -1;
	if (lwk_cpulist_parse(cur, LWK_MAX_CPUS, &have) || lwk_cpulist_parse(list, LWK_MAX_CPUS, &drop))
		return ERR("lwk: %s/cpuset.cpus.exclusive '%.100s' or the recorded '%.100s' is not a "
			   "CPU list", dir, cur, list);
	for (int c = lwk_cpuset_first(&drop); c >= 0; c = lwk_cpuset_next(&drop, c))
		have.bits[c / 64] &= ~(UINT64_C(1) << (c % 64));
	if (lwk_cpulist_format(&have, now, sizeof(now)) >= sizeof(now))
		return ERR("lwk: %s: the CPU list is too long", dir);
	if (!strcmp(now, cur))
		return 0;
	return lwk_cgroup_write_knob(dir, "cpuset.cpus.exclusive", now[0] ? now : "\n", err, errlen);
}

int lwk_xundo(const char *root, const char *state, bool (*keep)(const char *, const void *),
	      const void *arg, char *log, size_t loglen, struct lwk_part_remains *k)
{
	static const char *const keys[] = { "xpart", "xcpus" };
	char dir[1100], err[512];
	int failed = 0;

	for (int kind = 0; kind < 2; kind++) {
		struct lwk_xline *x;
		int n = lwk_xlines(state, keys[kind], &x);

		if (n < 0)
			return 1;
		for (int i = n - 1; i >= 0; i--) {
			if (keep && !keep(x[i].path, arg))
				continue;
			snprintf(dir, sizeof(dir), "%s%s", root, x[i].path);
			if (access(dir, F_OK))
				continue; /* Slurm removed it: the kernel freed its CPUs */
			if (kind == 0 ? lwk_cgroup_write_knob(dir, "cpuset.cpus.partition", "member", err,
							       sizeof(err))
				      : take_out(dir, x[i].list, err, sizeof(err))) {
				failed++;
				lwk_log_append(log, loglen, "%s", err);
				if (k)
					lwk_part_keep(k, true, "%s %s%s%s\n", keys[kind], x[i].path,
						      kind ? " " : "", kind ? x[i].list : "");
			}
		}
		free(x);
	}
	return failed;
}

void lwk_part_unisolate(const struct lwk_node_roots *r, const char *state, bool kill, char *log,
			size_t loglen, struct lwk_part_remains *k)
{
	static const char *const keys[] = { "xcpus", "xpart", "appcg", "xfail" };
	int failed;

	if (!strstr(state, "xcpus ") && !strstr(state, "xpart ") && !strstr(state, "appcg "))
		return;
	if (!kill) {
		/* A setup redone while the job runs: its partition stays, the
		 * lines with it for the job's final teardown. */
		for (int kind = 0; kind < 4; kind++) {
			struct lwk_xline *x;
			int n = lwk_xlines(state, keys[kind], &x);

			if (n < 0)
				k->failed++;
			for (int i = 0; i < n; i++)
				lwk_part_keep(k, false, "%s %s%s%s\n", keys[kind], x[i].path,
					      x[i].list[0] ? " " : "", x[i].list);
			free(x);
		}
		return;
	}
	failed = lwk_xundo(r->cgroup_root, state, NULL, NULL, log, loglen, k);
	lwk_log_append(log, loglen, "%s the exclusive CPUs and isolated partitions of the App cores",
		       failed ? "could not give back all" : "gave back");
}

int lwk_xcompact(const struct lwk_node_roots *r, uint32_t job, char *state)
{
	char *kept = malloc(STATE_MAX), dir[1100];
	size_t o = 0;
	int dropped = 0;

	if (!kept)
		return -1;
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		struct lwk_xline x;
		bool gone = false;

		if (nl && (one_line(line, len - 1, "xcpus", &x) || one_line(line, len - 1, "xpart", &x) ||
			   one_line(line, len - 1, "appcg", &x) || one_line(line, len - 1, "xfail", &x))) {
			snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, x.path);
			gone = access(dir, F_OK) != 0;
		}
		if (gone) {
			dropped++;
		} else if (o + len < STATE_MAX) {
			memcpy(kept + o, line, len);
			o += len;
		}
		line += len;
	}
	kept[o] = '\0';
	if (dropped && lwk_part_rewrite_state(r, job, kept) == 0)
		memcpy(state, kept, o + 1);
	free(kept);
	return dropped;
}
