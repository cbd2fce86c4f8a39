/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-process CPU times from /proc/<pid>/stat, cheaply: each file is
 * opened once and re-read with pread() at every sample, instead of the
 * open/read/close per process per sample that made the seed's pinfo
 * cost 15-20 ms for 200 processes.  Also the seed's idle skip (3.3.1).
 */
#ifndef LWK_PROCSTAT_H
#define LWK_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lwk_procstat {
	pid_t pid;
	char comm[32];		/* as the kernel gives it (<= 15 bytes) */
	char state;
	pid_t ppid;
	uint64_t utime, stime;	/* clock ticks */
	uint64_t num_threads;
	uint64_t starttime;	/* clock ticks since boot */
	uint64_t rss_pages;
};

/* Parse the text of /proc/<pid>/stat (comm may hold spaces and ')'). */
int lwk_procstat_parse(const char *buf, size_t len, struct lwk_procstat *out);

/* Open /proc files, kept by pid. */
struct lwk_proctab;

struct lwk_proctab *lwk_proctab_new(const char *proc_root, size_t max_pids);
void lwk_proctab_free(struct lwk_proctab *t);

/*
 * Read pid's stat through its kept-open file (opening it the first
 * time).  Returns 0, or -1 when the process is gone (its file is closed
 * and forgotten: a reused pid gets a fresh file).
 */
int lwk_proctab_read(struct lwk_proctab *t, pid_t pid, struct lwk_procstat *out);

/* Close the files of pids not seen since the last call. */
void lwk_proctab_sweep(struct lwk_proctab *t);

size_t lwk_proctab_count(const struct lwk_proctab *t);

/*
 * Seed 000, 3.3.1: between full scans, a process whose lifetime CPU
 * share is below the threshold is not read, as long as no new process
 * appeared since the last scan.  threshold is in 1/100 % (100 = 1%).
 */
bool lwk_procstat_skip(uint64_t cpu_ticks, uint64_t start_ticks, uint64_t now_ticks,
		       uint64_t threshold, bool new_process_seen);

#endif
