/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/noise-sim: Monte-Carlo model of a bulk-synchronous loop at scale
 * under per-node monitor noise, with the monitors' ticks at a random phase
 * on each node and aligned on all nodes (Kamoshida & Taura, "System
 * monitoring without harming performance of parallel applications").
 *
 * Model.  P = nodes x procs-per-node processes start every iteration
 * together (after the previous barrier/allreduce) and each needs W of CPU.
 * Each node's monitor takes the CPU for D_k at instants phase + k*I; while
 * it runs, the process(es) it hits make no progress.  A process therefore
 * finishes at the instant it has had W of CPU: every noise burst that
 * starts before that instant pushes it back by the part of the burst that
 * falls after the iteration's start (a burst already under way at the
 * start costs its remainder, one arriving mid-work costs all of it).  The
 * iteration ends when the slowest process finishes; the slowdown is the
 * loop's total time over iterations x W.
 *
 * Random phases: each node's phase is uniform in [0, I), so with many
 * nodes some node is nearly always sampling and almost every iteration is
 * delayed.  Aligned: one phase for all nodes (plus optional per-node clock
 * error, --jitter-ms), so all nodes are delayed in the same iteration and
 * the cost is paid once per tick instead of once per node per tick.
 *
 * Burst lengths are D, or drawn per (node, tick) from a file of measured
 * sample costs; the same draws are used in both cases (common random
 * numbers), so the ratio is not blurred by different luck.  Each trial
 * draws fresh phases; results are means over trials.
 *
 * Not modelled: the barrier's own cost (fold it into W), CPU sharing
 * (a same-priority monitor on Linux shares the CPU rather than taking it
 * whole, but it takes the same D of CPU either way), other OS noise, and
 * burst lengths that depend on the number of processes sampled.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODE_COUNTS 64

static const char *prog = "noise-sim";

/* Options, with their defaults (the paper's allreduce loop and pinfo). */
static long node_counts[MAX_NODE_COUNTS] = { 8, 16, 32, 64, 128, 256 };
static int n_node_counts = 6;
static long procs_per_node = 16;
static double work_ms = 2.5;
static double interval_ms = 500;
static double noise_ms = 20;
static const char *cost_file;
static long iterations = 4000;
static long trials = 40;
static int hit_one;		/* only one core (process) of the node is hit */
static double jitter_ms;	/* aligned case: per-node clock error, uniform [0, J) */
static uint64_t seed = 1;
static int small_check;

static double *costs;		/* burst lengths in ms, from --cost-file */
static size_t n_costs;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [OPTION]...\n"
		"Monte-Carlo slowdown of a loop that synchronises all processes every\n"
		"iteration, with a per-node monitor sampling at random phases or aligned.\n"
		"\n"
		"  --nodes LIST          node counts, comma-separated (default 8,16,32,64,128,256)\n"
		"  --procs-per-node N    processes per node (default 16)\n"
		"  --work-ms MS          work per iteration W (default 2.5, the paper's\n"
		"                        allreduce loop; 25 matches bench/intrusiveness)\n"
		"  --interval-ms MS      monitor period I (default 500)\n"
		"  --noise-ms MS         monitor burst per tick D (default 20, the paper's pinfo)\n"
		"  --cost-file FILE      draw each burst from FILE instead: measured sample\n"
		"                        costs, one number in microseconds per line\n"
		"  --iterations N        iterations per trial (default 4000)\n"
		"  --trials N            trials (fresh random phases) to average (default 40)\n"
		"  --hit all|one         monitor delays all processes of its node (default)\n"
		"                        or one core's process, a different one each tick\n"
		"  --jitter-ms MS        aligned case: per-node clock error, uniform in\n"
		"                        [0, MS) (default 0: perfectly aligned)\n"
		"  --seed N              random seed (default 1)\n"
		"  --small-check         the configuration of bench/intrusiveness's defaults\n"
		"                        (2 nodes x 1 proc, W=25, 40 iterations, 2000 trials)\n"
		"                        and its predicted ratios; other options still apply\n"
		"  --help                this message\n",
		prog);
}

static _Noreturn void bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "%s: bad value for --%s: '%s' (expected %s)\n", prog, opt, val, want);
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(2);
}

static long parse_long(const char *opt, const char *val, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < min || v > max) {
		char want[96];

		snprintf(want, sizeof(want), "an integer from %ld to %ld", min, max);
		bad_arg(opt, val, want);
	}
	return v;
}

static double parse_ms(const char *opt, const char *val, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (errno || end == val || *end || !(v >= min && v <= max)) {
		char want[96];

		snprintf(want, sizeof(want), "milliseconds from %g to %g", min, max);
		bad_arg(opt, val, want);
	}
	return v;
}

static void parse_nodes(const char *val)
{
	char buf[1024], *save, *tok;

	if (strlen(val) >= sizeof(buf))
		bad_arg("nodes", val, "a shorter list");
	strcpy(buf, val);
	n_node_counts = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n_node_counts == MAX_NODE_COUNTS)
			bad_arg("nodes", val, "at most 64 node counts");
		node_counts[n_node_counts++] = parse_long("nodes", tok, 1, 1000000);
	}
	if (!n_node_counts)
		bad_arg("nodes", val, "a comma-separated list of node counts");
}

/* Measured costs in microseconds, one per line; blank and '#' lines skipped. */
static void read_costs(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	size_t cap = 0;
	long lineno = 0;

	if (!f) {
		fprintf(stderr, "%s: --cost-file: cannot open '%s': %s\n", prog, path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		double us;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '#' || !*p)
			continue;
		errno = 0;
		us = strtod(p, &end);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (errno || end == p || *end || !(us >= 0)) {
			fprintf(stderr, "%s: --cost-file %s:%ld: not a number of microseconds: %s",
				prog, path, lineno, line);
			exit(2);
		}
		if (n_costs == cap) {
			cap = cap ? 2 * cap : 256;
			costs = realloc(costs, cap * sizeof(*costs));
			if (!costs) {
				fprintf(stderr, "%s: out of memory\n", prog);
				exit(1);
			}
		}
		costs[n_costs++] = us / 1000;
	}
	fclose(f);
	if (!n_costs) {
		fprintf(stderr, "%s: --cost-file '%s' holds no costs\n", prog, path);
		exit(2);
	}
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nodes", required_argument, NULL, 'n' },
		{ "procs-per-node", required_argument, NULL, 'p' },
		{ "work-ms", required_argument, NULL, 'w' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "noise-ms", required_argument, NULL, 'd' },
		{ "cost-file", required_argument, NULL, 'f' },
		{ "iterations", required_argument, NULL, 'N' },
		{ "trials", required_argument, NULL, 't' },
		{ "hit", required_argument, NULL, 'H' },
		{ "jitter-ms", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "small-check", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	/*
	 * --small-check only changes defaults, so look for it first: options
	 * given with it override its settings whatever their order.
	 */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--small-check")) {
			small_check = 1;
			node_counts[0] = 2;
			n_node_counts = 1;
			procs_per_node = 1;
			work_ms = 25;
			iterations = 40;  /* one case run of bench/intrusiveness */
			trials = 2000;    /* ... and many of them, for a stable mean */
		}
	}
	opterr = 0; /* our own messages, naming the argument */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': parse_nodes(optarg); break;
		case 'p': procs_per_node = parse_long("procs-per-node", optarg, 1, 1000000); break;
		case 'w': work_ms = parse_ms("work-ms", optarg, 1e-3, 1e7); break;
		case 'i': interval_ms = parse_ms("interval-ms", optarg, 1e-3, 1e9); break;
		case 'd': noise_ms = parse_ms("noise-ms", optarg, 0, 1e9); break;
		case 'f': cost_file = optarg; break;
		case 'N': iterations = parse_long("iterations", optarg, 1, 100000000); break;
		case 't': trials = parse_long("trials", optarg, 1, 100000000); break;
		case 'H':
			if (!strcmp(optarg, "all"))
				hit_one = 0;
			else if (!strcmp(optarg, "one"))
				hit_one = 1;
			else
				bad_arg("hit", optarg, "'all' or 'one'");
			break;
		case 'j': jitter_ms = parse_ms("jitter-ms", optarg, 0, 1e9); break;
		case 's': seed = (uint64_t)parse_long("seed", optarg, 0, INT64_MAX); break;
		case 'S': break; /* handled above */
		case 'h': usage(stdout); exit(0);
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", prog);
			exit(2);
		default:
			fprintf(stderr, "%s: unknown argument '%s'\n", prog, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", prog);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\nTry '%s --help'.\n", prog, argv[optind], prog);
		exit(2);
	}
	if (cost_file) {
		read_costs(cost_file);
		for (size_t i = 0; i < n_costs; i++)
			if (costs[i] >= interval_ms) {
				/* A monitor busy all the time would never let the loop finish. */
				fprintf(stderr, "%s: --cost-file %s: cost %g us is not less than "
					"--interval-ms (%g)\n", prog, cost_file, costs[i] * 1000, interval_ms);
				exit(2);
			}
	} else if (noise_ms >= interval_ms) {
		/* A monitor busy all the time would never let the loop finish. */
		fprintf(stderr, "%s: --noise-ms (%g) must be less than --interval-ms (%g)\n",
			prog, noise_ms, interval_ms);
		exit(2);
	}
}

/* splitmix64: a hash good enough to give every (trial, node, tick) its own draw. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t tick_hash(uint64_t trial_key, long node, long tick)
{
	return mix(trial_key ^ mix((uint64_t)node * 0x100000001b3ull ^ (uint64_t)tick));
}

/* Length of node's burst at tick k (ms): D, or a measured cost drawn for (node, k). */
static double burst(uint64_t trial_key, long node, long k)
{
	if (!costs)
		return noise_ms;
	return costs[tick_hash(trial_key, node, k) % n_costs];
}

/* Which of the node's processes the burst at tick k hits (--hit one). */
static long hit_proc(uint64_t trial_key, long node, long k)
{
	return (long)(mix(tick_hash(trial_key, node, k)) % (uint64_t)procs_per_node);
}

static double uniform(uint64_t *state)
{
	*state = mix(*state);
	return (double)(*state >> 11) / 9007199254740992.0;
}

/*
 * Finish time of a process of `node` whose iteration starts at t, counting
 * the bursts from tick k0 on; with proc >= 0, only bursts that hit that
 * process (--hit one).  *last gets the last tick that delayed it, *ndelay
 * how many did.
 */
static double finish(uint64_t key, long node, double phase, long k0, double t,
		     long proc, long *last, int *ndelay)
{
	double cur = t, rem = work_ms;

	*ndelay = 0;
	for (long k = k0;; k++) {
		double s = phase + (double)k * interval_ms, e;

		if (s >= cur + rem) /* work done before this burst starts */
			return cur + rem;
		if (proc >= 0 && hit_proc(key, node, k) != proc)
			continue;
		e = s + burst(key, node, k);
		if (e <= cur)
			continue;
		if (s > cur) { /* worked until the burst came */
			rem -= s - cur;
			cur = s;
		}
		cur = e; /* no progress until the burst ends */
		*last = k;
		++*ndelay;
	}
}

/*
 * Total time of `iterations` iterations on `nodes` nodes, node n's ticks
 * at phase[n] + k*I.  first[n] is the node's earliest tick that may still
 * overlap the current iteration; the ticks only move forward, so each
 * iteration costs O(nodes), not O(nodes x ticks).
 */
static double simulate(uint64_t key, long nodes, const double *phase, long *first)
{
	double t = 0;

	for (long n = 0; n < nodes; n++)
		first[n] = -1; /* a burst under way when the loop starts counts too */
	for (long it = 0; it < iterations; it++) {
		double end = t + work_ms;

		for (long n = 0; n < nodes; n++) {
			long k = first[n], last = k;
			int nd;
			double f;

			/* Skip bursts over before this iteration. */
			while (phase[n] + (double)k * interval_ms + burst(key, n, k) <= t)
				k++;
			first[n] = k;
			f = finish(key, n, phase[n], k, t, -1, &last, &nd);
			/*
			 * --hit one: a burst delays only one process of the node,
			 * but the barrier waits for that one, so the node's time is
			 * the same unless two bursts hit different processes in one
			 * iteration; only then look at processes one by one.
			 */
			if (hit_one && nd > 1 && procs_per_node > 1) {
				double worst = t + work_ms;

				for (long j = k; j <= last; j++) {
					long l;
					int d;
					double fp = finish(key, n, phase[n], k, t,
							   hit_proc(key, n, j), &l, &d);

					if (fp > worst)
						worst = fp;
				}
				f = worst;
			}
			if (f > end)
				end = f;
		}
		t = end;
	}
	return t;
}

struct result {
	double random, aligned; /* mean slowdowns over trials */
};

static struct result run_config(long nodes)
{
	double *phase_r = malloc((size_t)nodes * sizeof(double));
	double *phase_a = malloc((size_t)nodes * sizeof(double));
	long *first = malloc((size_t)nodes * sizeof(long));
	struct result res = { 0, 0 };
	double ideal = (double)iterations * work_ms;

	if (!phase_r || !phase_a || !first) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	for (long tr = 0; tr < trials; tr++) {
		uint64_t key = mix(seed ^ mix((uint64_t)nodes << 32 ^ (uint64_t)tr));
		uint64_t st = key;
		/* Aligned: one phase for all (the loop starts at a random time). */
		double common = uniform(&st) * interval_ms;

		for (long n = 0; n < nodes; n++) {
			phase_r[n] = uniform(&st) * interval_ms;
			phase_a[n] = common + uniform(&st) * jitter_ms;
		}
		res.random += simulate(key, nodes, phase_r, first) / ideal;
		res.aligned += simulate(key, nodes, phase_a, first) / ideal;
	}
	res.random /= (double)trials;
	res.aligned /= (double)trials;
	free(phase_r);
	free(phase_a);
	free(first);
	return res;
}

int main(int argc, char **argv)
{
	char noise[128];

	parse_args(argc, argv);
	if (costs) {
		double sum = 0, max = 0;

		for (size_t i = 0; i < n_costs; i++) {
			sum += costs[i];
			if (costs[i] > max)
				max = costs[i];
		}
		snprintf(noise, sizeof(noise), "D drawn from %s (%zu costs, mean %.3g ms, max %.3g ms)",
			 cost_file, n_costs, sum / (double)n_costs, max);
	} else {
		snprintf(noise, sizeof(noise), "D=%g ms", noise_ms);
	}
	printf("noise-sim: W=%g ms work per iteration, monitor %s every I=%g ms, %ld iterations x %ld trials, "
	       "%ld procs/node, hit %s%s, seed %llu\n",
	       work_ms, noise, interval_ms, iterations, trials, procs_per_node,
	       hit_one ? "one core per tick" : "all procs of the node",
	       jitter_ms > 0 ? "" : ", aligned clocks exact", (unsigned long long)seed);
	if (jitter_ms > 0)
		printf("aligned case: per-node clock error uniform in [0, %g ms)\n", jitter_ms);
	printf("slowdown = loop time / (iterations x W); ratio = random / aligned\n\n");
	printf("%8s %10s %16s %17s %8s\n", "nodes", "processes", "slowdown random", "slowdown aligned",
	       "ratio");

	struct result at4096 = { 0, 0 }, first_row = { 0, 0 };
	int have4096 = 0;
	long at4096_nodes = 0;

	for (int i = 0; i < n_node_counts; i++) {
		long nodes = node_counts[i];
		struct result r = run_config(nodes);

		printf("%8ld %10ld %16.3f %17.3f %8.2f\n", nodes, nodes * procs_per_node, r.random,
		       r.aligned, r.random / r.aligned);
		fflush(stdout);
		if (i == 0)
			first_row = r;
		if (nodes * procs_per_node == 4096) {
			at4096 = r;
			at4096_nodes = nodes;
			have4096 = 1;
		}
	}

	printf("\n");
	if (small_check) {
		/*
		 * bench/intrusiveness measures mean iteration time with the
		 * monitor over that without, which is what these slowdowns are
		 * (its case a is this model's ideal loop).
		 */
		struct result r = first_row;

		printf("predicted for bench/intrusiveness (its defaults: %ld CPUs as nodes, W=%g ms, "
		       "D=%g ms, I=%g ms): b/a = %.3f, c/a = %.3f, b/c = %.3f\n",
		       node_counts[0], work_ms, noise_ms, interval_ms, r.random, r.aligned,
		       r.random / r.aligned);
	}
	if (small_check) {
		/* the paper comparison is about 4096 processes, not this */
	} else if (have4096) {
		printf("paper: 7x random, ~1.2x aligned+cheap at 4096 processes; "
		       "model at 4096 processes: %.2fx random, %.3fx aligned (%s)",
		       at4096.random, at4096.aligned, noise);
		/*
		 * The paper's 1.2x combines alignment with cheap (1-3 ms)
		 * samples, so also give the model's aligned figure for 2 ms.
		 */
		if (!costs && noise_ms > 2) {
			double d = noise_ms;

			noise_ms = 2;
			printf(", %.3fx aligned with cheap D=2 ms",
			       run_config(at4096_nodes).aligned);
			noise_ms = d;
		}
		printf("\n");
	} else
		printf("paper: 7x random, ~1.2x aligned+cheap at 4096 processes "
		       "(no 4096-process row here: use 256 nodes x 16 procs to compare)\n");
	return 0;
}
