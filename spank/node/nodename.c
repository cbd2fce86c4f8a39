// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * nodename.c: which NodeName this node is.  slurmd does not put
 * SLURMD_NODENAME in its own environment (slurmstepd does, and Slurm
 * does for the prolog and epilog); a slurmd started as "slurmd -N NAME"
 * (several on one host, or a NodeName that is not the host name) has
 * its name only in its arguments.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node/nodename.h"

/* Written once, in slurmd's init, before any reader; read-only after. */
static char set_name[256];
static atomic_bool name_set;

static bool node_name_ok(const char *name, size_t max)
{
	size_t n = strlen(name);

	return n > 0 && n < max && !strchr(name, '/');
}

int lwk_this_node_set(const char *name)
{
	if (!node_name_ok(name, sizeof(set_name)) || atomic_load(&name_set))
		return -1;
	snprintf(set_name, sizeof(set_name), "%s", name);
	atomic_store(&name_set, true);
	return 0;
}

void lwk_this_node(char *buf, size_t len)
{
	const char *env = getenv("SLURMD_NODENAME");

	if (atomic_load(&name_set)) {
		snprintf(buf, len, "%s", set_name);
		return;
	}
	if (env && node_name_ok(env, len)) {
		snprintf(buf, len, "%s", env);
		return;
	}
	if (gethostname(buf, len))
		snprintf(buf, len, "localhost");
	buf[len - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

/* slurmd's long options that take an argument, from 22.05 to 26.05
 * (--systemd and --version take none). */
static bool long_takes_arg(const char *name, size_t n)
{
	static const char *const no_arg[] = { "systemd", "version" };

	/* getopt_long takes any unambiguous prefix: a prefix of one of
	 * those two is taken as it. */
	for (size_t i = 0; i < sizeof(no_arg) / sizeof(no_arg[0]); i++)
		if (n <= strlen(no_arg[i]) && !strncmp(name, no_arg[i], n))
			return false;
	return true;
}

int lwk_slurmd_args_node(const char *args, size_t len, char *out, size_t outlen)
{
	const char *w = args, *end = args + len, *node = NULL;
	bool dynamic = false, first = true;

	while (w < end) {
		size_t wl = strnlen(w, (size_t)(end - w));
		const char *next = w + wl + 1;

		if (wl == (size_t)(end - w))
			break; /* a last word without its NUL: cut short */

		if (first) { /* argv[0] */
			first = false;
		} else if (!strcmp(w, "--")) {
			break;
		} else if (w[0] == '-' && w[1] == '-') {
			if (!strchr(w, '=') && long_takes_arg(w + 2, wl - 2) && next < end)
				next += strnlen(next, (size_t)(end - next)) + 1;
			if (next > end)
				break;
		} else if (w[0] == '-' && w[1]) {
			for (const char *c = w + 1; *c; c++) {
				if (*c == 'Z')
					dynamic = true;
				if (*c == 'F') /* an optional argument: the rest of the word */
					break;
				if (strchr("dfLnN", *c)) {
					const char *arg = c[1] ? c + 1 : NULL;

					if (!c[1] && next < end) {
						size_t al = strnlen(next, (size_t)(end - next));

						/* Its argument, the next word, whole. */
						arg = al < (size_t)(end - next) ? next : NULL;
						next += al + 1;
					}
					if (*c == 'N')
						node = arg;
					break;
				}
			}
		}
		w = next;
	}
	if (node && *node && strnlen(node, outlen) < outlen) {
		snprintf(out, outlen, "%s", node);
		return 1;
	}
	return dynamic ? 2 : 0;
}
