/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/topology.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NODES 1024

/*
 * Read a small sysfs file below root into buf.  Returns the length, or
 * -1 when it does not exist or cannot be read.  O_NOFOLLOW on the last
 * component is not used: sysfs itself is made of links.
 */
static ssize_t read_text(char *buf, size_t len, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static ssize_t read_text(char *buf, size_t len, const char *root, const char *fmt, ...)
{
	char rel[256], path[4096];
	va_list ap;
	ssize_t n, total = 0;
	int fd;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) >= sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)total < len - 1 &&
	       (n = read(fd, buf + total, len - 1 - (size_t)total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return total;
}

/* The package id of cpu (the one integer file topology reads). */
static int read_package(const char *root, int *out, int cpu)
{
	char buf[64], *end;
	long v;

	if (read_text(buf, sizeof(buf), root, "devices/system/cpu/cpu%d/topology/physical_package_id",
		      cpu) <= 0)
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v < -1 || v > 1 << 20)
		return -1;
	*out = (int)v;
	return 0;
}

static int read_list(const char *root, struct lwk_cpuset *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int read_list(const char *root, struct lwk_cpuset *s, const char *fmt, ...)
{
	char rel[256], buf[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (read_text(buf, sizeof(buf), root, "%s", rel) < 0)
		return -1;
	return lwk_cpulist_parse(buf, LWK_MAX_CPUS, s);
}

/* The "Node 0 MemTotal:  1234 kB" lines of nodeN/meminfo. */
static void read_node_mem(const char *root, struct lwk_topo_numa *n)
{
	char buf[8192], *line, *save = NULL;

	if (read_text(buf, sizeof(buf), root, "devices/system/node/node%d/meminfo", n->node) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int node;
		char key[32];
		unsigned long long kb;

		if (sscanf(line, "Node %d %31[^:]: %llu kB", &node, key, &kb) != 3)
			continue;
		if (kb > UINT64_MAX / 1024)
			continue;
		if (!strcmp(key, "MemTotal"))
			n->mem_total = kb * 1024;
		else if (!strcmp(key, "MemFree"))
			n->mem_free = kb * 1024;
	}
}

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * First CPU of cpu's L3 domain, and which sysfs information said so.
 * The cache index of L3 varies between machines: look for level 3.
 */
static int l3_domain(const char *root, int cpu, int package, const struct lwk_cpuset *online,
		     const char **source)
{
	struct lwk_cpuset s;

	for (int idx = 0; idx < 16; idx++) {
		char rel[96], buf[16];

		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/level", cpu, idx);
		if (read_text(buf, sizeof(buf), root, "%s", rel) <= 0 || atoi(buf) != 3)
			continue;
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list",
			 cpu, idx);
		if (read_list(root, &s, "%s", rel) == 0) {
			lwk_cpuset_and(&s, online);
			if (lwk_cpuset_count(&s)) {
				*source = "L3 cache";
				return lwk_cpuset_first(&s);
			}
		}
	}
	if (read_list(root, &s, "devices/system/cpu/cpu%d/topology/die_cpus_list", cpu) == 0) {
		lwk_cpuset_and(&s, online);
		if (lwk_cpuset_count(&s)) {
			*source = "kernel die";
			return lwk_cpuset_first(&s);
		}
	}
	*source = "package";
	return -1 - package; /* replaced by the package's first CPU */
}

static int source_rank(const char *src)
{
	return !strcmp(src, "L3 cache") ? 0 : !strcmp(src, "kernel die") ? 1 : 2;
}

/* The online CPUs (else the present ones) and their count. */
static int read_online(const char *root, struct lwk_topology *t, char *err, size_t errlen)
{
	if (read_list(root, &t->online, "devices/system/cpu/online") &&
	    read_list(root, &t->online, "devices/system/cpu/present")) {
		fail(err, errlen, "lwk: topology: cannot read %s/devices/system/cpu/online", root);
		return -1;
	}
	t->ncpus = lwk_cpuset_count(&t->online);
	if (t->ncpus == 0) {
		fail(err, errlen, "lwk: topology: no online CPU under %s", root);
		return -1;
	}
	return 0;
}

/*
 * A boot-time CPU list (nohz_full, isolated).  Missing (a kernel without
 * CONFIG_NO_HZ_FULL has no nohz_full file), empty, "(null)" (what some
 * kernels print when nohz_full= was not given) or not a cpulist: none.
 * It only steers which job cores the plan prefers, never what the job
 * may use, so a list sysfs garbles costs a preference, not the job.
 */
static void read_boot_list(const char *root, const struct lwk_cpuset *online,
			   struct lwk_cpuset *s, const char *file)
{
	if (read_list(root, s, "devices/system/cpu/%s", file))
		lwk_cpuset_zero(s);
	lwk_cpuset_and(s, online);
}

/* Per CPU: package, siblings, L3 domain. */
static void read_cpus(const char *root, struct lwk_topology *t, struct lwk_cpuset *siblings,
		      int *l3key)
{
	const char *source = "package";
	int c, i;

	for (i = 0, c = lwk_cpuset_first(&t->online); c >= 0; c = lwk_cpuset_next(&t->online, c), i++) {
		struct lwk_topo_cpu *p = &t->cpus[i];
		const char *src;

		p->cpu = c;
		p->core = p->die = p->numa = -1;
		if (read_package(root, &p->package, c) ||
		    p->package < 0)
			p->package = 0;
		if (read_list(root, &siblings[i], "devices/system/cpu/cpu%d/topology/thread_siblings_list", c) &&
		    read_list(root, &siblings[i], "devices/system/cpu/cpu%d/topology/core_cpus_list", c))
			lwk_cpuset_zero(&siblings[i]);
		lwk_cpuset_and(&siblings[i], &t->online);
		lwk_cpuset_set(&siblings[i], (unsigned)c);
		l3key[i] = l3_domain(root, c, p->package, &t->online, &src);
		/* The coarsest source used for any CPU names the whole read. */
		if (i == 0 || source_rank(src) > source_rank(source))
			source = src;
	}
	snprintf(t->source, sizeof(t->source), "%s", source);
}

/* Packages: one L3 domain each where sysfs says nothing finer. */
static void count_packages(struct lwk_topology *t, const int *l3key, int *pkg_first)
{
	for (int i = 0; i < (int)t->ncpus; i++) {
		int k;

		for (k = 0; k < i; k++)
			if (t->cpus[k].package == t->cpus[i].package)
				break;
		if (k == i)
			t->npackages++;
		pkg_first[i] = t->cpus[k].cpu;
		t->cpus[i].l3 = l3key[i] >= 0 ? l3key[i] : pkg_first[i];
	}
}

/* NUMA nodes; a kernel without NUMA has one node holding all. */
static void read_numa(const char *root, struct lwk_topology *t)
{
	struct lwk_cpuset nodes;

	if (read_list(root, &nodes, "devices/system/node/online")) {
		lwk_cpuset_zero(&nodes);
		for (int n = 0; n < MAX_NODES; n++) {
			struct lwk_cpuset tmp;

			if (read_list(root, &tmp, "devices/system/node/node%d/cpulist", n) == 0)
				lwk_cpuset_set(&nodes, (unsigned)n);
		}
	}
	for (int n = lwk_cpuset_first(&nodes); n >= 0 && n < MAX_NODES;
	     n = lwk_cpuset_next(&nodes, n)) {
		struct lwk_topo_numa *nn = &t->numa[t->nnuma];

		nn->node = n;
		if (read_list(root, &nn->cpus, "devices/system/node/node%d/cpulist", n))
			lwk_cpuset_zero(&nn->cpus);
		lwk_cpuset_and(&nn->cpus, &t->online);
		read_node_mem(root, nn);
		t->nnuma++;
	}
	if (t->nnuma == 0) {
		t->numa[0].node = 0;
		t->numa[0].cpus = t->online;
		t->nnuma = 1;
	}
}

/* Each CPU's NUMA node (the last that lists it); every CPU needs one. */
static int place_numa(const char *root, struct lwk_topology *t, char *err, size_t errlen)
{
	for (int i = 0; i < (int)t->ncpus; i++) {
		for (unsigned n = 0; n < t->nnuma; n++)
			if (lwk_cpuset_isset(&t->numa[n].cpus, (unsigned)t->cpus[i].cpu))
				t->cpus[i].numa = (int)n;
		if (t->cpus[i].numa < 0) {
			fail(err, errlen, "lwk: topology: CPU %d is in no NUMA node under %s",
			     t->cpus[i].cpu, root);
			return -1;
		}
	}
	return 0;
}

/* Cores: the sibling sets, in order of first CPU. */
static void group_cores(struct lwk_topology *t, const struct lwk_cpuset *siblings)
{
	for (int i = 0; i < (int)t->ncpus; i++) {
		struct lwk_topo_core *core;
		unsigned nthreads = 0;

		if (t->cpus[i].core >= 0)
			continue;
		core = &t->cores[t->ncores];
		core->package = t->cpus[i].package;
		lwk_cpuset_zero(&core->cpus);
		for (int j = i; j < (int)t->ncpus; j++)
			if (t->cpus[j].core < 0 &&
			    lwk_cpuset_isset(&siblings[i], (unsigned)t->cpus[j].cpu)) {
				t->cpus[j].core = (int)t->ncores;
				lwk_cpuset_set(&core->cpus, (unsigned)t->cpus[j].cpu);
				nthreads++;
			}
		if (nthreads > t->threads_per_core)
			t->threads_per_core = nthreads;
		t->ncores++;
	}
}

/* Dies: L3 domain x NUMA node, in order of first CPU; then each core's
 * die and each die's count of cores. */
static void group_dies(struct lwk_topology *t)
{
	int i;

	for (i = 0; i < (int)t->ncpus; i++) {
		struct lwk_topo_cpu *p = &t->cpus[i];
		unsigned d;

		for (d = 0; d < t->ndies; d++) {
			int first = lwk_cpuset_first(&t->dies[d].cpus);
			int k = 0;

			while (t->cpus[k].cpu != first)
				k++;
			if (t->cpus[k].l3 == p->l3 && t->cpus[k].numa == p->numa)
				break;
		}
		if (d == t->ndies) {
			t->dies[d].package = p->package;
			t->dies[d].numa = p->numa;
			t->ndies++;
		}
		p->die = (int)d;
		lwk_cpuset_set(&t->dies[d].cpus, (unsigned)p->cpu);
	}
	for (unsigned k = 0; k < t->ncores; k++) {
		int first = lwk_cpuset_first(&t->cores[k].cpus);

		for (i = 0; t->cpus[i].cpu != first; i++)
			;
		t->cores[k].die = t->cpus[i].die;
		t->dies[t->cpus[i].die].ncores++;
	}
}

struct lwk_topology *lwk_topology_read(const char *root, char *err, size_t errlen)
{
	struct lwk_topology *t = calloc(1, sizeof(*t));
	struct lwk_cpuset *siblings = NULL;
	int *l3key = NULL, *pkg_first = NULL;

	if (!t) {
		fail(err, errlen, "lwk: topology: out of memory");
		return NULL;
	}
	if (read_online(root, t, err, errlen))
		goto error;
	t->cpus = calloc(t->ncpus, sizeof(*t->cpus));
	t->cores = calloc(t->ncpus, sizeof(*t->cores));
	t->dies = calloc(t->ncpus, sizeof(*t->dies));
	t->numa = calloc(MAX_NODES, sizeof(*t->numa));
	siblings = calloc(t->ncpus, sizeof(*siblings));
	l3key = calloc(t->ncpus, sizeof(*l3key));
	if (!t->cpus || !t->cores || !t->dies || !t->numa || !siblings || !l3key) {
		fail(err, errlen, "lwk: topology: out of memory");
		goto error;
	}
	read_cpus(root, t, siblings, l3key);
	pkg_first = calloc(t->ncpus, sizeof(*pkg_first));
	if (!pkg_first)
		goto oom;
	count_packages(t, l3key, pkg_first);
	read_numa(root, t);
	if (place_numa(root, t, err, errlen))
		goto error;
	group_cores(t, siblings);
	group_dies(t);
	read_boot_list(root, &t->online, &t->nohz_full, "nohz_full");
	read_boot_list(root, &t->online, &t->isolated, "isolated");
	free(siblings);
	free(l3key);
	free(pkg_first);
	return t;
oom:
	fail(err, errlen, "lwk: topology: out of memory");
error:
	free(siblings);
	free(l3key);
	free(pkg_first);
	lwk_topology_free(t);
	return NULL;
}

void lwk_topology_free(struct lwk_topology *t)
{
	if (!t)
		return;
	free(t->cpus);
	free(t->cores);
	free(t->dies);
	free(t->numa);
	free(t);
}

void lwk_topology_boot_isolated(const struct lwk_topology *t, struct lwk_cpuset *out)
{
	*out = t->nohz_full;
	lwk_cpuset_or(out, &t->isolated);
}

int lwk_slurm_socket_parse(const char *s, enum lwk_slurm_socket *out)
{
	if (!strcmp(s, "package"))
		*out = LWK_SOCKET_PACKAGE;
	else if (!strcmp(s, "l3cache"))
		*out = LWK_SOCKET_L3CACHE;
	else if (!strcmp(s, "numa"))
		*out = LWK_SOCKET_NUMA;
	else
		return -1;
	return 0;
}

/* The Slurm socket a core belongs to, as a comparable key. */
static int socket_key(const struct lwk_topology *t, enum lwk_slurm_socket kind, unsigned core)
{
	int first = lwk_cpuset_first(&t->cores[core].cpus);
	unsigned i = 0;

	while (t->cpus[i].cpu != first)
		i++;
	switch (kind) {
	case LWK_SOCKET_L3CACHE:
		return t->cpus[i].l3;
	case LWK_SOCKET_NUMA:
		return t->cpus[i].numa;
	case LWK_SOCKET_PACKAGE:
	default:
		return t->cpus[i].package;
	}
}

/*
 * Slurm's abstract order of cores: order[k] is the core with abstract
 * index k.  Sockets come in order of their first CPU, which is the
 * order in which cores (sorted by first CPU) first show each key.
 */
static unsigned slurm_order(const struct lwk_topology *t, enum lwk_slurm_socket kind,
			    unsigned *order, unsigned *nsockets, unsigned *max_cores)
{
	int *keys = calloc(t->ncores ? t->ncores : 1, sizeof(*keys));
	unsigned nkeys = 0, n = 0;

	*max_cores = 0;
	if (!keys) {
		*nsockets = 0;
		return 0;
	}
	for (unsigned c = 0; c < t->ncores; c++) {
		int key = socket_key(t, kind, c);
		unsigned k;

		for (k = 0; k < nkeys && keys[k] != key; k++)
			;
		if (k == nkeys)
			keys[nkeys++] = key;
	}
	for (unsigned k = 0; k < nkeys; k++) {
		unsigned in_socket = 0;

		for (unsigned c = 0; c < t->ncores; c++)
			if (socket_key(t, kind, c) == keys[k]) {
				if (order)
					order[n] = c;
				n++;
				in_socket++;
			}
		if (in_socket > *max_cores)
			*max_cores = in_socket;
	}
	*nsockets = nkeys;
	free(keys);
	return n;
}

void lwk_topology_slurm_shape(const struct lwk_topology *t, enum lwk_slurm_socket kind,
			      unsigned int *sockets, unsigned int *cores_per_socket)
{
	slurm_order(t, kind, NULL, sockets, cores_per_socket);
}

int lwk_topology_map_slurm_cores(const struct lwk_topology *t, enum lwk_slurm_socket kind,
				 const char *alloc_cores, struct lwk_cpuset *cpus,
				 char *err, size_t errlen)
{
	struct lwk_cpuset abstract;
	unsigned *order, *first, nsockets, cps;
	int a;

	lwk_cpuset_zero(cpus);
	if (!alloc_cores || lwk_cpulist_parse(alloc_cores, LWK_MAX_CPUS, &abstract)) {
		fail(err, errlen, "lwk: allocated cores '%.64s' are not a core list",
		     alloc_cores ? alloc_cores : "(none)");
		return -1;
	}
	order = calloc(t->ncores ? t->ncores : 1, sizeof(*order));
	first = calloc(t->ncores + 1, sizeof(*first));
	if (!order || !first) {
		free(order);
		free(first);
		fail(err, errlen, "lwk: out of memory");
		return -1;
	}
	slurm_order(t, kind, order, &nsockets, &cps);
	/* Where each socket's cores start in order[]. */
	for (unsigned c = 0, s = 0; c < t->ncores; c++)
		if (c == 0 || socket_key(t, kind, order[c]) != socket_key(t, kind, order[c - 1]))
			first[s++] = c;
	first[nsockets] = t->ncores;
	/* Slurm numbers core c of socket s as s * CoresPerSocket + c, with
	 * CoresPerSocket the largest socket: a smaller socket (offline CPUs)
	 * leaves holes, never a shift. */
	for (a = lwk_cpuset_first(&abstract); a >= 0; a = lwk_cpuset_next(&abstract, a)) {
		unsigned s = cps ? (unsigned)a / cps : 0, c = cps ? (unsigned)a % cps : 0;

		if (s >= nsockets || first[s] + c >= first[s + 1]) {
			fail(err, errlen,
			     "lwk: Slurm allocated core %d (socket %u, core %u) but this node has "
			     "%u sockets of at most %u cores there: the node's declared topology "
			     "differs from the hardware", a, s, c, nsockets, cps);
			free(order);
			free(first);
			lwk_cpuset_zero(cpus);
			return -1;
		}
		lwk_cpuset_or(cpus, &t->cores[order[first[s] + c]].cpus);
	}
	free(order);
	free(first);
	return 0;
}
