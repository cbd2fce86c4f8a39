/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "node/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field n (1-based, counting from state = 3) after the comm. */
int lwk_procstat_parse(const char *buf, size_t len, struct lwk_procstat *out)
{
	const char *open_paren, *close_paren = NULL, *p, *end = buf + len;
	unsigned long long v[25] = { 0 };
	int field = 3;
	char *e;
	long pid;

	memset(out, 0, sizeof(*out));
	open_paren = memchr(buf, '(', len);
	if (!open_paren)
		return -1;
	for (p = buf; p < end; p++)
		if (*p == ')')
			close_paren = p; /* the last one: comm can hold ')' */
	if (!close_paren || close_paren < open_paren || close_paren + 2 >= end)
		return -1;
	errno = 0;
	pid = strtol(buf, &e, 10);
	/* pid_t is an int, and the kernel's pids stay below 2^22. */
	if (e == buf || errno || pid <= 0 || pid > 0x7fffffffL || *e != ' ')
		return -1;
	{
		size_t n = (size_t)(close_paren - open_paren - 1);

		if (n >= sizeof(out->comm))
			n = sizeof(out->comm) - 1;
		memcpy(out->comm, open_paren + 1, n);
		out->comm[n] = '\0';
	}
	p = close_paren + 2;
	out->state = *p++;
	/* Fields 4 (ppid) to 24 (rss), space-separated numbers; the few
	 * that can be negative (priority, nice) are not used: kept as 0. */
	while (field < 24) {
		unsigned long long x = 0;
		bool neg = false;

		while (p < end && *p == ' ')
			p++;
		if (p < end && *p == '-') {
			neg = true;
			p++;
		}
		if (p >= end || *p < '0' || *p > '9')
			return -1;
		while (p < end && *p >= '0' && *p <= '9')
			x = x * 10 + (unsigned long long)(*p++ - '0');
		v[++field] = neg ? 0 : x;
	}
	if (field < 24)
		return -1;
	out->pid = (pid_t)pid;
	out->ppid = (pid_t)v[4];
	out->utime = v[14];
	out->stime = v[15];
	out->num_threads = v[20];
	out->starttime = v[22];
	out->rss_pages = v[24];
	return 0;
}

struct entry {
	pid_t pid;	/* 0 = free */
	int fd;
	bool seen;
};

struct lwk_proctab {
	char root[256];
	size_t cap, count;
	struct entry *e; /* open addressing by pid */
};

struct lwk_proctab *lwk_proctab_new(const char *proc_root, size_t max_pids)
{
	struct lwk_proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->root, sizeof(t->root), "%s", proc_root ? proc_root : "/proc");
	t->cap = 16;
	while (t->cap < max_pids * 2)
		t->cap *= 2;
	t->e = calloc(t->cap, sizeof(*t->e));
	if (!t->e) {
		free(t);
		return NULL;
	}
	return t;
}

void lwk_proctab_free(struct lwk_proctab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].pid)
			close(t->e[i].fd);
	free(t->e);
	free(t);
}

static struct entry *slot(struct lwk_proctab *t, pid_t pid, bool create)
{
	size_t i = ((size_t)pid * 2654435761u) & (t->cap - 1);
	struct entry *tomb = NULL;

	for (size_t n = 0; n < t->cap; n++, i = (i + 1) & (t->cap - 1)) {
		if (t->e[i].pid == pid)
			return &t->e[i];
		if (t->e[i].pid == 0) {
			if (t->e[i].fd == -1 && !tomb) {
				tomb = &t->e[i]; /* deleted: keep probing */
				continue;
			}
			if (t->e[i].fd != -1)
				return create ? (tomb ? tomb : &t->e[i]) : NULL;
		}
	}
	return create ? tomb : NULL;
}

static void forget(struct lwk_proctab *t, struct entry *en)
{
	close(en->fd);
	en->pid = 0;
	en->fd = -1; /* tombstone */
	t->count--;
}

int lwk_proctab_read(struct lwk_proctab *t, pid_t pid, struct lwk_procstat *out)
{
	struct entry *en = slot(t, pid, false);
	char buf[1024];
	ssize_t n;

	if (!en) {
		char path[300];
		int fd;

		if (t->count * 2 >= t->cap) {
			errno = ENOSPC; /* the table is sized once: never grow */
			return -1;
		}
		snprintf(path, sizeof(path), "%s/%d/stat", t->root, (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return -1;
		en = slot(t, pid, true);
		en->pid = pid;
		en->fd = fd;
		t->count++;
	}
	n = pread(en->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		forget(t, en); /* ESRCH: the process is gone */
		return -1;
	}
	buf[n] = '\0';
	en->seen = true;
	if (lwk_procstat_parse(buf, (size_t)n, out) || out->pid != pid) {
		forget(t, en);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

void lwk_proctab_sweep(struct lwk_proctab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->e[i].pid)
			continue;
		if (!t->e[i].seen)
			forget(t, &t->e[i]);
		else
			t->e[i].seen = false;
	}
}

size_t lwk_proctab_count(const struct lwk_proctab *t)
{
	return t->count;
}

bool lwk_procstat_skip(uint64_t cpu_ticks, uint64_t start_ticks, uint64_t now_ticks,
		       uint64_t threshold, bool new_process_seen)
{
	uint64_t life;

	if (new_process_seen || now_ticks <= start_ticks)
		return false;
	life = now_ticks - start_ticks;
	/* cpu / life < threshold / 10000, without floating point */
	return cpu_ticks * 10000 < threshold * life;
}
