# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# --sync-monitor on the real cluster: one sampler per node per job, ticks
# aligned across nodes, gone with the job, files written as the job's user.

# Lines of a node file: "k t_ideal_ns t_ns flush" per sample.
ticks() {
	sed -n 's/^{"k":\([0-9]*\),"t_ideal_ns":\([0-9]*\),"t_ns":\([0-9]*\),.*"flush":\([a-z]*\),.*/\1 \2 \3 \4/p' "$1"
}

sampler_running() {
	on_each_node pgrep -f "lwk-syncmon --job $1 " >/dev/null
}

# make_test_user: a user other than root that every node knows; on a
# site's cluster the one LWK_TEST_USER names (no account is made there).
make_test_user() {
	if [ "${LWK_PRIVATE:-0}" != 1 ]; then
		[ -n "${LWK_TEST_USER:-}" ] && id "$LWK_TEST_USER" >/dev/null 2>&1 ||
			skip "needs a user other than root known on every node: set LWK_TEST_USER"
		echo "$LWK_TEST_USER"
		return
	fi
	id lwktest >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin lwktest >/dev/null 2>&1 ||
		skip "cannot create the test user lwktest (useradd)"
	echo lwktest
}

as_user() {
	local user=$1
	shift
	runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" "$@"
}

test_three_nodes_write_three_files_with_aligned_ticks() {
	[ "$LWK_NODES" -ge 3 ] || skip "needs 3 nodes, the cluster has $LWK_NODES"
	local dir=$LWK_WORK/sm-aligned jid n spread max=0 f common=0 spreads=() median
	mkdir -p "$dir"
	jid=$(sbatch --parsable -N3 -o /dev/null --sync-monitor=interval=100ms,flush=5,dir="$dir" \
		--wrap 'srun -N3 sleep 3') || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state"
	[ "$(find "$dir" -name "syncmon-$jid-*.jsonl" | wc -l)" = 3 ] ||
		fail "expected 3 files, found: $(ls "$dir")"
	for f in "$dir"/syncmon-"$jid"-*.jsonl; do
		head -1 "$f" | grep -q "^{\"format\":\"slurm-lwk-syncmon\",\"version\":1,\"job\":$jid," ||
			fail "$f: no header"
		tail -1 "$f" | grep -q '^{"end":true,.*"dropped":0' || fail "$f: no footer: $(tail -1 "$f")"
		n=$(ticks "$f" | wc -l)
		[ "$n" -ge 15 ] || fail "$f: only $n samples in a 3 s job at 100 ms"
		ticks "$f" >"$f.ticks"
	done
	# Same tick number: same ideal instant, on the 100 ms grid, the same
	# flush decision; actual sample times within 50 ms of each other.
	while read -r k ideal tmin tmax flushes ideals nodes; do
		[ "$nodes" = 3 ] || continue
		common=$((common + 1))
		[ "$ideals" = 1 ] || fail "tick $k has different ideal times on different nodes"
		[ $((ideal % 100000000)) = 0 ] || fail "tick $k at $ideal is off the 100 ms grid"
		[ "$flushes" = 1 ] || fail "tick $k is a flush tick on some nodes only"
		spread=$((tmax - tmin))
		spreads+=("$spread")
		[ $spread -gt $max ] && max=$spread
	done < <(cat "$dir"/*.ticks | awk '{ n[$1]++; id[$1]=$2; if (!($1 in lo) || $3 < lo[$1]) lo[$1]=$3;
		if ($3 > hi[$1]) hi[$1]=$3; fl[$1 " " $4]=1; ideal[$1 " " $2]=1 }
		END { for (k in n) { f=0; i=0; for (x in fl) if (index(x, k " ") == 1) f++;
		for (x in ideal) if (index(x, k " ") == 1) i++; print k, id[k], lo[k], hi[k], f, i, n[k] } }')
	# Nodes that disagree on tick numbers would share none: that must fail.
	[ $common -ge 10 ] || fail "only $common ticks are common to the 3 nodes"
	median=$(printf '%s\n' "${spreads[@]}" | sort -n | sed -n "$(((common + 1) / 2))p")
	echo "measure: $common ticks common to 3 nodes; spread of one tick's sample times across 3 nodes: median $((median / 1000)) us, largest $((max / 1000)) us"
	# The median: nodes whose clocks or grids disagree are off at every
	# tick; one late wakeup (an emulated guest on an oversubscribed host
	# stalls for 100 ms and more) is not misalignment.
	[ "$median" -le 50000000 ] ||
		fail "tick sample times differ by a median $((median / 1000000)) ms across nodes (bound 50 ms)"
}

# source=bpf: every node reads the job's processes with the BPF task
# iterator and says so in its header; nothing of it stays loaded once the
# job has ended.  (Where it cannot load, the job's tasks fail with the
# reason: testsuite/unit/syncmon/check_start.c.)
test_source_bpf_reads_the_job_through_the_task_iterator() {
	[ "$LWK_NODES" -ge 2 ] || skip "needs 2 nodes, the cluster has $LWK_NODES"
	on_each_node sh -c '[ ! -r /sys/kernel/btf/vmlinux ]' && skip "a node has no BTF (/sys/kernel/btf/vmlinux)"
	local dir=$LWK_WORK/sm-bpf jid f i
	mkdir -p "$dir"
	# Each task notes the job's slurmstepds on its node (batch, extern,
	# step 0), once every task has exec'd (a task is named as its
	# slurmstepd until then): Slurm's, in the job cgroup, never listed
	# as the job's.  A file per node: the guests' pids are their own.
	cat >"$dir/task.sh" <<'EOF'
sleep 2
pgrep -f "^slurmstepd: \[$SLURM_JOB_ID\." >"$1/stepd.pids.$SLURMD_NODENAME"
sleep 0.5
EOF
	jid=$(sbatch --parsable -N2 -o "$dir/job.out" --sync-monitor=source=bpf,interval=100ms,dir="$dir" \
		--wrap "srun -N2 sh '$dir/task.sh' '$dir'") || fail "sbatch failed"
	wait_job "$jid"
	grep -q "bpf: not built" "$dir/job.out" 2>/dev/null && skip "the sampler was built without its BPF source"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$dir/job.out" 2>/dev/null)"
	[ "$(find "$dir" -name "syncmon-$jid-*.jsonl" | wc -l)" = 2 ] || fail "files: $(ls "$dir")"
	for f in "$dir"/syncmon-"$jid"-*.jsonl; do
		head -1 "$f" | grep -q '"source":"bpf","source_fallback":""' || fail "$f: $(head -1 "$f")"
		grep -q '^{"k".*"procs":\[{"pid"' "$f" || fail "$f: no process of the job listed"
	done
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		sampler_running "$jid" || break
		snooze 0.25
	done
	# The walk: of the job cgroup's tasks where Slurm made one (its
	# path found from the kernel: a SLUID on 26.05) and the kernel has
	# the css_task iterator (6.7), else of every task, saying why.
	local node rel want samples fallbacks cgroups=0
	# Where Slurm tracks jobs in cgroups (proctrack/cgroup: v2, or v1's
	# freezer), the sampler must have found the job cgroup.
	slurm_cgroups && cgroups=1
	# The footers: written as each sampler stops (the epilog), up to 30 s.
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[ "$(cat "$dir"/syncmon-"$jid"-*.jsonl | grep -c '^{"end":true')" = 2 ] && break
		snooze 0.25
	done
	for f in "$dir"/syncmon-"$jid"-*.jsonl; do
		node=${f##*-}
		node=${node%.jsonl}
		rel=$(on_node "$node" uname -r)
		want=tasks
		[ $cgroups = 0 ] || head -1 "$f" | grep -q '"job_cgroup":true' ||
			fail "$f: Slurm tracks the job in cgroups, but the sampler found no job cgroup: $(head -1 "$f")"
		if head -1 "$f" | grep -q '"job_cgroup":true' &&
			[ "$(printf '%s\n6.7\n' "${rel%%-*}" | sort -V | head -1)" = 6.7 ]; then
			want=cgroup
		fi
		# Slurm's own slurmstepds (in the job cgroup: v1's job level,
		# v2's step_<n>/slurm) are not the job's processes (a task
		# forked from one is, named slurmstepd until its exec).
		[ -s "$dir/stepd.pids.$node" ] || fail "the task on $node found no slurmstepd of job $jid"
		for i in $(sort -u "$dir/stepd.pids.$node"); do
			! grep -q "{\"pid\":$i," "$f" || fail "$f: slurmstepd $i listed as a job process"
		done
		head -1 "$f" | grep -q "\"bpf_walk\":\"$want\"" || fail "$f: on Linux $rel the walk should be $want: $(head -1 "$f")"
		# No failed read; and the walk at the end is the one at the
		# start.  A tick whose listed process moved out of the job
		# cgroup between its listing and the walk (Slurm's moves at a
		# step's start and end) is read by the task walk: a few.
		tail -1 "$f" | grep -q "\"source_errors\":0,\"bpf_walk_fallbacks\":[0-9][0-9]*,\"bpf_walk_end\":\"$want\"" ||
			fail "$f: the footer counts failed reads, or another walk at the end: $(tail -1 "$f")"
		samples=$(tail -1 "$f" | sed -n 's/.*"samples":\([0-9]*\).*/\1/p')
		fallbacks=$(tail -1 "$f" | sed -n 's/.*"bpf_walk_fallbacks":\([0-9]*\).*/\1/p')
		[ $((fallbacks * 10)) -le "$samples" ] ||
			fail "$f: $fallbacks of $samples ticks fell back from the $want walk: $(tail -1 "$f")"
		echo "measure: $node (Linux $rel): bpf walks $want"
	done
	if on_each_node sh -c 'command -v bpftool >/dev/null'; then
		# Freed after an RCU grace period: up to 5 s.
		for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
			on_each_node sh -c 'bpftool prog show name job_tasks 2>/dev/null | grep -q . ||
				bpftool prog show name job_cgroup 2>/dev/null | grep -q .' || break
			snooze 0.25
		done
		on_each_node sh -c 'bpftool prog show name job_tasks 2>/dev/null | grep -q . ||
			bpftool prog show name job_cgroup 2>/dev/null | grep -q .' &&
			fail "the sampler's BPF programs are still loaded after job $jid: $(on_each_node bpftool prog show)"
	fi
	return 0
}

test_one_sampler_per_node_however_many_steps() {
	local dir=$LWK_WORK/sm-steps jid starts
	mkdir -p "$dir"
	jid=$(sbatch --parsable -N2 -o /dev/null --sync-monitor=interval=50ms,dir="$dir" \
		--wrap 'srun -N2 true; srun -N2 true; srun -N2 sleep 1') || fail "sbatch failed"
	wait_job "$jid"
	[ "$(find "$dir" -name "syncmon-$jid-*" | wc -l)" = 2 ] || fail "files: $(ls "$dir")"
	starts=$(every_slurmd_log | grep -c "lwk: step $jid\.[a-z0-9]*: started the sampler")
	[ "$starts" = 2 ] || fail "the sampler was started $starts times for 2 nodes"
}

test_the_sampler_goes_with_the_job_and_leaves_no_state() {
	local dir=$LWK_WORK/sm-end jid i left
	mkdir -p "$dir"
	jid=$(sbatch --parsable -N1 -o /dev/null --sync-monitor=interval=50ms,dir="$dir" --wrap 'sleep 60') ||
		fail "sbatch failed"
	defer scancel "$jid"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		sampler_running "$jid" && break
		snooze 0.25
	done
	sampler_running "$jid" || fail "no sampler started for job $jid"
	scancel "$jid"
	wait_job "$jid"
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		sampler_running "$jid" || break
		snooze 0.25
	done
	sampler_running "$jid" && fail "the sampler of cancelled job $jid still runs"
	tail -1 "$dir"/syncmon-"$jid"-*.jsonl | grep -q '"end":true' || fail "no footer after scancel"
	# find's own complaints stay on the node (a node no job has used
	# yet has no state directory at all): only what it found counts.
	left=$(on_each_node sh -c 'find "$1" -mindepth 2 -name "$2" 2>/dev/null' _ "$LWK_STATE_DIR" "$jid" || true)
	[ -z "$left" ] || fail "state left behind: $left"
	# grep -c reads to the end (pipefail: -q's early exit would fail cat).
	[ "$(every_slurmd_log | grep -c "lwk: job $jid on [^ ]*: lwk-syncmon: job $jid node [^ ]*: stopped after")" != 0 ] ||
		fail "the epilog did not log the sampler's stop"
}

# short_jobs_leave_nothing N DIR: N jobs of one srun on every node that
# ends at once; after each, within 10 s, no sampler of it runs and it has
# no state on any node.
short_jobs_leave_nothing() {
	local n=$1 dir=$2 jid i r left running=
	mkdir -p "$dir"
	for ((r = 0; r < n; r++)); do
		# shellcheck disable=SC2016 # expanded by the job's shell
		jid=$(srun -N"$LWK_NODES" --sync-monitor=interval=50ms,dir="$dir" \
			sh -c 'echo $SLURM_JOB_ID' | sort -u) || fail "srun failed"
		[ -n "$jid" ] || fail "srun printed no job id"
		wait_job "$jid"
		[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state"
		# The epilog may still be running when the job shows COMPLETED.
		for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
			sampler_running "$jid" || break
			snooze 0.25
		done
		if sampler_running "$jid"; then
			running="$running $jid"
			on_each_node pkill -f "lwk-syncmon --job $jid " || true
		fi
		left=$(on_each_node sh -c 'find "$1" -mindepth 2 -maxdepth 2 -name "$2" 2>/dev/null' _ "$LWK_STATE_DIR" "$jid" || true)
		[ -z "$left" ] || fail "state left behind by job $jid: $left"
	done
	[ -z "$running" ] || fail "samplers still ran 10 s after their jobs ended:$running"
}

# A job that ends right after its sampler started: the epilog must find
# the sampler (its pid is recorded before the step goes on) and stop it;
# no sampler runs on for the orphan timeout and no state is left.
test_a_job_that_ends_at_once_leaves_no_sampler_and_no_state() {
	short_jobs_leave_nothing 3 "$LWK_WORK/sm-short"
}

# The same on a node where the sampler is slow to get going (a loaded or
# cold node): here a stand-in that waits 2 s before it becomes the real
# sampler, so the epilog always comes first.
test_a_sampler_slow_to_start_is_still_stopped_by_the_epilog() {
	need_own_cluster 'plugstack.conf (syncmon=)'
	local conf=$LWK_PLUGSTACK real slow=$LWK_WORK/slow
	[ -z "${LWK_GUEST_SHARE:-}" ] || skip "the guests have no C compiler to build the slow stand-in"
	command -v cc >/dev/null || skip "no C compiler here to build the slow stand-in"
	real=$(sed -n '/^[^#]*lwk[.]so/s/.* syncmon=\([^ ]*\).*/\1/p' "$conf")
	real=${real:-/usr/libexec/slurm-lwk/lwk-syncmon}
	mkdir -p "$slow"
	printf '#include <unistd.h>\nint main(int c, char **v)\n{ (void)c; sleep(2); v[0] = "%s"; execv(v[0], v); return 127; }\n' \
		"$real" >"$slow/slow.c"
	cc -o "$slow/lwk-syncmon" "$slow/slow.c" || fail "cannot build the stand-in"
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf"
	if grep -q ' syncmon=' "$conf"; then
		sed -i "/^[^#]*lwk[.]so/s| syncmon=[^ ]*| syncmon=$slow/lwk-syncmon|" "$conf"
	else
		sed -i "/^[^#]*lwk[.]so/s|\$| syncmon=$slow/lwk-syncmon|" "$conf"
	fi
	short_jobs_leave_nothing 1 "$LWK_WORK/sm-slow"
	cp "$LWK_WORK/plugstack.orig" "$conf"
}

test_files_belong_to_the_job_user_and_links_are_not_followed() {
	local user dir jid victim=/etc/lwk-victim-$$ f
	user=$(make_test_user)
	dir=$LWK_WORK/sm-user
	mkdir -p "$dir" && chown "$user" "$dir"
	# On the node whose sampler writes there.
	on_node ${NODE1} sh -c 'echo untouched >"$1"' - "$victim" || fail "cannot write $victim on ${NODE1}"
	defer on_node ${NODE1} rm -f "$victim"
	jid=$(cd "$dir" && as_user "$user" sbatch --parsable -H -N1 -w ${NODE1} -o /dev/null \
		--sync-monitor=interval=50ms --wrap 'sleep 1') || fail "sbatch as $user failed"
	# The user plants a link where the sampler's file will go.
	as_user "$user" ln -s "$victim" "$dir/syncmon-$jid-${NODE1}.jsonl"
	scontrol release "$jid"
	wait_job "$jid"
	[ "$(on_node ${NODE1} cat "$victim")" = untouched ] || fail "root wrote through the user's link"
	f=$dir/syncmon-$jid-${NODE1}.1.jsonl
	[ -f "$f" ] || fail "no output next to the link: $(ls -l "$dir")"
	[ "$(stat -c %U "$f")" = "$user" ] || fail "$f belongs to $(stat -c %U "$f"), not $user"
}

# The sampler slurmstepd starts keeps, for the job's life, only the
# capabilities sampling needs, none it could get back, and meets the OOM
# killer as the job's processes do (slurmstepd's -1000 is not its).
test_the_sampler_keeps_no_more_than_sampling_needs() {
	local jid pid= status= deadline eff allowed kernel slurmd old_adj shielded=
	need_own_cluster "a slurmd's oom_score_adj"
	# node2's slurmd shielded from the OOM killer, as sites do
	# (SLURMD_OOM_ADJ, OOMScoreAdjust=): slurmstepd inherits it.
	slurmd=$(on_node "$NODE2" pgrep -o -f "^slurmd .*-N $NODE2\$" || on_node ${NODE2} pgrep -o -x slurmd) ||
		fail "no slurmd on ${NODE2}"
	old_adj=$(on_node ${NODE2} cat "/proc/$slurmd/oom_score_adj")
	if on_node ${NODE2} sh -c 'echo -1000 >"/proc/$1/oom_score_adj"' - "$slurmd" 2>/dev/null; then
		shielded=1
		defer on_node ${NODE2} sh -c 'echo "$2" >"/proc/$1/oom_score_adj"' - "$slurmd" "$old_adj"
	else
		echo "    (${NODE2}'s slurmd cannot be shielded from the OOM killer here (root without CAP_SYS_RESOURCE): the sampler's oom_score_adj is the guests' to check)"
	fi
	jid=$(sbatch --parsable -N1 -w ${NODE2} -o /dev/null --sync-monitor=interval=100ms,dir="$LWK_WORK" \
		--wrap 'sleep 600') || fail "sbatch failed"
	defer scancel "$jid"
	# Until it has set itself up (no_new_privs is its last step).
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		pid=$(on_node ${NODE2} pgrep -o -f "lwk-syncmon --job $jid " || :)
		[ -z "$pid" ] || status=$(on_node ${NODE2} cat "/proc/$pid/status" 2>/dev/null) || status=
		[[ $status != *$'NoNewPrivs:\t1'* ]] || break
		snooze 0.5
	done
	[ -n "$pid" ] || fail "no sampler for job $jid on ${NODE2} after $(wait_bound) s"
	[[ $status == *$'NoNewPrivs:\t1'* ]] || fail "its no_new_privs is not set after $(wait_bound) s: $status"
	grep -qE '^CapBnd:[[:space:]]*0+$' <<<"$status" || fail "its bounding set is not empty: $(grep '^Cap' <<<"$status")"
	grep -qE '^CapInh:[[:space:]]*0+$' <<<"$status" || fail "its inheritable set is not empty: $(grep '^Cap' <<<"$status")"
	eff=$(sed -n 's/^CapEff:[[:space:]]*//p' <<<"$status")
	# CAP_DAC_READ_SEARCH (2) for the job's 0400 environ files and the
	# user's v1 step directories, CAP_NET_ADMIN (12) for taskstats,
	# CAP_SYS_PTRACE (19) where no job cgroup lists the job; before
	# Linux 5.19 the BPF ones (21, 38, 39) to read its BPF fds.
	allowed=$(((1 << 2) | (1 << 12) | (1 << 19)))
	kernel=$(on_node ${NODE2} uname -r)
	if printf '%s\n5.19\n' "${kernel%%-*}" | sort -V -C; then
		allowed=$((allowed | (1 << 21) | (1 << 38) | (1 << 39)))
	fi
	[ $((0x$eff & ~allowed)) = 0 ] || fail "it keeps capabilities sampling does not need: CapEff $eff"
	[ -z "$shielded" ] || [ "$(on_node ${NODE2} cat "/proc/$pid/oom_score_adj")" = 0 ] ||
		fail "its oom_score_adj is $(on_node ${NODE2} cat "/proc/$pid/oom_score_adj") (slurmstepd's), not 0"
	# Its data is bounded by the site's syncmon_memory= (default 128M),
	# soft and hard: the job's processes cannot make it grow past it.
	on_node ${NODE2} grep -qE '^Max data size +134217728 +134217728 +bytes' "/proc/$pid/limits" ||
		fail "its data is not bounded at syncmon_memory=128M: $(on_node ${NODE2} grep '^Max data' "/proc/$pid/limits")"
}

# sampler_job DIR OPTIONS: a one-node --sync-monitor job of 3 s, run to
# its end; its id in $jid.
sampler_job() {
	jid=$(sbatch --parsable -N1 -w ${NODE1} -o "$1/out" --sync-monitor="$2",dir="$1" \
		--wrap 'sleep 3') || fail "sbatch failed"
	wait_job "$jid"
}

# The site's bounds on the sampler (plugstack syncmon_memory=,
# syncmon_cpu=): a buffer= beyond the memory fails the job, not the
# node, with the numbers; a sampler over its CPU share passes ticks over
# on the same grid and says so.
test_the_sites_bounds_on_the_sampler_hold() {
	need_own_cluster 'plugstack.conf (syncmon_memory=)'
	local dir=$LWK_WORK/sm-bounds footer samples limited
	mkdir -p "$dir"
	with_plugstack "syncmon_memory=32M" sampler_job "$dir" buffer=32M
	[ "$job_state" = FAILED ] || fail "job $jid with buffer=32M under syncmon_memory=32M ended $job_state"
	assert_grep "buffer=32M does not fit this site's sampler memory \\(plugstack.conf syncmon_memory=32M" \
		"$dir/out" "the job's output"
	assert_grep "buffer must be at most 16M" "$dir/out" "the job's output"
	[ -z "$(find "$dir" -name "syncmon-$jid-*")" ] || fail "a sampler ran for the refused job"
	all_nodes_usable

	rm -f "$dir/out"
	with_plugstack "syncmon_cpu=0.01%" sampler_job "$dir" interval=10ms,fullscan=1
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state"
	footer=$(tail -1 "$dir"/syncmon-"$jid"-${NODE1}.jsonl)
	samples=$(sed -n 's/.*"samples":\([0-9]*\).*/\1/p' <<<"$footer")
	limited=$(sed -n 's/.*"cpu_limited":\([0-9]*\).*/\1/p' <<<"$footer")
	[ -n "$samples" ] && [ -n "$limited" ] || fail "no footer with cpu_limited: $footer"
	# 3 s of ticks every 10 ms at a hundredth of a percent of a CPU (a
	# burst of 1 ms): most ticks are passed over.
	[ "$limited" -gt "$samples" ] ||
		fail "at syncmon_cpu=0.01% the sampler took $samples samples and passed over $limited"
	assert_grep "lwk: job $jid on ${NODE1}: lwk-syncmon: the sampler used more than this site's syncmon_cpu=0.01% of a CPU" \
		"$(slurmd_log ${NODE1})" "${NODE1}'s slurmd log"
}

# The site's syncmon_fifo=: an --lwk job's sampler, on that job's own OS
# cores, runs SCHED_FIFO at that priority and its header says so;
# another job's sampler, whose CPUs other jobs may share, stays in the
# normal class, said in the slurmd log.
test_syncmon_fifo_runs_an_lwk_jobs_sampler_real_time() {
	need_own_cluster 'plugstack.conf (syncmon_fifo=)'
	local dir=$LWK_WORK/sm-fifo header
	mkdir -p "$dir"
	lwk_sampler_job() {
		jid=$(sbatch --parsable -N1 -w ${NODE1} --lwk -o "$1/out" --sync-monitor="$2",dir="$1" \
			--wrap 'sleep 3') || fail "sbatch failed"
		wait_job "$jid"
	}
	with_plugstack "syncmon_fifo=3" lwk_sampler_job "$dir" interval=50ms
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$dir/out")"
	header=$(head -1 "$dir"/syncmon-"$jid"-${NODE1}.jsonl)
	[[ $header == *'"sched_fifo":3,'* ]] || fail "syncmon_fifo=3, --lwk: the header says: $header"
	assert_grep "lwk: job $jid on ${NODE1}: lwk-syncmon: running SCHED_FIFO at priority 3 \\(syncmon_fifo=3\\)" \
		"$(slurmd_log ${NODE1})" "${NODE1}'s slurmd log"
	with_plugstack "syncmon_fifo=3" sampler_job "$dir" interval=50ms
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state"
	header=$(head -1 "$dir"/syncmon-"$jid"-${NODE1}.jsonl)
	[[ $header == *'"sched_fifo":0,'* ]] || fail "syncmon_fifo=3, no --lwk: the header says: $header"
	assert_grep "lwk: step $jid\\.batch: syncmon_fifo=3 is for an --lwk job's sampler, on its own OS cores: this one stays in the normal class" \
		"$(slurmd_log ${NODE1})" "${NODE1}'s slurmd log"
}

# /proc/<pid>/cwd and fd/N lead into another process's directory without
# walking the path to it: a user who names one as dir= must not reach a
# directory of root's that the path would refuse them.
test_a_proc_link_to_another_processes_directory_gets_nothing() {
	local user jid link pid private=/root/lwk-magic-$$
	user=$(make_test_user)
	# On node2, where the job's sampler runs: a 0700 directory of
	# root's, a world-writable one in it, and a process of root's
	# whose working directory (and fd 3) is that one.
	pid=$(on_node ${NODE2} bash -c 'mkdir -m 700 "$1" && mkdir -m 777 "$1/open" && cd "$1/open" &&
		{ sleep 600 3<. </dev/null >/dev/null 2>&1 & echo $!; }' - "$private") ||
		fail "cannot set up $private on ${NODE2}"
	defer on_node ${NODE2} bash -c 'kill "$1"; rm -rf "$2"' - "$pid" "$private"
	for link in "/proc/$pid/cwd" "/proc/$pid/fd/3"; do
		jid=$(cd /tmp && as_user "$user" sbatch --parsable -N1 -w ${NODE2} -o /dev/null \
			--sync-monitor=interval=50ms,dir="$link" --wrap 'sleep 1') || fail "sbatch failed"
		wait_job "$jid"
		[ "$job_state" = COMPLETED ] || fail "the job itself should still run: $job_state"
		[ -z "$(on_node ${NODE2} find "$private/open" -mindepth 1)" ] ||
			fail "a file was written through $link: $(on_node ${NODE2} ls -l "$private/open")"
		grep -q "lwk: job $jid on ${NODE2}: lwk-syncmon: cannot open the output directory $link as uid" \
			"$(slurmd_log ${NODE2})" || fail "the refusal of $link is not in ${NODE2}'s slurmd log"
	done
	all_nodes_usable
}

test_a_directory_the_user_cannot_write_gets_nothing() {
	local user jid private=/root/lwk-private-$$
	user=$(make_test_user)
	mkdir -m 700 "$private"
	defer rm -rf "$private"
	jid=$(cd /tmp && as_user "$user" sbatch --parsable -N1 -w ${NODE2} -o /dev/null \
		--sync-monitor=interval=50ms,dir="$private" --wrap 'sleep 1') || { rmdir "$private"; fail "sbatch failed"; }
	wait_job "$jid"
	[ -z "$(ls -A "$private")" ] || { ls -l "$private"; rm -rf "$private"; fail "a file was written into root's directory"; }
	rmdir "$private"
	grep -q "lwk: job $jid on ${NODE2}: lwk-syncmon: cannot open the output directory $private as uid" \
		"$(slurmd_log ${NODE2})" || fail "the refusal is not in ${NODE2}'s slurmd log"
	[ "$job_state" = COMPLETED ] || fail "the job itself should still run: $job_state"
}
