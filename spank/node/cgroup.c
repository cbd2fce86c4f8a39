/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroup v2 and v1 writers: see cgroup.h (killing a tree: cgroup_kill.c). */
#include "node/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define write_file lwk_cgroup_write_knob
#define read_file lwk_cgroup_read_knob
#define dir_of lwk_cgroup_dir

/* The v1 hierarchies the knobs live in, in creation order (cpuset
 * first: its cpus and mems must be set before anything joins). */
static const char *const v1_controllers[] = { "cpuset", "cpu", "memory", "hugetlb" };

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

enum lwk_cgroup_version lwk_cgroup_detect(const char *root)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	if (exists(p))
		return LWK_CGROUP_V2;
	snprintf(p, sizeof(p), "%s/cpuset/cpuset.cpus", root);
	if (exists(p))
		return LWK_CGROUP_V1;
	return LWK_CGROUP_NONE;
}

const char *lwk_cgroup_version_name(enum lwk_cgroup_version v)
{
	return v == LWK_CGROUP_V2 ? "v2" : v == LWK_CGROUP_V1 ? "v1" : "none";
}

int lwk_cgroup_init(struct lwk_cgroup *cg, const char *root, const char *path, char *err,
		    size_t errlen)
{
	memset(cg, 0, sizeof(*cg));
	if (!root || root[0] != '/' || strlen(root) >= sizeof(cg->root))
		return ERR("lwk: cgroup root '%s' is not an absolute path", root ? root : "");
	if (!path || path[0] != '/' || strlen(path) >= sizeof(cg->path) || strstr(path, "/..") ||
	    strstr(path, "//"))
		return ERR("lwk: cgroup path '%s' is not a clean absolute path", path ? path : "");
	cg->version = lwk_cgroup_detect(root);
	if (cg->version == LWK_CGROUP_NONE)
		return ERR("lwk: no cgroup v2 or v1 cpuset hierarchy under %s", root);
	snprintf(cg->root, sizeof(cg->root), "%s", root);
	snprintf(cg->path, sizeof(cg->path), "%s", strcmp(path, "/") ? path : "");
	return 0;
}

void lwk_cgroup_dir(const struct lwk_cgroup *cg, const char *controller, char *out, size_t len)
{
	if (cg->version == LWK_CGROUP_V2)
		snprintf(out, len, "%s%s", cg->root, cg->path);
	else
		snprintf(out, len, "%s/%s%s", cg->root, controller, cg->path);
}

int lwk_cgroup_write_knob(const char *dir, const char *file, const char *value, char *err,
			  size_t errlen)
{
	char p[1200];
	int fd, saved;
	ssize_t n;
	size_t len = strlen(value);

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ERR("lwk: cannot open %s: %s", p, strerror(errno));
	n = write(fd, value, len);
	saved = errno;
	close(fd);
	if (n != (ssize_t)len)
		return ERR("lwk: cannot write '%s' to %s: %s", value, p,
			   n < 0 ? strerror(saved) : "short write");
	return 0;
}

int lwk_cgroup_read_knob(const char *dir, const char *file, char *buf, size_t len, char *err,
			 size_t errlen)
{
	char p[1200];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ERR("lwk: cannot open %s: %s", p, strerror(errno));
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return ERR("lwk: cannot read %s: %s", p, strerror(errno));
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* v2: enable in the parent what a child needs and the parent has. */
static int enable_in_parent(const struct lwk_cgroup *cg, char *err, size_t errlen)
{
	static const char *const want[] = { "cpuset", "cpu", "memory", "hugetlb" };
	char parent[1100], have[512], sub[512], cmd[64], word[32], h[520], s[520];
	char *slash;

	dir_of(cg, NULL, parent, sizeof(parent));
	slash = strrchr(parent, '/');
	if (!slash || (size_t)(slash - parent) < strlen(cg->root))
		return ERR("lwk: cgroup %s has no parent to delegate from", cg->path);
	*slash = '\0';
	if (read_file(parent, "cgroup.controllers", have, sizeof(have), err, errlen) ||
	    read_file(parent, "cgroup.subtree_control", sub, sizeof(sub), err, errlen))
		return -1;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		/* Whole words: "cpu" is also the start of "cpuset". */
		snprintf(word, sizeof(word), " %s ", want[i]);
		snprintf(h, sizeof(h), " %s ", have);
		snprintf(s, sizeof(s), " %s ", sub);
		if (!strstr(h, word) || strstr(s, word))
			continue;
		snprintf(cmd, sizeof(cmd), "+%s", want[i]);
		if (write_file(parent, "cgroup.subtree_control", cmd, err, errlen))
			return -1;
	}
	return 0;
}

int lwk_cgroup_create(const struct lwk_cgroup *cg, char *err, size_t errlen)
{
	char dir[1100], parent[1100], buf[4096];

	if (!cg->path[0])
		return ERR("lwk: will not create the root cgroup");
	if (cg->version == LWK_CGROUP_V2) {
		if (enable_in_parent(cg, err, errlen))
			return -1;
		dir_of(cg, NULL, dir, sizeof(dir));
		if (mkdir(dir, 0755) && errno != EEXIST)
			return ERR("lwk: cannot create cgroup %s: %s", dir, strerror(errno));
		return 0;
	}
	for (size_t i = 0; i < sizeof(v1_controllers) / sizeof(v1_controllers[0]); i++) {
		char hier[400];

		snprintf(hier, sizeof(hier), "%s/%s", cg->root, v1_controllers[i]);
		if (!exists(hier)) {
			if (i == 0)
				return ERR("lwk: no cpuset hierarchy at %s", hier);
			continue; /* a controller this kernel or site lacks */
		}
		dir_of(cg, v1_controllers[i], dir, sizeof(dir));
		if (mkdir(dir, 0755) && errno != EEXIST)
			return ERR("lwk: cannot create cgroup %s: %s", dir, strerror(errno));
	}
	/* A new v1 cpuset is empty and takes no process: start from the
	 * parent's CPUs and memory nodes. */
	dir_of(cg, "cpuset", dir, sizeof(dir));
	snprintf(parent, sizeof(parent), "%s", dir);
	*strrchr(parent, '/') = '\0';
	for (int k = 0; k < 2; k++) {
		const char *file = k ? "cpuset.mems" : "cpuset.cpus";

		if (read_file(dir, file, buf, sizeof(buf), err, errlen))
			return -1;
		if (buf[0])
			continue;
		if (read_file(parent, file, buf, sizeof(buf), err, errlen) ||
		    write_file(dir, file, buf[0] ? buf : "\n", err, errlen))
			return -1;
	}
	return 0;
}

bool lwk_cgroup_has(const struct lwk_cgroup *cg, const char *controller)
{
	char dir[1100];

	dir_of(cg, controller, dir, sizeof(dir));
	return exists(dir);
}

int lwk_cgroup_lacks_cpuset(const char *dir, char *why, size_t len)
{
	char have[512], h[520], unused[8];

	why[0] = '\0';
	if (lwk_cgroup_read_knob(dir, "cgroup.controllers", have, sizeof(have), unused,
				 sizeof(unused)))
		return 0;
	snprintf(h, sizeof(h), " %s ", have);
	if (strstr(h, " cpuset "))
		return 0;
	snprintf(why, len, "the cpuset controller is not delegated to %s (its cgroup.controllers: "
		 "'%s')", dir, have);
	return 1;
}

int lwk_cgroup_enable(const struct lwk_cgroup *cg, char *err, size_t errlen)
{
	return cg->version == LWK_CGROUP_V2 ? enable_in_parent(cg, err, errlen) : 0;
}

/* Has the cgroup at dir cgroups below it? */
static bool has_children(const char *dir)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir(dir);

	while (d && !found && (e = readdir(d)))
		found = e->d_type == DT_DIR && e->d_name[0] != '.';
	if (d)
		closedir(d);
	return found;
}

int lwk_cgroup_remove(const struct lwk_cgroup *cg, char *err, size_t errlen)
{
	char dir[1100];
	int rc = 0;
	size_t n = cg->version == LWK_CGROUP_V2 ? 1 : sizeof(v1_controllers) / sizeof(v1_controllers[0]);

	if (!cg->path[0])
		return ERR("lwk: will not remove the root cgroup");
	for (size_t i = 0; i < n; i++) {
		int r;

		dir_of(cg, v1_controllers[i], dir, sizeof(dir));
		/* A task that was just killed can keep a v1 hierarchy's
		 * cgroup busy (EBUSY) for a moment after it left another's:
		 * wait for it, ~2 s at most; never for a cgroup that is busy
		 * because it has cgroups below it. */
		for (int round = 0; (r = rmdir(dir)) && errno == EBUSY && round < 200 && !has_children(dir);
		     round++) {
			struct timespec t = { 0, 10 * 1000 * 1000 };

			nanosleep(&t, NULL);
		}
		if (r && errno != ENOENT && rc == 0)
			rc = ERR("lwk: cannot remove cgroup %s: %s", dir, strerror(errno));
	}
	return rc;
}

/* Write a list knob and read it back: the kernel trims what it cannot
 * give (CPUs outside the parent) or refuses silently on some versions. */
static int set_list(const struct lwk_cgroup *cg, const char *file, const struct lwk_cpuset *set,
		    char *err, size_t errlen)
{
	/* Room for every CPU the sets hold, one apart ("0,2,4,...,8190"):
	 * a list cut short would be written as a smaller, valid one. */
	enum { LIST_MAX = LWK_MAX_CPUS * 5 + 1 };
	char dir[1100], *want = malloc(LIST_MAX), *got = malloc(LIST_MAX);
	struct lwk_cpuset back;
	int rc;

	dir_of(cg, "cpuset", dir, sizeof(dir));
	if (!want || !got)
		rc = ERR("lwk: out of memory");
	else if (lwk_cpulist_format(set, want, LIST_MAX) >= LIST_MAX)
		rc = ERR("lwk: the list for %s/%s does not fit", dir, file);
	else if (!want[0])
		rc = ERR("lwk: will not set an empty %s on %s", file, dir);
	else if (write_file(dir, file, want, err, errlen) ||
		 read_file(dir, file, got, LIST_MAX, err, errlen))
		rc = -1;
	else if (lwk_cpulist_parse(got, LWK_MAX_CPUS, &back) || !lwk_cpuset_equal(&back, set))
		rc = ERR("lwk: %s/%s is '%.200s' after writing '%.200s'", dir, file, got, want);
	else
		rc = 0;
	free(want);
	free(got);
	return rc;
}

int lwk_cgroup_set_cpus(const struct lwk_cgroup *cg, const struct lwk_cpuset *cpus, char *err,
			size_t errlen)
{
	return set_list(cg, "cpuset.cpus", cpus, err, errlen);
}

int lwk_cgroup_set_mems(const struct lwk_cgroup *cg, const struct lwk_cpuset *mems, char *err,
			size_t errlen)
{
	return set_list(cg, "cpuset.mems", mems, err, errlen);
}

int lwk_cgroup_set_isolated(const struct lwk_cgroup *cg, char *err, size_t errlen)
{
	char dir[1100], got[256];

	dir_of(cg, "cpuset", dir, sizeof(dir));
	if (cg->version == LWK_CGROUP_V1)
		return write_file(dir, "cpuset.cpu_exclusive", "1", err, errlen) ||
		       write_file(dir, "cpuset.sched_load_balance", "0", err, errlen) ? -1 : 0;
	if (write_file(dir, "cpuset.cpus.partition", "isolated", err, errlen) ||
	    read_file(dir, "cpuset.cpus.partition", got, sizeof(got), err, errlen))
		return -1;
	/* The kernel accepts the write and reports "isolated invalid (...)"
	 * when, e.g., the parent is not a partition root itself. */
	if (strcmp(got, "isolated") != 0)
		return ERR("lwk: %s/cpuset.cpus.partition is '%s', not 'isolated'", dir, got);
	return 0;
}

int lwk_cgroup_set_cpu_quota(const struct lwk_cgroup *cg, uint64_t quota_us, uint64_t period_us,
			     char *err, size_t errlen)
{
	char dir[1100], v[64];

	if (period_us < 1000 || period_us > 1000000)
		return ERR("lwk: CPU quota period %llu us is outside 1000-1000000",
			   (unsigned long long)period_us);
	if (quota_us && quota_us < 1000)
		return ERR("lwk: CPU quota %llu us is below the kernel's 1000 us",
			   (unsigned long long)quota_us);
	dir_of(cg, "cpu", dir, sizeof(dir));
	if (cg->version == LWK_CGROUP_V2) {
		if (quota_us)
			snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)quota_us,
				 (unsigned long long)period_us);
		else
			snprintf(v, sizeof(v), "max %llu", (unsigned long long)period_us);
		return write_file(dir, "cpu.max", v, err, errlen);
	}
	snprintf(v, sizeof(v), "%llu", (unsigned long long)period_us);
	if (write_file(dir, "cpu.cfs_period_us", v, err, errlen))
		return -1;
	if (quota_us)
		snprintf(v, sizeof(v), "%llu", (unsigned long long)quota_us);
	else
		snprintf(v, sizeof(v), "-1");
	return write_file(dir, "cpu.cfs_quota_us", v, err, errlen);
}

int lwk_cgroup_set_memory_max(const struct lwk_cgroup *cg, uint64_t bytes, char *err,
			      size_t errlen)
{
	char dir[1100], v[32];

	dir_of(cg, "memory", dir, sizeof(dir));
	if (bytes)
		snprintf(v, sizeof(v), "%llu", (unsigned long long)bytes);
	else
		snprintf(v, sizeof(v), "%s", cg->version == LWK_CGROUP_V2 ? "max" : "-1");
	return write_file(dir, cg->version == LWK_CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes",
			  v, err, errlen);
}

/* The kernel names hugetlb files by page size: 2MB, 1GB, 64KB. */
static void hugetlb_name(unsigned long kb, char *out, size_t len)
{
	if (kb >= 1048576 && kb % 1048576 == 0)
		snprintf(out, len, "%luGB", kb / 1048576);
	else if (kb >= 1024 && kb % 1024 == 0)
		snprintf(out, len, "%luMB", kb / 1024);
	else
		snprintf(out, len, "%luKB", kb);
}

int lwk_cgroup_set_hugetlb_max(const struct lwk_cgroup *cg, unsigned long page_kb, uint64_t bytes,
			       char *err, size_t errlen)
{
	char dir[1100], size[32], file[64], v[32];

	dir_of(cg, "hugetlb", dir, sizeof(dir));
	hugetlb_name(page_kb, size, sizeof(size));
	snprintf(file, sizeof(file), "hugetlb.%s.%s", size,
		 cg->version == LWK_CGROUP_V2 ? "max" : "limit_in_bytes");
	if (bytes)
		snprintf(v, sizeof(v), "%llu", (unsigned long long)bytes);
	else
		snprintf(v, sizeof(v), "%s", cg->version == LWK_CGROUP_V2 ? "max" : "-1");
	return write_file(dir, file, v, err, errlen);
}

int lwk_cgroup_attach(const struct lwk_cgroup *cg, pid_t pid, char *err, size_t errlen)
{
	char dir[1100], v[24], hier[400];
	size_t n = cg->version == LWK_CGROUP_V2 ? 1 : sizeof(v1_controllers) / sizeof(v1_controllers[0]);

	if (pid <= 0)
		return ERR("lwk: will not move pid %d", (int)pid);
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (size_t i = 0; i < n; i++) {
		if (cg->version == LWK_CGROUP_V1) {
			snprintf(hier, sizeof(hier), "%s/%s", cg->root, v1_controllers[i]);
			if (i > 0 && !exists(hier))
				continue;
		}
		dir_of(cg, v1_controllers[i], dir, sizeof(dir));
		if (write_file(dir, "cgroup.procs", v, err, errlen))
			return -1;
	}
	return 0;
}

int lwk_parse_numa_stat(const char *text, const char *const *keys, uint64_t unit,
			uint64_t *node_bytes)
{
	const char *line = text;
	int found = 0;

	memset(node_bytes, 0, LWK_MAX_NUMA * sizeof(*node_bytes));
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		for (const char *const *k = keys; *k; k++) {
			size_t kl = strlen(*k);
			const char *p;

			/* v2 "anon N0=..", v1 "anon=123 N0=..": key then ' ' or '='. */
			if (len <= kl || strncmp(line, *k, kl) || (line[kl] != ' ' && line[kl] != '='))
				continue;
			found++;
			for (p = line + kl; p < line + len;) {
				const char *tok = memchr(p, ' ', (size_t)(line + len - p));

				if (!tok)
					break;
				p = tok + 1;
				if (*p == 'N') {
					char *e1, *e2;
					unsigned long node = strtoul(p + 1, &e1, 10);
					unsigned long long v;

					if (e1 == p + 1 || *e1 != '=')
						return -1;
					v = strtoull(e1 + 1, &e2, 10);
					if (e2 == e1 + 1 || (e2 < line + len && *e2 != ' '))
						return -1;
					if (node < LWK_MAX_NUMA)
						node_bytes[node] += (uint64_t)v * unit;
				}
			}
		}
		line = end ? end + 1 : NULL;
	}
	return found ? 0 : -1;
}

int lwk_cgroup_numa_bytes(const struct lwk_cgroup *cg, uint64_t *node_bytes, char *err,
			  size_t errlen)
{
	static const char *const v2_keys[] = { "anon", "file", NULL };
	static const char *const v1_keys[] = { "total", NULL };
	char dir[1100];
	char *buf = malloc(65536);
	int rc;

	if (!buf)
		return ERR("lwk: out of memory");
	dir_of(cg, "memory", dir, sizeof(dir));
	rc = read_file(dir, "memory.numa_stat", buf, 65536, err, errlen);
	if (rc == 0 &&
	    lwk_parse_numa_stat(buf, cg->version == LWK_CGROUP_V2 ? v2_keys : v1_keys,
				cg->version == LWK_CGROUP_V2 ? 1 : (uint64_t)sysconf(_SC_PAGESIZE),
				node_bytes))
		rc = ERR("lwk: %s/memory.numa_stat is not in the expected format", dir);
	free(buf);
	return rc;
}

int lwk_cgroup_get_cpuset(const struct lwk_cgroup *cg, struct lwk_cpuset *cpus,
			  struct lwk_cpuset *mems, char *err, size_t errlen)
{
	char dir[1100], buf[4096];

	dir_of(cg, "cpuset", dir, sizeof(dir));
	if (read_file(dir, "cpuset.cpus", buf, sizeof(buf), err, errlen))
		return -1;
	if (lwk_cpulist_parse(buf, LWK_MAX_CPUS, cpus))
		return ERR("lwk: %s/cpuset.cpus is not a CPU list: '%.64s'", dir, buf);
	if (read_file(dir, "cpuset.mems", buf, sizeof(buf), err, errlen))
		return -1;
	if (lwk_cpulist_parse(buf, LWK_MAX_CPUS, mems))
		return ERR("lwk: %s/cpuset.mems is not a node list: '%.64s'", dir, buf);
	return 0;
}

bool lwk_cgroup_numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) || !name[n])
		return false;
	for (name += n; *name; name++)
		if (*name < '0' || *name > '9')
			return false;
	return true;
}
