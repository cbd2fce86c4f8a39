# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Values that slip past the submit-side check (a client without the
# plugin, a forged job environment) are refused again on the node: by
# failing the job (on_error=fail_job, the default), never by draining.
# The plugstack arguments are parsed strictly.

# A client configuration without the plugin: sbatch then passes the
# _SLURM_SPANK_OPTION_ variable through unchecked.
client_without_plugin() {
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$LWK_WORK/empty-plugstack.conf|" "$SLURM_CONF" \
		>"$LWK_WORK/client.conf"
	: >"$LWK_WORK/empty-plugstack.conf"
}

test_forged_value_fails_the_job_not_the_node() {
	need_private
	client_without_plugin
	local jid
	jid=$(SLURM_CONF=$LWK_WORK/client.conf _SLURM_SPANK_OPTION_lwk_lwk=os=0 \
		sbatch --parsable -N1 -w node2 -o "$LWK_WORK/forged.out" --wrap 'echo the job ran') ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = FAILED ] || fail "job $jid ended $job_state, expected FAILED"
	assert_grep "^lwk: --lwk: os='0' is not valid" "$LWK_WORK/forged.out" "the job's output"
	assert_no_grep "the job ran" "$LWK_WORK/forged.out" "the job's output"
	assert_grep "lwk: step $jid\\.batch: refusing the job's options" "$(slurmd_log node2)"
	all_nodes_usable
}

# with_plugstack ARGS CMD...: run CMD with plugstack.conf arguments ARGS,
# then put the original back.
with_plugstack() {
	local args=$1 conf=$LWK_DEV_DIR/plugstack.conf rc=0
	shift
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf" # even if "$@" fails the test
	sed -i "1s|\$| $args|" "$conf"
	"$@" || rc=$?
	cp "$LWK_WORK/plugstack.orig" "$conf"
	return $rc
}

test_plugstack_unknown_key_is_an_error_naming_it() {
	need_private
	with_plugstack "on_error=fail_job statedir=/tmp" \
		run_expect_fail "$LWK_WORK/err" srun -N1 true
	assert_grep "lwk: plugstack.conf: unknown key 'statedir'; allowed keys: lwk, sync_monitor, contention_aware, on_error, state_dir, syncmon, cgroup_root, mckernel, lwk_whole_dies, lwk_isolate" \
		"$LWK_WORK/err"
	with_plugstack "on_error=sometimes" run_expect_fail "$LWK_WORK/err" sbatch --wrap true
	assert_grep "on_error must be one of fail_job\|drain_node" "$LWK_WORK/err"
}

test_plugstack_can_withdraw_an_option() {
	need_private
	with_plugstack "lwk=no" sbatch --help >"$LWK_WORK/help" 2>&1
	assert_no_grep '--lwk' "$LWK_WORK/help" "sbatch --help with lwk=no"
	assert_grep '--sync-monitor' "$LWK_WORK/help" "sbatch --help with lwk=no"
	with_plugstack "lwk=no" run_expect_fail "$LWK_WORK/err" sbatch --lwk --wrap true
	assert_grep "unrecognized option '--lwk'" "$LWK_WORK/err"
}

test_on_error_drain_node_drains_on_a_forged_value() {
	need_private
	client_without_plugin
	# The last node: the one the fewest other tests use.
	local jid state='' conf=$LWK_DEV_DIR/plugstack.conf node=node$LWK_NODES
	# slurmstepd reads plugstack.conf when a step starts: keep the edit
	# until the step has run, then put the original back.
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	defer scontrol update nodename="$node" state=resume
	sed -i '1s|$| on_error=drain_node|' "$conf"
	jid=$(SLURM_CONF=$LWK_WORK/client.conf _SLURM_SPANK_OPTION_lwk_lwk=backend=none \
		sbatch --parsable -N1 -w "$node" -o /dev/null --no-requeue --wrap true) || {
		cp "$LWK_WORK/plugstack.orig" "$conf"
		fail "sbatch failed"
	}
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		state=$(sinfo -h -n "$node" -o '%t')
		[[ $state == drain* ]] && break
		snooze 0.25
	done
	cp "$LWK_WORK/plugstack.orig" "$conf"
	scancel "$jid" 2>/dev/null || true
	scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
	[[ $state == drain* ]] || fail "$node is '$state', expected drained"
	assert_grep "lwk: step $jid\\.batch: refusing the job's options: lwk: --lwk: backend='none'" \
		"$(slurmd_log "$node")"
}
