/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin's state, shared by the glue files (lwk_plugin.h): filled in
 * by slurm_spank_init and the option callbacks, one instance in each
 * process that loads the plugin.  In a file of its own so that no glue
 * file reaches back into the dispatcher.
 */
#include <string.h>

#include "lwk_plugin.h"
#include "node/irqbalance.h"
#include "node/nodename.h"
#include "node/statedir.h"

struct lwk_config lwk_cfg;
struct lwk_job_request lwk_req;

void lwk_node_name(char *buf, size_t len)
{
	lwk_this_node(buf, len);
}

void lwk_node_roots_of(struct lwk_node_roots *r, const char *node)
{
	memset(r, 0, sizeof(*r));
	r->sysfs = "/sys";
	r->proc = "/proc";
	r->cgroup_root = lwk_cfg.cgroup_root;
	r->state_root = lwk_cfg.state_dir;
	r->node = node;
	r->mck_prefix = lwk_cfg.mckernel;
	r->irqbalance_dir = LWK_IRQBALANCE_DIR;
	r->irqbalance_ban = lwk_cfg.lwk_irqbalance;
}
