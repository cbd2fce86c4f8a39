# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A real MPI code: HPC Challenge (Debian's hpcc, Open MPI, launched by
# srun --mpi=pmix) across nodes, under --lwk with --sync-monitor and
# under --contention-aware (on the guests: on one node, see MPI_NODES).
# Each test checks hpcc's own verdict (Success=1, one MPI world of all
# the ranks), where every rank ran, and, with the sampler, that it saw
# the ranks.  hpcc runs with a small problem
# (N=200): 2 to 8 s on the host, 30 to 70 s on one TCG guest.

# Nodes and ranks per node of the --lwk and --contention-aware jobs, and
# how long one hpcc job may take.  Between the TCG guests a small message
# takes 4 to 12 ms and 2 MB about 1 s (measured), and hpcc's
# latency-bandwidth section (not optional) ran for more than 15 minutes
# across two guests (its HPL to FFT sections: 42 s): on the guests those
# jobs run on one node, their ranks talking through shared memory, and
# only the plain test crosses nodes.
if [ -n "${LWK_GUEST_SHARE:-}" ]; then
	MPI_NODES=1 MPI_PPN=2
else
	MPI_NODES=2 MPI_PPN=2
fi
# An hpcc job's bound: the cluster's pace (a trivial job) 60 times, at
# least 300 s.  The bookworm guests ran hpcc under --contention-aware in
# 70 to 160 s, and past 300 s beside two image builds and others' work:
# a fixed bound was the machine's speed.
MPI_SECONDS=$(wait_bound 60)
[ "$MPI_SECONDS" -ge 300 ] || MPI_SECONDS=300

need_mpi() {
	[ "$LWK_NODES" -ge 2 ] || skip "needs 2 nodes, the cluster has $LWK_NODES"
	on_each_node command -v hpcc >/dev/null ||
		skip "hpcc is not installed on the nodes (scripts/deps installs openmpi-bin, hpcc and libpmix-dev; the guest image has them)"
	srun --mpi=list 2>&1 | grep -qw pmix || skip "Slurm here has no mpi/pmix plugin"
}

# mpi_dir NAME RANKS: a directory every node reads, holding hpcc's input
# for RANKS ranks (an 1 x RANKS grid) and the rank wrapper.  Prints it.
mpi_dir() {
	local dir=$LWK_WORK/$1 ranks=$2
	mkdir -p "$dir" && chmod 755 "$dir"
	# The HPL part of Debian's example, with N=200; hpcc derives the
	# sizes of its other kernels (STREAM, FFT, RandomAccess) from it.
	cat >"$dir/hpccinf.txt" <<EOF
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
200          Ns
1            # of NBs
40           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
$ranks            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
EOF
	# Each task: (contention-aware) wait until its node's arbiter has
	# placed the job, so that hpcc starts on the dies it keeps; then hpcc
	# as a child, and while it runs, every second, one line: the CPUs it
	# may use, the CPUs its threads last ran on (field 39 of each
	# thread's stat) and the job's CPUs in the node's record.  Read with
	# bash alone: under TCG every fork costs the rank next to it.
	# Busy-polling ranks that share a CPU (every node of the host's
	# cluster is the same 2 CPUs; --lwk puts each node's ranks on the
	# same App CPU) wait on each other for whole time slices: Open MPI
	# yields when idle, which takes hpcc's latency test from 25 s to 1.
	cat >"$dir/mpirank.sh" <<'EOF'
export OMPI_MCA_mpi_yield_when_idle=1
log=rank.$SLURM_PROCID
rec=${SLURM_CASAS_RECORD:-}
field() { # FILE KEY: the value of KEY= in FILE
	local line
	while IFS= read -r line; do
		[ "${line%%=*}" = "$2" ] && { echo "${line#*=}"; return; }
	done <"$1"
}
if [ -n "$rec" ]; then
	for ((i = 0; i < 600; i++)); do
		case $(field "$rec" status 2>/dev/null) in placed | equal | shared) break ;; esac
		sleep 0.5
	done
	echo "record status=$(field "$rec" status) dies=$(field "$rec" dies) cpus=$(field "$rec" cpus) " >"$log"
fi
hpcc &
pid=$!
echo "start $SLURMD_NODENAME pid=$pid app=${SLURM_LWK_APP_CPUS:-}" >>"$log"
while kill -0 "$pid" 2>/dev/null; do
	allowed= ran=
	while IFS=$'\t' read -r k v; do
		[ "$k" = Cpus_allowed_list: ] && allowed=$v
	done <"/proc/$pid/status" 2>/dev/null
	for t in /proc/$pid/task/*/stat; do
		read -r line <"$t" 2>/dev/null || continue
		set -- ${line##*) }
		ran=$ran${ran:+,}${37}
	done
	cpus= other=
	[ -z "$rec" ] || cpus=$(field "$rec" cpus 2>/dev/null)
	# The CPUs of the job named in MPI_OTHER, from its record next to ours.
	[ -z "$rec" ] || [ -z "${MPI_OTHER:-}" ] || other=$(field "${rec%/*}/$MPI_OTHER" cpus 2>/dev/null)
	[ -z "$allowed" ] || echo "sample allowed=$allowed ran=$ran record=$cpus other=$other" >>"$log"
	sleep 1
done
wait "$pid"
rc=$?
echo "exit $rc" >>"$log"
exit $rc
EOF
	echo "$dir"
}

# mpi_wait JOB SECONDS: wait_job with a longer bound (hpcc under TCG),
# and the jobs' output when it is exceeded.
mpi_wait() {
	if ! (wait_job "$1" "$2") 2>"$LWK_WORK/.mpi_wait"; then
		fail "$(cat "$LWK_WORK/.mpi_wait") $(tail -c 1500 "$LWK_WORK"/*/job.out 2>/dev/null)"
	fi
	job_state=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
}

# hpcc's verdict: every kernel passed and all RANKS ranks were one world
# (ranks that failed to join through PMIx run as worlds of one).
assert_hpcc_success() {
	local dir=$1 ranks=$2 jid=$3
	[ "$job_state" = COMPLETED ] ||
		fail "job $jid ended $job_state: $(tail -c 2000 "$dir/job.out") $(grep -h 'pmix\|PMIx' "$LWK_DEV_DIR"/log/slurmd-*.log 2>/dev/null | grep -i error | tail -5)"
	[ -s "$dir/hpccoutf.txt" ] || fail "hpcc wrote no hpccoutf.txt: $(tail -c 2000 "$dir/job.out")"
	assert_grep '^Success=1$' "$dir/hpccoutf.txt" "hpcc's summary"
	assert_grep "^CommWorldProcs=$ranks\$" "$dir/hpccoutf.txt" "hpcc's summary (one MPI world of $ranks ranks)"
	assert_grep '\.\.\.\.\.\. PASSED$' "$dir/hpccoutf.txt" "HPL's residual check"
	[ "$(ls "$dir"/rank.* 2>/dev/null | wc -l)" = "$ranks" ] || fail "expected $ranks rank logs: $(ls "$dir")"
	[ -z "$(grep -L '^exit 0$' "$dir"/rank.*)" ] || fail "a rank did not exit 0: $(grep -H '^exit' "$dir"/rank.*)"
}

# in_list CPUS LIST: every CPU of CPUS (a list) is in LIST.
in_list() {
	local c
	for c in $(expand_cpus "$1"); do
		[[ " $(expand_cpus "$2") " == *" $c "* ]] || return 1
	done
}

expand_cpus() {
	local part out=()
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then out+=($(seq "${part%-*}" "${part#*-}")); elif [ -n "$part" ]; then out+=("$part"); fi
	done
	echo "${out[*]}"
}

test_hpcc_runs_across_nodes() {
	local dir jid n=2 ranks=2
	need_mpi
	[ -z "${LWK_GUEST_SHARE:-}" ] ||
		skip "hpcc across two TCG guests runs for more than 15 minutes (its latency-bandwidth section over the emulated network); the host cluster runs it"
	dir=$(mpi_dir hpcc-plain $ranks)
	jid=$(sbatch --parsable -N $n --ntasks-per-node=1 -c 2 -D "$dir" -o "$dir/job.out" \
		--wrap "srun --mpi=pmix bash $dir/mpirank.sh") || fail "sbatch failed"
	defer scancel "$jid"
	mpi_wait "$jid" $MPI_SECONDS
	assert_hpcc_success "$dir" $ranks "$jid"
	[ "$(grep -h '^start' "$dir"/rank.* | awk '{ print $2 }' | sort -u | wc -l)" = $n ] ||
		fail "the ranks did not run on $n nodes: $(grep -h '^start' "$dir"/rank.*)"
	echo "measure: hpcc on $n nodes, $ranks ranks: $(hpcc_seconds "$dir") s"
}

# hpcc's run time, from the first and last time stamps it printed.
hpcc_seconds() {
	sed -n 's/^Current time (\([0-9]*\)).*/\1/p' "$1/hpccoutf.txt" | sed -n '1p;$p' | paste -sd' ' - |
		awk '{ print $2 - $1 }'
}

test_hpcc_under_lwk_runs_on_the_app_cores_and_the_sampler_sees_its_ranks() {
	local dir jid n=$MPI_NODES ranks=$((MPI_NODES * MPI_PPN)) f node pid app line rank samples=0
	need_mpi
	dir=$(mpi_dir hpcc-lwk $ranks)
	jid=$(sbatch --parsable -N $n --ntasks-per-node=$MPI_PPN --lwk --sync-monitor=interval=100ms,dir="$dir" \
		-D "$dir" -o "$dir/job.out" --wrap "srun --mpi=pmix bash $dir/mpirank.sh") || fail "sbatch failed"
	defer scancel "$jid"
	mpi_wait "$jid" $MPI_SECONDS
	assert_hpcc_success "$dir" $ranks "$jid"
	[ "$(grep -h '^start' "$dir"/rank.* | awk '{ print $2 }' | sort -u | wc -l)" = $n ] ||
		fail "the ranks did not run on $n nodes: $(grep -h '^start' "$dir"/rank.*)"
	for f in "$dir"/rank.*; do
		rank=${f##*.}
		read -r _ node pid app <<<"$(grep '^start' "$f")"
		pid=${pid#pid=} app=${app#app=}
		[ -n "$app" ] || fail "rank $rank on $node has no SLURM_LWK_APP_CPUS: $(cat "$f")"
		while read -r line; do
			set -- $line
			samples=$((samples + 1))
			# Open MPI may bind a rank to part of them itself (5.x
			# binds a direct-launched rank to its package).
			in_list "${2#allowed=}" "$app" || fail "rank $rank on $node may run on CPUs ${2#allowed=}, not only the App CPUs $app"
			in_list "${3#ran=}" "$app" || fail "rank $rank on $node ran on CPUs ${3#ran=}, outside the App CPUs $app"
		done < <(grep '^sample' "$f")
		# The sampler of the rank's node listed hpcc's process, busy.
		grep -h "\"pid\":$pid,\"comm\":\"hpcc\",\"cpu_us\":[1-9]" "$dir/syncmon-$jid-$node.jsonl" >/dev/null ||
			fail "the sampler on $node did not record rank $rank (hpcc, pid $pid) using CPU: $(grep -o '"procs":[^]]*' "$dir/syncmon-$jid-$node.jsonl" | sort | uniq -c | sort -rn | head -3)"
	done
	[ $samples -ge $ranks ] || fail "only $samples samples of the ranks' CPUs: hpcc ended before the wrappers looked"
	for node in $(grep -h '^start' "$dir"/rank.* | awk '{ print $2 }' | sort -u); do
		tail -1 "$dir/syncmon-$jid-$node.jsonl" | grep -q '"end":true' || fail "the sampler on $node left no footer"
	done
	echo "measure: hpcc on $n nodes under --lwk --sync-monitor, $ranks ranks: $(hpcc_seconds "$dir") s"
}

# hpcc under --contention-aware sharing its nodes with another
# contention-aware job of one die's worth of tasks on each node.
test_hpcc_under_contention_aware_runs_on_the_dies_it_was_given() {
	local dir jid other n=$MPI_NODES cpus dies ranks f node line rank rec samples=0 theirs node_a deadline
	need_mpi
	scontrol show partition cosched >/dev/null 2>&1 ||
		skip "needs the co-scheduling partition 'cosched' of the private dev cluster"
	# Not lib.sh's slurm_cgroups: under the runner's pipefail its grep -q
	# can end the pipe before scontrol has written all (SIGPIPE, 141).
	[[ $(scontrol show config) =~ ProctrackType\ *=\ proctrack/cgroup ]] || skip "needs Slurm's job cgroups (TaskPlugin=task/cgroup, proctrack/cgroup) for the arbiter to split dies; this cluster makes none"
	node_a=$(sinfo -h -N -o '%N' | sort -u | tail -1)
	cpus=$(scontrol show node "$node_a" | grep -oE 'CPUTot=[0-9]+' | cut -d= -f2)
	dies=$(scontrol show node "$node_a" | grep -oE 'Sockets=[0-9]+' | cut -d= -f2)
	[ "$dies" -ge 2 ] || skip "needs two dies or more per node; $node_a has $dies"
	ranks=$((MPI_PPN * n))
	dir=$(mpi_dir hpcc-casas $ranks)
	# The other job: on the last nodes (not node1: the guests' slurmctld).
	# It holds dies of its own whatever it does; its tasks sleep, so that
	# on the TCG guests they take no host CPU from hpcc (busy, they made
	# this test 3 minutes longer).  What busy jobs get is t70's to test.
	# Each task says (a file per node) once its node has placed it: the
	# hpcc job comes after, so that no probe of the other job's, begun
	# late on a loaded node, narrows hpcc's dies under its ranks.
	cat >"$dir/other.sh" <<'EOF'
for ((i = 0; i < $1; i++)); do sleep 100000 & done
rec=${SLURM_CASAS_RECORD:-}
while [ -n "$rec" ]; do
	while IFS= read -r line; do
		case $line in status=placed | status=equal | status=shared) : >"$2/placed.$SLURMD_NODENAME"; rec= ;; esac
	done <"$rec"
	[ -z "$rec" ] || sleep 0.5
done
wait
EOF
	other=$(sbatch --parsable -p cosched -N $n -w "$(sinfo -h -N -o '%N' | sort -u | tail -n "$n" | paste -sd, -)" \
		--ntasks-per-node=1 -c "$cpus" -o "$dir/other.out" --contention-aware=event=task-clock,probe=300ms \
		--wrap "srun bash $dir/other.sh $((cpus / dies)) $dir") || fail "sbatch failed"
	defer scancel "$other"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[ "$(ls "$dir"/placed.* 2>/dev/null | wc -l)" -lt "$n" ] || break
		snooze 0.5
	done
	[ "$(ls "$dir"/placed.* 2>/dev/null | wc -l)" = "$n" ] ||
		fail "the other job $other was not placed on its $n nodes within $(wait_bound) s: $(ls "$dir"); $(squeue -h -j "$other" -o '%T %R' 2>&1); $(tail -n 5 "$dir/other.out" 2>/dev/null)"
	# min_dies: a die for each rank, whatever the probe measured (on
	# dies of one core, two ranks on one die would share one CPU).
	# Slurm's own binding (task/affinity): the step may launch while the
	# probe holds the job on one die (the launch widens its cgroups
	# until its last task is bound), and its ranks still end on the
	# job's dies, which the cgroup enforces.
	jid=$(sbatch --parsable -p cosched -N $n -w "$(sinfo -h -N -o '%N' | sort -u | tail -n "$n" | paste -sd, -)" \
		--ntasks-per-node=$MPI_PPN -c $((cpus / MPI_PPN)) --export=ALL,MPI_OTHER="$other" \
		--contention-aware=event=task-clock,probe=300ms,min_dies=$MPI_PPN \
		-D "$dir" -o "$dir/job.out" --wrap "srun --mpi=pmix bash $dir/mpirank.sh") || fail "sbatch failed"
	defer scancel "$jid"
	mpi_wait "$jid" $MPI_SECONDS
	assert_hpcc_success "$dir" $ranks "$jid"
	for f in "$dir"/rank.*; do
		rank=${f##*.}
		node=$(grep '^start' "$f" | awk '{ print $2 }')
		rec=$(grep '^record' "$f")
		[[ $rec == *"status=placed "* || $rec == *"status=equal "* ]] ||
			fail "rank $rank on $node: the job was not given dies of its own: $rec"
		rec=$(sed -n 's/.* cpus=\([^ ]*\).*/\1/p' <<<"$rec")
		while read -r line; do
			set -- $line
			samples=$((samples + 1))
			[ "${2#allowed=}" = "${4#record=}" ] ||
				fail "rank $rank on $node may run on CPUs ${2#allowed=}, its job's record gives it ${4#record=}"
			in_list "${3#ran=}" "${4#record=}" ||
				fail "rank $rank on $node ran on CPUs ${3#ran=}, outside its job's CPUs ${4#record=}"
			# The other job's CPUs at the same moment: none of them.
			[ -n "${5#other=}" ] || fail "the other job $other has no record on $node while hpcc runs"
			for c in $(expand_cpus "${2#allowed=}"); do
				[[ " $(expand_cpus "${5#other=}") " != *" $c "* ]] ||
					fail "rank $rank on $node may use CPU $c, which the other job $other holds (${5#other=})"
			done
		done < <(grep '^sample' "$f")
	done
	[ $samples -ge $ranks ] || fail "only $samples samples of the ranks' CPUs: hpcc ended before the wrappers looked"
	echo "measure: hpcc on $n nodes under --contention-aware next to another job, $ranks ranks: $(hpcc_seconds "$dir") s"
}
