/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-NUMA-node hugepage reservation: see hugepages.h. */
#include "hugepages.h"

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
