/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/slurmconf.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int lwk_slurm_conf_find(const char *env, const char *const *cands, char *buf, size_t len)
{
	size_t used = 0;

	if (env && *env)
		return (size_t)snprintf(buf, len, "%s", env) < len ? 0 : -2;
	for (int i = 0; cands[i]; i++) {
		if (access(cands[i], F_OK) == 0)
			return (size_t)snprintf(buf, len, "%s", cands[i]) < len ? 0 : -2;
	}
	/* Not found: what was looked for, "a or b". */
	buf[0] = '\0';
	for (int i = 0; cands[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " or " : "", cands[i]);
	return -1;
}

/* dir of path (up to its last '/'; "." when it has none) into buf. */
static int dir_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return (size_t)snprintf(buf, len, ".") < len ? 0 : -1;
	if (slash == path)
		return (size_t)snprintf(buf, len, "/") < len ? 0 : -1;
	return (size_t)snprintf(buf, len, "%.*s", (int)(slash - path), path) < len ? 0 : -1;
}

/* A path as slurm.conf gives it: absolute, or below dir. */
static int resolve(const char *dir, const char *p, char *buf, size_t len)
{
	if (p[0] == '/')
		return (size_t)snprintf(buf, len, "%s", p) < len ? 0 : -1;
	return (size_t)snprintf(buf, len, "%s/%s", dir, p) < len ? 0 : -1;
}

/* file opened for reading when it is a regular file: an Include glob
 * may match a device or a FIFO, which must not be opened (or block). */
static FILE *regular_file(const char *file)
{
	struct stat st;
	FILE *f;
	int fd;

	if (stat(file, &st) || !S_ISREG(st.st_mode))
		return NULL;
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	return f;
}

/* What one look through slurm.conf and its includes may read: a file
 * may include itself many times, or be huge. */
struct scan_budget {
	int files;	/* files opened, at most 64 */
	size_t bytes;	/* bytes read, at most 1 MiB */
	int found;	/* PlugStackConfig seen (the last one counts) */
};

/* A value as Slurm's parser takes it: up to a blank, or quoted. */
static char *value_of(char *v)
{
	if (*v == '"') {
		v++;
		v[strcspn(v, "\"")] = '\0';
	} else {
		v[strcspn(v, " \t")] = '\0';
	}
	return v;
}

/*
 * key's value in file and what it includes, in order (Slurm keeps the
 * last; its key names are case-insensitive; "Include" names one file),
 * into buf: a path resolved below dir when path, else as written.
 * b->found says whether one was seen.  0, or -1 when the top file
 * cannot be read or a path is too long.
 */
static int scan(const char *file, const char *dir, int depth, const char *key, bool path,
		struct scan_budget *b, char *buf, size_t len)
{
	size_t klen = strlen(key);
	char line[4096];
	int rc = 0;
	FILE *f;

	if (b->files >= 64 || b->bytes >= (1u << 20))
		return 0;
	f = regular_file(file);
	if (!f)
		return depth ? 0 : -1;
	b->files++;
	while (rc == 0 && b->bytes < (1u << 20) && fgets(line, sizeof(line), f)) {
		char *k = line + strspn(line, " \t"), *v;

		b->bytes += strlen(line);
		k[strcspn(k, "#\r\n")] = '\0';
		if (!strncasecmp(k, "Include", 7) && (k[7] == ' ' || k[7] == '\t') && depth < 8) {
			char inc[4096];

			/* One file, as Slurm takes it: no glob. */
			v = value_of(k + 8 + strspn(k + 8, " \t"));
			if (*v && resolve(dir, v, inc, sizeof(inc)) == 0)
				rc = scan(inc, dir, depth + 1, key, path, b, buf, len);
			continue;
		}
		if (strncasecmp(k, key, klen))
			continue;
		v = k + klen + strspn(k + klen, " \t");
		if (*v != '=')
			continue;
		v = value_of(v + 1 + strspn(v + 1, " \t"));
		if (*v && path) {
			rc = resolve(dir, v, buf, len);
			b->found = 1;
		} else if (*v) {
			rc = snprintf(buf, len, "%s", v) < (int)len ? 0 : -1;
			b->found = 1;
		}
	}
	fclose(f);
	return rc;
}

int lwk_plugstack_of(const char *conf, char *buf, size_t len)
{
	struct scan_budget b = { 0, 0, 0 };
	char dir[4096];

	if (dir_of(conf, dir, sizeof(dir)) || scan(conf, dir, 0, "PlugStackConfig", true, &b, buf, len))
		goto fail;
	if (b.found || resolve(dir, "plugstack.conf", buf, len) == 0)
		return 0;
fail:
	snprintf(buf, len, "%s", conf);
	return -1;
}

int lwk_slurm_conf_value(const char *conf, const char *key, char *buf, size_t len)
{
	struct scan_budget b = { 0, 0, 0 };
	char dir[4096];

	buf[0] = '\0';
	if (dir_of(conf, dir, sizeof(dir)) || scan(conf, dir, 0, key, false, &b, buf, len))
		return -1;
	return b.found;
}

/* Is word one of list's comma-separated words? */
static bool listed(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncasecmp(p, word, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* Slurm's booleans: yes, up, true or 1 (s_p_handle_boolean). */
static bool slurm_true(const char *v)
{
	return !strcasecmp(v, "yes") || !strcasecmp(v, "up") || !strcasecmp(v, "true") ||
	       !strcmp(v, "1");
}

int lwk_casas_conf_problem(const char *conf, char *why, size_t len)
{
	char v[1024], dir[4096], cg[4200];
	int rc = lwk_slurm_conf_value(conf, "TaskPlugin", v, sizeof(v));

	why[0] = '\0';
	if (rc < 0)
		return 0; /* not for this to judge */
	if (!listed(v, "task/cgroup") && !listed(v, "cgroup")) {
		snprintf(why, len, "%s has TaskPlugin=%s: task/cgroup is needed", conf,
			 rc ? v : "(unset)");
		return -1;
	}
	if (dir_of(conf, dir, sizeof(dir)) || resolve(dir, "cgroup.conf", cg, sizeof(cg)))
		return 0;
	rc = lwk_slurm_conf_value(cg, "ConstrainCores", v, sizeof(v));
	if (rc <= 0 || !slurm_true(v)) {
		if (rc < 0)
			snprintf(why, len, "%s cannot be read: ConstrainCores=yes is needed there", cg);
		else
			snprintf(why, len, "%s has %s%s: ConstrainCores=yes is needed", cg,
				 rc ? "ConstrainCores=" : "no ConstrainCores", rc ? v : "");
		return -1;
	}
	return 0;
}

int lwk_systemd_conf_problem(const char *conf, bool systemd_runs, char *why, size_t len)
{
	char v[1024], dir[4096], cg[4200];

	why[0] = '\0';
	if (!systemd_runs || dir_of(conf, dir, sizeof(dir)) ||
	    resolve(dir, "cgroup.conf", cg, sizeof(cg)))
		return 0;
	/* Only cgroup/v2 reads it (cgroup.conf(5)); autodetect is the
	 * caller's to judge (the node's hierarchy). */
	if (lwk_slurm_conf_value(cg, "CgroupPlugin", v, sizeof(v)) == 1 && strcasecmp(v, "cgroup/v2") &&
	    strcasecmp(v, "autodetect"))
		return 0;
	if (lwk_slurm_conf_value(cg, "IgnoreSystemd", v, sizeof(v)) != 1 || !slurm_true(v))
		return 0;
	snprintf(why, len, "%s has IgnoreSystemd=%s while systemd manages this node", cg, v);
	return -1;
}
