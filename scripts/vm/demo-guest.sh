#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The demo's guest half: run on node1 of the guest cluster by
# "scripts/demo --vm" (scripts/vmcluster exec).  There the dies, the two
# NUMA nodes and Slurm's cgroup v2 layout are real.
set -uo pipefail
step() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@" || true; }
work=$(mktemp -d /share/work/demo.XXXXXX)
chmod 755 "$work"
cd "$work" || exit 1

step "what slurm-lwk sees of a guest: 2 sockets x 2 dies x 2 cores, NUMA per socket"
show lwk-topology
show lwk-topology --format conf
show sinfo -N -o '%N %P %c %z %t'

step "die placement on real dies: two one-CPU jobs in partition 'dies' on node1"
a=$(sbatch --parsable -p dies -w node1 -n1 -o /dev/null --wrap 'sleep 30')
b=$(sbatch --parsable -p dies -w node1 -n1 -o /dev/null --wrap 'sleep 30')
cgroup_of() { ls -d /sys/fs/cgroup/system.slice/*slurmstepd.scope/job_"$1" 2>/dev/null | head -1; }
# Running, and slurmstepd has made the job's cgroup.
for ((i = 0; i < 60; i++)); do
	[ -s "$(cgroup_of "$a")/cpuset.cpus.effective" ] && [ -s "$(cgroup_of "$b")/cpuset.cpus.effective" ] && break
	sleep 0.5
done
for j in $a $b; do
	cg=$(cgroup_of "$j")
	echo "job $j: $(scontrol show job -d "$j" | grep -oE 'NumCPUs=[0-9]+|CPU_IDs=[0-9,-]+' | tr '\n' ' ')" \
		"cgroup cpuset.cpus.effective=$(cat "$cg/cpuset.cpus.effective" 2>/dev/null)"
done
echo "(one CPU asked; each job is confined by its cgroup to one whole die, never the same)"
scancel "$a" "$b"

step "--sync-monitor on 3 guests: one sampler per node, reading the job's cgroup v2"
jid=$(sbatch --parsable -N3 -o "$work/sm.out" --sync-monitor=interval=100ms,flush=10,dir="$work" \
	--wrap 'srun -N3 sleep 3')
for ((i = 0; i < 120; i++)); do
	state=$(scontrol show job "$jid" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
	sleep 0.5
done
echo "job $jid: $state"
show ls -l "$work"
show head -c 600 "$work/syncmon-$jid-node1.jsonl"
echo
grep -h "lwk: step $jid\..*started the sampler" /share/log/slurmd-node*.log

step "the kernel paths --lwk and --contention-aware build on, checked on this guest"
LWK_KERNEL_CHECKS=1 /src/testsuite/kernel/check_kpath --expect-dies 4 --expect-numa 2
echo
echo "Job files are in $work (on the host: ${work/#\/share/\$LWK_VM_DIR/share})."
