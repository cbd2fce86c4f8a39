/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-sweep: give back what jobs that are gone left on this node: their
 * --lwk partitions (IRQ affinity, hugepages, the plugin's cgroups) and
 * their samplers' state.  slurmd does the same when it starts; this is
 * for the admin after a crash, without restarting slurmd.  A job still
 * allocated here (joblive.c: a slurmstepd, or slurmctld's word) is kept.
 *
 * It reads the plugin's arguments (state_dir, cgroup_root) from the
 * lwk.so line of plugstack.conf, so it looks where the plugin writes;
 * it finds slurm.conf and plugstack.conf as Slurm does (slurmconf.h),
 * configless nodes' cached copy included.
 */
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/config.h"
#include "common/slurmconf.h"
#include "casas/casasnode.h"
#include "node/irqbalance.h"
#include "node/joblive.h"
#include "lwk/part.h"
#include "syncmon/control.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: lwk-sweep [--plugstack FILE] [--node NAME] [--slurmfull PATH] [--dry-run] [--force]\n"
		   "  --plugstack FILE  the plugstack.conf with the lwk.so line (default:\n"
		   "                    slurm.conf's PlugStackConfig, else plugstack.conf\n"
		   "                    beside slurm.conf: $SLURM_CONF, else " LWK_SLURM_CONF_DEFAULT ",\n"
		   "                    else configless slurmd's " LWK_SLURM_CONF_CONFIGLESS ")\n"
		   "  --node NAME       the node's name in Slurm (default: $SLURMD_NODENAME,\n"
		   "                    else the short host name)\n"
		   "  --slurmfull PATH  slurmd's libslurmfull.so, to ask slurmctld with\n"
		   "                    (default: found in Slurm's plugin directory)\n"
		   "  --dry-run         list the jobs with state here, sweep nothing\n"
		   "  --force           sweep jobs slurmctld cannot be asked about too\n");
}

/* Jobs kept because slurmctld could not be asked or did not answer
 * (each once), and whether to take them for gone instead (--force). */
static uint32_t unknown[4096];
static int nunknown;
static bool force;

static bool sweep_alive(uint32_t job)
{
	int live = lwk_job_liveness(job);
	int i;

	if (live != LWK_LIVE_UNKNOWN)
		return live == LWK_LIVE_YES;
	if (force)
		return false;
	for (i = 0; i < nunknown && unknown[i] != job; i++)
		;
	if (i == nunknown && nunknown < 4096) {
		unknown[nunknown++] = job;
		printf("lwk-sweep: job %u: no slurmstepd here and slurmctld cannot tell: kept\n", job);
	}
	return true;
}

/* slurmd's libslurmfull.so: --slurmfull, else where this build was
 * configured to find it, else in slurm.conf's PluginDir, else in the
 * usual plugin directories.  The first that loads (and is root's).
 * conf: slurm.conf, found or not (then libslurm is not loaded). */
static int load_slurmfull(const char *given, const char *conf, bool have_conf)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm",
					    "/usr/lib/slurm", "/usr/local/lib/slurm", "/usr/local/lib64/slurm",
					    NULL };
	char cand[16][4200], line[4096], err[4400];
	int n = 0;
	FILE *f;

	/* libslurm's initialisation exits the process without slurm.conf;
	 * it reads the one found here. */
	if (!have_conf || access(conf, R_OK)) {
		fprintf(stderr, "lwk-sweep: cannot read %s: libslurm not loaded\n", conf);
		return -1;
	}
	setenv("SLURM_CONF", conf, 1);
	if (given) {
		if (lwk_job_alive_load_slurm(given, err, sizeof(err)) == 0)
			return 0;
		fprintf(stderr, "lwk-sweep: cannot load %s\n", err);
		return -1;
	}
	snprintf(cand[n++], sizeof(cand[0]), "%s", LWK_SLURMFULL);
	f = fopen(conf, "re");
	while (f && n < 12 && fgets(line, sizeof(line), f)) {
		char *v = line + strspn(line, " \t"), *save = NULL;

		if (strncasecmp(v, "PluginDir=", 10))
			continue;
		v[strcspn(v, " \t#\n")] = '\0';
		for (char *d = strtok_r(v + 10, ":", &save); d && n < 12; d = strtok_r(NULL, ":", &save))
			snprintf(cand[n++], sizeof(cand[0]), "%s/libslurmfull.so", d);
	}
	if (f)
		fclose(f);
	for (int i = 0; dirs[i] && n < 16; i++)
		snprintf(cand[n++], sizeof(cand[0]), "%s/libslurmfull.so", dirs[i]);
	for (int i = 0; i < n; i++) {
		if (access(cand[i], F_OK))
			continue;
		if (lwk_job_alive_load_slurm(cand[i], err, sizeof(err)) == 0)
			return 0;
		fprintf(stderr, "lwk-sweep: cannot load %s\n", err);
	}
	fprintf(stderr, "lwk-sweep: no usable libslurmfull.so (give --slurmfull PATH)\n");
	return -1;
}

/*
 * The plugin's arguments from the first lwk.so line of file, following
 * its include lines as Slurm does (a glob; a relative one below the
 * including file's directory; Debian's plugstack.conf is only
 * one include line of plugstack.conf.d's *.conf).  0 found, -1 not here,
 * -2 found and refused (err says why).
 */
static int plugstack_scan(const char *file, int depth, struct lwk_config *c, char *err, size_t errlen)
{
	char line[4096];
	FILE *f = fopen(file, "re");
	int found = -1;

	if (!f) {
		snprintf(err, errlen, "lwk-sweep: cannot read %s", file);
		return depth ? -1 : -2;
	}
	while (found == -1 && fgets(line, sizeof(line), f)) {
		char *av[64], *save = NULL;
		int ac = 0;

		line[strcspn(line, "#\n")] = '\0';
		for (char *w = strtok_r(line, " \t", &save); w && ac < 64; w = strtok_r(NULL, " \t", &save))
			av[ac++] = w;
		if (ac == 2 && !strcmp(av[0], "include") && depth < 8) {
			char pattern[8192], dir[4096];
			glob_t g;

			snprintf(dir, sizeof(dir), "%s", file);
			if (av[1][0] == '/')
				snprintf(pattern, sizeof(pattern), "%s", av[1]);
			else
				snprintf(pattern, sizeof(pattern), "%s/%s", dirname(dir), av[1]);
			if (glob(pattern, 0, NULL, &g) == 0) {
				for (size_t i = 0; i < g.gl_pathc && found == -1; i++)
					found = plugstack_scan(g.gl_pathv[i], depth + 1, c, err, errlen);
				globfree(&g);
			}
			continue;
		}
		if (ac < 2 || (strcmp(av[0], "required") && strcmp(av[0], "optional")))
			continue;
		if (strlen(av[1]) < 7 || strcmp(av[1] + strlen(av[1]) - 7, "/lwk.so"))
			continue;
		found = lwk_config_parse(ac - 2, av + 2, c, err, errlen) ? -2 : 0;
	}
	fclose(f);
	return found;
}

static int plugstack_args(const char *file, struct lwk_config *c, char *err, size_t errlen)
{
	int found;

	lwk_config_defaults(c);
	found = plugstack_scan(file, 0, c, err, errlen);
	if (found == -1)
		snprintf(err, errlen, "lwk-sweep: %s (and what it includes) has no lwk.so line", file);
	return found < 0 ? -1 : 0;
}

/* Where slurm.conf is when $SLURM_CONF does not say. */
static const char *const conf_cands[] = { LWK_SLURM_CONF_DEFAULT, LWK_SLURM_CONF_CONFIGLESS, NULL };

/* plugstack.conf when --plugstack gives none: slurm.conf's (conf), into
 * buf; NULL (said why) when there is no slurm.conf to go by. */
static const char *default_plugstack(const char *conf, bool have_conf, char *buf, size_t len)
{
	if (!have_conf) {
		fprintf(stderr, "lwk-sweep: no slurm.conf (looked for %s; $SLURM_CONF unset): give --plugstack FILE\n",
			conf);
		return NULL;
	}
	if (lwk_plugstack_of(conf, buf, len)) {
		fprintf(stderr, "lwk-sweep: cannot read %s: give --plugstack FILE\n", conf);
		return NULL;
	}
	return buf;
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
		if (access(path, F_OK) == 0) {
			int live = lwk_job_liveness(jobs[i]);

			printf("job %u: %s\n", jobs[i],
			       live == LWK_LIVE_YES ? "running, kept"
			       : live == LWK_LIVE_GONE ? "gone, would be torn down"
			       : force ? "unknown (slurmctld cannot tell), would be torn down (--force)"
				       : "unknown (slurmctld cannot tell), kept");
		}
	}
}

/* The node's name when --node gives none: $SLURMD_NODENAME (env), else
 * the short host name. */
static void default_node(char *node, size_t len, const char *env)
{
	if (env && *env)
		snprintf(node, len, "%s", env);
	else if (gethostname(node, len - 1) == 0)
		node[strcspn(node, ".")] = '\0';
}

/* The sweep itself: --lwk partitions, sampler states, casas records of
 * gone jobs.  0, or 1 when jobs slurmctld could not tell about were
 * kept. */
static int sweep(const struct lwk_node_roots *r, const char *state_dir, const char *node)
{
	char log[65536];
	int n, s;

	n = lwk_part_sweep(r, sweep_alive, log, sizeof(log));
	fputs(log, stdout);
	s = lwk_syncmon_sweep(state_dir, node);
	/* --contention-aware: gone jobs' records dropped, the split re-planned. */
	log[0] = '\0';
	lwk_casas_leave(r, 0, sweep_alive, log, sizeof(log));
	fputs(log, stdout);
	printf("lwk-sweep: %s: %d --lwk partition(s) torn down, %d sampler state(s) removed\n", node,
	       n, s);
	if (nunknown) {
		/* Not a clean sweep: the admin decides (--force). */
		fprintf(stderr, "lwk-sweep: %d job(s) kept that slurmctld could not tell about; --force sweeps them\n",
			nunknown);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plugstack", required_argument, NULL, 'p' },
		{ "node", required_argument, NULL, 'n' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "slurmfull", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *plugstack = NULL, *env = getenv("SLURMD_NODENAME");
	const char *slurmfull = NULL;
	char node[256] = "", err[5000], conf[4096], found[4096];
	bool have_conf;
	struct lwk_config c;
	struct lwk_node_roots r;
	bool dry = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "p:n:dfs:h", longopts, NULL)) != -1) {
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
		case 'f':
			force = true;
			break;
		case 's':
			slurmfull = optarg;
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
	if (!node[0])
		default_node(node, sizeof(node), env);
	if (!node[0] || strchr(node, '/') || node[0] == '.') {
		fprintf(stderr, "lwk-sweep: node name '%s' is not usable; give --node\n", node);
		return 2;
	}
	have_conf = lwk_slurm_conf_find(getenv("SLURM_CONF"), conf_cands, conf, sizeof(conf)) == 0;
	if (!plugstack && !(plugstack = default_plugstack(conf, have_conf, found, sizeof(found))))
		return 2;
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
	if (load_slurmfull(slurmfull, conf, have_conf))
		fprintf(stderr, "lwk-sweep: slurmctld cannot be asked: a job with no slurmstepd here is %s\n",
			force ? "taken for gone (--force)" : "kept");
	r = (struct lwk_node_roots){ "/sys", "/proc", c.cgroup_root, c.state_dir, node, c.mckernel, 0, 0,
				     LWK_IRQBALANCE_DIR, c.lwk_irqbalance };
	if (dry) {
		list_jobs(c.state_dir, node);
		return 0;
	}
	return sweep(&r, c.state_dir, node);
}
