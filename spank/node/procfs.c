/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "node/procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lwk_cgroup_line(const char **cursor, char *ctl, size_t ctllen, char *path, size_t pathlen)
{
	while (*cursor && **cursor) {
		const char *p = *cursor, *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		const char *c1 = memchr(p, ':', (size_t)(end - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;

		*cursor = nl ? nl + 1 : NULL;
		if (!c2)
			continue;
		snprintf(ctl, ctllen, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		snprintf(path, pathlen, "%.*s", (int)(end - c2 - 1), c2 + 1);
		return 1;
	}
	return 0;
}

void lwk_cgroup_text_read(const char *path, char *text, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(text, 1, len - 1, f) : 0;

	if (f)
		fclose(f);
	text[n] = '\0';
}

int lwk_cgroup_v2_dir(const char *text, const char *cgroup_root, char *dir, size_t len)
{
	char ctl[256], path[4096];
	const char *cursor = text;

	while (lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path)))
		if (!ctl[0] && path[0] == '/') {
			snprintf(dir, len, "%s%s", cgroup_root, strcmp(path, "/") ? path : "");
			return 0;
		}
	return -1;
}

int lwk_slurm_scope_dir(const char *text, const char *cgroup_root, const char *node, char *dir,
			size_t len)
{
	char self[4700], cand[4700];
	const char *names[2] = { NULL, "slurmstepd.scope" };
	char named[300];
	size_t n;
	struct stat st;

	if (lwk_cgroup_v2_dir(text, cgroup_root, self, sizeof(self)) == 0) {
		n = strlen(self);
		if (n > 7 && !strcmp(self + n - 7, "/slurmd")) {
			self[n - 7] = '\0';
			n -= 7;
			if (n > 6 && !strcmp(self + n - 6, ".scope")) {
				snprintf(dir, len, "%s", self);
				return 0;
			}
		}
	}
	snprintf(named, sizeof(named), "%s_slurmstepd.scope", node);
	names[0] = named;
	for (int i = 0; i < 2; i++) {
		snprintf(cand, sizeof(cand), "%s/system.slice/%s", cgroup_root, names[i]);
		if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(dir, len, "%s", cand);
			return 0;
		}
	}
	return -1;
}

static const char sluid_digits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

bool lwk_sluid_shaped(const char *name, size_t n)
{
	if (n != 14 || name[0] != 's')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!name[i] || !strchr(sluid_digits, name[i]))
			return false;
	return true;
}

void lwk_sluid_format(uint64_t v, char out[15])
{
	out[0] = 's';
	for (int i = 13; i >= 1; i--, v >>= 5)
		out[i] = sluid_digits[v & 31];
	out[14] = '\0';
}

/* Is name (n bytes) "job_<job>" (job 0: any "job_<n>")? */
static bool job_id_name(const char *name, size_t n, uint32_t job)
{
	char want[32];
	size_t w;

	if (job) {
		w = (size_t)snprintf(want, sizeof(want), "job_%u", job);
		return n == w && !memcmp(name, want, w);
	}
	if (n < 5 || n > 14 || memcmp(name, "job_", 4) || name[4] == '0')
		return false;
	for (size_t i = 4; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

bool lwk_cgroup_job_name_is(const char *name, size_t n, uint32_t job, const char *sluid)
{
	if (job_id_name(name, n, job))
		return true;
	if (!lwk_sluid_shaped(name, n))
		return false;
	return !sluid || (strlen(sluid) == n && !memcmp(name, sluid, n));
}

/* The job level of path (see lwk_cgroup_job_level); job 0 and sluid
 * NULL: any job's.  A "job_<n>" component wins over a SLUID. */
static size_t job_level(const char *path, size_t n, uint32_t job, const char *sluid,
			size_t *start)
{
	size_t found = 0;

	for (size_t at = 0; at < n;) {
		const char *c = path + at + 1;
		const char *slash = memchr(c, '/', n - at - 1);
		size_t len = slash ? (size_t)(slash - c) : n - at - 1;

		if (path[at] != '/')
			return 0;
		if (job_id_name(c, len, job)) {
			*start = at;
			return at + 1 + len;
		}
		if (!found && slash && (size_t)(slash - path) + 6 <= n && !strncmp(slash + 1, "step_", 5) &&
		    lwk_sluid_shaped(c, len) && lwk_cgroup_job_name_is(c, len, job, sluid)) {
			*start = at;
			found = at + 1 + len;
		}
		at += 1 + len;
	}
	return found;
}

size_t lwk_cgroup_job_level(const char *path, size_t n, uint32_t job, const char *sluid,
			    size_t *start)
{
	return job ? job_level(path, n, job, sluid, start) : 0;
}

int lwk_cgroup_job_name(const char *path, char *name, size_t len)
{
	size_t start, end = job_level(path, strlen(path), 0, NULL, &start);

	if (!end || end - start > len)
		return 0;
	snprintf(name, len, "%.*s", (int)(end - start - 1), path + start + 1);
	return 1;
}

int lwk_cgroup_job_of(const char *proc_cgroup, uint32_t job, const char *sluid)
{
	char ctl[256], path[4096], name[32];
	const char *cursor = proc_cgroup;

	while (lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path))) {
		if (!lwk_cgroup_job_name(path, name, sizeof(name)))
			continue;
		if (!strncmp(name, "job_", 4))
			return lwk_cgroup_job_name_is(name, strlen(name), job, NULL);
		return sluid && sluid[0] ? !strcmp(name, sluid) : -1;
	}
	return -1;
}

/* The job level in path (job_12 is not job_123), or NULL; *n is its
 * length with its '/'. */
static char *job_component(char *path, uint32_t job, size_t *n)
{
	size_t start, end = lwk_cgroup_job_level(path, strlen(path), job, NULL, &start);

	if (!end)
		return NULL;
	*n = end - start;
	return path + start;
}

/* Is ctl (a v1 line's controllers, comma separated) one naming c? */
static bool has_controller(const char *ctl, const char *c)
{
	size_t n = strlen(c);

	for (const char *p = ctl; (p = strstr(p, c)); p += n)
		if ((p == ctl || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

int lwk_job_cgroup(const char *proc_cgroup, uint32_t job, const char *cgroup_root,
		   char *out, size_t len)
{
	/* v2's unified line (""), else v1's cpuacct hierarchy (it also
	 * gives the job's CPU total; but Slurm 22.05, as checked on the
	 * host's v1 cluster, puts slurmstepd in none: jobacct_gather/cgroup
	 * moves only tasks there), else v1's freezer (proctrack/cgroup: slurmstepd in the
	 * job level, every process of the job below). */
	static const char *const wanted[] = { "", "cpuacct", "freezer" };
	char ctl[256], path[4096], *hit;
	size_t n;

	for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
		const char *cursor = proc_cgroup;

		while (lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path))) {
			if (w ? !has_controller(ctl, wanted[w]) : ctl[0] != '\0')
				continue;
			if (!(hit = job_component(path, job, &n)))
				continue;
			hit[n] = '\0'; /* keep up to and with job_<job> */
			if (ctl[0])
				snprintf(out, len, "%s/%s%s", cgroup_root, ctl, path);
			else
				snprintf(out, len, "%s%s", cgroup_root, path);
			return 0;
		}
	}
	return -1;
}

int lwk_cgroup_escape_paths(const char *proc_cgroup, uint32_t job, const char *cgroup_root,
			    char out[][512], int max)
{
	char ctl[256], path[4096], *hit;
	const char *cursor = proc_cgroup;
	int count = 0, w;
	size_t n;

	while (count < max && lwk_cgroup_line(&cursor, ctl, sizeof(ctl), path, sizeof(path))) {
		if (!(hit = job_component(path, job, &n)))
			continue;
		*hit = '\0'; /* the path above the job */
		if (!ctl[0])
			w = snprintf(out[count], 512, "%s%s/system/cgroup.procs", cgroup_root, path);
		else if (strncmp(ctl, "name=", 5)) /* named v1 hierarchies hold no resources */
			w = snprintf(out[count], 512, "%s/%s/cgroup.procs", cgroup_root, ctl);
		else
			continue;
		if (w > 0 && w < 512) /* a cut path would name another cgroup */
			count++;
	}
	return count;
}

bool lwk_environ_matches(const char *env, size_t len, uint32_t job, const char *node)
{
	char want_job[40], want_node[300];
	bool job_ok = false, node_ok = node == NULL;
	size_t i = 0;

	snprintf(want_job, sizeof(want_job), "SLURM_JOB_ID=%u", job);
	if (node)
		snprintf(want_node, sizeof(want_node), "SLURMD_NODENAME=%s", node);
	while (i < len) {
		const char *v = env + i;
		size_t n = strnlen(v, len - i);

		if (n == strlen(want_job) && !memcmp(v, want_job, n))
			job_ok = true;
		else if (node && n == strlen(want_node) && !memcmp(v, want_node, n))
			node_ok = true;
		i += n + 1;
	}
	return job_ok && node_ok;
}

static int read_small(const char *path, char *buf, size_t len, size_t *got)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;
	size_t total = 0;

	if (fd < 0)
		return -1;
	while (total < len - 1 && (n = read(fd, buf + total, len - 1 - total)) > 0)
		total += (size_t)n;
	close(fd);
	buf[total] = '\0';
	*got = total;
	return 0;
}

/* Which of a cgroup's processes cgroup_walk leaves out. */
enum own { OWN_NONE, OWN_V1, OWN_V2 };

/* Slurm's own processes in a job cgroup: slurmstepd sits in the job
 * level itself on v1 (freezer: so that freezing a step leaves it
 * running), in step_<n>/slurm on v2; the job's tasks are below the
 * steps.  Only v2's step_<n>/slurm is Slurm's: on v1 the job user owns
 * the step directories and could make one to hide processes in. */
static bool slurm_own(enum own own, int depth, const char *dir)
{
	const char *leaf = strrchr(dir, '/'), *parent = leaf;

	if (own == OWN_NONE)
		return false;
	if (depth == 0)
		return true;
	if (own != OWN_V2 || depth != 2 || strcmp(leaf + 1, "slurm"))
		return false;
	while (parent > dir && parent[-1] != '/')
		parent--;
	return !strncmp(parent, "step_", 5);
}

/* Pids in dir/cgroup.procs and below into pids; *skipped counts those
 * left out as Slurm's own. */
static int cgroup_walk(const char *dir, pid_t *pids, size_t max, size_t *n, int depth,
		       enum own own, size_t *skipped)
{
	char path[4096], buf[65536];
	size_t got;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (read_small(path, buf, sizeof(buf), &got))
		return -1;
	if (slurm_own(own, depth, dir)) {
		for (const char *p = buf; *p; p++)
			*skipped += *p == '\n';
		buf[0] = '\0';
	}
	if (got == sizeof(buf) - 1) {
		/* Full: the last pid may be cut; drop the partial line rather
		 * than count another process as the job's. */
		char *nl = strrchr(buf, '\n');

		if (nl)
			nl[1] = '\0';
		else
			buf[0] = '\0';
	}
	for (char *p = buf; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > 0 && *n < max)
			pids[(*n)++] = (pid_t)v;
		p = end;
		while (*p == '\n')
			p++;
	}
	if (depth >= 8 || !(d = opendir(dir)))
		return 0;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cgroup_walk(path, pids, max, n, depth + 1, own, skipped);
	}
	closedir(d);
	return 0;
}

int lwk_cgroup_pids(const char *dir, pid_t *pids, size_t max, size_t *n)
{
	size_t skipped = 0;

	*n = 0;
	return cgroup_walk(dir, pids, max, n, 0, OWN_NONE, &skipped);
}

int lwk_cgroup_job_pids(const char *job_cgroup, pid_t *pids, size_t max, size_t *n,
			size_t *slurm_own_n)
{
	char path[4096];

	*n = *slurm_own_n = 0;
	/* cgroup.controllers: in every cgroup v2 directory, in none of v1. */
	snprintf(path, sizeof(path), "%s/cgroup.controllers", job_cgroup);
	return cgroup_walk(job_cgroup, pids, max, n, 0, access(path, F_OK) ? OWN_V1 : OWN_V2,
			   slurm_own_n);
}

int lwk_scan_job_pids(const char *proc_root, uint32_t job, const char *node,
		      pid_t *pids, size_t max, size_t *n, uint64_t *not_job)
{
	/* On the heap, not static: no buffer shared between threads. */
	char path[512], *env = malloc(65536);
	DIR *d = env ? opendir(proc_root) : NULL;
	struct dirent *e;

	*n = 0;
	if (!d) {
		free(env);
		return -1;
	}
	while ((e = readdir(d))) {
		size_t got;

		unsigned long pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtoul(e->d_name, NULL, 10);
		if (not_job && pid < LWK_PID_BITS && (not_job[pid / 64] >> (pid % 64) & 1))
			continue;
		snprintf(path, sizeof(path), "%s/%s/environ", proc_root, e->d_name);
		if (read_small(path, env, 65536, &got))
			continue; /* gone, or a kernel thread */
		if (lwk_environ_matches(env, got, job, node)) {
			if (*n < max)
				pids[(*n)++] = (pid_t)pid;
		} else if (not_job && pid < LWK_PID_BITS) {
			not_job[pid / 64] |= UINT64_C(1) << (pid % 64);
		}
	}
	closedir(d);
	free(env);
	return 0;
}

int lwk_parse_proc_stat(const char *text, uint64_t *busy, uint64_t *total, uint64_t *forks)
{
	unsigned long long v[10] = { 0 };
	const char *p;
	int n;

	if (strncmp(text, "cpu ", 4))
		return -1;
	n = sscanf(text + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	if (n < 4)
		return -1;
	*total = 0;
	/* guest and guest_nice (8, 9) are already inside user and nice. */
	for (int i = 0; i < n && i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - (n > 4 ? v[4] : 0); /* minus idle and iowait */
	p = strstr(text, "\nprocesses ");
	*forks = p ? strtoull(p + 11, NULL, 10) : 0;
	return 0;
}

int lwk_parse_meminfo(const char *text, uint64_t *total_kb, uint64_t *avail_kb)
{
	const char *t = strstr(text, "MemTotal:"), *a = strstr(text, "MemAvailable:");

	if (!t)
		return -1;
	*total_kb = strtoull(t + 9, NULL, 10);
	*avail_kb = a ? strtoull(a + 13, NULL, 10) : 0;
	return 0;
}

int lwk_nodestat_open(struct lwk_nodestat *s, const char *proc_root)
{
	char path[512];

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/stat", proc_root);
	s->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/meminfo", proc_root);
	s->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/loadavg", proc_root);
	s->load_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->stat_fd < 0 || s->mem_fd < 0 || s->load_fd < 0) {
		lwk_nodestat_close(s);
		return -1;
	}
	return 0;
}

void lwk_nodestat_close(struct lwk_nodestat *s)
{
	if (s->stat_fd > 0)
		close(s->stat_fd);
	if (s->mem_fd > 0)
		close(s->mem_fd);
	if (s->load_fd > 0)
		close(s->load_fd);
	s->stat_fd = s->mem_fd = s->load_fd = -1;
}

static ssize_t pread_text(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static int nodestat_read(struct lwk_nodestat *s, char *buf, size_t len)
{
	if (pread_text(s->stat_fd, buf, len) <= 0 ||
	    lwk_parse_proc_stat(buf, &s->busy, &s->total, &s->forks))
		return -1;
	if (pread_text(s->mem_fd, buf, len) <= 0 ||
	    lwk_parse_meminfo(buf, &s->mem_total_kb, &s->mem_avail_kb))
		return -1;
	if (pread_text(s->load_fd, buf, len) <= 0)
		return -1;
	s->load1 = strtod(buf, NULL);
	return 0;
}

int lwk_nodestat_read(struct lwk_nodestat *s)
{
	/* /proc/stat of a node of many CPUs: on the heap, not static (no
	 * buffer shared between threads). */
	char *buf = malloc(65536);
	int rc = buf ? nodestat_read(s, buf, 65536) : -1;

	free(buf);
	return rc;
}

int lwk_parse_cpu_stat(const char *text, uint64_t *usage_usec)
{
	const char *p = strstr(text, "usage_usec ");

	if (!p || (p != text && p[-1] != '\n'))
		return -1;
	*usage_usec = strtoull(p + 11, NULL, 10);
	return 0;
}

int lwk_cgroup_cpu_us(const char *job_cgroup, uint64_t *cpu_us)
{
	char path[4096], buf[4096];
	size_t got;

	snprintf(path, sizeof(path), "%s/cpu.stat", job_cgroup);
	if (read_small(path, buf, sizeof(buf), &got) == 0 && lwk_parse_cpu_stat(buf, cpu_us) == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/cpuacct.usage", job_cgroup);
	if (read_small(path, buf, sizeof(buf), &got) == 0 && got > 0) {
		*cpu_us = strtoull(buf, NULL, 10) / 1000;
		return 0;
	}
	return -1;
}
