# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# --lwk for real: each node's partition set up by slurmstepd, the job's
# tasks on the App cores, its batch script in the delegation cgroup on
# the OS cores, and everything given back when the job ends, is
# cancelled, or loses its slurmstepd.  On the host (cgroup v1, no Slurm
# cgroups: the plugin's own) and on the guests (cgroup v2, Slurm's
# task/cgroup layout, 2 NUMA nodes).

# One line per task: node|app|os|mems|role|allowed CPUs|allowed mems|cgroup
LWK_PROBE='echo "$SLURMD_NODENAME|$SLURM_LWK_APP_CPUS|$SLURM_LWK_OS_CPUS|$SLURM_LWK_MEM_NODES|$SLURM_LWK_ROLE|$(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status)|$(sed -n "s/^Mems_allowed_list:\t//p" /proc/self/status)|$(grep -m1 -E "^0::|[:,]cpuset[:,]" /proc/self/cgroup | cut -d: -f3)"'

# The probe as a script every node reads (job output dir is shared).
probe() {
	printf '%s\n' "$LWK_PROBE" >"$LWK_WORK/probe.sh"
	echo "bash $LWK_WORK/probe.sh"
}

# expand LIST: "0-2,5" -> "0 1 2 5"
expand() {
	local part out=()
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			out+=($(seq "${part%-*}" "${part#*-}"))
		elif [ -n "$part" ]; then
			out+=("$part")
		fi
	done
	echo "${out[*]}"
}

# The node's cores as Slurm sees them (Sockets x CoresPerSocket).
node_cores() {
	local line
	line=$(scontrol show node "$1")
	echo $(($(grep -oE 'Sockets=[0-9]+' <<<"$line" | cut -d= -f2) *
		$(grep -oE 'CoresPerSocket=[0-9]+' <<<"$line" | cut -d= -f2)))
}

# What --lwk changes on a node, to compare before and after a job.
# With remote partitions (cgroup v2, 6.7+): every exclusive CPU set
# anywhere in the cgroup tree, and the CPUs isolated by partitions.
node_snapshot() {
	on_node "$1" bash -c 'grep -H . /proc/irq/*/smp_affinity_list 2>/dev/null;
		grep -H . /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages;
		find /sys/fs/cgroup -name cpuset.cpus.exclusive -exec grep -H . {} + 2>/dev/null;
		grep -H . /sys/fs/cgroup/cpuset.cpus.isolated 2>/dev/null; true'
}

# Wait until the epilog has torn down job $2 on node $1 (it runs after
# the job leaves squeue's running states), up to wait_bound: a loaded
# 2-CPU machine has taken over 20 s for an epilog.
wait_teardown() {
	local end=$((SECONDS + $(wait_bound)))
	while [ $SECONDS -lt $end ]; do
		on_node "$1" test -e "$LWK_STATE_DIR/$1/$2/lwk.state" || return 0
		snooze 0.25
	done
	echo "--- $1's slurmd log on job $2:"
	grep -E "job $2\b|\[$2\.|JobId=$2\b" "$(slurmd_log "$1")" 2>/dev/null | tail -n 30
	echo "--- its state:"
	on_node "$1" cat "$LWK_STATE_DIR/$1/$2/lwk.state" 2>&1 | tail -n 20
	fail "the --lwk state of job $2 is still on $1 after $(wait_bound) s"
}

# Wait until no job's --lwk state is left on node $1 (srun's own
# allocations end before their epilog has run).
wait_no_partition() {
	local end=$((SECONDS + $(wait_bound)))
	while [ $SECONDS -lt $end ]; do
		on_node "$1" bash -c "ls $LWK_STATE_DIR/$1/*/lwk.state" >/dev/null 2>&1 || return 0
		snooze 0.25
	done
	fail "a --lwk state is still on $1 after $(wait_bound) s: $(on_node "$1" bash -c "ls $LWK_STATE_DIR/$1/*/lwk.state" 2>&1)"
}

# Nothing of job $2 on node $1: state, the plugin's cgroups, changes.
assert_nothing_left() {
	local node=$1 jid=$2 before=$3 after left
	wait_teardown "$node" "$jid"
	left=$(on_node "$node" bash -c "ls -d $LWK_STATE_DIR/$node/$jid /sys/fs/cgroup/slurm-lwk/$node/job_$jid \
		/sys/fs/cgroup/*/slurm-lwk/$node/job_$jid 2>/dev/null" || true)
	[ -z "$left" ] || fail "left behind on $node: $left"
	after=$(node_snapshot "$node")
	[ "$after" = "$before" ] || fail "IRQ affinity or hugepages on $node differ after job $jid: $(diff <(echo "$before") <(echo "$after") | head -8)"
}

test_tasks_run_on_the_app_cores_and_the_batch_script_on_the_os_cores() {
	local jid n=$LWK_NODES node app os mems role cpus allowed_mems cg online p sluid lvl
	p=$(probe)
	jid=$(sbatch --parsable -N "$n" --lwk -o "$LWK_WORK/probe.out" --wrap "$p; srun -N $n $p") ||
		fail "sbatch failed"
	# Slurm's cgroup level of the job: job_<id>, or its SLUID (26.05).
	sluid=$(job_sluid "$jid")
	lvl="job_$jid"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/probe.out")"
	[ "$(grep -c '|app|' "$LWK_WORK/probe.out")" = "$n" ] ||
		fail "expected $n App tasks: $(cat "$LWK_WORK/probe.out")"
	[ "$(grep -c '|delegation|' "$LWK_WORK/probe.out")" = 1 ] ||
		fail "expected the batch script as the delegation: $(cat "$LWK_WORK/probe.out")"
	while IFS='|' read -r node app os mems role cpus allowed_mems cg; do
		[ -n "$app" ] && [ -n "$os" ] || fail "$node: no App or OS CPUs: '$app' '$os'"
		online=$(on_node "$node" cat /sys/devices/system/cpu/online)
		# The split is the node's CPUs, each on one side.
		[ "$(tr ' ' '\n' <<<"$(expand "$app") $(expand "$os")" | sort -n | tr '\n' ' ')" = \
		  "$(tr ' ' '\n' <<<"$(expand "$online")" | sort -n | tr '\n' ' ')" ] ||
			fail "$node: App $app + OS $os is not the node's CPUs $online, once each"
		if [ "$role" = app ]; then
			[ "$cpus" = "$app" ] || fail "$node: an App task may run on CPUs $cpus, not only $app"
			[ "$allowed_mems" = "$mems" ] || fail "$node: an App task may use memory nodes $allowed_mems, not only $mems"
			if slurm_cgroups; then
				# v2: step_0/user/task_<t>; v1 (cpuset): step_0
				[[ -n $sluid && $cg == */$sluid/* ]] && lvl=$sluid
				[[ $cg == */$lvl/step_0/user/task_* || $cg == */$lvl/step_0 ]] ||
					fail "$node: App task in $cg, not Slurm's step cgroup"
			else
				[ "$cg" = "/slurm-lwk/$node/job_$jid/app" ] || fail "$node: App task in $cg"
			fi
		else
			[ "$cpus" = "$os" ] || fail "$node: the batch script may run on CPUs $cpus, not only the OS CPUs $os"
			if slurm_cgroups; then
				[[ -n $sluid && $cg == */$sluid/* ]] && lvl=$sluid
				[[ $cg == */$lvl/step_batch/user/task_* || $cg == */$lvl/step_batch ]] ||
					fail "$node: batch script in $cg"
			else
				[ "$cg" = "/slurm-lwk/$node/job_$jid/delegation" ] || fail "$node: batch script in $cg"
			fi
		fi
	done <"$LWK_WORK/probe.out"
}

test_the_delegation_cgroup_limits_memory_and_cpu() {
	local jid
	# 200 MiB through tail (it keeps the whole line) in each role.
	jid=$(sbatch --parsable -N1 --lwk=deleg_mem=48M,deleg_cpu=50 -o "$LWK_WORK/deleg.out" \
		--wrap 'head -c 200M /dev/zero | tail >/dev/null; echo "batch=$?";
			d=$(grep -m1 -E "^0::|[:,]cpu[:,]" /proc/self/cgroup | cut -d: -f3);
			for f in /sys/fs/cgroup$d/cpu.max /sys/fs/cgroup$(dirname $d)/cpu.max /sys/fs/cgroup/cpu$d/cpu.cfs_quota_us; do
				[ -r $f ] && cat $f; done;
			srun bash -c "head -c 200M /dev/zero | tail >/dev/null; echo step=\$?"') ||
		fail "sbatch failed"
	wait_job "$jid"
	assert_grep '^batch=137$' "$LWK_WORK/deleg.out" "the batch script over deleg_mem=48M (killed)"
	assert_grep '^step=0$' "$LWK_WORK/deleg.out" "the App step (not limited)"
	if slurm_cgroups && on_node ${NODE1} test -d /sys/fs/cgroup/cpuset; then
		# Slurm on v1 makes no cpu cgroup of a step: the quota is not
		# set, and the log says so.
		assert_grep "lwk: job $jid: delegation tasks placed in cgroup .* \(v1: no cpu cgroup of the step: that limit is not set\)" \
			"$(slurmd_log "$(squeue -h -t all -j "$jid" -o %N)")"
	else
		assert_grep '^50000( 100000)?$' "$LWK_WORK/deleg.out" "the delegation CPU quota for deleg_cpu=50"
	fi
}

test_an_impossible_request_fails_the_job_not_the_node() {
	local cores name jid
	cores=$(node_cores ${NODE1})
	name=$(unique_name lwkbig)
	run_expect_fail "$LWK_WORK/err" srun -J "$name" -N1 -w ${NODE1} --lwk=os="$cores" true
	assert_grep "lwk: --lwk: os=$cores leaves no App core: the job has $cores core\(s\) on this node" "$LWK_WORK/err"
	all_nodes_usable
	jid=$(squeue -h -t all -n "$name" -o %i | head -1)
	[ -n "$jid" ] || fail "no job named $name"
	! on_node ${NODE1} test -e "$LWK_STATE_DIR/${NODE1}/$jid/lwk.state" || fail "state of job $jid left on ${NODE1}"
}

# job_submit.lua gives --lwk jobs whole nodes; a step that went around
# it (srun --lwk inside an allocation of one CPU, which the policy never
# sees) is refused on the node.
test_a_job_without_the_whole_node_is_refused() {
	local jid
	jid=$(sbatch --parsable -N1 -n1 -w ${NODE2} -o "$LWK_WORK/part.out" \
		--wrap 'srun --lwk=os=1 echo the job ran') || fail "sbatch failed"
	defer scancel "$jid"
	wait_job "$jid"
	[ "$job_state" = FAILED ] || fail "job $jid ended $job_state, expected FAILED: $(cat "$LWK_WORK/part.out")"
	assert_grep "lwk: --lwk needs whole nodes: the job has CPUs [0-9,-]+ of [0-9,-]+ here; submit with --exclusive" \
		"$LWK_WORK/part.out" "the job's output"
	assert_no_grep "the job ran" "$LWK_WORK/part.out" "the job's output"
	! on_node ${NODE2} test -e "$LWK_STATE_DIR/${NODE2}/$jid/lwk.state" || fail "state of job $jid left on ${NODE2}"
	all_nodes_usable
}

# plugstack lwk_whole_dies=yes (nodes of die-granular partitions): the
# OS cores are whole dies, so the partition is whole dies too.
test_os_cores_in_whole_dies_when_the_node_says_so() {
	need_own_cluster 'plugstack.conf (lwk_os_dies=)'
	local conf=$LWK_PLUGSTACK line dies per out want
	line=$(scontrol show node ${NODE1})
	dies=$(grep -oE 'Sockets=[0-9]+' <<<"$line" | cut -d= -f2)
	per=$(grep -oE 'CoresPerSocket=[0-9]+' <<<"$line" | cut -d= -f2)
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	sed -i "/^[^#]*lwk[.]so/s|\$| lwk_whole_dies=yes|" "$conf"
	if [ "$dies" -ge 2 ]; then
		out=$(srun -N1 -w ${NODE1} --lwk=os=1 printenv SLURM_LWK_OS_CPUS 2>"$LWK_WORK/err") ||
			fail "srun failed: $(cat "$LWK_WORK/err")"
		# Dies are Slurm's sockets here: the first die is CPUs 0..per-1
		# (a die of one core has nothing to round: the guests whose
		# dies have two cores show it).
		want=0-$((per - 1))
		[ "$per" != 1 ] || want=0
		[ "$out" = "$want" ] || fail "os=1 in whole dies of $per cores gave OS CPUs $out, not $want"
	else
		# One die: rounding os=1 up to it leaves no App core.
		run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} --lwk=os=1 true
		assert_grep "os=1 rounded up to whole dies leaves no App core" "$LWK_WORK/err"
	fi
	cp "$LWK_WORK/plugstack.orig" "$conf"
	all_nodes_usable
}

test_steps_share_one_partition() {
	local jid
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk -o "$LWK_WORK/steps.out" -e "$LWK_WORK/steps.err" \
		--wrap 'srun printenv SLURM_LWK_APP_CPUS; srun printenv SLURM_LWK_APP_CPUS & srun printenv SLURM_LWK_APP_CPUS & wait') ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/steps.out")"
	[ "$(sort -u "$LWK_WORK/steps.out" | wc -l)" = 1 ] && [ "$(wc -l <"$LWK_WORK/steps.out")" = 3 ] ||
		fail "3 steps should see one partition: $(cat "$LWK_WORK/steps.out")"
	[ "$(grep -c "lwk: step $jid\.[a-z0-9]*: partition on ${NODE1}" "$(slurmd_log ${NODE1})")" = 1 ] ||
		fail "the partition was set up $(grep -c "lwk: step $jid\." "$(slurmd_log ${NODE1})") times, not once"
}

# within LIST SIDE: is every CPU of LIST one of SIDE's (and LIST not
# empty)?
within() {
	local c side
	side=" $(expand "$2") "
	[ -n "$1" ] || return 1
	for c in $(expand "$1"); do [[ $side == *" $c "* ]] || return 1; done
}

# assert_probe LINE ROLE [JOB]: a probe line of a task of ROLE (app or
# delegation), running on CPUs of its side only (all of them, or those
# Slurm's binding gave it there).
assert_probe() {
	local node app os mems role cpus rest
	IFS='|' read -r node app os mems role cpus rest <<<"$1"
	[ "$role" = "$2" ] || fail "${3:+job $3: }a task that should be $2 is '$role': $1"
	[ "$2" = app ] && { within "$cpus" "$app" ||
		fail "${3:+job $3: }an App task on $node may run on CPUs $cpus, not only the App CPUs $app"; }
	[ "$2" = delegation ] && { within "$cpus" "$os" ||
		fail "${3:+job $3: }a $2 task on $node may run on CPUs $cpus, not only the OS CPUs $os"; }
	return 0
}

# srun --overlap --jobid without --lwk into a running --lwk job (a look
# at the job from a login node): its tasks run with the job's helpers
# on the OS cores, never on the App cores, and the partition stays: a
# step with --lwk still gets the App cores.
test_a_step_attached_without_lwk_runs_on_the_os_cores() {
	local jid p out started=$LWK_WORK/attach.started
	p=$(probe)
	# The last node: on the guests the first one runs slurmctld, and an
	# App step's set-up leaves it CPU 0 only.
	jid=$(sbatch --parsable -N1 -w "$(node_n "$LWK_NODES")" --lwk -o /dev/null \
		--wrap "srun bash -c 'echo \$SLURM_LWK_ISOLATION >$started; exec sleep $held_sleep'") ||
		fail "sbatch failed"
	defer scancel "$jid"
	# Running: its task starts once the step's set-up is done.
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[ -s "$started" ] && break
		snooze 0.25
	done
	[ -s "$started" ] || fail "job $jid's App step did not start within $(wait_bound) s"
	out=$(srun --jobid="$jid" --overlap -n1 $p 2>&1) || fail "the attached step failed: $out"
	assert_probe "$out" delegation "$jid"
	# With --contention-aware (no submit policy on this path) it is
	# refused: the split would rewrite the partition's cpusets.
	run_expect_fail "$LWK_WORK/attach.err" srun --jobid="$jid" --overlap -n1 --contention-aware true
	assert_grep "lwk: --contention-aware: job $jid has an --lwk partition on $(node_n "$LWK_NODES")" "$LWK_WORK/attach.err" \
		"the step's output"
	out=$(srun --jobid="$jid" --overlap --lwk -n1 $p 2>&1) || fail "a step with --lwk failed after it: $out"
	assert_probe "$out" app "$jid"
	[ "$(squeue -h -j "$jid" -s -o %i | grep -c "^$jid\.0$")" = 1 ] || fail "job $jid's App step ended"
}

# --cpu-bind binds each task within its side of the partition.  Slurm
# binds within the whole node it gave the job: a task bound to an OS CPU
# was left with all the App CPUs, over the others' bound ones, and the
# binding of a later task to an OS CPU failed the launch ("Invalid
# argument").  Each task now gets App CPUs of its own.
test_cpu_bind_binds_each_task_within_the_app_cores() {
	local p out node app os n bind k line cpus seen c
	p=$(probe)
	node=$(node_n "$LWK_NODES")
	out=$(srun -N1 -w "$node" --lwk -n1 $p 2>"$LWK_WORK/bind.err") ||
		fail "srun --lwk failed: $out $(cat "$LWK_WORK/bind.err")"
	IFS='|' read -r _ app os _ <<<"$out"
	n=$(wc -w <<<"$(expand "$app")")
	[ "$n" -ge 2 ] || skip "needs 2 App CPUs ($node has App CPUs '$app')"
	[ "$n" -le 4 ] || n=4
	for bind in cores "map_cpu:${app%%[-,]*},${os%%[-,]*}"; do
		k=$n
		[[ $bind != map_cpu:* ]] || k=2
		out=$(srun -N1 -w "$node" --lwk -n "$k" --cpu-bind="$bind" $p 2>"$LWK_WORK/bind.err") ||
			fail "srun --lwk -n $k --cpu-bind=$bind failed: $out $(cat "$LWK_WORK/bind.err")"
		[ "$(wc -l <<<"$out")" = "$k" ] || fail "--cpu-bind=$bind: expected $k tasks: $out"
		# Each task on App CPUs of its own: one CPU, or one core's
		# threads where cores have several.
		seen=
		while read -r line; do
			IFS='|' read -r _ _ _ _ _ cpus _ <<<"$line"
			[ "$cpus" != "$app" ] && within "$cpus" "$app" ||
				fail "--cpu-bind=$bind: a task may run on CPUs $cpus, not CPUs of its own among the App CPUs $app: $out"
			for c in $(expand "$cpus"); do
				[[ " $seen " != *" $c "* ]] || fail "--cpu-bind=$bind: two tasks bound to CPU $c: $out"
				seen+=" $c"
			done
		done <<<"$out"
	done
}

# Each task of a job array, and each component of a heterogeneous job,
# is a job to the plugin: its own whole node and partition, its tasks on
# its App cores.  salloc then srun runs them there too.
test_array_tasks_het_components_and_salloc_each_get_a_partition() {
	local jid p a out line
	[ "$LWK_NODES" -ge 2 ] || skip "a heterogeneous job of two --lwk components needs 2 nodes"
	p=$(probe)
	jid=$(sbatch --parsable --array=0-1 -N1 --lwk -o "$LWK_WORK/array.%a" --wrap "srun $p") || fail "sbatch failed"
	defer scancel "$jid"
	for a in 0 1; do
		wait_job "${jid}_$a"
		[ "$job_state" = COMPLETED ] || fail "array task ${jid}_$a ended $job_state: $(cat "$LWK_WORK/array.$a")"
		assert_probe "$(cat "$LWK_WORK/array.$a")" app "${jid}_$a"
	done
	jid=$(sbatch --parsable -N1 --lwk -o "$LWK_WORK/het.out" : -N1 --wrap "srun --het-group=0,1 $p") ||
		fail "sbatch of a heterogeneous job failed"
	defer scancel "$jid"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "heterogeneous job $jid ended $job_state: $(cat "$LWK_WORK/het.out")"
	[ "$(cut -d'|' -f1 "$LWK_WORK/het.out" | sort -u | wc -l)" = 2 ] ||
		fail "heterogeneous job $jid: expected one task on each of two nodes: $(cat "$LWK_WORK/het.out")"
	while read -r line; do assert_probe "$line" app "$jid"; done <"$LWK_WORK/het.out"
	out=$(salloc -N1 --lwk srun $p 2>/dev/null) || fail "salloc --lwk then srun failed: $out"
	assert_probe "$out" app
}

test_hugepages_are_reserved_on_the_app_nodes_and_given_back() {
	local before jid during line
	before=$(node_snapshot ${NODE1})
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk=mem=32M -o "$LWK_WORK/huge.out" \
		--wrap 'printenv SLURM_LWK_HUGEPAGES SLURM_LWK_MEM; grep -H . /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages') ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/huge.out")"
	line=$(head -1 "$LWK_WORK/huge.out")
	[[ $line =~ ^2048kB:[0-9]+=[0-9]+/[0-9]+(,[0-9]+=[0-9]+/[0-9]+)*$ ]] || fail "SLURM_LWK_HUGEPAGES=$line"
	# Pages asked per node add up to at least 32 MiB, and the kernel
	# gave them on this idle node.
	local asked=0 got=0 pair
	for pair in $(tr ',' ' ' <<<"${line#2048kB:}"); do
		got=$((got + $(cut -d= -f2 <<<"$pair" | cut -d/ -f1)))
		asked=$((asked + ${pair#*/}))
	done
	[ "$asked" -ge 16 ] && [ "$got" = "$asked" ] || fail "hugepages: got $got of $asked (want >= 16)"
	during=$(grep nr_hugepages "$LWK_WORK/huge.out" | awk -F: '{s += $2} END {print s}')
	[ "$during" -ge "$asked" ] || fail "the job saw $during hugepages, $asked reserved"
	assert_nothing_left ${NODE1} "$jid" "$before"
}

# need_two_numa_nodes: skip unless node1 has two NUMA nodes or more.
need_two_numa_nodes() {
	local nodes
	nodes=$(on_node ${NODE1} bash -c 'ls -d /sys/devices/system/node/node[0-9]* | wc -l')
	[ "$nodes" -ge 2 ] || skip "${NODE1} has $nodes NUMA node(s); the guest cluster has 2"
}

# numa1_job OUT SCRIPT: a job on node1 with --lwk=numa=1 running SCRIPT,
# its output in OUT; it must complete.
numa1_job() {
	local jid
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk=numa=1 -o "$1" --wrap "$2") || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$1")"
}

test_the_app_cores_and_memory_follow_numa() {
	local p app os mems role cpus allowed_mems
	need_two_numa_nodes
	numa1_job "$LWK_WORK/numa.out" "srun $(probe); cat /sys/devices/system/node/node1/cpulist"
	IFS='|' read -r _ app os mems role cpus allowed_mems _ < <(grep '|app|' "$LWK_WORK/numa.out")
	[ "$mems" = 1 ] && [ "$allowed_mems" = 1 ] || fail "numa=1: memory nodes $mems, allowed $allowed_mems"
	[ "$app" = "$(tail -1 "$LWK_WORK/numa.out")" ] && [ "$cpus" = "$app" ] ||
		fail "numa=1: App CPUs $app (allowed $cpus), node 1 has $(tail -1 "$LWK_WORK/numa.out")"
}

# --mem-bind is Slurm's, within the App memory nodes: "local" binds to
# them; a node outside them is refused by the kernel (libnuma says
# "set_mempolicy: Invalid argument") and the task runs, its memory on
# the App nodes all the same.
test_mem_bind_stays_within_the_app_memory_nodes() {
	local show='grep Mems_allowed_list /proc/self/status; grep -m1 " heap " /proc/self/numa_maps'
	need_two_numa_nodes
	numa1_job "$LWK_WORK/membind.out" \
		"srun --mem-bind=local bash -c '$show'; echo outside; srun --mem-bind=map_mem:0 bash -c '$show'"
	sed '/^outside$/q' "$LWK_WORK/membind.out" >"$LWK_WORK/membind.local"
	sed '1,/^outside$/d' "$LWK_WORK/membind.out" >"$LWK_WORK/membind.map0"
	assert_grep "Mems_allowed_list:[[:space:]]+1$" "$LWK_WORK/membind.local" "--mem-bind=local"
	assert_grep " bind:1 heap " "$LWK_WORK/membind.local" "--mem-bind=local"
	assert_grep "Mems_allowed_list:[[:space:]]+1$" "$LWK_WORK/membind.map0" "--mem-bind=map_mem:0"
	assert_grep " heap .* N1=" "$LWK_WORK/membind.map0" "--mem-bind=map_mem:0"
	assert_no_grep " heap .* N0=" "$LWK_WORK/membind.map0" "--mem-bind=map_mem:0"
}

# The held job's task, by a duration no other process on the machine
# uses (other dev clusters on this host may run a "sleep 300").
held_sleep=300.$$
# Start a job holding the partition on node1; echo its id once its task
# runs (a step listed by squeue may still be starting its slurmstepd:
# killed then, it leaves no task for the teardown to kill).
start_held_job() {
	local jid i
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk=mem=16M -o /dev/null --wrap "srun sleep $held_sleep") ||
		fail "sbatch failed"
	defer scancel "$jid"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		on_node ${NODE1} pgrep -f "(^|/)sleep $held_sleep\$" >/dev/null && break
		snooze 0.25
	done
	on_node ${NODE1} pgrep -f "(^|/)sleep $held_sleep\$" >/dev/null || fail "the task of job $jid never ran"
	on_node ${NODE1} test -e "$LWK_STATE_DIR/${NODE1}/$jid/lwk.state" || fail "no partition for job $jid"
	echo "$jid"
}

# Remote partitions (cgroup v2, Linux 6.7+): the App cores leave every
# other cgroup of the node, a process outside Slurm included; two steps
# in turn each get the partition.  Elsewhere (cgroup v1, 6.1) the job is
# told it got a plain cpuset, and nothing exclusive is left set.
test_the_app_cores_are_an_isolated_partition_where_the_kernel_can() {
	local jid out app busy allowed isolated remote= i c
	need_own_cluster "a cgroup and a busy process of its own, outside Slurm, on a node"
	on_node ${NODE1} bash -c 'ls /sys/fs/cgroup/*/cpuset.cpus.exclusive' >/dev/null 2>&1 && remote=1
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk -o "$LWK_WORK/iso.out" -e "$LWK_WORK/iso.err" \
		--wrap 'srun printenv SLURM_LWK_ISOLATION; srun printenv SLURM_LWK_ISOLATION') ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/iso.out" "$LWK_WORK/iso.err")"
	out=$(sort -u "$LWK_WORK/iso.out")
	if [ -z "$remote" ]; then
		[ "$out" = cpuset ] || fail "two steps should be told 'cpuset' here: $(cat "$LWK_WORK/iso.out")"
		grep -q "lwk: job $jid: App cores on ${NODE1}: isolation cpuset (.\+)" "$(slurmd_log ${NODE1})" ||
			fail "no reason for the plain cpuset in ${NODE1}'s log: $(grep "job $jid" "$(slurmd_log ${NODE1})" | tail -3)"
		[ -z "$(node_snapshot ${NODE1} | grep -E 'cpus.exclusive|cpus.isolated')" ] ||
			fail "exclusive CPUs left set: $(node_snapshot ${NODE1} | grep exclusive)"
		return 0
	fi
	[ "$out" = partition ] && [ "$(wc -l <"$LWK_WORK/iso.out")" = 2 ] ||
		fail "two steps in turn should each get the partition: $(cat "$LWK_WORK/iso.out" "$LWK_WORK/iso.err")"
	# A busy service outside Slurm, started before the job.
	on_node ${NODE1} bash -c 'mkdir -p /sys/fs/cgroup/system.slice/lwk-test-busy.service &&
		setsid bash -c "echo \$\$ >/sys/fs/cgroup/system.slice/lwk-test-busy.service/cgroup.procs;
		exec sh -c \"while :; do :; done\"" </dev/null >/dev/null 2>&1 &' ||
		fail "cannot start the busy service"
	defer on_node ${NODE1} bash -c 'pkill -KILL -f "^sh -c while :; do :; done$";
		sleep 0.5; rmdir /sys/fs/cgroup/system.slice/lwk-test-busy.service'
	jid=$(start_held_job)
	app=$(on_node ${NODE1} sed -n 's/^app_cpus //p' "$LWK_STATE_DIR/${NODE1}/$jid/lwk.state")
	# The step is listed before its task is placed (under TCG, seconds).
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		isolated=$(on_node ${NODE1} cat /sys/fs/cgroup/cpuset.cpus.isolated)
		[ -z "$isolated" ] || break
		snooze 0.25
	done
	[ -n "$app" ] && [ "$isolated" = "$app" ] ||
		fail "the root's cpuset.cpus.isolated is '$isolated', the App CPUs '$app'"
	busy=$(on_node ${NODE1} cat /sys/fs/cgroup/system.slice/lwk-test-busy.service/cgroup.procs | head -1)
	[ -n "$busy" ] || fail "the busy service is not running"
	allowed=$(on_node ${NODE1} sed -n 's/^Cpus_allowed_list:\t//p' "/proc/$busy/status")
	for c in $(expand "$allowed"); do
		[[ " $(expand "$app") " != *" $c "* ]] ||
			fail "the busy service outside Slurm may run on App CPU $c (allowed $allowed, App $app)"
	done
	for i in 1 2 3 4 5; do
		c=$(on_node ${NODE1} ps -o psr= -p "$busy" | tr -d ' ')
		[[ " $(expand "$app") " != *" $c "* ]] || fail "the busy service ran on App CPU $c"
		snooze 0.2
	done
	grep -q "lwk: job $jid: App cores on ${NODE1}: isolation partition" "$(slurmd_log ${NODE1})" ||
		fail "${NODE1}'s log does not say the App cores are a partition"
	scancel "$jid"
	wait_job "$jid"
	wait_teardown ${NODE1} "$jid"
	[ -z "$(node_snapshot ${NODE1} | grep -E 'cpus.exclusive|cpus.isolated')" ] ||
		fail "exclusive CPUs left after the job: $(node_snapshot ${NODE1} | grep -E 'exclusive|isolated')"
	allowed=$(on_node ${NODE1} sed -n 's/^Cpus_allowed_list:\t//p' "/proc/$busy/status")
	[ "$allowed" = "$(on_node ${NODE1} cat /sys/devices/system/cpu/online)" ] ||
		fail "the busy service did not get the App CPUs back: $allowed"
}

# lwk_isolate=partition (plugstack): where the kernel cannot make one,
# the step fails, never the node; lwk_isolate=bad is refused by name.
test_lwk_isolate_partition_fails_the_step_where_the_kernel_cannot() {
	need_own_cluster 'plugstack.conf (lwk_isolate=)'
	local conf=$LWK_PLUGSTACK out
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	sed -i "/^[^#]*lwk[.]so/s|\$| lwk_isolate=partition|" "$conf"
	if on_node ${NODE1} bash -c 'ls /sys/fs/cgroup/*/cpuset.cpus.exclusive' >/dev/null 2>&1; then
		out=$(srun -N1 -w ${NODE1} --lwk printenv SLURM_LWK_ISOLATION 2>"$LWK_WORK/err") ||
			fail "srun failed: $(cat "$LWK_WORK/err")"
		[ "$out" = partition ] || fail "lwk_isolate=partition gave '$out'"
	else
		run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} --lwk echo the step ran
		assert_no_grep "the step ran" "$LWK_WORK/err" "srun's output"
		# In the job's output, where the user looks.
		assert_grep "lwk: --lwk: the site asks for an isolated partition \(lwk_isolate=partition\), but on ${NODE1} " \
			"$LWK_WORK/err" "srun's output"
	fi
	# The step's epilog must not meet the bad value below.
	wait_no_partition ${NODE1}
	sed -i "/^[^#]*lwk[.]so/s|lwk_isolate=partition|lwk_isolate=isolated|" "$conf"
	run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} true
	assert_grep "lwk_isolate.*one of auto\|partition\|cpuset" "$LWK_WORK/err" "srun's error"
	cp "$LWK_WORK/plugstack.orig" "$conf"
	all_nodes_usable
}

test_scancel_gives_everything_back() {
	local before jid
	before=$(node_snapshot ${NODE1})
	jid=$(start_held_job)
	[ "$(node_snapshot ${NODE1})" != "$before" ] || fail "job $jid changed no IRQ affinity or hugepage count"
	scancel "$jid"
	wait_job "$jid"
	assert_nothing_left ${NODE1} "$jid" "$before"
	all_nodes_usable
}

test_a_killed_slurmstepd_leaves_nothing_behind() {
	local before jid left
	before=$(node_snapshot ${NODE1})
	jid=$(start_held_job)
	# Both of the job's slurmstepd die without any cleanup of theirs.
	on_node ${NODE1} pkill -KILL -f "^slurmstepd: \[$jid\." || fail "no slurmstepd of job $jid to kill"
	sleep 1
	scancel "$jid"
	wait_job "$jid"
	assert_nothing_left ${NODE1} "$jid" "$before"
	# Nobody was left to kill the tasks: the teardown did.
	left=$(on_node ${NODE1} pgrep -f "(^|/)sleep $held_sleep\$" || true)
	[ -z "$left" ] || fail "tasks of job $jid still run: $left"
	all_nodes_usable
}

test_lwk_sweep_gives_back_what_a_crash_left_and_keeps_running_jobs() {
	need_own_cluster "the dev cluster's plugstack.conf, read by lwk-sweep"
	local before jid out left
	before=$(node_snapshot ${NODE1})
	jid=$(start_held_job)
	# The layout the package documents: plugstack.conf only includes
	# plugstack.conf.d/*.conf (relative: below its own directory).
	mkdir -p "$LWK_WORK/sweep-conf/plugstack.conf.d"
	echo "include plugstack.conf.d/*.conf" >"$LWK_WORK/sweep-conf/plugstack.conf"
	cp "$LWK_PLUGSTACK" "$LWK_WORK/sweep-conf/plugstack.conf.d/lwk.conf"
	out=$(on_node ${NODE1} "$(lwk_tool lwk-sweep)" --plugstack "$LWK_WORK/sweep-conf/plugstack.conf" --node ${NODE1} --dry-run) ||
		fail "lwk-sweep --dry-run (plugstack.conf.d) failed: $out"
	grep -q "^job $jid: running, kept$" <<<"$out" || fail "dry run (plugstack.conf.d): $out"
	out=$(on_node ${NODE1} "$(lwk_tool lwk-sweep)" --plugstack "$LWK_DEV_DIR/plugstack.conf" --node ${NODE1}) ||
		fail "lwk-sweep failed: $out"
	on_node ${NODE1} test -e "$LWK_STATE_DIR/${NODE1}/$jid/lwk.state" || fail "a running job was swept: $out"
	# The node "crashes" under the job: slurmstepd dies, no epilog yet.
	on_node ${NODE1} pkill -KILL -f "^slurmstepd: \[$jid\." || fail "no slurmstepd of job $jid to kill"
	sleep 1
	out=$(on_node ${NODE1} "$(lwk_tool lwk-sweep)" --plugstack "$LWK_DEV_DIR/plugstack.conf" --node ${NODE1}) ||
		fail "lwk-sweep failed: $out"
	grep -q "swept job $jid" <<<"$out" || fail "lwk-sweep did not sweep job $jid: $out"
	assert_nothing_left ${NODE1} "$jid" "$before"
	left=$(on_node ${NODE1} pgrep -f "(^|/)sleep $held_sleep\$" || true)
	[ -z "$left" ] || fail "tasks of job $jid still run after the sweep: $left"
	scancel "$jid"
	wait_job "$jid"
	all_nodes_usable
}

# slurmd sweeps, as it starts, what a job that went while it was down
# left under its NodeName: here that of "slurmd -N node1", several on one
# host, not the host's name (slurmd has no SLURMD_NODENAME of its own).
test_slurmd_start_sweeps_a_gone_jobs_partition_under_its_node_name() {
	need_own_cluster 'a slurmd, restarted'
	[ -z "${LWK_GUEST_SHARE:-}" ] ||
		skip "restarts one of the host cluster's slurmd -N (a guest's NodeName is its host name, which slurmd always found)"
	local before jid pid log lines started=
	before=$(node_snapshot ${NODE1})
	jid=$(start_held_job)
	log=$(slurmd_log ${NODE1})
	pid=$(cat "$LWK_DEV_DIR/run/slurmd-node1.pid")
	# Whatever happens below, node1's slurmd runs again at the end.
	defer bash -c 'kill -0 "$(cat "$1")" 2>/dev/null || slurmd -f "$2" -N node1' - \
		"$LWK_DEV_DIR/run/slurmd-node1.pid" "$SLURM_CONF"
	# node1 crashes under the job: its slurmd and slurmstepd die; the
	# job is cancelled meanwhile; then slurmd starts again.
	kill -KILL "$pid"
	pkill -KILL -f "^slurmstepd: \[$jid\." || fail "no slurmstepd of job $jid to kill"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		kill -0 "$pid" 2>/dev/null || break
		snooze 0.2
	done
	scancel "$jid"
	lines=$(wc -l <"$log")
	slurmd -f "$SLURM_CONF" -N ${NODE1} || fail "slurmd -N ${NODE1} did not start again"
	# Its sweep is in its init, before it answers slurmctld.
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		tail -n +"$((lines + 1))" "$log" | grep -q "lwk: tore down the --lwk partitions of 1 job(s) that are gone" &&
			started=1 && break
		snooze 0.5
	done
	[ -n "$started" ] ||
		fail "slurmd's start did not sweep job $jid: $(tail -n +"$((lines + 1))" "$log" | grep 'lwk:' | head -5)"
	tail -n +"$((lines + 1))" "$log" | grep -q "lwk: this slurmd is node ${NODE1} (slurmd -N)" ||
		fail "slurmd did not say it is ${NODE1}: $(tail -n +"$((lines + 1))" "$log" | grep 'lwk:' | head -5)"
	assert_nothing_left ${NODE1} "$jid" "$before"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[ -n "$(sinfo -h -n ${NODE1} -t idle,mix -o %N)" ] && break
		snooze 0.5
	done
	all_nodes_usable
}

# No machine here has IHK/McKernel (its kernel modules): the mckernel
# backend runs against testsuite/ihk-standin, scripts that take the
# arguments IHK's tools take, refuse what they would, and log each call.
# Root runs only tools in root's directories: the stand-in is copied to
# one on node1, wherever the sources are.
install_standin() {
	local to=/run/lwk-ihk-standin-$$
	on_node ${NODE1} rm -rf /run/ihk-standin "$to"
	on_node ${NODE1} cp -r "$top/testsuite/ihk-standin" "$to"
	on_node ${NODE1} chown -R root:root "$to"
	defer on_node ${NODE1} rm -rf "$to" /run/ihk-standin
	echo "$to"
}
test_mckernel_backend_against_the_ihk_stand_in() {
	need_own_cluster 'plugstack.conf (mckernel=)'
	local conf=$LWK_PLUGSTACK standin jid out calls sluid
	standin=$(install_standin)
	echo "IHK is absent here: the mckernel backend is tested against $standin (testsuite/ihk-standin)"
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	sed -i "/^[^#]*lwk[.]so/s|\$| mckernel=$standin|" "$conf"
	jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk=mem=64M -o "$LWK_WORK/mck.out" \
		--wrap 'echo "backend=$SLURM_LWK_BACKEND app=$SLURM_LWK_APP_CPUS os=$SLURM_LWK_OS_CPUS"
			srun "$SLURM_LWK_MCEXEC" bash -c "echo proxy \$(sed -n \"s/^Cpus_allowed_list:\t//p\" /proc/self/status)"') ||
		fail "sbatch failed"
	sluid=$(job_sluid "$jid")
	wait_job "$jid"
	wait_teardown ${NODE1} "$jid"
	cp "$LWK_WORK/plugstack.orig" "$conf"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/mck.out")"
	out=$(cat "$LWK_WORK/mck.out")
	[[ $out =~ backend=mckernel\ app=([0-9,-]+)\ os=([0-9,-]+) ]] || fail "backend=auto did not pick McKernel: $out"
	local app=${BASH_REMATCH[1]} os=${BASH_REMATCH[2]}
	# The proxy (mcexec) runs on Linux, on the OS cores.
	grep -q "^proxy $os\$" <<<"$out" || fail "mcexec ran on other CPUs than the OS CPUs $os: $out"
	calls=$(on_node ${NODE1} cat /run/ihk-standin/calls)
	grep -qE "^mcreboot.sh -c $app -m [0-9]+M@[0-9]+(,[0-9]+M@[0-9]+)* -r [0-9,+:-]+ -o 0:0\$" <<<"$calls" ||
		fail "mcreboot.sh was not called as expected: $calls"
	grep -q "^ihkosctl 0 get status$" <<<"$calls" || fail "status never read: $calls"
	grep -q "^ihkconfig 0 query cpu$" <<<"$calls" || fail "the reserved CPUs were never checked: $calls"
	grep -q "^mcexec uid 0 cgroup .* bash -c" <<<"$calls" || fail "mcexec never ran: $calls"
	if slurm_cgroups; then
		grep -qE "^mcexec uid 0 cgroup .*/(job_$jid${sluid:+|$sluid})/step_0(/| )" <<<"$calls" ||
			fail "mcexec outside the job's cgroup: $calls"
	else
		grep -q "^mcexec uid 0 cgroup /slurm-lwk/${NODE1}/job_$jid/delegation " <<<"$calls" ||
			fail "mcexec outside the delegation cgroup: $calls"
	fi
	[ "$(tail -1 <<<"$calls")" = "mcstop+release.sh " ] || fail "McKernel was not stopped last: $calls"
	! on_node ${NODE1} test -e /run/ihk-standin/os0 || fail "McKernel still booted after the job"
}

# The job's user owns McKernel (mcreboot.sh -o): their mcexec runs,
# and a McKernel already running (another job's) is neither taken over
# nor stopped.
test_mckernel_belongs_to_the_job_user_and_one_running_is_left_alone() {
	need_own_cluster 'plugstack.conf (mckernel=)'
	local conf=$LWK_PLUGSTACK standin jid user dir calls
	standin=$(install_standin)
	echo "IHK is absent here: the mckernel backend is tested against $standin (testsuite/ihk-standin)"
	user=$(make_test_user)
	dir=$LWK_WORK/mck-user
	mkdir -p "$dir" && chown "$user" "$dir"
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	sed -i "/^[^#]*lwk[.]so/s|\$| mckernel=$standin|" "$conf"
	jid=$(cd "$dir" && as_user "$user" sbatch --parsable -N1 -w ${NODE1} --lwk=mem=32M -o "$dir/out" \
		--wrap 'srun "$SLURM_LWK_MCEXEC" true && echo mcexec-ok') || fail "sbatch as $user failed"
	wait_job "$jid"
	wait_teardown ${NODE1} "$jid"
	[ "$job_state" = COMPLETED ] && grep -q mcexec-ok "$dir/out" ||
		fail "job $jid of $user ended $job_state: $(cat "$dir/out")"
	calls=$(on_node ${NODE1} cat /run/ihk-standin/calls)
	grep -qE -- "-o $(id -u "$user"):$(id -g "$user")\$" <<<"$calls" || fail "McKernel not given to $user: $calls"
	grep -q "^mcexec uid $(id -u "$user") " <<<"$calls" || fail "no mcexec of $user: $calls"
	# Another McKernel runs: the job fails, that one stays up.
	on_node ${NODE1} bash -c 'mkdir -p /run/ihk-standin && printf "status RUNNING\ncpus 1\nowner 0:0\n" >/run/ihk-standin/os0'
	run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} --lwk=mem=32M true
	assert_grep "lwk: --lwk: McKernel is already running on ${NODE1}; it is not this job's" "$LWK_WORK/err"
	cp "$LWK_WORK/plugstack.orig" "$conf"
	on_node ${NODE1} test -e /run/ihk-standin/os0 || fail "the other McKernel was stopped"
	on_node ${NODE1} rm -rf /run/ihk-standin
	all_nodes_usable
}

test_mckernel_requested_where_it_is_not_installed_fails_the_job() {
	run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} --lwk=backend=mckernel,mem=64M true
	assert_grep "lwk: --lwk: backend=mckernel: IHK/McKernel is not installed on ${NODE1} \(no /opt/mckernel/sbin/mcreboot.sh\)" \
		"$LWK_WORK/err"
	all_nodes_usable
}

# ---- --lwk owns its node (issue 14, 2) -----------------------------------
# A --lwk partition moves the node's IRQs and takes its memory (with
# McKernel, its CPUs): it is refused, under the node lock, while another
# job has slurm-lwk state, a partition, a die split record or a job
# cgroup on the node, by failing the job's tasks (never the node).

# Slurm's job cgroups here?  (lib.sh's slurm_cgroups pipes into grep -q,
# whose early exit fails the pipe now and then under pipefail.)
slurm_job_cgroups() {
	[ "$(scontrol show config | grep -c '^ProctrackType *= proctrack/cgroup')" -gt 0 ]
}

need_cosched_partition() {
	scontrol show partition cosched >/dev/null 2>&1 ||
		skip "needs the co-scheduling partition 'cosched' of the private dev cluster"
}

# cosched_job OUT WRAP [SBATCH OPTIONS...]: a job of the co-scheduling
# partition (OverSubscribe=FORCE) on node1 asking for all its cores, as
# the jobs there do (Slurm allocated it "the whole node"); its id.
cosched_job() {
	local out=$1 wrap=$2 jid
	shift 2
	jid=$(sbatch --parsable -p cosched -w ${NODE1} -n "$(node_cores ${NODE1})" -o "$out" "$@" --wrap "$wrap") ||
		fail "sbatch -p cosched failed"
	defer scancel "$jid"
	echo "$jid"
}

# wait_step0 JOB: until step 0 of JOB runs.
wait_step0() {
	local end=$((SECONDS + $(wait_bound)))
	while [ $SECONDS -lt $end ]; do
		squeue -h -j "$1" -s -o %i 2>/dev/null | grep -q "^$1\.0$" && return 0
		snooze 0.25
	done
	fail "step $1.0 did not start within $(wait_bound) s: $(scontrol show job "$1" | grep -oE '(JobState|Reason|NodeList)=[^ ]+' | tr '\n' ' ')"
}

# held_by JOB SECONDS: what job JOB holds on node1 while its tasks
# "[/usr/bin/]sleep SECONDS" run: its partition's state, the node's IRQ
# affinities and hugepages, and the CPUs and memory nodes each task may
# use.  Once every task of the step has exec'd (one per core of node1):
# under emulation they exec one by one, and a snapshot of the first few
# differs from one of all (seen on sid).
held_by() {
	local pids= pid n i want
	want=$(node_cores ${NODE1})
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		# srun runs its command by its full path.
		pids=$(on_node ${NODE1} pgrep -f "^[^ ]*sleep $2\$")
		n=$(grep -c . <<<"$pids")
		[ "$n" -lt "$want" ] || break
		snooze 0.25
	done
	[ "$n" = "$want" ] || fail "job $1 runs $n of its $want tasks 'sleep $2' on ${NODE1}: $(squeue -h -j "$1" -s) $(cat "$LWK_WORK"/*.out)"
	on_node ${NODE1} cat "$LWK_STATE_DIR/${NODE1}/$1/lwk.state" || echo "no partition of job $1"
	node_snapshot ${NODE1}
	for pid in $pids; do
		on_node ${NODE1} grep -E '^(Cpus|Mems)_allowed_list' "/proc/$pid/status" | tr '\n' ' '
		echo
	done
}

# The job that came second failed with a message naming the first, set
# up nothing, and the first still holds what it held.
assert_refused_next_to() {
	local jid=$1 other=$2 what=$3 out=$4
	wait_job "$jid"
	[ "$job_state" = FAILED ] ||
		fail "job $jid ended $job_state next to job $other on ${NODE1} (expected a refusal): $(cat "$out")"
	assert_grep "lwk: --lwk: ${NODE1} is not this job's alone: job $other $what" "$out" "job $jid's output"
	! on_node ${NODE1} test -e "$LWK_STATE_DIR/${NODE1}/$jid/lwk.state" || fail "job $jid left a partition on ${NODE1}"
	all_nodes_usable
}

# Reproduced on the host cluster before the fix: both jobs set up a
# partition on node1 and both got App CPU 1; the second saved the first's
# narrowed IRQ affinities as the ones to restore.
test_two_lwk_jobs_of_the_cosched_partition_get_one_partition() {
	need_cosched_partition
	local j1 j2 before
	j1=$(cosched_job "$LWK_WORK/own1.out" 'srun --lwk=os=1 sleep 3101')
	wait_step0 "$j1"
	before=$(held_by "$j1" 3101)
	grep -q '^ready$' <<<"$before" || fail "job $j1 has no partition on ${NODE1}: $before $(cat "$LWK_WORK/own1.out")"
	j2=$(cosched_job "$LWK_WORK/own2.out" 'srun --lwk=os=1 printenv SLURM_LWK_APP_CPUS')
	assert_refused_next_to "$j2" "$j1" "has a --lwk partition there" "$LWK_WORK/own2.out"
	[ "$(held_by "$j1" 3101)" = "$before" ] ||
		fail "job $j1's partition, IRQs or cpusets changed: $(diff <(echo "$before") <(held_by "$j1" 3101) | head -8)"
}

# A neighbour without slurm-lwk options leaves a trace only where Slurm
# makes job cgroups; one with --sync-monitor has state everywhere.
test_srun_lwk_next_to_a_job_with_a_sampler_is_refused() {
	need_cosched_partition
	local j1 j2 before
	mkdir -p "$LWK_WORK/nb"
	j1=$(cosched_job "$LWK_WORK/nb1.out" 'srun sleep 3102' --sync-monitor=dir="$LWK_WORK/nb")
	wait_step0 "$j1"
	before=$(node_snapshot ${NODE1})
	j2=$(cosched_job "$LWK_WORK/nb2.out" 'srun --lwk=os=1 true')
	assert_refused_next_to "$j2" "$j1" "has a --sync-monitor sampler there" "$LWK_WORK/nb2.out"
	[ "$(node_snapshot ${NODE1})" = "$before" ] || fail "IRQ affinity or hugepages on ${NODE1} changed"
	on_node ${NODE1} pgrep -f "lwk-syncmon --job $j1 " >/dev/null || fail "the sampler of job $j1 is gone"
}

test_srun_lwk_next_to_a_plain_job_is_refused_where_slurm_makes_job_cgroups() {
	need_cosched_partition
	slurm_job_cgroups || skip "a job without slurm-lwk options leaves no trace on a node without Slurm's job cgroups (proctrack/linuxproc): the clusters with Slurm's cgroups run this"
	local j1 j2 before
	j1=$(cosched_job "$LWK_WORK/pl1.out" 'srun sleep 3103')
	wait_step0 "$j1"
	before=$(node_snapshot ${NODE1})
	j2=$(cosched_job "$LWK_WORK/pl2.out" 'srun --lwk=os=1 true')
	assert_refused_next_to "$j2" "$j1" "runs there \(its cgroup " "$LWK_WORK/pl2.out"
	[ "$(node_snapshot ${NODE1})" = "$before" ] || fail "IRQ affinity or hugepages on ${NODE1} changed"
}

# The batch step of an ordinary sbatch --lwk on a node where another
# job, alive, holds a --lwk partition (its state planted by the test,
# owned by root as the plugin's is): the job fails with the reason, the
# node is not drained even with on_error=drain_node (that is for refused
# option values only), nothing is left behind and the other job's state
# is untouched.
test_a_second_lwk_batch_step_on_a_partitioned_node_fails_the_job_not_the_node() {
	need_own_cluster 'plugstack.conf'
	[ -z "${LWK_GUEST_SHARE:-}" ] ||
		skip "the live job holding ${NODE2} runs on ${NODE1}: its slurmstepd is seen from ${NODE2} only where the nodes share one host (the dev cluster)"
	[ "$(id -u)" = 0 ] || skip "plants a root-owned state of another job: needs root"
	local other jid conf=$LWK_PLUGSTACK dir i
	other=$(sbatch --parsable -N1 -n1 -w ${NODE1} -o /dev/null --wrap 'sleep 300') || fail "sbatch failed"
	defer scancel "$other"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		pgrep -f "^slurmstepd: \[$other\.batch\]" >/dev/null && break
		snooze 0.25
	done
	pgrep -f "^slurmstepd: \[$other\.batch\]" >/dev/null || fail "job $other did not start"
	dir=$LWK_STATE_DIR/${NODE2}/$other
	mkdir -p "$dir"
	defer rm -rf "$dir"
	printf 'job %s\nready\n' "$other" >"$dir/lwk.state"
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	defer scontrol update nodename=${NODE2} state=resume
	plugstack_set "$conf" on_error=drain_node
	jid=$(sbatch --parsable -N1 -w ${NODE2} --exclusive --lwk=os=1 --no-requeue -o "$LWK_WORK/bs2.out" \
		--wrap 'echo the job ran') || fail "sbatch --lwk failed"
	defer scancel "$jid"
	wait_job "$jid"
	cp "$LWK_WORK/plugstack.orig" "$conf"
	[ "$job_state" = FAILED ] ||
		fail "job $jid ended $job_state next to job $other on ${NODE2}: $(cat "$LWK_WORK/bs2.out") $(sinfo -h -N -n ${NODE2} -o '%N %t %E')"
	assert_grep "lwk: --lwk: ${NODE2} is not this job's alone: job $other has a --lwk partition there" \
		"$LWK_WORK/bs2.out" "job $jid's output"
	assert_no_grep "the job ran" "$LWK_WORK/bs2.out" "job $jid's output"
	# node2 only: node1 runs job $other (mix, or "mix-" when backfill
	# plans it for a queued job).
	! sinfo -h -N -n ${NODE2} -o %t | grep -qvE '^(idle|mix|alloc|comp|plnd) *$' ||
		fail "${NODE2} is $(sinfo -h -N -n ${NODE2} -o '%t %E')"
	! test -e "$LWK_STATE_DIR/${NODE2}/$jid/lwk.state" || fail "job $jid left a partition on ${NODE2}"
	[ "$(cat "$dir/lwk.state")" = "$(printf 'job %s\nready' "$other")" ] ||
		fail "the state of job $other was touched"
}

# What a job that has ended left on node2 (its lwk.state: a teardown
# that could not finish, a slurmd started before the plugin was
# configured) is swept by the next --lwk job, which runs.
test_a_gone_jobs_leftover_is_swept_not_a_refusal() {
	need_own_cluster "a forged state of a gone job in the plugin's state on a node"
	[ "$(id -u)" = 0 ] || skip "plants a root-owned state of another job: needs root"
	local gone jid dir
	gone=$(sbatch --parsable --wait -N1 -n1 -w ${NODE1} -o /dev/null --wrap true) || fail "sbatch failed"
	dir=$LWK_STATE_DIR/${NODE2}/$gone
	# As the plugin writes it: root's alone, with the job's lock; on
	# node2 itself (each guest has its own state directory).
	on_node ${NODE2} bash -c "umask 077 && mkdir -p $dir && : >$dir/lwk.lock &&
		printf 'job %s\nready\n' $gone >$dir/lwk.state" || fail "cannot plant $dir on ${NODE2}"
	defer on_node ${NODE2} rm -rf "$dir"
	jid=$(sbatch --parsable -N1 -w ${NODE2} --exclusive --lwk=os=1 --no-requeue -o "$LWK_WORK/gone.out" \
		--wrap 'echo the job ran') || fail "sbatch --lwk failed"
	defer scancel "$jid"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] ||
		fail "job $jid ended $job_state next to the leftover of gone job $gone: $(cat "$LWK_WORK/gone.out")"
	assert_grep "the job ran" "$LWK_WORK/gone.out" "job $jid's output"
	! on_node ${NODE2} test -e "$dir/lwk.state" || fail "the leftover of gone job $gone is still on ${NODE2}"
	wait_teardown ${NODE2} "$jid"
	all_nodes_usable
}

# ---- a placement the node cannot make fails the job, not the node -------
# (issue 14, 3.1).  Before: the batch step's task_post_fork failed, and
# Slurm answered the failed batch launch by draining the node.

# sbatch --lwk on node2 under a broken config; the job must fail with
# REASON (an ERE) in its output, node2 stay usable, nothing stay behind.
assert_batch_fails_with() {
	local reason=$1 jid
	jid=$(sbatch --parsable -N1 -w ${NODE2} --lwk --no-requeue -o "$LWK_WORK/place.out" \
		--wrap 'echo the job ran') || fail "sbatch failed"
	defer scancel "$jid"
	wait_job "$jid"
	echo "$jid" >"$LWK_WORK/place.jid"
	[ "$job_state" = FAILED ] || fail "job $jid ended $job_state, expected FAILED: $(cat "$LWK_WORK/place.out" 2>&1) $(sinfo -h -N -n ${NODE2} -o '%N %t %E')"
	assert_grep "$reason" "$LWK_WORK/place.out" "job $jid's output"
	assert_no_grep "the job ran" "$LWK_WORK/place.out" "job $jid's output"
	all_nodes_usable
	wait_teardown ${NODE2} "$jid"
}

test_a_cgroup_root_without_cgroups_fails_the_batch_job_not_the_node() {
	need_own_cluster 'plugstack.conf (cgroup_root=)'
	local conf=$LWK_PLUGSTACK dir=$LWK_WORK/no-cgroups
	mkdir -p "$dir"
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	defer scontrol update nodename=${NODE2} state=resume
	sed -i "/^[^#]*lwk[.]so/s|\$| cgroup_root=$dir|" "$conf"
	assert_batch_fails_with "^lwk: --lwk: no cgroup v2 or v1 cpuset hierarchy under $dir on ${NODE2}"
}

# The issue's example: cgroup v1, proctrack/cgroup, ConstrainCores=no.
test_constraincores_no_on_cgroup_v1_fails_the_batch_job_not_the_node() {
	need_own_cluster 'cgroup.conf'
	slurm_job_cgroups || skip "needs Slurm's job cgroups (the host cluster with LWK_DEVCLUSTER_CGROUP=1)"
	on_node ${NODE2} test -d /sys/fs/cgroup/cpuset ||
		skip "cgroup v2: the step's cgroup takes a cpuset whatever ConstrainCores says"
	local cg=$LWK_DEV_DIR/cgroup.conf
	[ -f "$cg" ] && grep -q '^ConstrainCores=yes' "$cg" || skip "no cgroup.conf with ConstrainCores=yes in $LWK_DEV_DIR to edit"
	cp "$cg" "$LWK_WORK/cgroup.orig"
	defer scontrol reconfigure
	defer cp "$LWK_WORK/cgroup.orig" "$cg"
	defer scontrol update nodename=${NODE2} state=resume
	sed -i 's/^ConstrainCores=yes/ConstrainCores=no/' "$cg"
	scontrol reconfigure || fail "scontrol reconfigure failed"
	sleep 2
	assert_batch_fails_with "^lwk: --lwk: Slurm's cgroups of job [0-9]+ on ${NODE2} have no cpuset of the step \(cgroup.conf ConstrainCores=no\?\)"
	cp "$LWK_WORK/cgroup.orig" "$cg"
	scontrol reconfigure
}

# ---- lwkmem (issue 14, 3.7): mem= against the node's and the job's memory ----

# mem= on the NUMA node where the OS runs (numa=0: every page there)
# between what it has free and that less the floor it keeps (the larger
# of 256 MiB and 1/32 of the node): refused with the numbers, the job
# fails, the node stays usable and nothing is left.
test_mem_beyond_what_the_os_node_can_spare_is_refused_with_the_numbers() {
	local before total free floor ask left
	read -r total free < <(on_node ${NODE1} awk '/MemTotal:/ {t = int($4 / 1024)} /MemFree:/ {f = int($4 / 1024)} END {print t, f}' \
		/sys/devices/system/node/node0/meminfo)
	floor=$((total / 32 > 256 ? total / 32 : 256))
	[ "$free" -gt "$floor" ] || skip "node 0 of ${NODE1} has ${free}M free, less than the ${floor}M floor"
	# Half the floor above what is available, half below what is free:
	# room for the node's free memory to move while the job starts.
	ask=$(((free - floor / 2) / 2 * 2))
	before=$(node_snapshot ${NODE1})
	run_expect_fail "$LWK_WORK/err" srun -N1 -w ${NODE1} --lwk=numa=0,mem=${ask}M true
	assert_grep "lwk: --lwk: mem= asks ${ask}M of hugepages on NUMA node 0, where the OS runs: it has [0-9]+M free and keeps ${floor}M of it for the system, so [0-9]+M is available; ask for less memory \(mem=\)" \
		"$LWK_WORK/err"
	all_nodes_usable
	[ "$(node_snapshot ${NODE1})" = "$before" ] || fail "the refused job changed IRQs or hugepages on ${NODE1}"
	# Per-job state (numbered directories, casas records); the node's own
	# casas directory, made by an earlier --contention-aware job, stays.
	left=$(on_node ${NODE1} bash -c "ls $LWK_STATE_DIR/${NODE1} $LWK_STATE_DIR/${NODE1}/casas 2>/dev/null" |
		grep -E '^[0-9]+$' || true)
	[ -z "$left" ] || fail "state left on ${NODE1}: $left"
}

# Where Slurm limits the job's memory (Slurm's cgroups, ConstrainRAMSpace),
# the hugepages count in it: the job's limit is Slurm's (what the same
# job gets without --lwk) less what mem= took.
test_mem_is_charged_to_the_jobs_memory_limit() {
	slurm_cgroups || skip "Slurm makes no job cgroups here (no memory limit to charge); the --cgroup cluster and the guests do"
	local jid line pages base limit want pair
	# A task prints SLURM_LWK_HUGEPAGES and its job cgroup's memory limit.
	cat >"$LWK_WORK/memlimit.sh" <<'SH'
echo "${SLURM_LWK_HUGEPAGES:-none}"
p=$(grep -m1 -E "^0::|^[0-9]+:([^:]*,)?memory(,[^:]*)?:" /proc/self/cgroup | cut -d: -f3)
# The job's level: job_<id>, or its SLUID (26.05), above step_*.
p=$(sed -E "s|/step_[^/]*(/.*)?$||" <<<"$p")
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then cat "/sys/fs/cgroup$p/memory.max"
else cat "/sys/fs/cgroup/memory$p/memory.limit_in_bytes"; fi
SH
	jid=$(sbatch --parsable -N1 -w ${NODE1} --exclusive --mem=1000M -o "$LWK_WORK/base.out" \
		--wrap "srun bash $LWK_WORK/memlimit.sh") || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/base.out")"
	base=$(sed -n 2p "$LWK_WORK/base.out")
	[[ $base =~ ^[0-9]{1,18}$ ]] || skip "Slurm sets no memory limit on the job here ($base): nothing to charge"
	jid=$(sbatch --parsable -N1 -w ${NODE1} --mem=1000M --lwk=mem=64M -o "$LWK_WORK/charge.out" \
		--wrap "srun bash $LWK_WORK/memlimit.sh") || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/charge.out")"
	line=$(head -1 "$LWK_WORK/charge.out")
	pages=0
	for pair in $(tr ',' ' ' <<<"${line#2048kB:}"); do
		pages=$((pages + $(cut -d= -f2 <<<"$pair" | cut -d/ -f1)))
	done
	[ "$pages" -gt 0 ] || fail "no hugepages reserved: $line"
	limit=$(sed -n 2p "$LWK_WORK/charge.out")
	want=$((base - pages * 2097152))
	[ "$limit" = "$want" ] ||
		fail "job $jid's memory limit is $limit, want $want (Slurm's $base less $pages hugepages): $(cat "$LWK_WORK/charge.out")"
	all_nodes_usable
}
