/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/lwk-quiet-count: the helper of bench/lwk-quiet that reads the
 * system, around the pure counting of bench/lwk_quiet.c.
 *
 *   lwk-quiet-count snapshot [--proc DIR]
 *       one line per thread of the node (lwk_quiet.h, quiet_task_parse):
 *       whether it is a kernel thread, how many CPUs it may run on, and
 *       which job's slurmstepd it is.  Taken every second while a trace
 *       runs, so that what a switch put on a CPU is known from /proc
 *       rather than guessed from its name.
 *   lwk-quiet-count count --cpus LIST [--job ID] [--job-pid PID]
 *                   [--tasks FILE] [--top N] TRACE...
 *       counts over trace files (per_cpu/cpuN/trace of the App CPUs):
 *       one "counts key=value..." line, then "name <column> <n> <name>"
 *       lines, the N names seen most in each column.
 *   lwk-quiet-count mask LIST
 *       LIST as the kernel's hex mask (for tracing_cpumask).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/lwk_quiet.h"

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: lwk-quiet-count snapshot [--proc DIR]\n"
			"       lwk-quiet-count count --cpus LIST [--job ID] [--job-pid PID] "
			"[--tasks FILE] [--top N] TRACE...\n"
			"       lwk-quiet-count mask LIST\n");
	exit(2);
}

/* A small /proc file into buf (NUL-terminated; cmdline's NULs become
 * blanks).  -1 when it cannot be read (the thread is gone). */
static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return 0;
}

/* The value of "key:\t..." in a status file, or NULL. */
static const char *status_field(const char *status, const char *key, char *out, size_t len)
{
	const char *p = strstr(status, key);
	size_t n;

	if (!p)
		return NULL;
	p += strlen(key);
	p += strspn(p, " \t");
	n = strcspn(p, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

/* Of process pid: the job whose root slurmstepd it is (0 otherwise). */
static uint32_t stepd_job_of(const char *proc, const char *pid)
{
	char path[512], buf[256], status[4096], uid[64];

	snprintf(path, sizeof(path), "%s/%s/cmdline", proc, pid);
	if (slurp(path, buf, sizeof(buf)) || !quiet_stepd_job(buf))
		return 0;
	/* A title is believed only of root's: anyone can set their own. */
	snprintf(path, sizeof(path), "%s/%s/status", proc, pid);
	if (slurp(path, status, sizeof(status)) || !status_field(status, "Uid:", uid, sizeof(uid)) ||
	    strtol(uid, NULL, 10) != 0)
		return 0;
	return quiet_stepd_job(buf);
}

/* One thread's line; nothing when it went away meanwhile. */
static void snapshot_thread(const char *proc, const char *pid, const char *tid, uint32_t job)
{
	char path[512], stat[1024], status[4096], cpus[4096], line[256];
	struct quiet_task t = {.stepd_job = job};
	struct lwk_cpuset set;

	snprintf(path, sizeof(path), "%s/%s/task/%s/stat", proc, pid, tid);
	if (slurp(path, stat, sizeof(stat)) ||
	    quiet_stat_parse(stat, t.comm, sizeof(t.comm), &t.ppid, &t.flags))
		return;
	snprintf(path, sizeof(path), "%s/%s/task/%s/status", proc, pid, tid);
	if (!slurp(path, status, sizeof(status)) &&
	    status_field(status, "Cpus_allowed_list:", cpus, sizeof(cpus)) &&
	    !lwk_cpulist_parse(cpus, LWK_MAX_CPUS, &set))
		t.ncpus = (int)lwk_cpuset_count(&set);
	t.tid = atoi(tid);
	t.tgid = atoi(pid);
	quiet_task_format(&t, line, sizeof(line));
	fputs(line, stdout);
}

static int snapshot(const char *proc)
{
	DIR *d = opendir(proc), *td;
	struct dirent *e, *te;
	char path[512];

	if (!d) {
		fprintf(stderr, "lwk-quiet-count: %s: %s\n", proc, strerror(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		uint32_t job;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		job = stepd_job_of(proc, e->d_name);
		snprintf(path, sizeof(path), "%s/%s/task", proc, e->d_name);
		td = opendir(path);
		if (!td)
			continue;
		while ((te = readdir(td)))
			if (isdigit((unsigned char)te->d_name[0]))
				snapshot_thread(proc, e->d_name, te->d_name, job);
		closedir(td);
	}
	closedir(d);
	return 0;
}

static int load_tasks(const char *file, struct quiet_table *tb)
{
	FILE *f = fopen(file, "re");
	char line[512];
	struct quiet_task t;

	if (!f) {
		fprintf(stderr, "lwk-quiet-count: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (!quiet_task_parse(line, &t) && quiet_table_add(tb, &t)) {
			fclose(f);
			return -1;
		}
	fclose(f);
	quiet_table_seal(tb);
	return 0;
}

static int count_file(struct quiet_tally *q, const char *file)
{
	FILE *f = fopen(file, "re");
	char line[1024];

	if (!f) {
		fprintf(stderr, "lwk-quiet-count: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		quiet_tally_line(q, line);
	fclose(f);
	return 0;
}

/* The top names of each column, most seen first. */
static void print_names(const struct quiet_tally *q, int top)
{
	for (int col = 0; col < QUIET_NCOLS; col++) {
		bool shown[QUIET_NAMES] = {false};

		if (col == QUIET_JOB || col == QUIET_IDLE)
			continue;
		for (int k = 0; k < top; k++) {
			size_t best = q->nnames;

			for (size_t i = 0; i < q->nnames; i++)
				if (q->names[i].col == col && !shown[i] &&
				    (best == q->nnames || q->names[i].n > q->names[best].n))
					best = i;
			if (best == q->nnames)
				break;
			shown[best] = true;
			printf("name %s %lu %s\n", quiet_col_name[col], q->names[best].n,
			       q->names[best].name);
		}
	}
}

static void print_counts(const struct quiet_tally *q, const char *cpus, size_t ntasks)
{
	printf("counts cpus=%s", cpus);
	for (int col = 0; col < QUIET_NCOLS; col++)
		printf(" %s=%lu", quiet_col_name[col], q->n[col]);
	printf(" foreign_ms=%.1f by_name=%lu unreadable=%lu tasks=%zu names_dropped=%lu\n",
	       q->foreign_s * 1e3, q->by_name, q->unreadable, ntasks, q->names_dropped);
}

struct count_args {
	const char *cpus, *tasks;
	uint32_t job;
	int job_pid, top;
};

static int count(const struct count_args *a, char **files, int nfiles)
{
	struct lwk_cpuset app;
	struct quiet_table tb = {0};
	struct quiet_tally q;
	int rc = 0;

	if (!a->cpus || lwk_cpulist_parse(a->cpus, LWK_MAX_CPUS, &app) || !lwk_cpuset_count(&app)) {
		fprintf(stderr, "lwk-quiet-count: --cpus needs a non-empty CPU list\n");
		return 2;
	}
	if (a->tasks && load_tasks(a->tasks, &tb))
		return 1;
	quiet_mark_job(&tb, a->job, a->job_pid);
	if (quiet_tally_init(&q, &app, &tb)) {
		quiet_table_free(&tb);
		return 1;
	}
	for (int i = 0; i < nfiles; i++)
		if (count_file(&q, files[i]))
			rc = 1;
	print_counts(&q, a->cpus, tb.n);
	print_names(&q, a->top);
	quiet_tally_free(&q);
	quiet_table_free(&tb);
	return rc;
}

static int count_main(int argc, char **argv)
{
	struct count_args a = {.top = 3};
	int i;

	for (i = 0; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--cpus"))
			a.cpus = argv[i + 1];
		else if (!strcmp(argv[i], "--tasks"))
			a.tasks = argv[i + 1];
		else if (!strcmp(argv[i], "--job"))
			a.job = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--job-pid"))
			a.job_pid = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--top"))
			a.top = atoi(argv[i + 1]);
		else
			usage();
	}
	return count(&a, argv + i, argc - i);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "snapshot")) {
		if (argc == 4 && !strcmp(argv[2], "--proc"))
			return snapshot(argv[3]);
		if (argc != 2)
			usage();
		return snapshot("/proc");
	}
	if (argc >= 2 && !strcmp(argv[1], "count"))
		return count_main(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "mask")) {
		struct lwk_cpuset s;
		char buf[LWK_MAX_CPUS / 4 + LWK_MAX_CPUS / 32 + 1];

		if (lwk_cpulist_parse(argv[2], LWK_MAX_CPUS, &s) || !lwk_cpuset_count(&s)) {
			fprintf(stderr, "lwk-quiet-count: mask needs a non-empty CPU list\n");
			return 2;
		}
		quiet_cpumask_format(&s, buf, sizeof(buf));
		puts(buf);
		return 0;
	}
	usage();
}
