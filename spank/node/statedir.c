/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The plugin's state directories and the node's lock: see statedir.h. */
#include "node/statedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int lwk_mkdir_root(const char *path, mode_t mode)
{
	struct stat st;

	if (mkdir(path, mode) && errno != EEXIST)
		return -1;
	/* Whatever is there must be a root-owned directory, not a link. */
	if (lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

int lwk_state_dir(const char *state_root, const char *node, uint32_t job, char *out, size_t len,
		  char *err, size_t errlen)
{
	char path[4096];

	if (state_root[0] != '/' || !node[0] || strchr(node, '/') || node[0] == '.') {
		snprintf(err, errlen, "lwk: state directory '%s' or node name '%s' is not usable",
			 state_root, node);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", state_root, node);
	if (lwk_mkdir_root(state_root, 0755) || lwk_mkdir_root(path, 0755)) {
		snprintf(err, errlen, "lwk: cannot make the state directory %s: %s", path,
			 strerror(errno));
		return -1;
	}
	snprintf(out, len, "%s/%s/%u", state_root, node, job);
	if (lwk_mkdir_root(out, 0700)) {
		snprintf(err, errlen, "lwk: cannot make the state directory %s: %s", out,
			 strerror(errno));
		return -1;
	}
	return 0;
}

int lwk_state_jobs(const char *state_root, const char *node, uint32_t *jobs, int max)
{
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/%s", state_root, node);
	d = opendir(dir);
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char *end;
		unsigned long job = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && !*end && job <= UINT32_MAX)
			jobs[n++] = (uint32_t)job;
	}
	closedir(d);
	return n;
}

void lwk_state_casas_dir(const char *state_root, const char *node, char *out, size_t len)
{
	snprintf(out, len, "%s/%s/casas", state_root, node);
}

/*
 * The node's lock: IRQ affinity, hugepage counts and IHK are the node's,
 * not the job's (and on a dev cluster the host's, shared by its slurmd):
 * setups and teardowns take it in turn.  The fd, or -1.
 */
int lwk_node_lock(const char *state_root)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/.node.lock", state_root);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	return fd;
}

void lwk_log_append(char *log, size_t loglen, const char *fmt, ...)
{
	size_t o = log && loglen ? strlen(log) : 0;
	va_list ap;

	if (!log || o + 1 >= loglen)
		return;
	va_start(ap, fmt);
	vsnprintf(log + o, loglen - o, fmt, ap);
	va_end(ap);
	o = strlen(log);
	if (o + 1 < loglen) {
		log[o] = '\n';
		log[o + 1] = '\0';
	}
}
