/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-topology: print what slurm-lwk sees of a node: packages, dies
 * (L3 domain x NUMA node), cores, threads and NUMA memory; the
 * die-policy config line for job_submit.lua; the slurm.conf NodeName
 * line; and Slurm's abstract core numbers mapped to Linux CPUs.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/topology.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: lwk-topology [--sysfs DIR] [--format table|conf|slurm] [--name NAME]\n"
		"                    [--slurm-sockets package|l3cache|numa] [--map-cores LIST]\n"
		"  --sysfs DIR           read DIR instead of /sys\n"
		"  --format table        a table for people (default)\n"
		"  --format conf         the NodeType line of the job_submit.lua site config\n"
		"  --format slurm        the slurm.conf NodeName line\n"
		"  --name NAME           node or node type name for conf/slurm (default: host name)\n"
		"  --slurm-sockets KIND  what Slurm counts as a socket (SlurmdParameters):\n"
		"                        package (default), l3cache (l3cache_as_socket),\n"
		"                        numa (numa_node_as_socket)\n"
		"  --map-cores LIST      print the Linux CPUs of Slurm's abstract cores LIST\n");
}

/* Cores per die when all dies agree, else 0. */
static unsigned uniform_cores_per_die(const struct lwk_topology *t)
{
	for (unsigned d = 1; d < t->ndies; d++)
		if (t->dies[d].ncores != t->dies[0].ncores)
			return 0;
	return t->dies[0].ncores;
}

static void print_table(const struct lwk_topology *t)
{
	char buf[4096];

	printf("packages %u  dies %u  cores %u  cpus %u  threads/core %u  numa nodes %u"
	       "  (dies from: %s x NUMA node)\n\n",
	       t->npackages, t->ndies, t->ncores, t->ncpus, t->threads_per_core, t->nnuma,
	       t->source);
	printf("%-5s %-8s %-5s %-6s %s\n", "die", "package", "numa", "cores", "cpus");
	for (unsigned d = 0; d < t->ndies; d++) {
		lwk_cpulist_format(&t->dies[d].cpus, buf, sizeof(buf));
		printf("%-5u %-8d %-5d %-6u %s\n", d, t->dies[d].package,
		       t->numa[t->dies[d].numa].node, t->dies[d].ncores, buf);
	}
	printf("\n%-5s %-12s %-12s %s\n", "numa", "MemTotal", "MemFree", "cpus");
	for (unsigned n = 0; n < t->nnuma; n++) {
		lwk_cpulist_format(&t->numa[n].cpus, buf, sizeof(buf));
		printf("%-5d %-12" PRIu64 " %-12" PRIu64 " %s\n", t->numa[n].node,
		       t->numa[n].mem_total >> 20, t->numa[n].mem_free >> 20, buf[0] ? buf : "-");
	}
	printf("(memory in MiB)\n");
}

static void print_conf(const struct lwk_topology *t, const char *name)
{
	unsigned cpd = uniform_cores_per_die(t);

	if (!cpd) {
		printf("# %s: dies have different core counts:", name);
		for (unsigned d = 0; d < t->ndies; d++)
			printf(" %u", t->dies[d].ncores);
		printf("; the policy counts whole dies of the smallest\n");
		cpd = t->dies[0].ncores;
		for (unsigned d = 1; d < t->ndies; d++)
			if (t->dies[d].ncores < cpd)
				cpd = t->dies[d].ncores;
	}
	printf("NodeType=%s Packages=%u Dies=%u CoresPerDie=%u ThreadsPerCore=%u NumaNodes=%u\n",
	       name, t->npackages, t->ndies, cpd, t->threads_per_core, t->nnuma);
}

static void print_slurm(const struct lwk_topology *t, const char *name, enum lwk_slurm_socket kind)
{
	unsigned sockets, cps;
	uint64_t mem = 0;

	lwk_topology_slurm_shape(t, kind, &sockets, &cps);
	for (unsigned n = 0; n < t->nnuma; n++)
		mem += t->numa[n].mem_total;
	printf("NodeName=%s Sockets=%u CoresPerSocket=%u ThreadsPerCore=%u", name, sockets, cps,
	       t->threads_per_core);
	if (mem)
		printf(" RealMemory=%" PRIu64, mem >> 20);
	printf("\n");
}

/* --map-cores: the Linux CPUs of Slurm's abstract cores map.  0, or 1
 * with a message. */
static int print_map(const struct lwk_topology *t, enum lwk_slurm_socket kind, const char *map)
{
	struct lwk_cpuset cpus;
	char buf[4096], err[512];

	if (lwk_topology_map_slurm_cores(t, kind, map, &cpus, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	lwk_cpulist_format(&cpus, buf, sizeof(buf));
	printf("%s\n", buf);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sysfs", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "slurm-sockets", required_argument, NULL, 'k' },
		{ "map-cores", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *sysfs = "/sys", *format = "table", *map = NULL;
	char name[256], err[512];
	enum lwk_slurm_socket kind = LWK_SOCKET_PACKAGE;
	struct lwk_topology *t;
	int c, rc = 0;

	if (gethostname(name, sizeof(name)))
		strcpy(name, "node");
	name[sizeof(name) - 1] = '\0';
	name[strcspn(name, ".")] = '\0';
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sysfs = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'n':
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'k':
			if (lwk_slurm_socket_parse(optarg, &kind)) {
				fprintf(stderr, "lwk-topology: --slurm-sockets: '%s' is not "
					"package, l3cache or numa\n", optarg);
				return 2;
			}
			break;
		case 'm':
			map = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (strcmp(format, "table") && strcmp(format, "conf") &&
			       strcmp(format, "slurm"))) {
		if (optind == argc)
			fprintf(stderr, "lwk-topology: --format: '%s' is not table, conf or slurm\n",
				format);
		usage(stderr);
		return 2;
	}
	t = lwk_topology_read(sysfs, err, sizeof(err));
	if (!t) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (map)
		rc = print_map(t, kind, map);
	else if (!strcmp(format, "conf"))
		print_conf(t, name);
	else if (!strcmp(format, "slurm"))
		print_slurm(t, name, kind);
	else
		print_table(t);
	lwk_topology_free(t);
	return rc;
}
