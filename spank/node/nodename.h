/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_NODE_NODENAME_H
#define LWK_NODE_NODENAME_H

#include <stddef.h>

/*
 * This node's name in Slurm (its NodeName): where its state lives and
 * what slurmctld is asked about.  The name slurmd was found to run as
 * (lwk_this_node_set, in slurmd), else SLURMD_NODENAME (set by
 * slurmstepd, by Slurm for the prolog and epilog, by lwk-sweep --node),
 * else the short host name.
 */
void lwk_this_node(char *buf, size_t len);

/* Set once, in slurmd's slurm_spank_init, before anything asks.  0, or
 * -1 for a name that cannot be a node's (empty, too long, with '/'). */
int lwk_this_node_set(const char *name);

/*
 * slurmd's NodeName from its arguments (ARGS: LEN bytes of
 * /proc/self/cmdline, NUL-separated), read as slurmd's getopt_long reads
 * them: the last -N NAME (-NNAME, or -N ending a group of flags).
 * Returns 1 with the name in out, 2 for a dynamic node (-Z: its name is
 * the host name), 0 when neither (or the name does not fit).
 */
int lwk_slurmd_args_node(const char *args, size_t len, char *out, size_t outlen);

#endif
