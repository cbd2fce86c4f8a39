/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF walks' reader (node/taskiter.h), their programs loaded by
 * node/taskiter_load.c; a build without them has node/taskiter_none.c
 * instead. */
#include "node/taskiter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "node/taskiter_load.h"
#include "node/taskiter_rec.h"
#include "node/cgiter.skel.h" /* the layout of the cgroup walk's records */

#define BTF_PATH "/sys/kernel/btf/vmlinux"
#define READ_RECS 512 /* records per read() */
#define LWK_CG_REST 100 /* reads by the task walk after the cgroup walk stopped at a limit */

struct lwk_taskiter {
	struct lwk_taskiter_progs progs; /* the loaded walks */
	int cg_link;			/* -1: the cgroup walk is not used */
	char *cg_path;			/* the job cgroup, and which directory it was */
	dev_t cg_dev;
	ino_t cg_ino;
	char walk_why[384];		/* why not the cgroup walk ("" when it is used) */
	uint64_t cg_fallbacks;		/* reads the cgroup walk could not give whole */
	unsigned cg_rest;		/* reads left before the cgroup walk is tried again */
	char fallback_why[160];		/* why the first of them */
	size_t max;
	pid_t *in_map;		/* the pids in the map, sorted */
	size_t n_in_map;
	pid_t *want;		/* scratch: the new list, sorted */
	struct lwk_taskiter_proc *procs; /* the last read's */
	size_t nprocs;
	int32_t *index;		/* open addressing by pid: into procs, -1 free */
	size_t index_cap;
	size_t *slot;		/* the index slot of each of procs */
	unsigned char *buf;	/* READ_RECS records */
};

bool lwk_taskiter_built(void)
{
	return true;
}

static int alloc_tables(struct lwk_taskiter *ti, size_t max)
{
	ti->max = max;
	ti->index_cap = 16;
	while (ti->index_cap < max * 2)
		ti->index_cap *= 2;
	ti->in_map = calloc(max, sizeof(*ti->in_map));
	ti->want = calloc(max, sizeof(*ti->want));
	ti->procs = calloc(max, sizeof(*ti->procs));
	ti->slot = calloc(max, sizeof(*ti->slot));
	ti->index = malloc(ti->index_cap * sizeof(*ti->index));
	ti->buf = malloc(READ_RECS * sizeof(struct lwk_taskiter_rec));
	if (!ti->in_map || !ti->want || !ti->procs || !ti->slot || !ti->index || !ti->buf)
		return -1;
	memset(ti->index, 0xff, ti->index_cap * sizeof(*ti->index));
	return 0;
}

/*
 * Whether this process sees the kernel's pids: the iterator reports
 * them (task->pid, task->tgid), and the pids the sampler puts in its
 * map are those of its own /proc and cgroup.procs.  In a pid namespace
 * of its own (slurmd in a container) none would match.  The initial pid
 * namespace has a fixed inode (PROC_PID_INIT_INO in the kernel's
 * proc_ns.h); its NSpid line cannot tell, as a container mounts its own
 * /proc and sees one level there.
 */
#define PID_NS_INIT_INO 0xEFFFFFFCUL

static bool sees_kernel_pids(char *ns, size_t len)
{
	struct stat st;

	snprintf(ns, len, "unknown");
	if (stat("/proc/self/ns/pid", &st))
		return true; /* a kernel without namespaces */
	snprintf(ns, len, "pid:[%lu]", (unsigned long)st.st_ino);
	return (unsigned long)st.st_ino == PID_NS_INIT_INO;
}

/*
 * Point the cgroup walk at ti->cg_path as it is now (a link holds the
 * cgroup it was made for: a job cgroup Slurm removes and makes again at
 * the same path is another one).  The directory is the job cgroup Slurm
 * made (the sampler's --cgroup, from the kernel's /proc/<pid>/cgroup),
 * opened without following a link.  0, or -1 with the reason in
 * ti->walk_why.
 */
static int attach_cgroup(struct lwk_taskiter *ti)
{
	union bpf_iter_link_info info;
	LIBBPF_OPTS(bpf_link_create_opts, opts, .iter_info = &info, .iter_info_len = sizeof(info));
	struct stat st;
	int fd, e, link;

	fd = open(ti->cg_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(ti->walk_why, sizeof(ti->walk_why), "the job cgroup %s: %s", ti->cg_path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memset(&info, 0, sizeof(info));
	info.cgroup.cgroup_fd = (__u32)fd;
	info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
	link = bpf_link_create(ti->progs.cg_prog, 0, BPF_TRACE_ITER, &opts);
	e = errno;
	close(fd);
	if (link < 0) {
		snprintf(ti->walk_why, sizeof(ti->walk_why),
			 "the cgroup walk could not attach to the job cgroup %s: %s", ti->cg_path,
			 strerror(e));
		return -1;
	}
	if (ti->cg_link >= 0)
		close(ti->cg_link);
	ti->cg_link = link;
	ti->cg_dev = st.st_dev;
	ti->cg_ino = st.st_ino;
	return 0;
}

/* Stop using the cgroup walk, saying why (in ti->walk_why). */
static void drop_cgroup_walk(struct lwk_taskiter *ti)
{
	if (ti->cg_link >= 0)
		close(ti->cg_link);
	ti->cg_link = -1;
	lwk_taskiter_unload_cgroup(&ti->progs);
}

/* The walk of the job cgroup only (node/cgiter.bpf.c), on top of the
 * task walk: 0, or -1 with the reason in ti->walk_why. */
static int open_cgroup_walk(struct lwk_taskiter *ti, const char *cgroup)
{
	if (!cgroup) {
		snprintf(ti->walk_why, sizeof(ti->walk_why),
			 "no job cgroup: the task iterator walks every task of the node");
		return -1;
	}
	if (!(ti->cg_path = strdup(cgroup))) {
		snprintf(ti->walk_why, sizeof(ti->walk_why), "%s", strerror(errno));
		return -1;
	}
	if (lwk_taskiter_load_cgroup(&ti->progs, ti->walk_why, sizeof(ti->walk_why)) ||
	    attach_cgroup(ti)) {
		drop_cgroup_walk(ti);
		return -1;
	}
	return 0;
}

struct lwk_taskiter *lwk_taskiter_open(size_t max_procs, const char *cgroup, char *err,
				      size_t errlen)
{
	struct lwk_taskiter *ti;
	char ns[64];

	if (!sees_kernel_pids(ns, sizeof(ns))) {
		snprintf(err, errlen,
			 "bpf: the sampler runs in a pid namespace of its own (%s): the task "
			 "iterator gives the kernel's pids, not those it lists", ns);
		return NULL;
	}
	if (access(BTF_PATH, R_OK)) {
		snprintf(err, errlen, "bpf: no BTF at %s (a kernel without CONFIG_DEBUG_INFO_BTF)",
			 BTF_PATH);
		return NULL;
	}
	ti = calloc(1, sizeof(*ti));
	if (ti) {
		lwk_taskiter_progs_init(&ti->progs);
		ti->cg_link = -1;
	}
	if (!ti || alloc_tables(ti, max_procs ? max_procs : 1)) {
		snprintf(err, errlen, "bpf: %s", strerror(ENOMEM));
		lwk_taskiter_close(ti);
		return NULL;
	}
	if (lwk_taskiter_load_tasks(&ti->progs, ti->max, err, errlen)) {
		lwk_taskiter_close(ti);
		return NULL;
	}
	open_cgroup_walk(ti, cgroup);
	return ti;
}

const char *lwk_taskiter_walk(const struct lwk_taskiter *ti, const char **why)
{
	*why = ti->cg_link >= 0 ? "" : ti->walk_why;
	return ti->cg_link >= 0 ? "cgroup" : "tasks";
}

const char *lwk_taskiter_loader(const struct lwk_taskiter *ti)
{
	bool cg = ti->cg_link >= 0;

	if (ti->progs.light && (!cg || ti->progs.cg_light))
		return "light";
	if (!ti->progs.light && (!cg || !ti->progs.cg_light))
		return "libbpf";
	return "light and libbpf";
}

uint64_t lwk_taskiter_fallbacks(const struct lwk_taskiter *ti, const char **why)
{
	*why = ti->fallback_why;
	return ti->cg_fallbacks;
}

void lwk_taskiter_close(struct lwk_taskiter *ti)
{
	if (!ti)
		return;
	drop_cgroup_walk(ti);
	free(ti->cg_path);
	lwk_taskiter_unload(&ti->progs); /* link, program and map fds */
	free(ti->in_map);
	free(ti->want);
	free(ti->procs);
	free(ti->slot);
	free(ti->index);
	free(ti->buf);
	free(ti);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Keep the first of each run of equal pids of a sorted list; its
 * new length. */
static size_t dedup(pid_t *p, size_t n)
{
	size_t m = 0;

	for (size_t j = 0; j < n; j++)
		if (!m || p[j] != p[m - 1])
			p[m++] = p[j];
	return m;
}

int lwk_taskiter_set_pids(struct lwk_taskiter *ti, const pid_t *pids, size_t n)
{
	size_t i, j, m = 0;
	__u8 one = 1;
	int rc = 0;

	if (n > ti->max)
		n = ti->max;
	memcpy(ti->want, pids, n * sizeof(*pids));
	qsort(ti->want, n, sizeof(*ti->want), cmp_pid);
	n = dedup(ti->want, n);
	/* First what left (both lists sorted), so that a map at its
	 * size has room for what came. */
	for (i = 0, j = 0; i < ti->n_in_map; i++) {
		while (j < n && ti->want[j] < ti->in_map[i])
			j++;
		if (j >= n || ti->want[j] != ti->in_map[i]) {
			__u32 k = (__u32)ti->in_map[i];

			bpf_map_delete_elem(ti->progs.map_fd, &k);
		}
	}
	/* Then what came.  A pid the map refused (no memory) is left out
	 * of the list in the map, so the next call adds it again. */
	for (i = 0, j = 0; j < n; j++) {
		while (i < ti->n_in_map && ti->in_map[i] < ti->want[j])
			i++;
		if (i >= ti->n_in_map || ti->in_map[i] != ti->want[j]) {
			__u32 k = (__u32)ti->want[j];

			if (bpf_map_update_elem(ti->progs.map_fd, &k, &one, BPF_ANY)) {
				rc = -1;
				continue;
			}
		}
		ti->want[m++] = ti->want[j];
	}
	/* The list now in the map (want, compacted) becomes in_map. */
	{
		pid_t *t = ti->in_map;

		ti->in_map = ti->want;
		ti->want = t;
		ti->n_in_map = m;
	}
	return rc;
}

static size_t slot_of(const struct lwk_taskiter *ti, pid_t pid)
{
	return ((size_t)pid * 2654435761u) & (ti->index_cap - 1);
}

/* Add one thread's record to its process. */
static void add_record(struct lwk_taskiter *ti, const struct lwk_taskiter_rec *r)
{
	size_t s = slot_of(ti, (pid_t)r->tgid);
	struct lwk_taskiter_proc *p;

	while (ti->index[s] >= 0 && ti->procs[ti->index[s]].pid != (pid_t)r->tgid)
		s = (s + 1) & (ti->index_cap - 1);
	if (ti->index[s] < 0) {
		if (ti->nprocs >= ti->max)
			return;
		ti->index[s] = (int32_t)ti->nprocs;
		ti->slot[ti->nprocs] = s;
		p = &ti->procs[ti->nprocs++];
		p->pid = (pid_t)r->tgid;
		memcpy(p->comm, r->comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = '\0';
		p->cpu_ns = r->dead_cpu_ns;
		p->threads = r->threads;
		p->rss_pages = r->rss_pages;
		p->start_boottime_ns = r->start_boottime_ns;
	}
	p = &ti->procs[ti->index[s]];
	p->cpu_ns += r->cpu_ns;
}

/* Forget the last read: clear only the slots it used. */
static void reset(struct lwk_taskiter *ti)
{
	for (size_t i = 0; i < ti->nprocs; i++)
		ti->index[ti->slot[i]] = -1;
	ti->nprocs = 0;
}

/* Run an iterator to its end: bytes read go to ti->buf, whole records
 * to their processes.  0, or -1 with errno. */
static int run_iter(struct lwk_taskiter *ti, int link)
{
	const size_t rec = sizeof(struct lwk_taskiter_rec);
	size_t have = 0;
	ssize_t n;
	int fd, e = 0;

	fd = bpf_iter_create(link);
	if (fd < 0)
		return -1;
	for (;;) {
		n = read(fd, ti->buf + have, READ_RECS * rec - have);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : 0;
			break;
		}
		have += (size_t)n;
		for (size_t at = 0; at + rec <= have; at += rec)
			add_record(ti, (const void *)(ti->buf + at));
		/* A record cut between two reads: keep its start. */
		memmove(ti->buf, ti->buf + have - have % rec, have % rec);
		have %= rec;
	}
	close(fd);
	errno = e;
	return e ? -1 : 0;
}

/* A tick the cgroup walk could not give whole: counted, the first
 * reason kept for the sampler's log. */
static int fall_back(struct lwk_taskiter *ti, const char *why)
{
	if (!ti->cg_fallbacks++)
		snprintf(ti->fallback_why, sizeof(ti->fallback_why), "%s", why);
	reset(ti);
	return 1;
}

/* Whether the job cgroup at its path is no longer the one the walk is
 * attached to (Slurm removes it when its last step ends and makes it
 * again for the next); then the walk follows it.  A directory not (yet)
 * there, or an attach that fails, is tried again at the next miss: the
 * old link stays, and its ticks go to the task walk meanwhile. */
static void follow_cgroup(struct lwk_taskiter *ti)
{
	struct stat st;

	if (lstat(ti->cg_path, &st) || (st.st_dev == ti->cg_dev && st.st_ino == ti->cg_ino))
		return;
	attach_cgroup(ti); /* walk_why says why not, if it fails */
}

/* Whether a process has exited: gone, or a zombie or dead one not yet
 * reaped (the walk, as cgroup.procs, skips those; kill(0) does not). */
static bool exited(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the state follows the name, which may hold ')' */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static const char *const stopped_why[] = {
	[1] = "more processes than the cgroup walk holds (8192)",
	[2] = "more cgroups under the job cgroup than the cgroup walk visits (1024)",
	[3] = "more threads than the cgroup walk counts (32768)",
	[4] = "the kernel refused a css_task or task iterator",
};

/*
 * The job cgroup's walk: its records are in the mapped array, the read
 * itself returns nothing.  0, or 1 when the tick must be read by the
 * task walk: the walk stopped short, failed, or missed a live process
 * the sampler lists (a job cgroup made anew, a v1 process listed by a
 * thread whose leader is elsewhere, one moved out since its listing).
 */
static int read_cgroup(struct lwk_taskiter *ti)
{
	struct lwk_cgiter_bpf__bss *bss = ti->progs.bss;
	const __u32 cap = sizeof(bss->recs) / sizeof(bss->recs[0]);
	char why[160];

	bss->nrecs = bss->ncgroups = bss->nthreads = bss->stopped = 0;
	if (run_iter(ti, ti->cg_link)) {
		snprintf(why, sizeof(why), "a read of the cgroup walk failed: %s", strerror(errno));
		return fall_back(ti, why);
	}
	if (bss->stopped) {
		/* A job past a limit is likely to stay there: the next
		 * reads go to the task walk without paying this one. */
		ti->cg_rest = LWK_CG_REST;
		return fall_back(ti, bss->stopped < sizeof(stopped_why) / sizeof(*stopped_why)
					     ? stopped_why[bss->stopped]
					     : "the cgroup walk stopped");
	}
	/* One record a process; the css_task iterator can return a group
	 * leader that exits during the walk twice (from its set's tasks,
	 * then its dying tasks): the first one counts. */
	for (__u32 i = 0; i < bss->nrecs && i < cap; i++)
		if (!lwk_taskiter_find(ti, (pid_t)bss->recs[i].tgid))
			add_record(ti, &bss->recs[i]);
	/* A listed process the walk did not find, unless it has exited
	 * since it was listed (the task walk would not find it either). */
	for (size_t i = 0; i < ti->n_in_map; i++) {
		if (!lwk_taskiter_find(ti, ti->in_map[i]) && !exited(ti->in_map[i])) {
			snprintf(why, sizeof(why), "a listed process (%d) was not in the job cgroup",
				 (int)ti->in_map[i]);
			follow_cgroup(ti);
			return fall_back(ti, why);
		}
	}
	return 0;
}

int lwk_taskiter_read(struct lwk_taskiter *ti)
{
	reset(ti);
	if (!ti->n_in_map)
		return 0;
	if (ti->cg_link >= 0 && ti->cg_rest) {
		ti->cg_rest--;
		fall_back(ti, "the cgroup walk rests after a stop");
	} else if (ti->cg_link >= 0 && read_cgroup(ti) == 0) {
		return (int)ti->nprocs;
	}
	if (run_iter(ti, ti->progs.task_link)) {
		reset(ti); /* nothing of a read cut short */
		return -1;
	}
	return (int)ti->nprocs;
}

const struct lwk_taskiter_proc *lwk_taskiter_find(const struct lwk_taskiter *ti, pid_t pid)
{
	size_t s = slot_of(ti, pid);

	while (ti->index[s] >= 0) {
		if (ti->procs[ti->index[s]].pid == pid)
			return &ti->procs[ti->index[s]];
		s = (s + 1) & (ti->index_cap - 1);
	}
	return NULL;
}
