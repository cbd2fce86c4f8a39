/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Killing every process in a cgroup and in the cgroups below it, and
 * never one outside (see lwk_cgroup_kill_tree in cgroup.h): cgroup.kill
 * where the kernel has it, else each pid of cgroup.procs pinned with a
 * pidfd, checked in /proc/<pid>/cgroup, then signalled. */
#include "node/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

bool lwk_cgroup_text_places(char *text, const char *controller, const char *path)
{
	size_t plen = strlen(path);
	char padded[300];

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *ctrls = strchr(l, ':'), *at = ctrls ? strchr(ctrls + 1, ':') : NULL;

		if (!at)
			continue;
		*at++ = '\0';
		*ctrls++ = '\0';
		if (controller) {
			char needle[64];

			snprintf(padded, sizeof(padded), ",%s,", ctrls);
			snprintf(needle, sizeof(needle), ",%s,", controller);
			if (!strcmp(l, "0") || !strstr(padded, needle))
				continue;
		} else if (strcmp(l, "0") || ctrls[0]) {
			continue;
		}
		return !strncmp(at, path, plen) && (at[plen] == '\0' || at[plen] == '/');
	}
	return false;
}

/* Is the process whose /proc is <proc>/<pid> in the cgroup path of this
 * hierarchy, or below it? */
static bool pid_in_cgroup(const char *proc, long pid, const char *controller, const char *path)
{
	char p[600], text[4096];
	ssize_t got;
	int fd;

	snprintf(p, sizeof(p), "%s/%ld/cgroup", proc, pid);
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return false;
	text[got] = '\0';
	return lwk_cgroup_text_places(text, controller, path);
}

static int pidfd_of(long pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int kill_one(const char *proc, long pid, const char *controller, const char *path)
{
	int fd = pidfd_of(pid), rc = -1;

	if (fd < 0 && errno != ENOSYS)
		return -1; /* gone (ESRCH), or not ours to pin */
	/* Checked after pinning: a pid reused before the pidfd was
	 * opened is the new process's, in another cgroup. */
	if (!pid_in_cgroup(proc, pid, controller, path)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
#ifdef SYS_pidfd_send_signal
	if (fd >= 0)
		rc = (int)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	else
#endif
		rc = kill((pid_t)pid, SIGKILL);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int kill_tree(const char *hier, const char *controller, const char *path, const char *proc,
		     int depth)
{
	char dir[1100], p[1200], sub[800];
	struct dirent *e;
	DIR *d;
	FILE *f;
	int fd, n = 0;
	long pid;

	if (depth > 8 || strlen(hier) + strlen(path) + 20 >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%s%s", hier, path);
	/* v2 (5.14+): the kernel kills the whole subtree at once; the pids
	 * still listed below are dying (signalled again, harmlessly) and
	 * counted, so that the caller waits for them to be gone. */
	snprintf(p, sizeof(p), "%s/cgroup.kill", dir);
	fd = depth || controller ? -1 : open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1) {
			/* then the pids below, one by one */
		}
		close(fd);
	}
	/* Every pid, read as a stream: a cut number would be another pid. */
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0)
		close(fd);
	while (f && fscanf(f, "%ld", &pid) == 1)
		if (pid > 1 && kill_one(proc, pid, controller, path) == 0)
			n++;
	if (f)
		fclose(f);
	d = opendir(dir);
	if (!d)
		return n;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			size_t pl = strlen(path), nl = strlen(e->d_name);

			if (pl + nl + 2 > sizeof(sub))
				continue;
			memcpy(sub, path, pl);
			sub[pl] = '/';
			memcpy(sub + pl + 1, e->d_name, nl + 1);
			n += kill_tree(hier, controller, sub, proc, depth + 1);
		}
	closedir(d);
	return n;
}

int lwk_cgroup_kill_tree(const char *hier, const char *controller, const char *path,
			 const char *proc)
{
	/* Never the whole hierarchy, never a path that climbs. */
	if (!path || path[0] != '/' || !path[1] || strstr(path, "/..") || strstr(path, "//"))
		return 0;
	return kill_tree(hier, controller, path, proc, 0);
}
