/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz the parsers that read what users and admins write: the three
 * option grammars, the plugstack arguments (and slurm.conf's
 * PlugStackConfig), cpulists (and irqbalance's hex masks); and what the
 * plugin reads back from the kernel or its own state (/proc/<pid>/stat,
 * taskstats replies, memory.numa_stat, saved IRQ affinities, the --lwk
 * state file, the --contention-aware record and /proc/<pid>/cgroup).
 * Invariants:
 * no crash or sanitizer report; every refusal says "lwk: ..."; every
 * accepted value prints in a form that parses back to the same value.
 *
 * Built two ways: with -DLWK_LIBFUZZER for libFuzzer (make
 * fuzz-libfuzzer), or as a plain program that mutates a seed corpus
 * with a fixed seed for FUZZ_ITERATIONS rounds (make check).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "casas/casasnode.h"
#include "node/cgroup.h"
#include "common/config.h"
#include "node/irqaff.h"
#include "node/irqbalance.h"
#include "lwk/part.h"
#include "lwk/part_int.h"
#include "common/cpulist.h"
#include "common/options.h"
#include "common/slurmconf.h"
#include "node/procstat.h"
#include "node/taskstats.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz: invariant failed: %s (input '%s')\n", \
				#cond, text);                                  \
			abort();                                               \
		}                                                              \
	} while (0)

static const struct lwk_option_grammar *const grammars[] = {
	&lwk_grammar_lwk, &lwk_grammar_syncmon, &lwk_grammar_casas,
};

/* Big enough for the longest cpulist of LWK_MAX_CPUS ("0,2,4,...") */
static char buf[65536];

/* The same text as a slurm.conf (lwk-sweep looks for PlugStackConfig
 * in it): a file in a directory of this process's own (what a
 * relative Include matches), removed at exit. */
static char conf_dir[64], conf_path[96];

static void conf_path_remove(void)
{
	unlink(conf_path);
	rmdir(conf_dir);
}

static void slurm_conf_text(const char *text)
{
	char found[256];
	FILE *f;
	int rc;

	if (!conf_path[0]) {
		snprintf(conf_dir, sizeof(conf_dir), "/tmp/lwk-fuzz-slurmconf.XXXXXX");
		if (!mkdtemp(conf_dir))
			return;
		snprintf(conf_path, sizeof(conf_path), "%s/slurm.conf", conf_dir);
		atexit(conf_path_remove);
	}
	f = fopen(conf_path, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	rc = lwk_plugstack_of(conf_path, found, sizeof(found));
	CHECK(rc == 0 || rc == -1);
	CHECK(strlen(found) < sizeof(found) && found[0] != '\0');
	rc = lwk_slurm_conf_value(conf_path, "TaskPlugin", found, sizeof(found));
	CHECK(rc >= -1 && rc <= 1 && strlen(found) < sizeof(found));
	CHECK(rc == 1 || found[0] == '\0' || rc == -1);
	/* The file as cgroup.conf too (its neighbour is not there: fine). */
	rc = lwk_casas_conf_problem(conf_path, found, sizeof(found));
	CHECK((rc == 0 || rc == -1) && strlen(found) < sizeof(found));
	rc = lwk_systemd_conf_problem(conf_path, true, found, sizeof(found));
	CHECK((rc == 0 || rc == -1) && strlen(found) < sizeof(found));
}

static void one(uint8_t sel, const char *text)
{
	char err[512];

	err[0] = '\0';
	switch (sel % 10) {
	case 0:
	case 1:
	case 2: {
		const struct lwk_option_grammar *g = grammars[sel % 10];
		union {
			struct lwk_opts l;
			struct lwk_syncmon_opts s;
			struct lwk_casas_opts c;
		} a, b;

		if (lwk_option_parse(g, text, &a, err, sizeof(err)) == 0) {
			size_t n = lwk_option_format(g, &a, buf, sizeof(buf));

			CHECK(n < sizeof(buf));
			CHECK(lwk_option_parse(g, buf, &b, err, sizeof(err)) == 0);
			CHECK(memcmp(&a, &b, g->size) == 0);
		} else {
			CHECK(strncmp(err, "lwk: ", 5) == 0);
		}
		break;
	}
	case 3: {
		/* Plugstack arguments: split on spaces as Slurm does. */
		char copy[4096], *argv[64], *save = NULL, *tok;
		int argc = 0;
		struct lwk_config c;

		snprintf(copy, sizeof(copy), "%s", text);
		for (tok = strtok_r(copy, " ", &save); tok && argc < 64; tok = strtok_r(NULL, " ", &save))
			argv[argc++] = tok;
		if (lwk_config_parse(argc, argv, &c, err, sizeof(err)))
			CHECK(strncmp(err, "lwk: plugstack.conf: ", 21) == 0);
		slurm_conf_text(text);
		break;
	}
	case 4: {
		struct lwk_cpuset s, t;

		if (lwk_cpulist_parse(text, LWK_MAX_CPUS, &s) == 0) {
			CHECK(lwk_cpulist_format(&s, buf, sizeof(buf)) < sizeof(buf));
			CHECK(lwk_cpulist_parse(buf, LWK_MAX_CPUS, &t) == 0);
			CHECK(lwk_cpuset_equal(&s, &t));
		} else {
			CHECK(lwk_cpuset_count(&s) == 0);
		}
		/* The same text as irqbalance's hex mask: no read past it,
		 * and an accepted mask prints as a list that parses. */
		if (lwk_irqbalance_parse_mask(text, &s) == 0) {
			CHECK(lwk_cpulist_format(&s, buf, sizeof(buf)) < sizeof(buf));
			CHECK(lwk_cpulist_parse(buf, LWK_MAX_CPUS, &t) == 0 && lwk_cpuset_equal(&s, &t));
		}
		break;
	}
	case 5: {
		/* /proc/<pid>/stat text: parse or refuse, never read past it. */
		struct lwk_procstat st;
		size_t n = strlen(text);
		char *exact = malloc(n ? n : 1);

		if (exact) {
			memcpy(exact, text, n);
			if (lwk_procstat_parse(exact, n, &st) == 0)
				CHECK(st.pid > 0);
			free(exact);
		}
		break;
	}
	case 6:
		break; /* raw bytes: see LLVMFuzzerTestOneInput */
	case 7: {
		/* memory.numa_stat text and the saved IRQ affinity state: parse
		 * or refuse, never write past the node array; restoring into a
		 * proc root that does not exist writes nothing. */
		static const char *const keys[] = { "anon", "file", "total", NULL };
		uint64_t nodes[LWK_MAX_NUMA];
		int rc;

		(void)lwk_parse_numa_stat(text, keys, 4096, nodes);
		rc = lwk_irq_restore("/nonexistent-lwk-fuzz", text, err, sizeof(err));
		CHECK(rc >= 0 || strncmp(err, "lwk: ", 5) == 0);
		break;
	}
	case 8: {
		/* The --lwk state file (root's, but a teardown must survive a
		 * torn one): parse or refuse; what parses prints back to the
		 * same plan. */
		static struct lwk_part p, q;

		if (lwk_part_parse(text, &p, err, sizeof(err))) {
			CHECK(strncmp(err, "lwk: ", 5) == 0);
			break;
		}
		snprintf(p.backend, sizeof(p.backend), "linux");
		lwk_part_format(&p, buf, sizeof(buf));
		CHECK(lwk_part_parse(buf, &q, err, sizeof(err)) == 0);
		CHECK(lwk_cpuset_equal(&p.plan.app_cpus, &q.plan.app_cpus));
		CHECK(lwk_cpuset_equal(&p.plan.os_cpus, &q.plan.os_cpus));
		CHECK(p.plan.deleg_mem == q.plan.deleg_mem);
		/* The isolated partition's lines (lwk/xlines.c), read and
		 * undone against a cgroup root that is not there: whole lines
		 * only, paths clean, nothing written. */
		{
			static const char *const keys[] = { "xcpus", "xpart", "appcg", "xfail" };
			struct lwk_node_roots r = { "/nonexistent", "/nonexistent", "/nonexistent-cg",
						    "/nonexistent", "n", "/nonexistent", 0, 0, NULL, false };
			struct lwk_part_remains k = { buf, sizeof(buf), 0 };

			for (int i = 0; i < 4; i++) {
				struct lwk_xline *x;
				int n = lwk_xlines(text, keys[i], &x);

				for (int j = 0; j < n; j++)
					CHECK(x[j].path[0] == '/' && !strstr(x[j].path, "/..") &&
					      !strchr(x[j].path, '\n') && !strchr(x[j].path, ' '));
				free(x);
			}
			buf[0] = '\0';
			lwk_part_unisolate(&r, text, true, err, sizeof(err), &k);
			buf[0] = '\0';
			lwk_part_unisolate(&r, text, false, err, sizeof(err), &k);
		}
		break;
	}
	case 9: {
		/* The --contention-aware record (readable by every user, written
		 * by root; a re-plan must survive a torn one) and the cgroup
		 * lines it is built from. */
		static struct lwk_casas_record r, q;
		char path[768];

		if (lwk_casas_job_cgroup(text, 42, path, sizeof(path)) == 0)
			CHECK(strstr(path, "/job_42") != NULL && strlen(path) < sizeof(path));
		/* slurmd's own v2 cgroup, at its start: under the root. */
		if (lwk_cgroup_v2_dir(text, "/r", path, sizeof(path)) == 0)
			CHECK(strncmp(path, "/r", 2) == 0 && (path[2] == '\0' || path[2] == '/'));
		if (lwk_casas_record_parse(text, &r, err, sizeof(err))) {
			CHECK(strncmp(err, "lwk: ", 5) == 0);
			break;
		}
		CHECK(lwk_casas_record_format(&r, buf, sizeof(buf)) < sizeof(buf));
		CHECK(lwk_casas_record_parse(buf, &q, err, sizeof(err)) == 0);
		CHECK(q.job == r.job && !strcmp(q.status, r.status) && q.curve.n == r.curve.n);
		CHECK(lwk_cpuset_equal(&q.allowed_cpus, &r.allowed_cpus));
		CHECK(lwk_cpuset_equal(&q.dies, &r.dies));
		CHECK(!strcmp(q.cgroup, r.cgroup));
		CHECK(q.probing == r.probing && q.prober_pid == r.prober_pid &&
		      q.prober_start == r.prober_start);
		CHECK(q.ticket == r.ticket && q.mems_held == r.mems_held);
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size == 0)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	one(data[0], text);
	free(text);
	if (data[0] % 10 == 6) {
		/* A netlink reply from a confused kernel: exact-size copy
		 * so the sanitizer sees any read past its end. */
		struct lwk_task_cpu c;
		void *raw = malloc(size - 1 ? size - 1 : 1);

		if (raw) {
			memcpy(raw, data + 1, size - 1);
			(void)lwk_taskstats_parse_reply(raw, size - 1, *(const uint16_t *)(const void *)"\x15\x00", &c, NULL);
			free(raw);
		}
	}
	return 0;
}

#ifndef LWK_LIBFUZZER
static const char *const seeds[] = {
	"anon N0=4096 N1=8192\nfile N0=0 N1=12\n",
	"total=3 N0=1 N1=2\n",
	"24 0-7\n25 4\n",
	"job 42\nbackend linux\napp_cpus 2-7\nos_cpus 0-1\nmem_nodes 0-1\npage_kb 2048\n"
	"node_mem 0 14680064\ndeleg 134217728 100000 100000\nirq 24 0-7\nirqs 1 0\nhuge 0 7 7\n"
	"cgroup /slurm-lwk/n1/job_42/app\nready\nappcg /s.slice/n1.scope/job_42/step_0/user\n"
	"xcpus /s.slice 2-7\nxcpus /s.slice/n1.scope/job_42/step_0/user 2-7\n"
	"xpart /s.slice/n1.scope/job_42/step_0/user\nxfail /s.slice/x\n",
	"os=2,mem=4G,numa=0:2-3,backend=linux,hugepage=1G,deleg_mem=128M,deleg_cpu=50%",
	"interval=500ms,offset=0,dir=/tmp/x,source=proc,idle=0.5,fullscan=20,flush=20,buffer=1M",
	"probe=200ms,min_dies=1,max_dies=4,event=INST_RETIRED:ANY_P,objective=antt",
	"lwk=no on_error=drain_node sync_monitor=yes contention_aware=1",
	"ClusterName=c\nInclude slurm.conf\nPlugStackConfig = spank/plugstack.conf # x\n",
	"0-3,8,10-20:2",
	"00000001,0000000f",
	"(null)",
	"job=42\nstatus=placed\nwhy=\ncgroup=/system.slice/n1_slurmstepd.scope/job_42\n"
	"allowed_cpus=0-7\nallowed_mems=0-1\noptions=probe=500ms,min_dies=1,max_dies=0,"
	"event=instructions,objective=antt\ncounters=instructions (hardware)\nprobing=2\n"
	"prober=4242:987654\nticket=3\nips=1:1e+09,2:1.9e+09\ndies=0-1\ncpus=0-3\nmems=0\n"
	"mems_held=1795000000\nsplit=2 job(s)\n",
	"0::/system.slice/node1_slurmstepd.scope/job_42/step_0/user/task_0\n"
	"5:cpuset:/slurm_node1/uid_0/job_42/step_batch\n",
	"4242 (a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 3 0 987654 12345678 321",
};

static const char *const tokens[] = {
	",", "=", ":", "-", "%", ".", "os", "mem", "numa", "interval", "offset", "dir",
	"999999999999999999999", "0", "1", "4G", "1T", "10us", "1s", "auto", "\n", "\xff",
	"yes", "(null)", ",,", "==", "/", " ", "xcpus ", "xpart ", "/..", "//",
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

int main(void)
{
	const char *env = getenv("FUZZ_ITERATIONS");
	long iterations = env ? atol(env) : 100000;
	char in[512];

	for (long i = 0; i < iterations; i++) {
		uint8_t sel = (uint8_t)(next() % 10);
		size_t len;
		int edits = 1 + (int)(next() % 6);

		snprintf(in, sizeof(in), "%s", seeds[next() % (sizeof(seeds) / sizeof(*seeds))]);
		for (int e = 0; e < edits; e++) {
			len = strlen(in);
			size_t at = len ? next() % (len + 1) : 0;

			switch (next() % 4) {
			case 0: /* insert a token */ {
				const char *tk = tokens[next() % (sizeof(tokens) / sizeof(*tokens))];
				size_t tl = strlen(tk);

				if (len + tl + 1 < sizeof(in)) {
					memmove(in + at + tl, in + at, len - at + 1);
					memcpy(in + at, tk, tl);
				}
				break;
			}
			case 1: /* delete a run */
				if (at < len) {
					size_t n = 1 + next() % (len - at);

					memmove(in + at, in + at + n, len - at - n + 1);
				}
				break;
			case 2: /* replace a byte with any byte but NUL */
				if (at < len)
					in[at] = (char)(1 + next() % 255);
				break;
			case 3: /* truncate */
				in[at] = '\0';
				break;
			}
		}
		one(sel, in);
	}
	printf("fuzz_parsers: %ld inputs, no invariant broken\n", iterations);
	return 0;
}
#endif
