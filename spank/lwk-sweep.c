/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-sweep: give back what jobs that are gone left on this node: their
 * --lwk partitions (IRQ affinity, hugepages, the plugin's cgroups) and
 * their samplers' state.  slurmd does the same when it starts; this is
 * for the admin after a crash, without restarting slurmd.  A job still
 * allocated here (joblive.c: a slurmstepd, or slurmctld's word) is kept.
 *
 * It reads the plugin's arguments (state_dir, cgroup_root) from the
 * lwk.so line of plugstack.conf, so it looks where the plugin writes.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "casasnode.h"
#include "joblive.h"
#include "lwkpart.h"
#include "syncmon_ctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: lwk-sweep [--plugstack FILE] [--node NAME] [--dry-run]\n"
		   "  --plugstack FILE  the plugstack.conf with the lwk.so line\n"
		   "                    (default /etc/slurm/plugstack.conf)\n"
		   "  --node NAME       the node's name in Slurm (default: $SLURMD_NODENAME,\n"
		   "                    else the short host name)\n"
		   "  --dry-run         list the jobs with state here, sweep nothing\n");
}

/* The plugin's arguments from the first lwk.so line; 0 found, -1 not. */
static int plugstack_args(const char *file, struct lwk_config *c, char *err, size_t errlen)
{
	char line[4096];
	FILE *f = fopen(file, "re");
	int found = -1;

	lwk_config_defaults(c);
	if (!f) {
		snprintf(err, errlen, "lwk-sweep: cannot read %s", file);
		return -1;
	}
	while (found < 0 && fgets(line, sizeof(line), f)) {
		char *av[64], *save = NULL;
		int ac = 0;

		line[strcspn(line, "#\n")] = '\0';
		for (char *w = strtok_r(line, " \t", &save); w && ac < 64; w = strtok_r(NULL, " \t", &save))
			av[ac++] = w;
		if (ac < 2 || (strcmp(av[0], "required") && strcmp(av[0], "optional")))
			continue;
		if (strlen(av[1]) < 7 || strcmp(av[1] + strlen(av[1]) - 7, "/lwk.so"))
			continue;
		found = lwk_config_parse(ac - 2, av + 2, c, err, errlen) ? -2 : 0;
	}
	fclose(f);
	if (found == -1)
		snprintf(err, errlen, "lwk-sweep: %s has no lwk.so line", file);
	return found < 0 ? -1 : 0;
}

/* --dry-run: each job with --lwk state here, and whether it runs. */
static void list_jobs(const char *state_dir, const char *node)
{
	char path[4400];
	uint32_t jobs[4096];
	int n = lwk_state_jobs(state_dir, node, jobs, 4096);

	printf("lwk-sweep: %s: state in %s/%s\n", node, state_dir, node);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s/%u/lwk.state", state_dir, node, jobs[i]);
		if (access(path, F_OK) == 0)
			printf("job %u: %s\n", jobs[i],
			       lwk_job_alive(jobs[i]) ? "running, kept" : "gone, would be torn down");
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plugstack", required_argument, NULL, 'p' },
		{ "node", required_argument, NULL, 'n' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *plugstack = "/etc/slurm/plugstack.conf", *env = getenv("SLURMD_NODENAME");
	char node[256] = "", err[1024], log[65536];
	struct lwk_config c;
	struct lwk_part_roots r;
	bool dry = false;
	int opt, n, s;

	while ((opt = getopt_long(argc, argv, "p:n:dh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			plugstack = optarg;
			break;
		case 'n':
			snprintf(node, sizeof(node), "%s", optarg);
			break;
		case 'd':
			dry = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!node[0]) {
		if (env && *env)
			snprintf(node, sizeof(node), "%s", env);
		else if (gethostname(node, sizeof(node) - 1) == 0)
			node[strcspn(node, ".")] = '\0';
	}
	if (!node[0] || strchr(node, '/') || node[0] == '.') {
		fprintf(stderr, "lwk-sweep: node name '%s' is not usable; give --node\n", node);
		return 2;
	}
	if (plugstack_args(plugstack, &c, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (geteuid() != 0 && !dry) {
		fprintf(stderr, "lwk-sweep: must run as root (it writes IRQ affinity, hugepages, cgroups)\n");
		return 2;
	}
	/* Liveness asks slurmctld about jobs with no slurmstepd here (between
	 * steps), through slurmd's libslurm, for this node. */
	setenv("SLURMD_NODENAME", node, 1);
	if (lwk_job_alive_load_slurm(LWK_SLURMFULL))
		fprintf(stderr, "lwk-sweep: cannot load %s (%s): a job with no slurmstepd here counts as gone\n",
			LWK_SLURMFULL, dlerror());
	r = (struct lwk_part_roots){ "/sys", "/proc", c.cgroup_root, c.state_dir, node, c.mckernel, 0, 0 };
	if (dry) {
		list_jobs(c.state_dir, node);
		return 0;
	}
	n = lwk_part_sweep(&r, lwk_job_alive, log, sizeof(log));
	fputs(log, stdout);
	s = lwk_syncmon_sweep(c.state_dir, node);
	/* --contention-aware: gone jobs' records dropped, the split re-planned. */
	log[0] = '\0';
	lwk_casas_leave(&r, 0, lwk_job_alive, log, sizeof(log));
	fputs(log, stdout);
	printf("lwk-sweep: %s: %d --lwk partition(s) torn down, %d sampler state(s) removed\n", node,
	       n, s);
	return 0;
}
