/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Finding Slurm's configuration the way Slurm's own commands do, for
 * the project's commands that run beside slurmd (lwk-sweep): slurm.conf
 * from $SLURM_CONF, else the installed default, else the copy a
 * configless slurmd keeps (/run/slurm/conf, a link into its spool);
 * plugstack.conf from slurm.conf's PlugStackConfig, else beside
 * slurm.conf.
 */
#ifndef LWK_SLURMCONF_H
#define LWK_SLURMCONF_H

#include <stdbool.h>
#include <stddef.h>

/* Where slurm.conf is looked for when $SLURM_CONF is unset: the path
 * Debian's and SchedMD's packages build in, then configless slurmd's
 * cache. */
#define LWK_SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#define LWK_SLURM_CONF_CONFIGLESS "/run/slurm/conf/slurm.conf"

/*
 * slurm.conf's path into buf: env (the value of $SLURM_CONF) when set
 * and not empty, else the first of cands (NULL-terminated) that exists.
 * 0 found; -1 none (buf names what was looked for, for the message);
 * -2 the path does not fit.
 */
int lwk_slurm_conf_find(const char *env, const char *const *cands, char *buf, size_t len);

/*
 * The plugstack.conf slurm.conf at conf names: its PlugStackConfig
 * (the last, following its Include lines; a relative path is below
 * conf's directory, where Slurm would take it from its own working
 * directory; 64 files and 1 MiB read at most), else plugstack.conf
 * beside it.  0, or -1 when conf
 * cannot be read or the path does not fit (buf then names conf).
 */
int lwk_plugstack_of(const char *conf, char *buf, size_t len);

/* slurm.conf's (or a file of its format's) value of key, the last
 * through its Include lines, as written, into buf: 1 set, 0 not set
 * (buf empty), -1 conf cannot be read or the value does not fit. */
int lwk_slurm_conf_value(const char *conf, const char *key, char *buf, size_t len);

/* Why --contention-aware cannot split jobs on a node whose slurm.conf
 * is conf (TaskPlugin without task/cgroup; the cgroup.conf beside it
 * without ConstrainCores=yes): -1 with the setting and the file in why;
 * 0 when it can, or conf cannot be read (not judged). */
int lwk_casas_conf_problem(const char *conf, char *why, size_t len);

/* Whether the cgroup.conf beside slurm.conf conf has Slurm make its job
 * cgroups behind systemd's back (IgnoreSystemd=yes, for cgroup/v2) on a
 * node that systemd_runs: -1 with the setting and the file in why, else
 * 0 (also when it cannot be read: not judged). */
int lwk_systemd_conf_problem(const char *conf, bool systemd_runs, char *why, size_t len);

#endif
