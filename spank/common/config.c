/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/config.h"

#include <stdio.h>
#include <string.h>

#include "common/kv.h"

static const char *const on_error_choices[] = { "fail_job", "drain_node", NULL };
/* In the order of enum lwk_isolate. */
static const char *const isolate_choices[] = { "auto", "partition", "cpuset", NULL };

static const struct lwk_kv_key config_keys[] = {
	{ "lwk", LWK_KV_BOOL, offsetof(struct lwk_config, offer_lwk), 0, 0, NULL, LWK_KV_NOSET },
	{ "sync_monitor", LWK_KV_BOOL, offsetof(struct lwk_config, offer_syncmon), 0, 0, NULL, LWK_KV_NOSET },
	{ "contention_aware", LWK_KV_BOOL, offsetof(struct lwk_config, offer_casas), 0, 0, NULL, LWK_KV_NOSET },
	{ "on_error", LWK_KV_ENUM, offsetof(struct lwk_config, on_error), 0, 0, on_error_choices, LWK_KV_NOSET },
	{ "state_dir", LWK_KV_PATH, offsetof(struct lwk_config, state_dir), 0,
	  sizeof(((struct lwk_config *)0)->state_dir), NULL, LWK_KV_NOSET },
	{ "syncmon", LWK_KV_PATH, offsetof(struct lwk_config, syncmon), 0,
	  sizeof(((struct lwk_config *)0)->syncmon), NULL, LWK_KV_NOSET },
	{ "cgroup_root", LWK_KV_PATH, offsetof(struct lwk_config, cgroup_root), 0,
	  sizeof(((struct lwk_config *)0)->cgroup_root), NULL, LWK_KV_NOSET },
	{ "mckernel", LWK_KV_PATH, offsetof(struct lwk_config, mckernel), 0,
	  sizeof(((struct lwk_config *)0)->mckernel), NULL, LWK_KV_NOSET },
	{ "lwk_whole_dies", LWK_KV_BOOL, offsetof(struct lwk_config, lwk_whole_dies), 0, 0, NULL,
	  LWK_KV_NOSET },
	{ "lwk_isolate", LWK_KV_ENUM, offsetof(struct lwk_config, lwk_isolate), 0, 0, isolate_choices,
	  LWK_KV_NOSET },
	{ "lwk_irqbalance", LWK_KV_BOOL, offsetof(struct lwk_config, lwk_irqbalance), 0, 0, NULL,
	  LWK_KV_NOSET },
	/* At least the sampler's own tables and the smallest buffer=. */
	{ "syncmon_memory", LWK_KV_SIZE, offsetof(struct lwk_config, syncmon_memory),
	  LWK_SYNCMON_OWN_BYTES + (64ULL << 10), 1ULL << 40, NULL, LWK_KV_NOSET },
	/* From a hundredth of a percent of one CPU to a whole one. */
	{ "syncmon_cpu", LWK_KV_PERCENT, offsetof(struct lwk_config, syncmon_cpu), 1, 10000, NULL,
	  LWK_KV_NOSET },
	/* Below threaded IRQ handlers (50), which the sampler must not
	 * hold off; 0 leaves it off. */
	{ "syncmon_fifo", LWK_KV_UINT, offsetof(struct lwk_config, syncmon_fifo), 0, 49, NULL,
	  LWK_KV_NOSET },
	{ NULL, 0, 0, 0, 0, NULL, 0 }
};

void lwk_config_defaults(struct lwk_config *c)
{
	c->offer_lwk = true;
	c->offer_syncmon = true;
	c->offer_casas = true;
	c->on_error = LWK_ON_ERROR_FAIL_JOB;
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", "/run/slurm-lwk");
	snprintf(c->syncmon, sizeof(c->syncmon), "%s", LWK_SYNCMON_PATH);
	snprintf(c->cgroup_root, sizeof(c->cgroup_root), "%s", "/sys/fs/cgroup");
	snprintf(c->mckernel, sizeof(c->mckernel), "%s", "/opt/mckernel");
	c->lwk_whole_dies = false;
	c->lwk_isolate = LWK_ISOLATE_AUTO;
	c->lwk_irqbalance = true;
	/* The largest buffer= (64 MiB) and the sampler's own tables fit. */
	c->syncmon_memory = 128ULL << 20;
	/* A tenth of a CPU: 50 ms of each 500 ms tick (the default
	 * interval), tens of times what a tick of thousands of processes
	 * costs (bench/sample-costs). */
	c->syncmon_cpu = 1000;
	c->syncmon_fifo = 0;
}

static void key_list(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (const struct lwk_kv_key *k = config_keys; k->name && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", k == config_keys ? "" : ", ",
					k->name);
}

int lwk_config_parse(int argc, char **argv, struct lwk_config *c,
		     char *err, size_t errlen)
{
	bool seen[16] = { false };

	lwk_config_defaults(c);
	for (int i = 0; i < argc; i++) {
		char key[64];
		const char *eq = strchr(argv[i], '=');
		size_t n;
		int idx;

		if (!eq || eq == argv[i]) {
			char names[256];

			key_list(names, sizeof(names));
			snprintf(err, errlen,
				 "lwk: plugstack.conf: argument '%.64s' is not key=value; allowed keys: %s",
				 argv[i], names);
			goto fail;
		}
		n = (size_t)(eq - argv[i]);
		if (n >= sizeof(key))
			n = sizeof(key) - 1;
		memcpy(key, argv[i], n);
		key[n] = '\0';
		if (lwk_kv_apply(config_keys, "plugstack.conf", key, eq + 1, c, err, errlen))
			goto fail;
		if ((!strcmp(key, "state_dir") || !strcmp(key, "syncmon") ||
		     !strcmp(key, "cgroup_root") || !strcmp(key, "mckernel")) && eq[1] != '/') {
			snprintf(err, errlen, "lwk: plugstack.conf: %s='%.200s' is not valid; "
				 "%s must be an absolute path", key, eq + 1, key);
			goto fail;
		}
		for (idx = 0; strcmp(config_keys[idx].name, key); idx++)
			;
		if (seen[idx]) {
			snprintf(err, errlen, "lwk: plugstack.conf: key '%s' is given twice", key);
			goto fail;
		}
		seen[idx] = true;
	}
	return 0;
fail:
	lwk_config_defaults(c);
	return -1;
}

size_t lwk_config_format(const struct lwk_config *c, char *buf, size_t len)
{
	return lwk_kv_format(config_keys, c, buf, len);
}

int lwk_config_refusal_rc(const struct lwk_config *c, bool login_env)
{
	return c->on_error == LWK_ON_ERROR_DRAIN_NODE && !login_env ? -1 : 0;
}
