/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Temporary trees laid out like cgroupfs or sysfs, for the writers'
 * unit tests: see check_lwk.h. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_lwk.h"
#include "common/topology.h"

char tree_root[256];

void tree_make(const char *tag)
{
	/* In memory where there is a tmpfs: some trees have thousands of
	 * cgroups, which a disk's journal makes slow under load. */
	snprintf(tree_root, sizeof(tree_root), "%s/lwk-%s.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", tag);
	ck_assert_ptr_nonnull(mkdtemp(tree_root));
}

void tree_put(const char *rel, const char *text)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	f = fopen(p, "w");
	ck_assert_msg(f != NULL, "cannot create %s", p);
	fputs(text, f);
	fclose(f);
}

const char *tree_get(const char *rel)
{
	static char buf[4096];
	char p[1024];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", tree_root, rel);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

void tree_mkdir(const char *rel)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", tree_root, rel);
	ck_assert_int_eq(system(cmd), 0);
}

void tree_remove(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree_root);
	ck_assert_int_eq(system(cmd), 0);
}

struct lwk_topology *fixture_load(const char *machine)
{
	const char *dir = getenv("FIXTURES");
	char root[4096], err[512];
	struct lwk_topology *t;

	ck_assert_msg(dir != NULL, "FIXTURES is not set (run through make check)");
	snprintf(root, sizeof(root), "%s/%s", dir, machine);
	t = lwk_topology_read(root, err, sizeof(err));
	ck_assert_msg(t != NULL, "%s: %s", machine, err);
	return t;
}

struct lwk_opts opts_of(const char *arg)
{
	struct lwk_opts o;
	char err[512];

	ck_assert_msg(lwk_option_parse(&lwk_grammar_lwk, arg, &o, err, sizeof(err)) == 0, "%s: %s",
		      arg, err);
	return o;
}

const char *cpus_text(const struct lwk_cpuset *s)
{
	static char buf[4][1024];
	static int i;

	i = (i + 1) % 4;
	lwk_cpulist_format(s, buf[i], sizeof(buf[i]));
	return buf[i];
}

struct lwk_cpuset cpus_of(const char *list)
{
	struct lwk_cpuset s;

	ck_assert_int_eq(lwk_cpulist_parse(list, LWK_MAX_CPUS, &s), 0);
	return s;
}

void tree_proc_cgroup(int pid, const char *text)
{
	char p[64];

	snprintf(p, sizeof(p), "proc/%d", pid);
	tree_mkdir(p);
	snprintf(p, sizeof(p), "proc/%d/cgroup", pid);
	tree_put(p, text);
}

int tree_sleeper(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}
