/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-lwk: the SPANK entry points.  Each switches on where it runs
 * and hands off to the file for that context:
 *
 *   sbatch, salloc (allocator) and srun (local)  -> lwk_local.c
 *   slurmstepd (remote)                          -> lwk_remote.c
 *   job epilog on each node (job script)         -> lwk_jobscript.c
 *
 * The state these files share is in lwk_state.c.  Everything that
 * decides lives in the parts below (common/, node/, lwk/, syncmon/,
 * casas/, sweep/), which know nothing of SPANK.
 *
 * Return codes.  Each callback returns 0 (done, or nothing to do here)
 * or -1 (a failure, meant), never a positive value: Slurm's
 * _do_call_stack (src/common/spank.c) stops at any non-zero return of a
 * required plugin, and from 25.05 every caller takes it as a failure
 * (22.05 to 24.11 tested "< 0" in slurmstepd, srun, sbatch, salloc and
 * slurmd; SchedMD commit 74ff6df484, slurm-25-05-0-1).  What -1 does:
 *
 *   callback / context               returns -1 when             Slurm then
 *   init (every context)             plugstack.conf arguments    srun/sbatch/salloc exit;
 *                                    refused, an option cannot   slurmd does not start;
 *                                    be registered               slurmstepd: see below
 *   option callback (local)          a value refused             the command exits, no job
 *   option callback (remote)         never: kept for the tasks   -
 *   init_post_opt (local/allocator)  options that do not go      the command exits, no job
 *                                    together
 *   init_post_opt (remote)           a refused value with        step launch fails; a batch
 *                                    on_error=drain_node         step's drains the node
 *                                    (lwk_config_refusal_rc)
 *   user_init (remote)               SLURM_* cannot be set       step launch fails
 *   task_init_privileged (remote)    a refusal kept for the      the task fails: the job,
 *                                    tasks (on_error=fail_job)   message on its stderr
 *   task_post_fork (remote)          the kernel refuses a task's the step fails (batch
 *                                    cgroup or an App partition  step: node drained)
 *                                    (--lwk)
 *   task_init (remote, as the user)  SLURM_LWK_ISOLATION cannot  the task fails
 *                                    be set
 *   exit, job_epilog                 never (an epilog failure    -
 *                                    drains the node)
 *
 * A failed slurm_spank_init in slurmstepd is, from 25.05, a node or a job
 * failure as slurm_spank_init_failure_mode says (below).
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "lwk_plugin.h"
#include "common/slurmconf.h"
#include "node/cgroup.h"
#include "node/nodename.h"
#include "node/procfs.h"
#include "syncmon/control.h"

SPANK_PLUGIN(lwk, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/*
 * How Slurm answers a failed slurm_spank_init (25.05 and later: spank.h
 * declares it; _do_call_stack in src/common/spank.c returns its value for
 * SPANK_INIT only, slurm-25-05-0-1).  ESPANK_JOB_FAILURE would fail the
 * job, not requeued, and keep the node (_launch_job_fail in
 * src/slurmd/slurmd/req.c, _slurm_rpc_complete_batch_script in
 * src/slurmctld/proc_req.c); ESPANK_NODE_FAILURE drains the node and lets
 * the job be requeued (Slurm's answer to any other failure, as on 22.05
 * to 24.11).  This plugin's init fails only for the node's configuration
 * (plugstack.conf arguments it refuses, an option name another plugin
 * took): every job would fail on that node the same way, so the node is
 * at fault, and a job failed there would not run elsewhere.  A refused
 * job value is judged later, in init_post_opt, by on_error= (Slurm does
 * not apply this mode there).
 */
int slurm_spank_init_failure_mode = ESPANK_NODE_FAILURE;
#endif

/*
 * The NodeName slurmd runs as (it does not put SLURMD_NODENAME in its
 * own environment), in Slurm's own order: slurmd -N NAME; slurmd -Z
 * (a dynamic node is its host name); slurm.conf's NodeName for this host
 * (slurm_conf_get_nodename and slurm_conf_get_aliased_nodename, from
 * slurmd's libslurmfull, which has read the configuration, configless
 * too); the short host name.  How in how.  A dynamic future node
 * (slurmd -F) learns its name from slurmctld only after this: its start
 * sweeps under the host name.
 */
static void slurmd_node_name(char *node, size_t len, const char **how)
{
	char args[16384], host[256];
	char *(*conf_nodename)(const char *);
	char *(*conf_aliased)(void);
	ssize_t n = -1;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, args, sizeof(args) - 1);
		close(fd);
	}
	if (n > 0)
		args[n] = '\0'; /* a word cut short ends too */
	switch (n > 0 ? lwk_slurmd_args_node(args, (size_t)n, node, len) : 0) {
	case 1:
		*how = "slurmd -N";
		return;
	case 2:
		if (gethostname(node, len) == 0) {
			node[len - 1] = '\0';
			*how = "slurmd -Z: the host name";
			return;
		}
		break;
	}
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	/* As slurmd's _read_config: this host's NodeName, then one whose
	 * NodeHostname is an alias of this host, then localhost's.  The
	 * strings are Slurm's allocations, left (once per slurmd start). */
	conf_nodename = (char *(*)(const char *))dlsym(RTLD_DEFAULT, "slurm_conf_get_nodename");
	conf_aliased = (char *(*)(void))dlsym(RTLD_DEFAULT, "slurm_conf_get_aliased_nodename");
	for (int i = 0; i < 3; i++) {
		char *name = i == 0 ? (conf_nodename ? conf_nodename(host) : NULL)
			   : i == 1 ? (conf_aliased ? conf_aliased() : NULL)
				    : (conf_nodename ? conf_nodename("localhost") : NULL);

		if (name && *name && strlen(name) < len) {
			snprintf(node, len, "%s", name);
			*how = "slurm.conf's NodeName of this host";
			return;
		}
	}
	snprintf(node, len, "%s", host);
	*how = "the host name";
}

/*
 * slurmd starts: a configuration under which --contention-aware cannot
 * split jobs is said once, naming the setting, instead of each job
 * running unsplit with a line of its own.  slurmd (configless too) has
 * its slurm.conf in SLURM_CONF or where Slurm's commands find it.
 */
static void casas_conf_check(const char *node, const char *conf)
{
	char why[1200];

	if (lwk_casas_conf_problem(conf, why, sizeof(why)))
		slurm_error("lwk: --contention-aware cannot split jobs on %s: %s; its jobs run where "
			    "Slurm puts them", node, why);
}

/*
 * The same for systemd: with IgnoreSystemd=yes on a node systemd runs
 * (sd_booted's test: /run/systemd/system), Slurm makes its scope by hand
 * where systemd may change it under a job (cgroup.conf(5) calls it
 * dangerous), and the partitions and splits live there.
 */
static void systemd_conf_check(const char *node, const char *conf)
{
	char why[1200];
	bool systemd = access("/run/systemd/system", F_OK) == 0 &&
		       lwk_cgroup_detect(lwk_cfg.cgroup_root) == LWK_CGROUP_V2;

	if (lwk_systemd_conf_problem(conf, systemd, why, sizeof(why)))
		slurm_error("lwk: %s on %s: Slurm's job cgroups, where --lwk and --contention-aware "
			    "place jobs, are not systemd's, which may change them under a job; set "
			    "IgnoreSystemd=no", why, node);
}

/*
 * And cgroup v2 delegation: Slurm has made its scope for the steps by the
 * time slurmd calls its plugins (cgroup_g_init before spank_slurmd_init
 * in _slurmd_init, slurm-22-05-11-1 to slurm-26-05-3-1), and the steps'
 * cgroups get what it was given.  Slurm itself refuses to start only
 * when it constrains cores.  No scope (no cgroup/v2): nothing to judge.
 */
static void delegation_check(const char *node)
{
	char text[8192], dir[4700], why[1300];

	if (lwk_cgroup_detect(lwk_cfg.cgroup_root) != LWK_CGROUP_V2)
		return;
	lwk_cgroup_text_read("/proc/self/cgroup", text, sizeof(text));
	if (!lwk_slurm_scope_dir(text, lwk_cfg.cgroup_root, node, dir, sizeof(dir)) &&
	    lwk_cgroup_lacks_cpuset(dir, why, sizeof(why)))
		slurm_error("lwk: %s, Slurm's scope for the steps on %s: --lwk steps will be refused and "
			    "--contention-aware jobs run unsplit; Slurm's cgroups need the cpuset "
			    "controller delegated (systemd 244 or later gives it to Slurm's scope; in a "
			    "container, the container's cgroup must have it)", why, node);
}

/* slurmd's configuration, checked once as it starts. */
static void conf_check(const char *node)
{
	static const char *const cands[] = { LWK_SLURM_CONF_DEFAULT, LWK_SLURM_CONF_CONFIGLESS, NULL };
	char conf[4096];

	delegation_check(node);
	if (lwk_slurm_conf_find(getenv("SLURM_CONF"), cands, conf, sizeof(conf)))
		return;
	if (lwk_cfg.offer_casas)
		casas_conf_check(node, conf);
	systemd_conf_check(node, conf);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[512];

	if (lwk_config_parse(ac, av, &lwk_cfg, err, sizeof(err))) {
		slurm_error("%s", err);
		return -1;
	}
	if (spank_context() == S_CTX_SLURMD) {
		/* slurmd starts: samplers of jobs lost in a crash left state. */
		char node[256];
		const char *how = "";
		int n;

		slurmd_node_name(node, sizeof(node), &how);
		if (lwk_this_node_set(node))
			slurm_error("lwk: slurmd's node name '%s' (%s) cannot be a node's: using the host name", node, how);
		else
			slurm_info("lwk: this slurmd is node %s (%s)", node, how);
		lwk_node_name(node, sizeof(node));
		n = lwk_syncmon_sweep(lwk_cfg.state_dir, node);
		if (n > 0)
			slurm_info("lwk: removed the state of %d job(s) whose sampler is gone", n);
		lwk_sweep_partitions(node);
		lwk_sweep_casas(node);
		conf_check(node);
	}
	/* In every context: sbatch ignores the static spank_options table,
	 * and slurmstepd needs the options to receive their values. */
	return lwk_options_register(sp);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return lwk_local_post_opt(sp);
	case S_CTX_REMOTE:
		return lwk_remote_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? lwk_remote_user_init(sp) : 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? lwk_remote_task_init_privileged(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? lwk_remote_task_init(sp) : 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || lwk_req.remote_error[0])
		return 0;
	if (lwk_req.casas_given)
		return lwk_remote_casas_post_fork(sp);
	/* Also a step attached without --lwk (lwk_remote_lwk_attach). */
	return lwk_remote_lwk_post_fork(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		lwk_remote_casas_exit();
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char err[512];

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm 22.05 does not call slurm_spank_init before the epilog:
	 * read the plugstack arguments here. */
	if (lwk_config_parse(ac, av, &lwk_cfg, err, sizeof(err))) {
		slurm_error("%s", err);
		return 0; /* a failing epilog drains the node */
	}
	return lwk_jobscript_epilog(sp);
}
