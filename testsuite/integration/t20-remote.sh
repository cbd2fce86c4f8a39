# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The values reach slurmstepd on every node, as parsed structs exported
# to the tasks, through srun and through a batch script's steps.

LWK_DEFAULTS='os=1,mem=0,numa=auto,backend=auto,hugepage=2M,deleg_mem=128M,deleg_cpu=100%'

test_srun_values_reach_every_node() {
	[ "$LWK_NODES" -ge 2 ] || skip "needs at least 2 nodes, the cluster has $LWK_NODES"
	srun -N "$LWK_NODES" --lwk=os=1,numa=0,deleg_cpu=50 --sync-monitor=interval=250ms \
		bash -c 'echo "$SLURMD_NODENAME|$SLURM_LWK_REQUEST|$SLURM_SYNC_MONITOR_REQUEST|${SLURM_CASAS_REQUEST-unset}"' \
		>"$LWK_WORK/out" 2>&1 || fail "srun failed: $(cat "$LWK_WORK/out")"
	[ "$(cut -d'|' -f1 "$LWK_WORK/out" | sort -u | wc -l)" = "$LWK_NODES" ] ||
		fail "expected one line from each of $LWK_NODES nodes: $(cat "$LWK_WORK/out")"
	[ "$(cut -d'|' -f2- "$LWK_WORK/out" | sort -u)" = \
	  "os=1,mem=0,numa=0,backend=auto,hugepage=2M,deleg_mem=128M,deleg_cpu=50%|interval=250ms,offset=0ms,source=auto,idle=1%,fullscan=20,flush=20,buffer=1M|unset" ] ||
		fail "nodes saw: $(cat "$LWK_WORK/out")"
}

test_a_flag_without_value_means_defaults() {
	# stdout alone: srun says on stderr when it waits for a node.
	srun -N1 --lwk printenv SLURM_LWK_REQUEST >"$LWK_WORK/out" 2>"$LWK_WORK/err" ||
		fail "$(cat "$LWK_WORK/out" "$LWK_WORK/err")"
	[ "$(cat "$LWK_WORK/out")" = "$LWK_DEFAULTS" ] || fail "saw: $(cat "$LWK_WORK/out" "$LWK_WORK/err")"
}

test_batch_script_and_its_steps_see_the_values() {
	need_policy_routing
	local n=$LWK_NODES jid
	jid=$(sbatch --parsable -N "$n" -o "$LWK_WORK/batch.out" --contention-aware=min_dies=2,probe=1s \
		--wrap "echo batch:\$SLURM_CASAS_REQUEST; srun -N $n bash -c 'echo step:\$SLURMD_NODENAME:\$SLURM_CASAS_REQUEST'") ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/batch.out")"
	local want='probe=1s,min_dies=2,max_dies=0,event=instructions,objective=antt'
	assert_grep "^batch:$want\$" "$LWK_WORK/batch.out"
	[ "$(grep -c "^step:[^:]*:$want\$" "$LWK_WORK/batch.out")" = "$n" ] ||
		fail "expected $n step lines: $(cat "$LWK_WORK/batch.out")"
}

test_jobs_without_options_see_nothing() {
	srun -N1 bash -c 'env | grep -c "^SLURM_\(LWK\|SYNC_MONITOR\|CASAS\)_REQUEST=" || true' \
		>"$LWK_WORK/out" 2>&1
	[ "$(cat "$LWK_WORK/out")" = 0 ] || fail "a job without options got: $(cat "$LWK_WORK/out")"
}

test_plugin_is_loaded_on_every_node() {
	local name jid n
	name=$(unique_name loaded)
	jid=$(sbatch --parsable -J "$name" -N "$LWK_NODES" ${LWK_TEST_NODES:+-w "$LWK_TEST_NODES"} -o /dev/null --lwk=os=1 \
		--wrap "srun -N $LWK_NODES true") || fail "sbatch failed"
	wait_job "$jid"
	for ((n = 1; n <= LWK_NODES; n++)); do
		assert_grep "lwk: step $jid\\.0: --lwk os=1," "$(slurmd_log "$(node_n "$n")")" "$(node_n "$n")'s slurmd log"
	done
	assert_grep "lwk: step $jid\\.batch: --lwk os=1," "$(slurmd_log ${NODE1})" "${NODE1}'s slurmd log"
}

test_controller_sees_the_options_in_spank_job_env() {
	local name jid
	name=$(unique_name ctld)
	jid=$(sbatch --parsable -J "$name" -o /dev/null --lwk=os=1 --sync-monitor --wrap true) ||
		fail "sbatch failed"
	wait_job "$jid"
	assert_grep "lwk: job_submit: uid 0 name $name: --lwk=os=1 --sync-monitor \\[whole nodes\\]\$" \
		"$(slurmctld_log)" "slurmctld.log"
	name=$(unique_name plain)
	jid=$(sbatch --parsable -J "$name" -o /dev/null --wrap true) || fail "sbatch failed"
	wait_job "$jid"
	assert_no_grep "name $name:" "$(slurmctld_log)" "slurmctld.log"
}

test_nodes_stay_usable() {
	all_nodes_usable
}

# At its start slurmd's plugin names a configuration it cannot serve
# (cgroup v2 without the cpuset controller delegated to Slurm's scope,
# IgnoreSystemd on a node systemd runs): on a cluster that serves every
# option, each slurmd's latest start says which node it is and names no
# such problem.  A site's slurmd started before the run's log window
# (the journal since the run, a log's last 64 MiB) cannot be judged.
test_slurmd_starts_without_a_configuration_problem() {
	local n log start
	for n in "${lwk_nodes[@]}"; do
		log=$(slurmd_log "$n")
		start=$(grep -n "lwk: this slurmd is node $n " "$log" | tail -n 1)
		if [ -z "$start" ] && [ -n "${LWK_TEST_SLURM_CONF:-}" ]; then
			skip "$n's slurmd started before this run's view of its log (restart it to judge its start)"
		fi
		[ -n "$start" ] || fail "$n's slurmd log has no start of the plugin"
		! tail -n +"${start%%:*}" "$log" | grep -E "lwk: .*(is not delegated to|IgnoreSystemd=)" ||
			fail "$n's slurmd named a problem of this cluster's configuration at its start"
	done
}
