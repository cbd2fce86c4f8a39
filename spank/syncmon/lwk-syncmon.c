/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwk-syncmon: the --sync-monitor sampler, one per node per job.
 *
 * Started by the lwk SPANK plugin as root from the job's first step on
 * the node (it inherits the job's lock on <state>/syncmon.lock and
 * holds it for its whole life, so a second step never starts a second
 * sampler), stopped with SIGTERM by the job epilog; it also stops by
 * itself once the job has left the node.  This is its command line;
 * the sampling is syncmon/sampler.c.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "syncmon/sampler.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: lwk-syncmon --job ID --node NAME --uid UID --gid GID --dir DIR\n"
		"                   --state DIR [--options K=V,...] [--cgroup DIR]\n"
		"                   [--proc DIR] [--cpus LIST] [--orphan-after SECONDS]\n"
		"                   [--ready-fd FD] [--memory-max BYTES] [--cpu-max HUNDREDTHS]\n"
		"                   [--fifo PRIO] [--foreground]\n"
		"  --cpus LIST  run only on these CPUs (the OS cores of an --lwk job)\n"
		"  --orphan-after SECONDS  stop when the job has had no process here\n"
		"               this long (default 300; the job epilog stops it first)\n"
		"  --ready-fd FD  write \"o\" to FD and close it once the source is open (at\n"
		"               once but for source=bpf), or \"r\" and the reason when the\n"
		"               BPF source cannot work\n"
		"  --memory-max BYTES  its data (heap and private mappings) once its source is\n"
		"               loaded (default 134217728: plugstack.conf syncmon_memory=)\n"
		"  --cpu-max HUNDREDTHS  its CPU on average, in hundredths of a percent of one\n"
		"               CPU (default 1000: syncmon_cpu=10%%); ticks over it are skipped\n"
		"  --fifo PRIO  run SCHED_FIFO at this priority, 1 to 49 (plugstack.conf\n"
		"               syncmon_fifo=), back to the normal class for good if a tick\n"
		"               runs past its share of the interval; default the normal class\n"
		"Exit status: 0; 1 could not start sampling; 2 bad arguments; 3 source=bpf\n"
		"cannot work on this node.\n"
		"Started by the lwk SPANK plugin; see slurm-lwk(1), --sync-monitor.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "job", required_argument, NULL, 'j' },   { "node", required_argument, NULL, 'n' },
		{ "uid", required_argument, NULL, 'u' },   { "gid", required_argument, NULL, 'g' },
		{ "dir", required_argument, NULL, 'd' },   { "state", required_argument, NULL, 's' },
		{ "options", required_argument, NULL, 'o' }, { "cgroup", required_argument, NULL, 'c' },
		{ "proc", required_argument, NULL, 'p' },  { "foreground", no_argument, NULL, 'f' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "orphan-after", required_argument, NULL, 'O' },
		{ "ready-fd", required_argument, NULL, 'R' },
		{ "memory-max", required_argument, NULL, 'M' },
		{ "cpu-max", required_argument, NULL, 'U' },
		{ "fifo", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 }
	};
	struct lwk_sampler_args a = { .uid = (uid_t)-1, .gid = (gid_t)-1, .proc_root = "/proc",
				      .orphan_after = 300, .ready_fd = -1,
				      .memory_max = 128ULL << 20, .cpu_max = 1000 };
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': a.job = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'n': a.node = optarg; break;
		case 'u': a.uid = (uid_t)strtoul(optarg, NULL, 10); break;
		case 'g': a.gid = (gid_t)strtoul(optarg, NULL, 10); break;
		case 'd': a.dir = optarg; break;
		case 's': a.state = optarg; break;
		case 'o': a.options = optarg; break;
		case 'c': a.cgroup = optarg; break;
		case 'p': a.proc_root = optarg; break;
		case 'f': break;
		case 'C': a.cpus = optarg; break;
		case 'O': a.orphan_after = strtoull(optarg, NULL, 10); break;
		case 'M': a.memory_max = strtoull(optarg, NULL, 10); break;
		case 'U': a.cpu_max = strtoull(optarg, NULL, 10); break;
		case 'F': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (end == optarg || *end || !v || v > 49) {
				usage();
				return 2;
			}
			a.fifo = (unsigned)v;
			break;
		}
		case 'R':
			a.ready_fd = (int)strtol(optarg, NULL, 10);
			/* Not for the sampler's children, and never stdin/out/err. */
			if (a.ready_fd < 3 || fcntl(a.ready_fd, F_SETFD, FD_CLOEXEC))
				a.ready_fd = -1;
			break;
		default: usage(); return 2;
		}
	}
	if (!a.job || !a.node || !a.orphan_after || a.orphan_after > 86400 || !a.memory_max ||
	    !a.cpu_max || a.cpu_max > 10000 || a.uid == (uid_t)-1 ||
	    a.gid == (gid_t)-1 || !a.dir || !a.state || a.dir[0] != '/') {
		usage();
		return 2;
	}
	return lwk_sampler_run(&a);
}
