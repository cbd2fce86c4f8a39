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
	scontrol show job -d "$1" | grep -oE "(^| )$2=[^ ]*" | head -1 | sed "s/^ *$2=//"
}

wait_running() {
	local i
	for ((i = 0; i < 80; i++)); do
		[ "$(squeue -h -j "$1" -o %t)" = R ] && return 0
		sleep 0.25
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

test_two_jobs_on_one_node_get_disjoint_whole_dies() {
	need_private
	need_policy_partitions
	local a b ca cb node d whole='' sep=''
	geometry
	need_two_dies
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
		whole+="$sep$((d * die_cpus))-$((d * die_cpus + die_cpus - 1))"
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
	scontrol update jobid="$jid" NumCPUs=$((die_cpus + 1)) || fail "scontrol update failed"
	[ "$(field "$jid" NumCPUs)" = $((2 * die_cpus)) ] ||
		fail "NumCPUs=$(field "$jid" NumCPUs) after NumCPUs=$((die_cpus + 1)), expected $((2 * die_cpus))"
	scancel "$jid"
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
	need_private
	need_policy_partitions
	local conf=$LWK_DEV_DIR/lwk_policy.conf jid before after line
	line=$(($(wc -l <"$conf") + 1))
	cp "$conf" "$LWK_WORK/policy.orig"
	defer cp "$LWK_WORK/policy.orig" "$conf"
	echo "NodeType=broken Dies=two CoresPerDie=2" >>"$conf"
	before=$(grep -c "job_submit.lua: .*lwk_policy.conf line $line: Dies='two'" "$LWK_DEV_DIR/log/slurmctld.log" || true)
	run_expect_fail "$LWK_WORK/err" sbatch --lwk --wrap true
	run_expect_fail "$LWK_WORK/err2" sbatch --sync-monitor --wrap true
	jid=$(sbatch --parsable -o /dev/null --wrap true) || { cp "$LWK_WORK/policy.orig" "$conf"; fail "a plain job was refused"; }
	after=$(grep -c "job_submit.lua: .*lwk_policy.conf line $line: Dies='two'" "$LWK_DEV_DIR/log/slurmctld.log" || true)
	cp "$LWK_WORK/policy.orig" "$conf"
	assert_grep "lwk: site policy: lwk_policy.conf is missing or invalid .*line $line: Dies='two' is not valid" "$LWK_WORK/err"
	[ $((after - before)) = 1 ] || fail "the error was logged $((after - before)) times, expected once"
	# Fixed: the next submission works without a restart.
	jid=$(sbatch --parsable -o /dev/null --lwk --wrap true) || fail "still refused after the fix"
}
