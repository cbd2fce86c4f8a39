/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --lwk partition's state files (root's, in <state_root>/<node>/<job>/)
 * and the job's lock.  See lwk/part.h and lwk/part_int.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lwk/part_int.h"

void lwk_part_state_file(const struct lwk_node_roots *r, uint32_t job, const char *name, char *out,
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
int lwk_part_lock_job(const struct lwk_node_roots *r, uint32_t job, bool create, char *err,
		      size_t errlen)
{
	char dir[4096], path[4200];
	struct stat held, now;
	int fd;

	for (;;) {
		if (create &&
		    lwk_state_dir(r->state_root, r->node, job, dir, sizeof(dir), err, errlen))
			return -1;
		lwk_part_state_file(r, job, "lwk.lock", path, sizeof(path));
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
int lwk_part_read_state(const struct lwk_node_roots *r, uint32_t job, char *buf, size_t len)
{
	char path[4200];
	int fd;
	size_t n = 0;
	ssize_t got;

	buf[0] = '\0';
	lwk_part_state_file(r, job, "lwk.state", path, sizeof(path));
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

int lwk_part_append_state(const struct lwk_node_roots *r, uint32_t job, const char *text, char *err,
			  size_t errlen)
{
	char path[4200];
	size_t len = strlen(text);
	int fd;

	lwk_part_state_file(r, job, "lwk.state", path, sizeof(path));
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

/* Replace the job's state with text (under the job's lock). */
int lwk_part_rewrite_state(const struct lwk_node_roots *r, uint32_t job, const char *text)
{
	char path[4200], tmp[4300];
	size_t len = strlen(text);
	int fd;

	lwk_part_state_file(r, job, "lwk.state", path, sizeof(path));
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

void lwk_part_remove_state(const struct lwk_node_roots *r, uint32_t job)
{
	char path[4200];

	lwk_part_state_file(r, job, "lwk.state", path, sizeof(path));
	unlink(path);
	lwk_part_state_file(r, job, "lwk.lock", path, sizeof(path));
	unlink(path);
	/* The directory goes when the sampler's files are gone too. */
	snprintf(path, sizeof(path), "%s/%s/%" PRIu32, r->state_root, r->node, job);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/%s", r->state_root, r->node);
	rmdir(path);
}

/* Append "line" to the job's state unless it is there; under the lock. */
int lwk_part_record_once(const struct lwk_node_roots *r, uint32_t job, const char *line, char *err,
			 size_t errlen)
{
	char *state;
	int fd, rc = 0;

	fd = lwk_part_lock_job(r, job, false, err, errlen);
	if (fd < 0)
		return ERR("lwk: job %" PRIu32 " has no --lwk state on %s", job, r->node);
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, job, state, STATE_MAX))
		rc = ERR("lwk: cannot read the state of job %" PRIu32, job);
	else if (!strstr(state, line))
		rc = lwk_part_append_state(r, job, line, err, errlen);
	free(state);
	close(fd);
	return rc;
}

/* A line of what is still to undo; failed: an item that failed here. */
void lwk_part_keep(struct lwk_part_remains *k, bool failed, const char *fmt, ...)
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

/* Is the state a finished setup (its "ready" line), read leniently: a
 * damaged line after it must not make a running partition look torn. */
bool lwk_part_state_ready(const char *state, struct lwk_part *p)
{
	char log[512] = "";

	if (strncmp(state, "ready\n", 6) && !strstr(state, "\nready\n"))
		return false;
	lwk_part_parse_lenient(state, p, log, sizeof(log));
	p->ready = true;
	return true;
}

int lwk_part_load(const struct lwk_node_roots *r, uint32_t job, struct lwk_part *p)
{
	char err[512], *state;
	int fd = lwk_part_lock_job(r, job, false, err, sizeof(err)), rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	state = malloc(STATE_MAX);
	if (!state || lwk_part_read_state(r, job, state, STATE_MAX))
		rc = -1;
	else
		rc = lwk_part_state_ready(state, p) ? 1 : 0;
	free(state);
	close(fd);
	return rc;
}
