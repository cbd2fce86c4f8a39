/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition of one job on one node: see lwkpart.h. */
#include "lwk/part.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "node/hugepages.h"
#include "node/irqaff.h"
#include "lwk/mckernel.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define STATE_MAX (256 * 1024)

/* ---- the state file, as text (pure) ----------------------------------- */

/*
 * One line per fact, in the order things were done:
 *
 *   job 42
 *   backend linux
 *   app_cpus 2-7            os_cpus 0-1            mem_nodes 0-1
 *   page_kb 2048            node_mem 0 314572800   deleg 134217728 100000 100000
 *   irq 24 0-7              (an IRQ moved, with its old affinity)
 *   irqs 12 3               (moved, refused)
 *   huge 0 150 150          (node, pages wanted, pages added)
 *   cgroup /slurm-lwk/node1/job_42/app   (made by the plugin)
 *   ready
 */

static void put(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(*o < len ? buf + *o : NULL, *o < len ? len - *o : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		*o += (size_t)w;
}

/* "<key><sep><list>\n"; an empty list is "-" in the state, "" for tasks. */
static void put_list(char *buf, size_t len, size_t *o, const char *key, char sep,
		     const struct lwk_cpuset *s)
{
	char list[4096];

	lwk_cpulist_format(s, list, sizeof(list));
	put(buf, len, o, "%s%c%s\n", key, sep, list[0] || sep == '=' ? list : "-");
}

/* The plan's lines (what setup decided, before it does anything). */
size_t lwk_part_format(const struct lwk_part *p, char *buf, size_t len)
{
	size_t o = 0;

	if (len)
		buf[0] = '\0';
	put(buf, len, &o, "job %" PRIu32 "\nbackend %s\n", p->job, p->backend);
	if (p->mcexec[0])
		put(buf, len, &o, "mcexec %s\n", p->mcexec);
	put_list(buf, len, &o, "app_cpus", ' ', &p->plan.app_cpus);
	put_list(buf, len, &o, "os_cpus", ' ', &p->plan.os_cpus);
	put_list(buf, len, &o, "mem_nodes", ' ', &p->plan.app_nodes);
	put(buf, len, &o, "page_kb %lu\n", p->plan.page_kb);
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		if (p->plan.node_mem[n])
			put(buf, len, &o, "node_mem %d %" PRIu64 "\n", n, p->plan.node_mem[n]);
	put(buf, len, &o, "deleg %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", p->plan.deleg_mem,
	    p->plan.deleg_quota_us, p->plan.deleg_period_us);
	return o;
}

static int parse_list(const char *v, unsigned int max, struct lwk_cpuset *s)
{
	return lwk_cpulist_parse(strcmp(v, "-") ? v : "", max, s);
}

int lwk_part_parse(const char *text, struct lwk_part *p, char *err, size_t errlen)
{
	const char *line = text;
	unsigned int lineno = 0;

	memset(p, 0, sizeof(*p));
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		p->huge_before[n] = -1;
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[4200], key[16], v[4096];
		unsigned long long a, b, c;
		int node, k;

		lineno++;
		if (n >= sizeof(l))
			return ERR("lwk: state line %u is too long", lineno);
		memcpy(l, line, n);
		l[n] = '\0';
		line += n + (nl ? 1 : 0);
		if (!l[0])
			continue;
		k = sscanf(l, "%15s %4095s", key, v);
		if (!strcmp(l, "ready")) {
			p->ready = true;
		} else if (k != 2) {
			return ERR("lwk: state line %u is not 'key value': %.40s", lineno, l);
		} else if (!strcmp(key, "job")) {
			if (sscanf(v, "%llu", &a) != 1 || a > UINT32_MAX)
				return ERR("lwk: state line %u: bad job", lineno);
			p->job = (uint32_t)a;
		} else if (!strcmp(key, "backend")) {
			if (strcmp(v, "linux") && strcmp(v, "mckernel"))
				return ERR("lwk: state line %u: bad backend", lineno);
			snprintf(p->backend, sizeof(p->backend), "%s", v);
		} else if (!strcmp(key, "mcexec")) {
			if (v[0] != '/' || strlen(v) >= sizeof(p->mcexec))
				return ERR("lwk: state line %u: bad mcexec", lineno);
			snprintf(p->mcexec, sizeof(p->mcexec), "%s", v);
		} else if (!strcmp(key, "mck")) {
			/* "booting" too: a boot cut short may have booted. */
			p->mck_booted = !strcmp(v, "booted") || !strcmp(v, "booting");
		} else if (!strcmp(key, "app_cpus") || !strcmp(key, "os_cpus")) {
			if (parse_list(v, LWK_MAX_CPUS,
				       key[0] == 'a' ? &p->plan.app_cpus : &p->plan.os_cpus))
				return ERR("lwk: state line %u: bad CPU list", lineno);
		} else if (!strcmp(key, "mem_nodes")) {
			if (parse_list(v, LWK_MAX_NUMA, &p->plan.app_nodes))
				return ERR("lwk: state line %u: bad node list", lineno);
		} else if (!strcmp(key, "page_kb")) {
			if (sscanf(v, "%llu", &a) != 1 || (a && a != 2048 && a != 1048576))
				return ERR("lwk: state line %u: bad page size", lineno);
			p->plan.page_kb = (unsigned long)a;
		} else if (!strcmp(key, "node_mem")) {
			if (sscanf(l, "node_mem %d %llu", &node, &a) != 2 || node < 0 ||
			    node >= LWK_MAX_NUMA)
				return ERR("lwk: state line %u: bad node_mem", lineno);
			p->plan.node_mem[node] = a;
		} else if (!strcmp(key, "deleg")) {
			if (sscanf(l, "deleg %llu %llu %llu", &a, &b, &c) != 3)
				return ERR("lwk: state line %u: bad deleg", lineno);
			p->plan.deleg_mem = a;
			p->plan.deleg_quota_us = b;
			p->plan.deleg_period_us = c;
		} else if (!strcmp(key, "irqs")) {
			if (sscanf(l, "irqs %llu %llu", &a, &b) != 2 || a > UINT32_MAX || b > UINT32_MAX)
				return ERR("lwk: state line %u: bad irqs", lineno);
			p->irq_moved = (unsigned int)a;
			p->irq_refused = (unsigned int)b;
		} else if (!strcmp(key, "huge")) {
			if (sscanf(l, "huge %d %llu %llu", &node, &a, &b) != 3 || node < 0 ||
			    node >= LWK_MAX_NUMA || a > LONG_MAX || b > a)
				return ERR("lwk: state line %u: bad huge", lineno);
			p->huge_wanted[node] = (long)a;
			p->huge_added[node] = (long)b;
			p->huge_before[node] = -1; /* the result is known */
		} else if (!strcmp(key, "hugeask")) {
			if (sscanf(l, "hugeask %d %llu %llu", &node, &a, &b) != 3 || node < 0 ||
			    node >= LWK_MAX_NUMA || a > LONG_MAX || b > LONG_MAX)
				return ERR("lwk: state line %u: bad hugeask", lineno);
			p->huge_before[node] = (long)a;
			p->huge_wanted[node] = (long)b;
		} else if (strcmp(key, "irq") && strcmp(key, "cgroup") && strcmp(key, "jobcg") &&
			   strcmp(key, "memcharge")) {
			/* irq, cgroup, jobcg and memcharge lines are the teardown's. */
			return ERR("lwk: state line %u: unknown key '%s'", lineno, key);
		}
	}
	return 0;
}

/* ---- what the tasks see (pure) ---------------------------------------- */

size_t lwk_part_env(const struct lwk_part *p, enum lwk_part_role role, const char *isolation,
		    char *buf, size_t len)
{
	size_t o = 0;
	char mem[1024];
	bool huge = false;

	if (len)
		buf[0] = '\0';
	put_list(buf, len, &o, "SLURM_LWK_APP_CPUS", '=', &p->plan.app_cpus);
	put_list(buf, len, &o, "SLURM_LWK_OS_CPUS", '=', &p->plan.os_cpus);
	put_list(buf, len, &o, "SLURM_LWK_MEM_NODES", '=', &p->plan.app_nodes);
	put(buf, len, &o, "SLURM_LWK_BACKEND=%s\n", p->backend);
	if (p->mcexec[0])
		put(buf, len, &o, "SLURM_LWK_MCEXEC=%s\n", p->mcexec);
	put(buf, len, &o, "SLURM_LWK_ROLE=%s\n", role == LWK_ROLE_APP ? "app" : "delegation");
	if (isolation && *isolation)
		put(buf, len, &o, "SLURM_LWK_ISOLATION=%s\n", isolation);
	if (lwk_plan_mem_arg(&p->plan, mem, sizeof(mem)) == 0 && mem[0])
		put(buf, len, &o, "SLURM_LWK_MEM=%s\n", mem);
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		huge |= p->huge_wanted[n] > 0;
	if (huge) {
		/* "2048kB:0=150/150,1=120/150": pages got/asked per node. */
		const char *sep = ":";

		put(buf, len, &o, "SLURM_LWK_HUGEPAGES=%lukB", p->plan.page_kb);
		for (int n = 0; n < LWK_MAX_NUMA; n++) {
			if (!p->huge_wanted[n])
				continue;
			put(buf, len, &o, "%s%d=%ld/%ld", sep, n, p->huge_added[n], p->huge_wanted[n]);
			sep = ",";
		}
		put(buf, len, &o, "\n");
	}
	return o;
}

/* ---- state files (root's, in <state_root>/<node>/<job>/) -------------- */

static void state_file(const struct lwk_node_roots *r, uint32_t job, const char *name, char *out,
		       size_t len)
{
	snprintf(out, len, "%s/%s/%" PRIu32 "/%s", r->state_root, r->node, job, name);
}

/*
 * The job's lock, taken (blocking): the fd; -1 with errno ENOENT when
 * there is none and create is false; else -1 with err.  The teardown
 * unlinks the lock file while holding it: a waiter that then gets the
 * lock of a file that is gone opens the path again.
 */
static int lock_job(const struct lwk_node_roots *r, uint32_t job, bool create, char *err,
		    size_t errlen)
{
	char dir[4096], path[4200];
	struct stat held, now;
	int fd;

	for (;;) {
		if (create &&
		    lwk_state_dir(r->state_root, r->node, job, dir, sizeof(dir), err, errlen))
			return -1;
		state_file(r, job, "lwk.lock", path, sizeof(path));
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
		if (fd < 0) {
			int e = errno;

			if (create || e != ENOENT)
				snprintf(err, errlen, "lwk: cannot open %s: %s", path, strerror(e));
			errno = e;
			return -1;
		}
		while (flock(fd, LOCK_EX) && errno == EINTR)
			;
		if (fstat(fd, &held) == 0 && stat(path, &now) == 0 && held.st_ino == now.st_ino &&
		    held.st_dev == now.st_dev)
			return fd;
		close(fd);
		if (!create) {
			errno = ENOENT;
			return -1;
		}
	}
}

/* Read the state text; 0 (text, possibly empty when there is none) or -1. */
static int read_state(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len)
{
	char path[4200];
	int fd;
	size_t n = 0;
	ssize_t got;

	buf[0] = '\0';
	state_file(r, job, "lwk.state", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	{
		/* Root acts on what it says (kills, writes to sysfs): only a
		 * file of root's that nobody else could have written. */
		struct stat st;

		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
			close(fd);
			return -1;
		}
	}
	while (n < len - 1 && (got = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	buf[n] = '\0';
	return 0;
}

static int append_state(const struct lwk_node_roots *r, uint32_t job, const char *text, char *err,
			size_t errlen)
{
	char path[4200];
	size_t len = strlen(text);
	int fd;

	state_file(r, job, "lwk.state", path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		snprintf(err, errlen, "lwk: cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* What a teardown could not undo, kept as state lines for the next. */
struct remains {
	char *text;
	size_t len;
	int failed; /* items that failed (header lines do not count) */
};

static void keep(struct remains *k, bool failed, const char *fmt, ...)
{
	size_t o = strlen(k->text);
	va_list ap;

	if (o + 1 >= k->len)
		return;
	va_start(ap, fmt);
	vsnprintf(k->text + o, k->len - o, fmt, ap);
	va_end(ap);
	k->failed += failed;
}

/* ---- the plugin's own cgroups ------------------------------------------ */

/* SIGKILL every process in the cgroup path of hierarchy hier (v1: of
 * controller) and below: never one a reused pid names outside it
 * (cgroup.kill, or a pidfd checked against the cgroup: cgroup.c). */
static int kill_tree(const struct lwk_node_roots *r, const char *hier, const char *controller,
		     const char *path)
{
	return lwk_cgroup_kill_tree(hier, controller, path, r->proc);
}

/* Remove the cgroup directory and the ones below it, deepest first. */
static int rmdir_tree(const char *dir, int depth)
{
	char path[1500];
	struct dirent *e;
	DIR *d = depth <= 8 ? opendir(dir) : NULL;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
			    strlen(dir) + strlen(e->d_name) < 1200) {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				rmdir_tree(path, depth + 1);
			}
		closedir(d);
	}
	return rmdir(dir) && errno != ENOENT ? -1 : 0;
}

/* Kill what is left in a cgroup tree, wait (up to ~2 s) for it to be
 * empty, and remove it.  Returns how many processes were killed, or -1
 * when the tree could not be removed. */
static int clear_tree(const struct lwk_node_roots *r, const char *hier, const char *controller,
		      const char *path)
{
	char dir[1200];
	int killed = 0;

	snprintf(dir, sizeof(dir), "%s%s", hier, path);
	/* Until the tree is gone (~2 s at most): a killed process stays
	 * listed in the cgroup while it exits, and rmdir fails with EBUSY
	 * until it is reaped, though no process is left to signal. */
	for (int round = 0; round < 200; round++) {
		struct timespec t = { 0, 10 * 1000 * 1000 };
		int n = kill_tree(r, hier, controller, path);

		if (n > 0 && !killed)
			killed = n;
		if (n <= 0) {
			if (rmdir_tree(dir, 0) == 0)
				return killed;
			if (errno != EBUSY)
				return -1;
		}
		nanosleep(&t, NULL);
	}
	return -1;
}

/* The own cgroups the state records, removed deepest first. */
static int remove_own_cgroups(const struct lwk_node_roots *r, const char *state, char *log,
			      size_t loglen, struct remains *k)
{
	const char *line = state;
	char paths[16][800];
	int n = 0, rc = 0;

	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len > 7 && len < 7 + sizeof(paths[0]) && !strncmp(line, "cgroup ", 7) && n < 16) {
			memcpy(paths[n], line + 7, len - 7);
			paths[n++][len - 7] = '\0';
		}
		line += len + (nl ? 1 : 0);
	}
	for (int i = n - 1; i >= 0; i--) {
		struct lwk_cgroup cg;
		char err[512];

		/* Only what this plugin makes: never a cgroup of Slurm's. */
		if (strncmp(paths[i], "/slurm-lwk/", 11) ||
		    lwk_cgroup_init(&cg, r->cgroup_root, paths[i], err, sizeof(err)))
			continue;
		{
			char hier[400];

			snprintf(hier, sizeof(hier), "%s%s", cg.root,
				 cg.version == LWK_CGROUP_V1 ? "/cpuset" : "");
			if (clear_tree(r, hier, cg.version == LWK_CGROUP_V1 ? "cpuset" : NULL,
				       cg.path) > 0)
				lwk_log_append(log, loglen, "killed what was left in %s", cg.path);
		}
		if (lwk_cgroup_remove(&cg, err, sizeof(err))) {
			lwk_log_append(log, loglen, "%s", err);
			keep(k, true, "cgroup %s\n", paths[i]);
			rc = -1;
		}
	}
	if (n) {
		/* The shared levels go with their last job. */
		char parents[2][300], err[512];
		struct lwk_cgroup cg;

		snprintf(parents[0], sizeof(parents[0]), "/slurm-lwk/%s", r->node);
		snprintf(parents[1], sizeof(parents[1]), "/slurm-lwk");
		for (int i = 0; i < 2; i++)
			if (lwk_cgroup_init(&cg, r->cgroup_root, parents[i], err, sizeof(err)) == 0)
				lwk_cgroup_remove(&cg, err, sizeof(err));
	}
	return rc;
}

/*
 * Slurm's cgroup of the job (the "jobcg" lines): at the teardown the job
 * is over, so whatever still runs there was left by a slurmstepd that
 * died (nothing else kills it), and its cgroups with it.  Only a path
 * ending in this job's "/job_<id>" is touched.
 */
static void clear_job_cgroups(const struct lwk_node_roots *r, uint32_t job, const char *state,
			      char *log, size_t loglen, struct remains *k)
{
	static const char *const v1[] = { "cpuset", "memory", "freezer", "cpu", "cpuacct",
					  "devices", "hugetlb", "pids" };
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char want[32];

	snprintf(want, sizeof(want), "/job_%" PRIu32, job);
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char path[800], hier[400];

		if (len > 6 && len - 6 < sizeof(path) && !strncmp(line, "jobcg ", 6)) {
			memcpy(path, line + 6, len - 6);
			path[len - 6] = '\0';
			if (path[0] == '/' && !strstr(path, "/..") && strlen(path) > strlen(want) &&
			    !strcmp(path + strlen(path) - strlen(want), want)) {
				bool left = false;

				for (size_t i = 0; i < (v == LWK_CGROUP_V1 ? 8 : 1); i++) {
					int killed;

					snprintf(hier, sizeof(hier), "%s%s%s", r->cgroup_root,
						 v == LWK_CGROUP_V1 ? "/" : "", v == LWK_CGROUP_V1 ? v1[i] : "");
					killed = clear_tree(r, hier, v == LWK_CGROUP_V1 ? v1[i] : NULL,
							    path);
					left |= killed < 0;
					if (killed > 0)
						lwk_log_append(log, loglen, "killed %d process(es) a dead slurmstepd left in %s",
						      killed, path);
				}
				if (left)
					keep(k, true, "jobcg %s\n", path);
			}
		}
		line += len + (nl ? 1 : 0);
	}
}

/* ---- mem= in the job's memory ---------------------------------------------- */

/* The job's memory cgroup (path up to and with "/job_<id>") from a
 * task's /proc/<pid>/cgroup text: v2 the "0::" line, v1 the line of the
 * memory controller.  -1 when the task is in none of the job's. */
static int job_memory_cgroup(const char *proc_cgroup, enum lwk_cgroup_version v, uint32_t job,
			     char *out, size_t len)
{
	char want[40];
	size_t w = (size_t)snprintf(want, sizeof(want), "/job_%" PRIu32, job);

	for (const char *line = proc_cgroup; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[1024], padded[300], *ctrls, *path, *at;

		if (n >= sizeof(l))
			n = 0;
		memcpy(l, line, n);
		l[n] = '\0';
		line += (nl ? (size_t)(nl - line) + 1 : strlen(line));
		ctrls = strchr(l, ':');
		path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		*ctrls++ = '\0';
		snprintf(padded, sizeof(padded), ",%s,", ctrls);
		if (v == LWK_CGROUP_V2 ? strcmp(l, "0") || ctrls[0] : !strstr(padded, ",memory,"))
			continue;
		/* "/job_7" followed by "/" or the end: not job_71. */
		for (at = strstr(path, want); at; at = strstr(at + 1, want))
			if (at[w] == '/' || at[w] == '\0')
				break;
		if (!at || path[0] != '/' || strstr(path, "/..") || (size_t)(at - path) + w >= len)
			return -1;
		snprintf(out, len, "%.*s", (int)((size_t)(at - path) + w), path);
		return 0;
	}
	return -1;
}

/* The memory limit of cgroup path: bytes, 0 for none ("max", or v1's
 * near-2^63 "unlimited"), -1 unreadable. */
static int read_mem_limit(const struct lwk_node_roots *r, enum lwk_cgroup_version v,
			  const char *path, uint64_t *bytes)
{
	char p[1200], buf[64], *end;
	unsigned long long b;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s%s%s/%s", r->cgroup_root, v == LWK_CGROUP_V1 ? "/memory" : "", path,
		 v == LWK_CGROUP_V1 ? "memory.limit_in_bytes" : "memory.max");
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!strncmp(buf, "max", 3)) {
		*bytes = 0;
		return 0;
	}
	errno = 0;
	b = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -1;
	*bytes = b >= (1ULL << 62) ? 0 : (uint64_t)b;
	return 0;
}

/* What mem= took outside the job's memory: the hugepages added, or
 * McKernel's memory. */
static uint64_t reserved_bytes(const struct lwk_part *p)
{
	uint64_t sum = 0;

	for (int n = 0; n < LWK_MAX_NUMA; n++)
		sum += p->mck_booted ? p->plan.node_mem[n]
				     : (uint64_t)p->huge_added[n] * p->plan.page_kb * 1024;
	return sum;
}

static int record_once(const struct lwk_node_roots *r, uint32_t job, const char *line, char *err,
		       size_t errlen);

int lwk_part_charge(const struct lwk_node_roots *r, const struct lwk_part *p,
		    const char *proc_cgroup, char *what, size_t whatlen, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	uint64_t huge = reserved_bytes(p), slurm = 0, now = 0, target, keep_min;
	char path[800], line[1000];
	struct lwk_cgroup cg;

	if (whatlen)
		what[0] = '\0';
	if (!huge || v == LWK_CGROUP_NONE ||
	    job_memory_cgroup(proc_cgroup, v, p->job, path, sizeof(path)) ||
	    read_mem_limit(r, v, path, &now) || !now)
		return 0; /* nothing reserved, or Slurm limits no memory: the floor bounds mem= */
	/* Slurm's limit: the one recorded (first seen), else this one.  A
	 * value above what we write is Slurm's, written again for a new
	 * step. */
	slurm = now;
	{
		char *state = malloc(STATE_MAX), key[840];
		int fd = lock_job(r, p->job, false, err, errlen);

		if (fd < 0 || !state || read_state(r, p->job, state, STATE_MAX)) {
			free(state);
			if (fd >= 0)
				close(fd);
			return ERR("lwk: cannot read the state of job %" PRIu32, p->job);
		}
		snprintf(key, sizeof(key), "\nmemcharge %s ", path);
		{
			const char *at = strstr(state, key);
			unsigned long long a;

			if (at && sscanf(at + strlen(key), "%llu", &a) == 1)
				slurm = a;
		}
		free(state);
		close(fd);
	}
	keep_min = p->plan.deleg_mem < slurm ? p->plan.deleg_mem : slurm;
	target = slurm > huge && slurm - huge > keep_min ? slurm - huge : keep_min;
	if (now <= target)
		return 0; /* done already (another task of the step) */
	snprintf(line, sizeof(line), "memcharge %s %" PRIu64 " %" PRIu64 "\n", path, slurm, target);
	if (record_once(r, p->job, line, err, errlen) ||
	    lwk_cgroup_init(&cg, r->cgroup_root, path, err, errlen) ||
	    lwk_cgroup_set_memory_max(&cg, target, err, errlen))
		return -1;
	snprintf(what, whatlen,
		 "mem= holds %" PRIu64 "M outside the job's memory: its limit in %s is %" PRIu64
		 "M, not %" PRIu64 "M%s",
		 huge >> 20, path, target >> 20, slurm >> 20,
		 slurm - target < huge ? " (kept at deleg_mem: the job's helpers need it)" : "");
	return 0;
}

/* Undo one "memcharge <path> <slurm> <target>" line (best effort: the
 * job's cgroup is usually gone by the teardown). */
static void uncharge(const struct lwk_node_roots *r, uint32_t job, const char *line, size_t len,
		     char *log, size_t loglen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char l[1000], path[800], want[40], err[512];
	unsigned long long slurm, target;
	uint64_t now;
	struct lwk_cgroup cg;

	if (len >= sizeof(l))
		return;
	memcpy(l, line, len);
	l[len] = '\0';
	snprintf(want, sizeof(want), "/job_%" PRIu32, job);
	/* Only this job's cgroup, as recorded by lwk_part_charge. */
	if (sscanf(l, "memcharge %799s %llu %llu", path, &slurm, &target) != 3 || path[0] != '/' ||
	    strstr(path, "/..") || strlen(path) <= strlen(want) ||
	    strcmp(path + strlen(path) - strlen(want), want) || v == LWK_CGROUP_NONE ||
	    read_mem_limit(r, v, path, &now) || now != target)
		return;
	if (lwk_cgroup_init(&cg, r->cgroup_root, path, err, sizeof(err)) ||
	    lwk_cgroup_set_memory_max(&cg, slurm, err, sizeof(err)))
		lwk_log_append(log, loglen, "%s", err);
	else
		lwk_log_append(log, loglen, "gave %s its memory limit back (%lluM)", path, slurm >> 20);
}

/* ---- teardown ------------------------------------------------------------ */

/*
 * What the state says, line by line: a torn or damaged line is skipped,
 * not a reason to undo nothing.  The job is the caller's (the directory
 * the state is in).
 */
static void parse_lenient(const char *state, struct lwk_part *p, char *log, size_t loglen)
{
	char err[512];

	if (lwk_part_parse(state, p, err, sizeof(err)) == 0)
		return;
	lwk_log_append(log, loglen, "%s (reading the rest line by line)", err);
	memset(p, 0, sizeof(*p));
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		p->huge_before[n] = -1;
	for (const char *line = state; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char one[4200];
		struct lwk_part q;

		if (len < sizeof(one)) {
			memcpy(one, line, len);
			one[len] = '\0';
			if (lwk_part_parse(one, &q, err, sizeof(err)) == 0) {
				/* The plan and the flags, for the tasks and teardown. */
				if (q.job)
					p->job = q.job;
				if (q.backend[0])
					memcpy(p->backend, q.backend, sizeof(p->backend));
				if (q.mcexec[0])
					memcpy(p->mcexec, q.mcexec, sizeof(p->mcexec));
				if (lwk_cpuset_count(&q.plan.app_cpus))
					p->plan.app_cpus = q.plan.app_cpus;
				if (lwk_cpuset_count(&q.plan.os_cpus))
					p->plan.os_cpus = q.plan.os_cpus;
				if (lwk_cpuset_count(&q.plan.app_nodes))
					p->plan.app_nodes = q.plan.app_nodes;
				if (q.plan.deleg_period_us) {
					p->plan.deleg_mem = q.plan.deleg_mem;
					p->plan.deleg_quota_us = q.plan.deleg_quota_us;
					p->plan.deleg_period_us = q.plan.deleg_period_us;
				}
				for (int n = 0; n < LWK_MAX_NUMA; n++)
					if (q.plan.node_mem[n])
						p->plan.node_mem[n] = q.plan.node_mem[n];
				p->ready |= q.ready;
				if (q.plan.page_kb)
					p->plan.page_kb = q.plan.page_kb;
				p->mck_booted |= q.mck_booted;
				for (int n = 0; n < LWK_MAX_NUMA; n++)
					if (q.huge_wanted[n] || q.huge_before[n] >= 0) {
						p->huge_wanted[n] = q.huge_wanted[n];
						p->huge_added[n] = q.huge_added[n];
						p->huge_before[n] = q.huge_before[n];
					}
			}
		}
		line += len + (nl ? 1 : 0);
	}
}

/*
 * Undo what the state records, in the reverse order of setup.  kill is
 * false when a setup redoes one cut short: the job is running then, and
 * its processes are not to be touched.
 */
/*
 * What is still to undo goes to k: the state's header, what failed here
 * (to be tried again, once, by the next teardown), and with kill false
 * the cgroup lines left for the job's final teardown.  Returns -1 when
 * something failed.
 */
static int undo(const struct lwk_node_roots *r, uint32_t job, const char *state, bool kill,
		char *log, size_t loglen, struct remains *k)
{
	struct lwk_part p;
	char err[512], *irqs;
	size_t o = 0;
	int left;

	parse_lenient(state, &p, log, loglen);
	keep(k, false, "job %" PRIu32 "\nbackend %s\npage_kb %lu\n", job,
	     p.backend[0] ? p.backend : "linux", p.plan.page_kb);
	if (p.mcexec[0])
		keep(k, false, "mcexec %s\n", p.mcexec);
	/* First what still runs (mcexec holds McKernel busy). */
	if (kill) {
		remove_own_cgroups(r, state, log, loglen, k);
		clear_job_cgroups(r, job, state, log, loglen, k);
	} else {
		for (const char *line = state; *line;) {
			const char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);

			if (!strncmp(line, "cgroup ", 7) || !strncmp(line, "jobcg ", 6) ||
			    !strncmp(line, "memcharge ", 10))
				keep(k, false, "%.*s\n", (int)len, line);
			line += len + (nl ? 1 : 0);
		}
	}
	if (p.mck_booted) {
		char out[2048];

		if (lwk_mck_shutdown(r->mck_prefix, out, sizeof(out))) {
			lwk_log_append(log, loglen, "McKernel did not stop: mcstop+release.sh: %s", out);
			keep(k, true, "mck booted\n");
		} else {
			lwk_log_append(log, loglen, "McKernel stopped, its CPUs and memory released");
		}
	}
	for (int n = 0; n < LWK_MAX_NUMA; n++) {
		struct lwk_hugepages h = { .node = n, .page_kb = p.plan.page_kb,
					   .added = p.huge_added[n] };

		if (!h.page_kb || (!p.huge_wanted[n] && p.huge_before[n] < 0))
			continue;
		if (p.huge_before[n] >= 0) {
			/* Cut short between asking and recording: what was
			 * added since, up to what was asked. */
			long now = lwk_hugepages_count(r->sysfs, n, h.page_kb);

			h.added = now > p.huge_before[n] ? now - p.huge_before[n] : 0;
			if (h.added > p.huge_wanted[n])
				h.added = p.huge_wanted[n];
		}
		if (!h.added)
			continue;
		if (lwk_hugepages_release(r->sysfs, &h, err, sizeof(err))) {
			lwk_log_append(log, loglen, "%s", err);
			keep(k, true, "huge %d %ld %ld\n", n, h.added, h.added);
		} else {
			lwk_log_append(log, loglen, "gave back %ld hugepages of %lukB on NUMA node %d", h.added,
			      h.page_kb, n);
		}
	}
	/* mem= charged to the job's memory limit: Slurm's limit back, where
	 * the job's cgroup is still there and holds what we wrote. */
	for (const char *line = state; kill && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len > 10 && !strncmp(line, "memcharge ", 10))
			uncharge(r, job, line, len, log, loglen);
		line += len + (nl ? 1 : 0);
	}
	/* The "irq <n> <list>" lines, as irqaff saved them. */
	irqs = malloc(strlen(state) + 1);
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
		/* Not tried again: an IRQ gone or refused stays so. */
		left = lwk_irq_restore(r->proc, irqs, err, sizeof(err));
		lwk_log_append(log, loglen, "restored the affinity of the IRQs moved%s%s%s",
		      left ? " (not all: gone, refused or torn lines" : "", left && err[0] ? "; " : "",
		      left ? (err[0] ? err : ")") : "");
	}
	free(irqs);
	return k->failed ? -1 : 0;
}

/* Replace the job's state with text (under the job's lock). */
static int rewrite_state(const struct lwk_node_roots *r, uint32_t job, const char *text)
{
	char path[4200], tmp[4300];
	size_t len = strlen(text);
	int fd;

	state_file(r, job, "lwk.state", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	return rename(tmp, path);
}

static void remove_state(const struct lwk_node_roots *r, uint32_t job)
{
	char path[4200];

	state_file(r, job, "lwk.state", path, sizeof(path));
	unlink(path);
	state_file(r, job, "lwk.lock", path, sizeof(path));
	unlink(path);
	/* The directory goes when the sampler's files are gone too. */
	snprintf(path, sizeof(path), "%s/%s/%" PRIu32, r->state_root, r->node, job);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/%s", r->state_root, r->node);
	rmdir(path);
}

int lwk_part_teardown(const struct lwk_node_roots *r, uint32_t job, char *log, size_t loglen)
{
	char err[512], *state;
	int fd, nfd, rc;

	if (log && loglen)
		log[0] = '\0';
	fd = lock_job(r, job, false, err, sizeof(err));
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* no --lwk here: one failed open() */
		lwk_log_append(log, loglen, "%s", err);
		return -1;
	}
	nfd = lwk_node_lock(r->state_root);
	state = malloc(STATE_MAX);
	if (!state || read_state(r, job, state, STATE_MAX)) {
		free(state);
		close(fd);
		if (nfd >= 0)
			close(nfd);
		lwk_log_append(log, loglen, "cannot read the state of job %" PRIu32 " (not root's only?)", job);
		return -1;
	}
	{
		struct remains k = { malloc(STATE_MAX), STATE_MAX, 0 };

		if (!k.text) {
			free(state);
			close(fd);
			if (nfd >= 0)
				close(nfd);
			return -1;
		}
		k.text[0] = '\0';
		rc = undo(r, job, state, true, log, loglen, &k);
		/* What could not be undone stays recorded, alone: the next
		 * teardown (a sweep, slurmd's start) tries that again, and
		 * nothing that was undone twice. */
		if (rc == 0)
			remove_state(r, job);
		else if (rewrite_state(r, job, k.text))
			lwk_log_append(log, loglen, "cannot rewrite the state of job %" PRIu32, job);
		free(k.text);
	}
	free(state);
	close(fd);
	if (nfd >= 0)
		close(nfd);
	return rc < 0 ? -1 : 1;
}

/* ---- setup --------------------------------------------------------------- */

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
	rc = o ? append_state(r, job, out, err, errlen) : 0;
	free(out);
	return rc;
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
	 * node where the OS runs keeps a floor (hugepages.h). */
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
	if (append_state(r, job, line, err, errlen))
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
		if (append_state(r, job, line, err, errlen) ||
		    lwk_hugepages_reserve(r->sysfs, n, p->plan.page_kb, pages, &h, err, errlen))
			return -1;
		p->huge_wanted[n] = pages;
		p->huge_added[n] = h.added;
		snprintf(line, sizeof(line), "huge %d %ld %ld\n", n, pages, h.added);
		if (append_state(r, job, line, err, errlen))
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
	if (append_state(r, job, "mck booting\n", err, errlen) ||
	    lwk_mck_boot(r->mck_prefix, t, &p->plan, r->uid, r->gid, log, sizeof(log), err, errlen) ||
	    append_state(r, job, "mck booted\n", err, errlen))
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
	if (append_state(r, job, text, err, errlen) ||
	    (mck ? setup_mckernel(r, job, t, p, err, errlen) : setup_linux(r, job, p, err, errlen)) ||
	    append_state(r, job, "ready\n", err, errlen))
		return -1;
	p->ready = true;
	return 1;
}

/* Is the state a finished setup (its "ready" line), read leniently: a
 * damaged line after it must not make a running partition look torn. */
static bool state_ready(const char *state, struct lwk_part *p)
{
	char log[512] = "";

	if (strncmp(state, "ready\n", 6) && !strstr(state, "\nready\n"))
		return false;
	parse_lenient(state, p, log, sizeof(log));
	p->ready = true;
	return true;
}

int lwk_part_load(const struct lwk_node_roots *r, uint32_t job, struct lwk_part *p)
{
	char err[512], *state;
	int fd = lock_job(r, job, false, err, sizeof(err)), rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	state = malloc(STATE_MAX);
	rc = !state || read_state(r, job, state, STATE_MAX) ? -1 : state_ready(state, p) ? 1 : 0;
	free(state);
	close(fd);
	return rc;
}

int lwk_part_setup(const struct lwk_node_roots *r, uint32_t job, const struct lwk_topology *t,
		   const struct lwk_cpuset *job_cpus, const struct lwk_opts *o, bool whole_dies,
		   bool (*alive)(uint32_t), lwk_sweep_fn *sweep, struct lwk_part *p, char *err,
		   size_t errlen)
{
	char *state, log[2048] = "";
	struct remains k = { NULL, STATE_MAX, 0 };
	int fd, nfd, rc;

	fd = lock_job(r, job, true, err, errlen);
	if (fd < 0)
		return -1;
	state = malloc(STATE_MAX);
	if (!state || read_state(r, job, state, STATE_MAX)) {
		free(state);
		close(fd);
		return ERR("lwk: cannot read the state of job %" PRIu32 " (not root's only?)", job);
	}
	if (state_ready(state, p)) {
		free(state);
		close(fd);
		return 0; /* an earlier step did it */
	}
	if (sweep)
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
	{
		/* The partition moves the node's IRQs and takes its memory
		 * (McKernel: its CPUs), and the IRQ affinities it saves are
		 * what the node gets back: one job per node, whatever Slurm
		 * allocated (an oversubscribed partition gives every job all
		 * the CPUs). */
		char other[400];
		int o_rc = lwk_node_other_job(r, job, alive, other, sizeof(other));

		if (o_rc == 2) {
			rc = ERR("lwk: --lwk: node problem on %s: %s; an administrator should look "
				 "at it (slurm-lwk(8))%s%.900s", r->node, other, log[0] ? ": " : "",
				 log);
			if (!state[0])
				remove_state(r, job);
			goto out;
		}
		if (o_rc) {
			rc = ERR("lwk: --lwk: %s is not this job's alone: %s; --lwk needs a node no "
				 "other job uses (submit with --exclusive, outside a co-scheduling "
				 "partition)", r->node, other);
			if (!state[0])
				remove_state(r, job);
			goto out;
		}
	}
	if (state[0]) {
		/* A setup cut short (slurmstepd killed in it): undo what it
		 * did (the job runs: kill nothing), then set up anew. */
		if (undo(r, job, state, false, log, sizeof(log), &k)) {
			rewrite_state(r, job, k.text);
			rc = ERR("lwk: --lwk: %s still holds what a setup of job %" PRIu32 " cut short "
				 "left and could not be undone; lwk-sweep(8) tries again", r->node, job);
			goto out;
		}
		/* The cgroup lines stay for the job's final teardown. */
		rewrite_state(r, job, "");
		for (char *line = k.text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
			if (!strncmp(line, "cgroup ", 7) || !strncmp(line, "jobcg ", 6)) {
				char one[900];

				snprintf(one, sizeof(one), "%.*s", (int)(nl - line) + 1, line);
				append_state(r, job, one, err, errlen);
			}
	}
	rc = do_setup(r, job, t, job_cpus, o, whole_dies, p, err, errlen);
	if (rc < 0) {
		/* Nothing half set up: undo what the state records. */
		k.text[0] = '\0';
		k.failed = 0;
		if (read_state(r, job, state, STATE_MAX) == 0)
			undo(r, job, state, false, log, sizeof(log), &k);
		/* What failed, and cgroups of earlier steps, stay for the
		 * epilog or the sweep. */
		if (k.failed || strstr(k.text, "\ncgroup ") || strstr(k.text, "\njobcg "))
			rewrite_state(r, job, k.text);
		else
			remove_state(r, job);
	}
out:
	free(state);
	free(k.text);
	close(nfd);
	close(fd);
	return rc;
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
		state_file(r, jobs[i], "lwk.state", path, sizeof(path));
		if (access(path, F_OK) || alive(jobs[i]))
			continue;
		if (lwk_part_teardown(r, jobs[i], one, sizeof(one)) != 0)
			swept++;
		lwk_log_append(log, loglen, "lwk: swept job %" PRIu32 ": %s", jobs[i],
		      one[0] ? one : "nothing to undo");
	}
	return swept;
}

/* ---- placement ------------------------------------------------------------ */

/* The process's cgroup path in the unified hierarchy (v2) or the cpuset
 * one (v1), from /proc/<pid>/cgroup text. */
static int task_cgroup_path(const char *proc_cgroup, enum lwk_cgroup_version v, char *out,
			    size_t len)
{
	for (const char *line = proc_cgroup; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char l[1024], padded[300], *ctrls, *path;

		if (n < sizeof(l)) {
			memcpy(l, line, n);
			l[n] = '\0';
		} else {
			l[0] = '\0';
		}
		line += n + (nl ? 1 : 0);
		/* "<id>:<controllers>:<path>" */
		ctrls = strchr(l, ':');
		path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		*ctrls++ = '\0';
		snprintf(padded, sizeof(padded), ",%s,", ctrls);
		if (v == LWK_CGROUP_V2 ? strcmp(l, "0") || ctrls[0] : !strstr(padded, ",cpuset,"))
			continue;
		if (path[0] != '/' || strlen(path) >= len)
			return -1;
		snprintf(out, len, "%s", path);
		return 0;
	}
	return -1;
}

/*
 * Slurm's cgroup of the step that holds a task at path (v2:
 * .../job_<id>/step_<s>/user/task_<t>, v1: .../job_<id>/step_<s>): the
 * step's "user" cgroup on v2 (the parent of every task leaf, which Slurm
 * gave the step's CPUs), step_<s> itself on v1.  -1 when the path is not
 * inside this job's cgroup (Slurm made none).
 */
static int slurm_step_cgroup(const char *path, uint32_t job, enum lwk_cgroup_version v, char *out,
			     size_t len, size_t *job_len)
{
	char want[32];
	size_t w = (size_t)snprintf(want, sizeof(want), "/job_%" PRIu32 "/", job);
	const char *s = strstr(path, want), *step, *end;

	if (!s)
		return -1;
	*job_len = (size_t)(s - path) + w - 1; /* up to and with "job_<id>" */
	step = s + w;
	if (strncmp(step, "step_", 5))
		return -1;
	end = strchr(step, '/');
	if (!end)
		end = step + strlen(step);
	if ((size_t)(end - path) + 6 >= len)
		return -1;
	snprintf(out, len, "%.*s%s", (int)(end - path), path, v == LWK_CGROUP_V2 ? "/user" : "");
	return 0;
}

/* Append "line" to the job's state unless it is there; under the lock. */
static int record_once(const struct lwk_node_roots *r, uint32_t job, const char *line, char *err,
		       size_t errlen)
{
	char *state;
	int fd, rc = 0;

	fd = lock_job(r, job, false, err, errlen);
	if (fd < 0)
		return ERR("lwk: job %" PRIu32 " has no --lwk state on %s", job, r->node);
	state = malloc(STATE_MAX);
	if (!state || read_state(r, job, state, STATE_MAX))
		rc = ERR("lwk: cannot read the state of job %" PRIu32, job);
	else if (!strstr(state, line))
		rc = append_state(r, job, line, err, errlen);
	free(state);
	close(fd);
	return rc;
}

/* The plugin's own cgroup for a role, made (each level) and recorded. */
static int own_cgroup(const struct lwk_node_roots *r, const struct lwk_part *p,
		      enum lwk_part_role role, struct lwk_cgroup *cg, char *err, size_t errlen)
{
	char levels[3][600], *state, rec[700];
	int fd, rc = 0;

	snprintf(levels[0], sizeof(levels[0]), "/slurm-lwk");
	snprintf(levels[1], sizeof(levels[1]), "/slurm-lwk/%s", r->node);
	snprintf(levels[2], sizeof(levels[2]), "/slurm-lwk/%s/job_%" PRIu32, r->node, p->job);
	snprintf(rec, sizeof(rec), "%s/%s", levels[2], role == LWK_ROLE_APP ? "app" : "delegation");
	fd = lock_job(r, p->job, false, err, errlen);
	if (fd < 0)
		return ERR("lwk: job %" PRIu32 " has no --lwk state on %s", p->job, r->node);
	/* Recorded before made (once each; the teardown removes them,
	 * deepest first, and tolerates what was never made). */
	state = malloc(STATE_MAX);
	if (!state || read_state(r, p->job, state, STATE_MAX))
		rc = ERR("lwk: cannot read the state of job %" PRIu32, p->job);
	for (int i = 0; !rc && i < 2; i++) {
		char line[720];

		snprintf(line, sizeof(line), "cgroup %s\n", i ? rec : levels[2]);
		if (!strstr(state, line) && append_state(r, p->job, line, err, errlen))
			rc = -1;
	}
	free(state);
	for (int i = 0; i < 3 && !rc; i++)
		if (lwk_cgroup_init(cg, r->cgroup_root, levels[i], err, errlen) ||
		    lwk_cgroup_create(cg, err, errlen))
			rc = -1;
	if (!rc && (lwk_cgroup_init(cg, r->cgroup_root, rec, err, errlen) ||
		    lwk_cgroup_create(cg, err, errlen)))
		rc = -1;
	close(fd);
	return rc;
}

static int no_hierarchy(const struct lwk_node_roots *r, char *err, size_t errlen)
{
	return ERR("lwk: --lwk: no cgroup v2 or v1 cpuset hierarchy under %s on %s", r->cgroup_root,
		   r->node);
}

/*
 * Where the tasks of job go, judged from the cgroups of a process of
 * the step (proc_cgroup): 1 Slurm's cgroup of the step (path in step,
 * job_len long up to and with the job's part); 0 the plugin's own
 * cgroups (Slurm made none); -1 nowhere, with the reason.  One decision
 * for lwk_part_place (each task) and lwk_part_placeable (before them).
 */
static int placement_of(const struct lwk_node_roots *r, uint32_t job, enum lwk_cgroup_version v,
			const char *proc_cgroup, char *step, size_t steplen, size_t *job_len,
			char *err, size_t errlen)
{
	char path[768], want[40];

	if (v == LWK_CGROUP_NONE)
		return no_hierarchy(r, err, errlen);
	if (task_cgroup_path(proc_cgroup, v, path, sizeof(path)) == 0 &&
	    slurm_step_cgroup(path, job, v, step, steplen, job_len) == 0)
		return 1;
	snprintf(want, sizeof(want), "/job_%" PRIu32 "/", job);
	if (strstr(proc_cgroup, want) || (want[strlen(want) - 1] = '\n', strstr(proc_cgroup, want)))
		/* Slurm holds the task in cgroups of the job, but not in a
		 * cpuset one (v1 without ConstrainCores): moving it out would
		 * take it from Slurm's other limits. */
		return ERR("lwk: --lwk: Slurm's cgroups of job %" PRIu32 " on %s have no cpuset of "
			   "the step (cgroup.conf ConstrainCores=no?); --lwk needs ConstrainCores=yes "
			   "there, or no Slurm cgroups at all", job, r->node);
	return 0;
}

int lwk_part_placeable(const struct lwk_node_roots *r, uint32_t job, const char *proc_cgroup,
		       char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	char step[768];
	size_t job_len;

	if (!proc_cgroup)
		return v == LWK_CGROUP_NONE ? no_hierarchy(r, err, errlen) : 0;
	return placement_of(r, job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen) < 0
		       ? -1
		       : 0;
}

int lwk_part_place(const struct lwk_node_roots *r, const struct lwk_part *p,
		   enum lwk_part_role role, const char *proc_cgroup, pid_t pid, char *where,
		   size_t wherelen, char *isolation, size_t isolen, char *err, size_t errlen)
{
	enum lwk_cgroup_version v = lwk_cgroup_detect(r->cgroup_root);
	struct lwk_cgroup cg;
	char step[768];
	size_t job_len = 0;
	int at;

	snprintf(isolation, isolen, "none");
	if (v == LWK_CGROUP_NONE)
		return no_hierarchy(r, err, errlen);
	/* McKernel runs the job's processes on the App cores itself: every
	 * task here is an mcexec or a helper, all Linux-side. */
	if (!strcmp(p->backend, "mckernel"))
		role = LWK_ROLE_DELEGATION;
	if (!proc_cgroup[0])
		return ERR("lwk: --lwk: cannot read the cgroups of task %d", (int)pid);
	at = placement_of(r, p->job, v, proc_cgroup, step, sizeof(step), &job_len, err, errlen);
	if (at < 0)
		return -1;
	if (at == 1) {
		/* Slurm's cgroup of the step: Slurm keeps tracking,
		 * signalling and removing it. */
		char line[800];

		if (lwk_cgroup_init(&cg, r->cgroup_root, step, err, errlen) ||
		    lwk_cgroup_enable(&cg, err, errlen))
			return -1;
		/* The job's cgroup, for the teardown: what a killed
		 * slurmstepd leaves running there is killed with it. */
		snprintf(line, sizeof(line), "jobcg %.*s\n", (int)job_len, step);
		if (record_once(r, p->job, line, err, errlen))
			return -1;
	} else if (own_cgroup(r, p, role, &cg, err, errlen) ||
		   lwk_cgroup_attach(&cg, pid, err, errlen)) {
		return -1;
	}
	snprintf(where, wherelen, "%s", cg.path);
	if (role == LWK_ROLE_DELEGATION) {
		/* v1: Slurm makes a memory cgroup of the step only with
		 * ConstrainRAMSpace, a cpu one never; a limit without its
		 * cgroup is said, not invented elsewhere. */
		bool mem = lwk_cgroup_has(&cg, "memory"), cpu = lwk_cgroup_has(&cg, "cpu");

		if (lwk_cgroup_set_cpus(&cg, &p->plan.os_cpus, err, errlen) ||
		    (mem && lwk_cgroup_set_memory_max(&cg, p->plan.deleg_mem, err, errlen)) ||
		    (cpu && lwk_cgroup_set_cpu_quota(&cg, p->plan.deleg_quota_us,
						     p->plan.deleg_period_us, err, errlen)))
			return -1;
		if (!mem || !cpu)
			snprintf(where + strlen(where), wherelen - strlen(where),
				 " (v1: no %s%s%s cgroup of the step: that limit is not set)",
				 mem ? "" : "memory", !mem && !cpu ? " or " : "", cpu ? "" : "cpu");
		return 0;
	}
	if (lwk_cgroup_set_mems(&cg, &p->plan.app_nodes, err, errlen) ||
	    lwk_cgroup_set_cpus(&cg, &p->plan.app_cpus, err, errlen))
		return -1;
	{
		char why[512];

		if (lwk_cgroup_set_isolated(&cg, why, sizeof(why)) == 0) {
			snprintf(isolation, isolen, "isolated");
		} else {
			/* The kernel wants every ancestor to be a partition
			 * root (v2) or exclusive (v1), which Slurm's cgroups
			 * are not: the App cores stay a plain cpuset. */
			lwk_cgroup_clear_isolated(&cg);
			snprintf(isolation, isolen, "cpuset");
		}
	}
	return 0;
}

/* ---- whose node (under the node lock, before a setup) ------------------ */

static bool numeric(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_dir_at(int dfd, const struct dirent *e)
{
	struct stat st;

	if (e->d_type == DT_DIR)
		return true;
	if (e->d_type != DT_UNKNOWN)
		return false;
	return fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Another job's state directory: what it holds, or NULL when it holds
 * nothing but a setup's lock (a job waiting for the node lock, which
 * will find ours). */
const char *lwk_part_state_holds(const char *dir)
{
	const char *what = NULL;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "lwk.lock"))
			continue;
		if (!strcmp(e->d_name, "lwk.state")) {
			what = "has a --lwk partition there";
			break;
		}
		if (!strncmp(e->d_name, "syncmon.", 8))
			what = "has a --sync-monitor sampler there";
		else if (!what)
			what = "has slurm-lwk state there";
	}
	closedir(d);
	return what;
}

/* Are there processes in cgroup dir or below it (depth levels)?  A job
 * cgroup Slurm left empty is no job on the node. */
static bool cgroup_busy(const char *dir, int depth)
{
	char path[4200];
	struct dirent *e;
	bool busy = false;
	FILE *f;
	DIR *d;

	/* A path that does not fit cannot be judged: busy, the safe side
	 * (an idle node refused beats two partitions on one node). */
	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return true;
	f = fopen(path, "re");
	if (f) {
		busy = fgetc(f) != EOF;
		fclose(f);
	}
	if (busy || depth == 0 || !(d = opendir(dir)))
		return busy;
	while (!busy && (e = readdir(d)))
		if (e->d_name[0] != '.' && is_dir_at(dirfd(d), e)) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >=
			    sizeof(path))
				busy = true;
			else
				busy = cgroup_busy(path, depth - 1);
		}
	closedir(d);
	return busy;
}

/* Is cgroup dir a job's: named job_<n> (Slurm up to 25.11), or holding
 * a step_* cgroup (whatever the job's name, as with 26.05's SLUIDs)? */
static bool job_cgroup(const char *dir, const char *name)
{
	struct dirent *e;
	bool job = !strncmp(name, "job_", 4) && numeric(name + 4);
	DIR *d;

	if (job || !(d = opendir(dir)))
		return job;
	while (!job && (e = readdir(d)))
		job = !strncmp(e->d_name, "step_", 5) && is_dir_at(dirfd(d), e);
	closedir(d);
	return job;
}

/* A busy job cgroup in dir other than ours: 1 with what, else 0. */
static int other_job_cgroup_in(const char *dir, const char *ours, char *what, size_t len)
{
	char path[4400];
	struct dirent *e;
	int found = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, ours) || !is_dir_at(dirfd(d), e))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path)) {
			/* Cannot be judged: refused (2), never passed over. */
			snprintf(what, len, "cannot judge whether another job runs there: the cgroup "
				 "path %.200s/%.40s... is too long", dir, e->d_name);
			found = 2;
			break;
		}
		/* job_<n> Slurm's name; anything else is named as it is. */
		if (job_cgroup(path, e->d_name) && cgroup_busy(path, 3)) {
			snprintf(what, len, "job %.100s runs there (its cgroup %.200s)",
				 strncmp(e->d_name, "job_", 4) ? e->d_name : e->d_name + 4, path);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/*
 * One line of /proc/self/cgroup ("<id>:<controllers>:<path>"): the
 * directory of the job level in that hierarchy and our name there.  The
 * job level is the component named job_<job>, else the one above the
 * first step_* component.  0, or -1 when the line has no job level.
 */
static int job_level(const struct lwk_node_roots *r, uint32_t job, const char *line, size_t n,
		     char *parent, size_t plen, char *ours, size_t olen)
{
	char l[4096], want[32], *ctrls, *path, *c, *hit = NULL, *end;
	struct stat st;
	int w;

	if (n >= sizeof(l))
		return -2; /* cannot judge: the caller refuses */
	memcpy(l, line, n);
	l[n] = '\0';
	ctrls = strchr(l, ':');
	path = ctrls ? strchr(ctrls + 1, ':') : NULL;
	if (!path)
		return -1;
	*ctrls++ = '\0';
	*path++ = '\0';
	if (path[0] != '/')
		return -1;
	snprintf(want, sizeof(want), "job_%" PRIu32, job);
	for (c = path + 1; *c; c = *end ? end + 1 : end) {
		end = strchr(c, '/');
		if (!end)
			end = c + strlen(c);
		if ((size_t)(end - c) == strlen(want) && !strncmp(c, want, strlen(want))) {
			hit = c;
			break;
		}
		if (!hit && *end == '/' && !strncmp(end + 1, "step_", 5))
			hit = c;
	}
	if (!hit)
		return -1;
	end = strchr(hit, '/');
	if (end)
		*end = '\0';
	snprintf(ours, olen, "%s", hit);
	hit[-1] = '\0'; /* path is now the parent of the job level */
	/* v2 at the root, or in a hybrid's unified mount; v1 by its
	 * controllers' mount (named hierarchies by their name). */
	for (int i = 0; i < 2; i++) {
		if (ctrls[0])
			w = snprintf(parent, plen, "%s/%s%s", r->cgroup_root,
				     strncmp(ctrls, "name=", 5) ? ctrls : ctrls + 5, path);
		else
			w = snprintf(parent, plen, "%s%s%s", r->cgroup_root, i ? "/unified" : "", path);
		if (w > 0 && (size_t)w < plen) {
			char mine[4600];

			snprintf(mine, sizeof(mine), "%s/%s", parent, ours);
			if (stat(mine, &st) == 0 && S_ISDIR(st.st_mode))
				return 0;
		}
		if (ctrls[0])
			break;
	}
	return -1;
}

/* 0 none, 1 another job (what), 2 cannot judge (what says why). */
static int other_job_cgroup(const struct lwk_node_roots *r, uint32_t job, char *what, size_t len)
{
	char path[4200], text[8192], parent[4200], ours[256], more;
	size_t n = 0;
	int fd, rc;
	ssize_t got;

	snprintf(path, sizeof(path), "%s/self/cgroup", r->proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (n < sizeof(text) - 1 && (got = read(fd, text + n, sizeof(text) - 1 - n)) > 0)
		n += (size_t)got;
	got = n == sizeof(text) - 1 ? read(fd, &more, 1) : 0;
	close(fd);
	text[n] = '\0';
	/* A hierarchy not read is one not looked at: refuse, never pass. */
	if (got > 0)
		return snprintf(what, len, "cannot judge whether another job runs there: "
				"%s is longer than %zu bytes", path, sizeof(text) - 1), 2;
	for (const char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
		const char *base;
		int jl;

		nl = strchr(line, '\n');
		jl = job_level(r, job, line, nl ? (size_t)(nl - line) : strlen(line), parent,
			       sizeof(parent), ours, sizeof(ours));
		if (jl == -2)
			return snprintf(what, len, "cannot judge whether another job runs there: a "
					"line of %s is too long", path), 2;
		if (jl)
			continue;
		if ((rc = other_job_cgroup_in(parent, ours, what, len)))
			return rc;
		/* v1 keeps each user's jobs under uid_<n>: the other users'
		 * jobs are cousins. */
		base = strrchr(parent, '/');
		if (base && !strncmp(base + 1, "uid_", 4) && numeric(base + 5)) {
			char up[4200], mine[64], cousin[4500];
			struct dirent *e;
			DIR *d;

			snprintf(mine, sizeof(mine), "%s", base + 1);
			snprintf(up, sizeof(up), "%.*s", (int)(base - parent), parent);
			d = opendir(up);
			while (d && (e = readdir(d))) {
				if (strncmp(e->d_name, "uid_", 4) || !numeric(e->d_name + 4) ||
				    !strcmp(e->d_name, mine))
					continue;
				snprintf(cousin, sizeof(cousin), "%s/%s", up, e->d_name);
				if ((rc = other_job_cgroup_in(cousin, ours, what, len))) {
					closedir(d);
					return rc;
				}
			}
			if (d)
				closedir(d);
		}
	}
	return 0;
}

int lwk_node_other_job(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		       char *what, size_t len)
{
	char dir[4200];
	uint32_t *jobs = malloc(4096 * sizeof(*jobs));
	int n = jobs ? lwk_state_jobs(r->state_root, r->node, jobs, 4096) : 0;
	struct dirent *e;
	DIR *d;

	for (int i = 0; i < n; i++) {
		const char *holds;

		if (jobs[i] == job)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s/%" PRIu32, r->state_root, r->node, jobs[i]);
		if ((holds = lwk_part_state_holds(dir))) {
			int gone = !alive(jobs[i]);

			if (gone)
				snprintf(what, len, "job %" PRIu32 " is gone and left what could not "
					 "be undone (%s/; lwk-sweep(8) tries again)", jobs[i], dir);
			else
				snprintf(what, len, "job %" PRIu32 " %s", jobs[i], holds);
			free(jobs);
			return gone ? 2 : 1;
		}
	}
	free(jobs);
	lwk_state_casas_dir(r->state_root, r->node, dir, sizeof(dir));
	if ((d = opendir(dir))) {
		while ((e = readdir(d)))
			if (numeric(e->d_name) && strtoul(e->d_name, NULL, 10) != job) {
				uint32_t other = (uint32_t)strtoul(e->d_name, NULL, 10);
				int gone = !alive(other);

				if (gone)
					snprintf(what, len, "job %.20s is gone and left its "
						 "--contention-aware record %s/%.20s", e->d_name, dir,
						 e->d_name);
				else
					snprintf(what, len, "job %.20s shares it by dies under "
						 "--contention-aware", e->d_name);
				closedir(d);
				return gone ? 2 : 1;
			}
		closedir(d);
	}
	return other_job_cgroup(r, job, what, len);
}
