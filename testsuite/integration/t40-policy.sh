# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The die placement policy (job_submit.lua + lwk_policy.conf) in the real
# slurmctld.  Each declared socket is a die (1 x 2 cores on the host's
# dev nodes, 4 x 2 on the guests); partition "dies" is die-granular
# (CR_Socket), "cosched" co-schedules, "debug" is outside the policy.

# The first node's declared geometry: dies (Slurm sockets), CPUs per die.
geometry() {
	local line
	line=$(scontrol show node "$(sinfo -h -N -o %N | head -1)")
	dies=$(grep -oE 'Sockets=[0-9]+' <<<"$line" | cut -d= -f2)
	die_cpus=$(($(grep -oE 'CoresPerSocket=[0-9]+' <<<"$line" | cut -d= -f2) *
		$(grep -oE 'ThreadsPerCore=[0-9]+' <<<"$line" | cut -d= -f2)))
	node_cpus=$((dies * die_cpus))
}

# Jobs that run need CPUs that exist: the host's dev nodes may declare
# more (LWK_DEVCLUSTER_DIES) to test the policy's allocations.
need_real_cpus() {
	if [ -z "${LWK_GUEST_SHARE:-}" ] && [ "${LWK_PRIVATE:-0}" = 1 ] && [ "$node_cpus" -gt "$(nproc)" ]; then
		skip "the dev nodes declare $node_cpus CPUs, this host has $(nproc): only allocations are tested there"
	fi
}

# Tests of two jobs sharing a node by dies need nodes with two dies.
need_two_dies() {
	[ "$dies" -ge 2 ] ||
		skip "the nodes have $dies die(s) (the host cluster's are its real CPUs); the guest cluster has 4"
}

need_policy_partitions() {
	scontrol show partition dies >/dev/null 2>&1 && scontrol show partition cosched >/dev/null 2>&1 ||
		skip "needs partitions 'dies' and 'cosched' governed by lwk_policy.conf, as on the private dev cluster"
}

# field JOB NAME: a value from scontrol show job -d.
field() {
	local v
	v=$(scontrol show job -d "$1" | grep -oE "(^| )$2=[^ ]*" | head -1)
	v=${v# }
	echo "${v#"$2"=}"
}

wait_running() {
	local i
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[ "$(squeue -h -j "$1" -o %t)" = R ] && return 0
		snooze 0.25
	done
	fail "job $1 did not start: $(scontrol show job "$1" | grep -o 'Reason=[^ ]*')"
}

test_a_one_cpu_job_is_rounded_up_to_a_whole_die() {
	need_policy_partitions
	local jid
	geometry
	jid=$(sbatch --parsable -H -p dies -n1 -o /dev/null --wrap true) || fail "sbatch failed"
	[ "$(field "$jid" NumCPUs)" = $die_cpus ] ||
		fail "NumCPUs=$(field "$jid" NumCPUs), expected one die ($die_cpus)"
	scancel "$jid"
}

# The policy is a module a site's own job_submit.lua calls first: a rule
# of the site's (a comment on every job) and the policy's rounding both
# apply, and a refusal of the policy comes back through the site's
# script.  slurmctld loads the script again when it changes.  A site
# script that fails after the policy gets Slurm's own handling, with
# the policy whole: Slurm up to 25.11 takes the job as the policy left
# it (a Lua error is logged, not returned: job_submit_lua.c), 26.05
# refuses it with the error.
test_a_sites_own_job_submit_lua_keeps_its_rules_beside_the_policy() {
	need_own_cluster 'job_submit.lua'
	need_policy_partitions
	local script=$LWK_DEV_DIR/job_submit.lua jid name=site-bug-$$ v
	geometry
	cp "$script" "$LWK_WORK/job_submit.orig"
	defer cp "$LWK_WORK/job_submit.orig" "$script"
	grep -q "The site's own rules here" "$script" || fail "$script is not the package's example"
	sed -i "0,/  -- The site's own rules here\./s//  if job_desc.name == \"$name\" then error(\"the site's rule failed\") end\n  job_desc.comment = \"site_rule_ran\"/" "$script"
	touch -d '+2 seconds' "$script" # a new mtime even within the second
	v=$(scontrol --version | grep -oE '[0-9]+\.[0-9]+' | head -1)
	if [ "${v%.*}" -lt 26 ]; then
		jid=$(sbatch --parsable -H -J "$name" -p dies --lwk -n1 -o /dev/null --wrap true) ||
			fail "Slurm $v refused the job whose site script failed"
		defer scancel "$jid"
		[ "$(field "$jid" OverSubscribe)" = NO ] && [ "$(field "$jid" Comment)" = "" ] ||
			fail "the policy is not whole (a whole node), or the site's rule ran past its error: $(scontrol show job "$jid" | grep -E 'OverSubscribe|Comment')"
		scancel "$jid"
	else
		run_expect_fail "$LWK_WORK/err" sbatch -H -J "$name" -p dies --lwk -n1 -o /dev/null --wrap true
		assert_grep "the site's rule failed" "$LWK_WORK/err" "Slurm $v's refusal"
		[ "$(jobs_named "$name")" = 0 ] || fail "the refused job exists"
	fi
	jid=$(sbatch --parsable -H -p dies -n1 -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$jid"
	[ "$(field "$jid" Comment)" = "site_rule_ran" ] || fail "the site's rule did not run: Comment=$(field "$jid" Comment)"
	[ "$(field "$jid" NumCPUs)" = "$die_cpus" ] ||
		fail "the policy did not round: NumCPUs=$(field "$jid" NumCPUs), expected one die ($die_cpus)"
	run_expect_fail "$LWK_WORK/err" sbatch -H -p dies --lwk=os=x --wrap true
	assert_grep "os='x' is not valid" "$LWK_WORK/err"
}

test_two_jobs_on_one_node_get_disjoint_whole_dies() {
	need_policy_partitions
	local a b ca cb node d whole='' sep=''
	geometry
	need_two_dies
	need_real_cpus
	node=$(sinfo -h -N -p dies -t idle -o %N | head -1)
	[ -n "$node" ] || skip "no idle node in partition dies"
	a=$(sbatch --parsable -p dies -w "$node" -n1 -o /dev/null --wrap 'sleep 30') || fail "sbatch failed"
	defer scancel "$a"
	b=$(sbatch --parsable -p dies -w "$node" -n1 -o /dev/null --wrap 'sleep 30') || fail "sbatch failed"
	defer scancel "$b"
	wait_running "$a"
	wait_running "$b"
	ca=$(field "$a" CPU_IDs)
	cb=$(field "$b" CPU_IDs)
	scancel "$a" "$b"
	# Die d is abstract CPUs d*die_cpus to (d+1)*die_cpus-1.
	for ((d = 0; d < dies; d++)); do
		# Slurm writes a one-CPU range as the CPU alone.
		if [ "$die_cpus" = 1 ]; then
			whole+="$sep$d"
		else
			whole+="$sep$((d * die_cpus))-$((d * die_cpus + die_cpus - 1))"
		fi
		sep='|'
	done
	[[ $ca =~ ^($whole)$ ]] || fail "job $a got CPUs '$ca', not one whole die ($whole)"
	[[ $cb =~ ^($whole)$ ]] || fail "job $b got CPUs '$cb', not one whole die ($whole)"
	[ "$ca" != "$cb" ] || fail "both jobs got die $ca"
}

test_what_cannot_be_placed_is_refused_with_the_nearest_valid_request() {
	need_policy_partitions
	local name
	geometry
	name=$(unique_name noplace)
	run_expect_fail "$LWK_WORK/err" sbatch -J "$name" -p dies -c$((node_cpus + 1)) --wrap true
	assert_grep "lwk: die placement: --cpus-per-task=$((node_cpus + 1)) is more than a node of dies has \($dies dies x $die_cpus CPUs\); nearest valid: --cpus-per-task=$node_cpus" \
		"$LWK_WORK/err"
	run_expect_fail "$LWK_WORK/err" srun -J "$name" -p dies --ntasks-per-node=$((node_cpus + 1)) true
	assert_grep "nearest valid: --ntasks-per-node=$node_cpus" "$LWK_WORK/err"
	[ "$(jobs_named "$name")" = 0 ] || fail "a refused request created a job"
}

test_contention_aware_jobs_go_to_the_coscheduling_partition() {
	need_policy_routing
	need_policy_partitions
	local jid name
	jid=$(sbatch --parsable -H --contention-aware -o /dev/null --wrap true) || fail "sbatch failed"
	[ "$(field "$jid" Partition)" = cosched ] || fail "Partition=$(field "$jid" Partition)"
	scancel "$jid"
	name=$(unique_name ca)
	run_expect_fail "$LWK_WORK/err" sbatch -J "$name" -p dies --contention-aware --wrap true
	assert_grep "lwk: --contention-aware: partition dies does not co-schedule jobs by dies; use --partition=cosched" \
		"$LWK_WORK/err"
	[ "$(jobs_named "$name")" = 0 ] || fail "a refused request created a job"
}

test_lwk_jobs_get_whole_nodes() {
	need_policy_partitions
	local jid
	geometry
	need_real_cpus
	jid=$(sbatch --parsable -N1 -n1 --lwk -o /dev/null --wrap 'sleep 20') || fail "sbatch failed"
	defer scancel "$jid"
	wait_running "$jid"
	[ "$(field "$jid" OverSubscribe)" = NO ] || fail "OverSubscribe=$(field "$jid" OverSubscribe)"
	[ "$(field "$jid" NumCPUs)" = $node_cpus ] ||
		fail "NumCPUs=$(field "$jid" NumCPUs), expected the whole node ($node_cpus)"
	scancel "$jid"
	run_expect_fail "$LWK_WORK/err" sbatch -p cosched --lwk --wrap true
	assert_grep "lwk: --lwk: partition cosched shares nodes between jobs, --lwk needs whole nodes; use --partition=debug or --partition=dies" \
		"$LWK_WORK/err"
}

test_scontrol_update_is_rounded_too() {
	need_policy_partitions
	local jid
	geometry
	need_two_dies
	jid=$(sbatch --parsable -H -p dies -n1 -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$jid"
	# Lua never sees a job's --cpus-per-task: the update gives it.
	scontrol update jobid="$jid" NumCPUs=$((die_cpus + 1)) CPUsPerTask=1 || fail "scontrol update failed"
	[ "$(field "$jid" NumCPUs)" = $((2 * die_cpus)) ] ||
		fail "NumCPUs=$(field "$jid" NumCPUs) after NumCPUs=$((die_cpus + 1)), expected $((2 * die_cpus))"
	# Without it the update is refused by the rule (the log names it;
	# not "Access denied" for a field users may not change).
	run_expect_fail "$LWK_WORK/err" scontrol update jobid="$jid" NumCPUs=$((3 * die_cpus + 1))
	[ "$(field "$jid" NumCPUs)" = $((2 * die_cpus)) ] || fail "NumCPUs=$(field "$jid" NumCPUs) after a refused update"
	if [ "${LWK_PRIVATE:-0}" = 1 ]; then
		grep -q "lwk: job_modify: uid [0-9]* job $jid refused: lwk: die placement: dies places jobs by whole dies, .*cancel the job and submit it again" \
			"$(slurmctld_log)" ||
			fail "no refusal naming the rule in the slurmctld log: $(grep "job_modify" "$(slurmctld_log)" | tail -3)"
	fi
}

test_options_exported_in_the_environment_are_judged_too() {
	need_policy_partitions
	local name jid
	name=$(unique_name envopt)
	# Every srun of the script takes SLURM_SPANK__..._lwk_lwk from the
	# job's environment; sbatch itself never sees it.
	run_expect_fail "$LWK_WORK/err" sbatch -J "$name" -p cosched -o /dev/null \
		--export=ALL,SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk=os=1 --wrap 'srun true'
	assert_grep "lwk: --lwk: partition cosched shares nodes between jobs, --lwk needs whole nodes" "$LWK_WORK/err"
	# slurmstepd takes _SLURM_SPANK_OPTION_lwk_* from the batch job's
	# environment as if given on the command line.
	run_expect_fail "$LWK_WORK/err" env _SLURM_SPANK_OPTION_lwk_lwk=os=1 \
		sbatch -J "$name" -p cosched -o /dev/null --wrap true
	assert_grep "lwk: --lwk: partition cosched shares nodes between jobs" "$LWK_WORK/err"
	run_expect_fail "$LWK_WORK/err" sbatch -J "$name" -p dies -o /dev/null \
		--export=ALL,SLURM_SPANK__SLURM_SPANK_OPTION_lwk_contention_aware=probe=1s --wrap 'srun true'
	assert_grep "lwk: --contention-aware: partition dies does not co-schedule jobs by dies; use --partition=cosched" "$LWK_WORK/err"
	# The form sbatch reads from its own environment (Slurm's own path).
	run_expect_fail "$LWK_WORK/err" env SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk=os=1 \
		sbatch -J "$name" -p cosched -o /dev/null --wrap true
	assert_grep "lwk: --lwk: partition cosched shares nodes between jobs" "$LWK_WORK/err"
	[ "$(jobs_named "$name")" = 0 ] || fail "a refused request created a job"
	# Accepted where it may run: whole nodes, and kept for scontrol update.
	jid=$(env _SLURM_SPANK_OPTION_lwk_lwk=os=1 sbatch --parsable -H -p dies -o /dev/null --wrap true) ||
		fail "sbatch failed"
	defer scancel "$jid"
	[ "$(field "$jid" OverSubscribe)" = NO ] || fail "OverSubscribe=$(field "$jid" OverSubscribe): not a whole node"
	scontrol show job "$jid" | grep -q "AdminComment=lwk-options: lwk" ||
		fail "no lwk-options in the admin comment: $(scontrol show job "$jid" | grep -o 'AdminComment=.*')"
	# Refused by the rule, not by anything else (Slurm 22.05 keeps the
	# message from the user: the slurmctld log names it).
	run_expect_fail "$LWK_WORK/err" scontrol update jobid="$jid" Partition=cosched
	[ "$(field "$jid" Partition)" = dies ] || fail "the job moved to $(field "$jid" Partition)"
	grep -q "lwk: job_modify: uid [0-9]* job $jid refused: lwk: --lwk: partition cosched shares nodes between jobs" "$(slurmctld_log)" ||
		fail "no refusal naming the rule in the slurmctld log: $(grep "job_modify" "$(slurmctld_log)" | tail -3)"
	scancel "$jid"
	# A ';' (or a space) in an option's value hides no later option.
	jid=$(env '_SLURM_SPANK_OPTION_lwk_sync_monitor=dir=/tmp/x; y' _SLURM_SPANK_OPTION_lwk_contention_aware= \
		sbatch --parsable -H -p cosched -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$jid"
	run_expect_fail "$LWK_WORK/err" scontrol update jobid="$jid" Partition=debug
	[ "$(field "$jid" Partition)" = cosched ] || fail "the --contention-aware job moved to $(field "$jid" Partition)"
	grep -q "lwk: job_modify: uid [0-9]* job $jid refused: lwk: --contention-aware: partition debug does not co-schedule" "$(slurmctld_log)" ||
		fail "no refusal naming the rule in the slurmctld log: $(grep "job_modify" "$(slurmctld_log)" | tail -3)"
}

# A refused scontrol update: Slurm 22.05 drops the user message of
# job_modify (23.02 and later pass it on), so the log names the rule.
test_scontrol_update_cannot_move_option_jobs_across_the_coscheduling_line() {
	need_policy_routing
	need_policy_partitions
	local jid
	jid=$(sbatch --parsable -H -p dies --lwk=os=1 -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$jid"
	run_expect_fail "$LWK_WORK/err" scontrol update jobid="$jid" Partition=cosched
	[ "$(field "$jid" Partition)" = dies ] || fail "the --lwk job moved to $(field "$jid" Partition)"
	grep -q "lwk: job_modify: uid [0-9]* job $jid refused: lwk: --lwk: partition cosched shares nodes between jobs, --lwk needs whole nodes" "$(slurmctld_log)" ||
		fail "no refusal naming the rule in the slurmctld log: $(grep "job_modify" "$(slurmctld_log)" | tail -3)"
	scontrol update jobid="$jid" Partition=debug || fail "a move to a partition outside the rule was refused"
	scancel "$jid"
	jid=$(sbatch --parsable -H --contention-aware -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$jid"
	[ "$(field "$jid" Partition)" = cosched ] || fail "Partition=$(field "$jid" Partition)"
	run_expect_fail "$LWK_WORK/err" scontrol update jobid="$jid" Partition=dies
	[ "$(field "$jid" Partition)" = cosched ] || fail "the --contention-aware job moved to $(field "$jid" Partition)"
	grep -q "job $jid refused: lwk: --contention-aware: partition dies does not co-schedule jobs by dies; use --partition=cosched" "$(slurmctld_log)" ||
		fail "no refusal naming the rule in the slurmctld log"
}

# dies_of CPU_IDS: the dies (of die_cpus CPUs each) a CPU list covers,
# as "count whole|partial".
dies_of() {
	local ids=$1 part a b c d
	local -A count=()
	for part in ${ids//,/ }; do
		a=${part%-*} b=${part#*-}
		for ((c = a; c <= b; c++)); do
			d=$((c / die_cpus))
			count[$d]=$((${count[$d]:-0} + 1))
		done
	done
	local whole=whole
	for d in "${!count[@]}"; do
		[ "${count[$d]}" = "$die_cpus" ] || whole=partial
	done
	echo "${#count[@]} $whole"
}

# alloc_check ARGS EXPECTED_DIES: an allocation (no step runs, so it works
# on declared nodes bigger than the host) gets exactly EXPECTED_DIES
# whole dies.
# alloc_check ARGS DIES [CPT]: salloc -p dies ARGS gets DIES whole dies
# (and CPUs/Task CPT, the job's and its steps' count, when given).
alloc_check() {
	local args=$1 want=$2 cpt=${3:-} out jid n ids got t
	# shellcheck disable=SC2086 # the words of ARGS are options
	out=$(salloc --no-shell -p dies $args 2>&1) || fail "salloc $args failed: $out"
	jid=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' <<<"$out")
	[ -n "$jid" ] || fail "salloc $args: no allocation in '$out'"
	n=$(field "$jid" NumCPUs)
	ids=$(field "$jid" CPU_IDs)
	t=$(field "$jid" CPUs/Task)
	scancel "$jid"
	got=$(dies_of "$ids")
	echo "measure: salloc $args: NumCPUs=$n CPUs/Task=$t CPU_IDs=$ids ($got dies)"
	[ "$n" = $((want * die_cpus)) ] && [ "$got" = "$want whole" ] ||
		fail "salloc -p dies $args got NumCPUs=$n CPU_IDs=$ids ($got dies), expected $want whole dies ($((want * die_cpus)) CPUs)"
	[ -z "$cpt" ] || [ "$t" = "$cpt" ] ||
		fail "salloc -p dies $args got CPUs/Task=$t, expected $cpt (its task rounded up to whole dies)"
}

# Issue 14, section 4: on 16x4x2 nodes -c 9 got 40 CPUs (Slurm spread the
# task one core per die), -c 12 got 48, -c 16 got 64.  Each wide task
# gets whole dies of its own (its CPUs rounded up to whole dies): on
# 26.05 a one-task -c 5 on nodes of 4 dies x 2 CPUs was refused
# ("Requested node configuration is not available") when only its CPU
# minimum was rounded.
test_a_task_wider_than_a_die_gets_exactly_the_dies_it_needs() {
	need_policy_partitions
	geometry
	[ "$dies" -ge 4 ] && [ "$die_cpus" -ge 2 ] ||
		skip "the nodes have $dies die(s) of $die_cpus CPU(s); LWK_DEVCLUSTER_DIES=16x4x2 declares many-die nodes"
	[ -z "$(squeue -h -p dies -t R -o %i)" ] || skip "jobs run in partition dies: the dies are not all free"
	alloc_check "-n1 -c$((die_cpus + 1))" 2 $((2 * die_cpus))
	alloc_check "-n1 -c$((die_cpus + die_cpus / 2))" 2 $((2 * die_cpus))
	alloc_check "-n1 -c$((2 * die_cpus))" 2 $((2 * die_cpus))
	alloc_check "-n1 -c$((2 * die_cpus + 1))" 3 $((3 * die_cpus))
	alloc_check "-n2 -c$((die_cpus + 1))" 4 $((2 * die_cpus))
	# Multi-task requests were right before; they must stay so.
	alloc_check "-n$((die_cpus + 1))" 2
}

# The policy sets --ntasks-per-socket=1 for a task wider than a die; the
# job's steps inherit it (SLURM_NTASKS_PER_SOCKET) and must still start,
# with either task layout.
test_a_job_of_a_task_wider_than_a_die_runs_its_steps() {
	need_policy_partitions
	local jid c name
	geometry
	[ "$dies" -ge 2 ] || skip "the nodes have $dies die(s); a task wider than a die needs two (LWK_DEVCLUSTER_DIES=2x1x1 on this host)"
	need_real_cpus
	c=$((die_cpus + 1))
	name=$(unique_name widestep)
	jid=$(sbatch --parsable -J "$name" -p dies -n1 -c$c -o "$LWK_WORK/$name.out" \
		--wrap "srun -n1 -c$c true && srun -n1 -c$c -m block:block true && echo steps-ok") ||
		fail "sbatch failed"
	defer scancel "$jid"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] && grep -q steps-ok "$LWK_WORK/$name.out" ||
		fail "job $jid ($(field "$jid" NtasksPerN:B:S:C)) ended $job_state: $(cat "$LWK_WORK/$name.out" 2>&1 | head -5)"
}

test_threads_per_core_1_counts_one_cpu_a_core() {
	need_policy_partitions
	local tpc cores
	geometry
	tpc=$(scontrol show node "$(sinfo -h -N -o %N | head -1)" | grep -oE 'ThreadsPerCore=[0-9]+' | cut -d= -f2)
	cores=$((die_cpus / tpc))
	[ "$tpc" -ge 2 ] && [ "$dies" -ge 3 ] ||
		skip "the nodes have $tpc thread(s) a core and $dies die(s); LWK_DEVCLUSTER_DIES=16x4x2 declares threads"
	# One CPU a core: a die gives the job $cores CPUs and costs die_cpus.
	alloc_check "-n1 -c$((cores + 1)) --threads-per-core=1" 2
	alloc_check "-n1 -c$((2 * cores + 1)) --threads-per-core=1" 3
	alloc_check "-n$((cores + 1)) --threads-per-core=1" 2
}

test_jobs_outside_the_policy_are_untouched() {
	need_policy_partitions
	local jid
	jid=$(sbatch --parsable -H -p debug -n1 -o /dev/null --wrap true) || fail "sbatch failed"
	[ "$(field "$jid" NumCPUs)" = 1 ] || fail "NumCPUs=$(field "$jid" NumCPUs) in debug, expected 1"
	[ "$(field "$jid" NtasksPerN:B:S:C)" = "0:0:*:*" ] ||
		fail "NtasksPerN:B:S:C=$(field "$jid" NtasksPerN:B:S:C): the policy touched a debug job"
	scancel "$jid"
}

test_a_broken_site_config_refuses_only_plugin_jobs_until_fixed() {
	need_own_cluster 'lwk_policy.conf'
	need_policy_partitions
	local conf=$LWK_DEV_DIR/lwk_policy.conf jid before after line
	line=$(($(wc -l <"$conf") + 1))
	cp "$conf" "$LWK_WORK/policy.orig"
	defer cp "$LWK_WORK/policy.orig" "$conf"
	echo "NodeType=broken Dies=two CoresPerDie=2" >>"$conf"
	before=$(grep -c "job_submit.lua: .*lwk_policy.conf line $line: Dies='two'" "$(slurmctld_log)" || true)
	run_expect_fail "$LWK_WORK/err" sbatch --lwk --wrap true
	run_expect_fail "$LWK_WORK/err2" sbatch --sync-monitor --wrap true
	jid=$(sbatch --parsable -H -o /dev/null --wrap true) || { cp "$LWK_WORK/policy.orig" "$conf"; fail "a plain job was refused"; }
	scancel "$jid"
	after=$(grep -c "job_submit.lua: .*lwk_policy.conf line $line: Dies='two'" "$(slurmctld_log)" || true)
	cp "$LWK_WORK/policy.orig" "$conf"
	assert_grep "lwk: site policy: lwk_policy.conf is missing or invalid .*line $line: Dies='two' is not valid" "$LWK_WORK/err"
	[ $((after - before)) = 1 ] || fail "the error was logged $((after - before)) times, expected once"
	# Fixed: the next submission works without a restart (held: only its
	# acceptance matters here).
	jid=$(sbatch --parsable -H -o /dev/null --lwk --wrap true) || fail "still refused after the fix"
	scancel "$jid"
}
