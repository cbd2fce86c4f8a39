/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-NUMA-node hugepage reservation: see hugepages.h. */
#include "node/hugepages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

static void nr_path(const char *sysfs, int node, unsigned long page_kb, char *out, size_t len)
{
	snprintf(out, len, "%s/devices/system/node/node%d/hugepages/hugepages-%lukB/nr_hugepages",
		 sysfs, node, page_kb);
}

static long read_long(const char *path)
{
	char buf[32], *end;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;
	long v;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v < 0)
		return -1;
	return v;
}

static int write_long(const char *path, long v)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	int len = snprintf(buf, sizeof(buf), "%ld", v);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, buf, (size_t)len);
	close(fd);
	return n == len ? 0 : -1;
}

long lwk_hugepages_count(const char *sysfs, int node, unsigned long page_kb)
{
	char p[512];

	nr_path(sysfs, node, page_kb, p, sizeof(p));
	return read_long(p);
}

int lwk_hugepages_reserve(const char *sysfs, int node, unsigned long page_kb, long pages,
			  struct lwk_hugepages *r, char *err, size_t errlen)
{
	char p[512], compact[512];
	long now;
	int fd;

	memset(r, 0, sizeof(*r));
	r->node = node;
	r->page_kb = page_kb;
	r->wanted = pages;
	if (node < 0 || pages < 0 || !page_kb)
		return ERR("lwk: hugepages: bad request (node %d, %ld pages of %lu kB)", node, pages,
			   page_kb);
	nr_path(sysfs, node, page_kb, p, sizeof(p));
	r->before = read_long(p);
	if (r->before < 0)
		return ERR("lwk: hugepages: cannot read %s: no %lu kB pages on NUMA node %d?", p,
			   page_kb, node);
	if (!pages)
		return 0;
	/* Compaction first: free huge pages need contiguous free memory.
	 * Best effort (the file exists with CONFIG_COMPACTION). */
	snprintf(compact, sizeof(compact), "%s/devices/system/node/node%d/compact", sysfs, node);
	fd = open(compact, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0) {
			/* not fatal: the reservation below says what it got */
		}
		close(fd);
	}
	if (write_long(p, r->before + pages))
		return ERR("lwk: hugepages: cannot write %ld to %s: %s", r->before + pages, p,
			   strerror(errno));
	now = read_long(p);
	if (now < 0)
		return ERR("lwk: hugepages: cannot read back %s", p);
	/* Another job may have changed the count meanwhile: what we added
	 * is at most what we asked for. */
	r->added = now - r->before;
	if (r->added < 0)
		r->added = 0;
	if (r->added > pages)
		r->added = pages;
	return 0;
}

int lwk_hugepages_release(const char *sysfs, const struct lwk_hugepages *r, char *err,
			  size_t errlen)
{
	char p[512];
	long now;

	if (!r->added)
		return 0;
	nr_path(sysfs, r->node, r->page_kb, p, sizeof(p));
	now = read_long(p);
	if (now < 0)
		return ERR("lwk: hugepages: cannot read %s", p);
	if (write_long(p, now > r->added ? now - r->added : 0))
		return ERR("lwk: hugepages: cannot give back %ld pages through %s: %s", r->added, p,
			   strerror(errno));
	return 0;
}

uint64_t lwk_hugepages_os_floor(uint64_t node_total)
{
	uint64_t part = node_total / LWK_OS_FLOOR_DIV;

	return part > LWK_OS_FLOOR_MIN ? part : LWK_OS_FLOOR_MIN;
}

int lwk_hugepages_node_mem(const char *sysfs, int node, uint64_t *total, uint64_t *free_b)
{
	char p[512], line[256];
	int found = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/devices/system/node/node%d/meminfo", sysfs, node);
	f = fopen(p, "re");
	if (!f)
		return -1;
	/* "Node 0 MemTotal:  5859532 kB" */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		char key[32];
		int n;

		if (sscanf(line, "Node %d %31s %llu kB", &n, key, &kb) != 3 || n != node)
			continue;
		if (!strcmp(key, "MemTotal:")) {
			*total = (uint64_t)kb * 1024;
			found |= 1;
		} else if (!strcmp(key, "MemFree:")) {
			*free_b = (uint64_t)kb * 1024;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -1;
}

bool lwk_hugepages_node_has(const char *sysfs, int node, const struct lwk_cpuset *cpus)
{
	char p[512], text[4096];
	struct lwk_cpuset mine;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/devices/system/node/node%d/cpulist", sysfs, node);
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return true;
	text[n] = '\0';
	if (n && text[n - 1] == '\n')
		text[n - 1] = '\0';
	if (lwk_cpulist_parse(text, LWK_MAX_CPUS, &mine))
		return true;
	lwk_cpuset_and(&mine, cpus);
	return lwk_cpuset_count(&mine) > 0;
}

int lwk_hugepages_fit(const char *sysfs, int node, bool os_node, uint64_t bytes, char *err,
		      size_t errlen)
{
	uint64_t total = 0, free_b = 0, floor, avail;

	if (!bytes || lwk_hugepages_node_mem(sysfs, node, &total, &free_b))
		return 0;
	floor = os_node ? lwk_hugepages_os_floor(total) : 0;
	avail = free_b > floor ? free_b - floor : 0;
	if (bytes <= avail)
		return 0;
	if (os_node)
		return ERR("lwk: --lwk: mem= asks %lluM of hugepages on NUMA node %d, where the OS "
			   "runs: it has %lluM free and keeps %lluM of it for the system, so %lluM is "
			   "available; ask for less memory (mem=)",
			   (unsigned long long)(bytes >> 20), node, (unsigned long long)(free_b >> 20),
			   (unsigned long long)(floor >> 20), (unsigned long long)(avail >> 20));
	return ERR("lwk: --lwk: mem= asks %lluM of hugepages on NUMA node %d, which has %lluM "
		   "free (available); ask for less memory (mem=)",
		   (unsigned long long)(bytes >> 20), node, (unsigned long long)(avail >> 20));
}
