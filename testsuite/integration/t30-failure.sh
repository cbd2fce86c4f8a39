# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Values that slip past the client's check (a client without the
# plugin, a forged job environment) are refused at submission by the
# job_submit policy, and again on the node for a step inside an
# allocation, which job_submit never sees: by failing that step, never
# by draining.  The plugstack arguments are parsed strictly.

# A client configuration without the plugin: sbatch then passes the
# _SLURM_SPANK_OPTION_ variable through unchecked.
client_without_plugin() {
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$LWK_WORK/empty-plugstack.conf|" "$SLURM_CONF" \
		>"$LWK_WORK/client.conf"
	: >"$LWK_WORK/empty-plugstack.conf"
}

# A value the nodes would refuse, put where only the nodes read it: a
# batch job's environment, by a client without the plugin (which would
# check it first).  The job_submit policy judges it as the nodes do and
# refuses the submission, naming the key: no job exists, no node sees it.
test_a_forged_value_is_refused_at_submission() {
	client_without_plugin
	local var name
	for var in _SLURM_SPANK_OPTION_lwk_lwk SLURM_SPANK__SLURM_SPANK_OPTION_lwk_lwk; do
		name=$(unique_name forged)
		run_expect_fail "$LWK_WORK/err" env SLURM_CONF="$LWK_WORK/client.conf" "$var=os=0" \
			sbatch -J "$name" -N1 -o /dev/null --wrap true
		assert_grep "lwk: --lwk: os='0' is not valid; os must be a whole number from 1 to 1024" "$LWK_WORK/err"
		[ "$(jobs_named "$name")" = 0 ] || fail "a job named $name exists after $var=os=0 was refused"
	done
	all_nodes_usable
}

# A step inside an allocation never passes job_submit: the nodes judge
# its values again, and a refused one fails that step, never the node.
# The job's output in $LWK_WORK/forged.out.
forged_step() {
	local jid
	jid=$(sbatch --parsable -N1 -w "$1" -o "$LWK_WORK/forged.out" --wrap \
		"_SLURM_SPANK_OPTION_lwk_lwk=os=0 srun -N1 bash -c 'echo the step ran'; echo step:\$?") ||
		fail "sbatch failed"
	wait_job "$jid"
	assert_no_grep "the step ran" "$LWK_WORK/forged.out" "the job's output"
	assert_grep "lwk: step $jid\\.0: refusing the job's options: lwk: --lwk: os='0' is not valid" \
		"$(slurmd_log "$1")"
}

test_forged_value_fails_the_step_not_the_node() {
	forged_step ${NODE2}
	# on_error=fail_job: the step's tasks say why, and fail.
	assert_grep "lwk: --lwk: os='0' is not valid" "$LWK_WORK/forged.out" "the job's output"
	assert_no_grep "^step:0\$" "$LWK_WORK/forged.out" "the job's output"
	all_nodes_usable
}

test_plugstack_unknown_key_is_an_error_naming_it() {
	need_own_cluster 'plugstack.conf'
	with_plugstack "on_error=fail_job statedir=/tmp" \
		run_expect_fail "$LWK_WORK/err" srun -N1 true
	assert_grep "lwk: plugstack.conf: unknown key 'statedir'; allowed keys: lwk, sync_monitor, contention_aware, on_error, state_dir, syncmon, cgroup_root, mckernel, lwk_whole_dies, lwk_isolate, lwk_irqbalance, syncmon_memory, syncmon_cpu" \
		"$LWK_WORK/err"
	with_plugstack "on_error=sometimes" run_expect_fail "$LWK_WORK/err" sbatch --wrap true
	assert_grep "on_error must be one of fail_job\|drain_node" "$LWK_WORK/err"
}

test_plugstack_can_withdraw_an_option() {
	need_own_cluster 'plugstack.conf'
	with_plugstack "lwk=no" sbatch --help >"$LWK_WORK/help" 2>&1
	assert_no_grep '--lwk' "$LWK_WORK/help" "sbatch --help with lwk=no"
	assert_grep '--sync-monitor' "$LWK_WORK/help" "sbatch --help with lwk=no"
	with_plugstack "lwk=no" run_expect_fail "$LWK_WORK/err" sbatch --lwk --wrap true
	assert_grep "unrecognized option '--lwk'" "$LWK_WORK/err"
}

# Under on_error=drain_node a refused value drains the node: no user's
# value reaches a node that way.  At submission the policy refuses it;
# a step inside an allocation fails (Slurm drains only for a batch step).
test_on_error_drain_node_leaves_no_forged_value_a_drain() {
	need_own_cluster 'plugstack.conf (on_error=drain_node)'
	client_without_plugin
	# The last node: the one the fewest other tests use.
	local name state='' conf=$LWK_PLUGSTACK node
	node=$(node_n "$LWK_NODES")
	# slurmstepd reads plugstack.conf when a step starts: keep the edit
	# until the steps have run, then put the original back.
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	defer scontrol update nodename="$node" state=resume
	plugstack_set "$conf" on_error=drain_node
	name=$(unique_name drain)
	run_expect_fail "$LWK_WORK/err" env SLURM_CONF="$LWK_WORK/client.conf" \
		_SLURM_SPANK_OPTION_lwk_lwk=backend=none sbatch -J "$name" -N1 -w "$node" -o /dev/null --wrap true
	assert_grep "lwk: --lwk: backend='none' is not valid; backend must be one of auto|linux|mckernel" "$LWK_WORK/err"
	forged_step "$node"
	# The plugin's init fails the step's launch (Slurm drains only for a
	# batch step).
	assert_grep "launch failed" "$LWK_WORK/forged.out" "the job's output"
	cp "$LWK_WORK/plugstack.orig" "$conf"
	state=$(sinfo -h -n "$node" -o '%t')
	[[ $state != drain* ]] || fail "$node is '$state' after a forged value: a user drained it"
	all_nodes_usable
}
