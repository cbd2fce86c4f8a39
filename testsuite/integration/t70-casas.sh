# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# --contention-aware for real: jobs that share a node of the co-scheduling
# partition are probed on 1, 2, ... dies, then split by whole dies, each
# job's cgroup rewritten to its dies; a job that leaves (or crashed) gives
# its dies back.  A die split needs Slurm's job cgroups and two dies or
# more per node: the guests (cgroup v2, 4 dies per node); the host's
# nodes have one die and, without task/cgroup, no cgroup to rewrite.

# A guest can stop answering for a minute and more while the kernel
# migrates a job's memory to its new dies (a cpuset.mems write waits for
# every CPU; measured 25-98 s under TCG with busy loops): wait longer,
# at least 180 s.
ON_NODE_SECONDS=$(wait_bound)
[ "$ON_NODE_SECONDS" -ge 180 ] || ON_NODE_SECONDS=180

# The node the tests share: not node1, where the guests run slurmctld.
casas_node() {
	if [ "$LWK_NODES" -ge 2 ]; then echo ${NODE2}; else echo ${NODE1}; fi
}

need_cosched() {
	scontrol show partition cosched >/dev/null 2>&1 ||
		skip "needs the co-scheduling partition 'cosched' of the private dev cluster"
}

# The node's NodeType line from lwk-topology (installed on the guests;
# the build tree's on the host), asked once per run.
node_type() {
	local tool
	tool=$(lwk_tool lwk-topology)
	[ -s "$LWK_WORK/type.$1" ] || on_node "$1" "$tool" --format conf >"$LWK_WORK/type.$1"
	cat "$LWK_WORK/type.$1"
}

node_dies() {
	node_type "$1" | grep -oE 'Dies=[0-9]+' | cut -d= -f2
}

node_cpus() {
	node_type "$1" |
		awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		     END { print v["Dies"] * v["CoresPerDie"] * v["ThreadsPerCore"] }'
}

# A split needs somewhere to write it and something to split.
need_split() {
	local dies
	need_cosched
	slurm_cgroups || skip "needs Slurm's job cgroups (TaskPlugin=task/cgroup, proctrack/cgroup); this cluster makes none"
	dies=$(node_dies "$(casas_node)")
	[ "$dies" -ge 2 ] || skip "needs two dies or more per node; $(casas_node) has $dies"
}

# A job's record on a node, and one of its fields.  Each on_node is a
# round trip through a guest's inbox (about a second under TCG): the
# records are fetched once (fetch) and read here.
record() {
	on_node "$1" cat "$LWK_STATE_DIR/$1/casas/$2" 2>/dev/null || true
}

fetch() {
	local node=$1 j
	shift
	for j in "$@"; do
		: >"$LWK_WORK/rec.$j"
	done
	# With each record, what the job's cgroup holds now (cgroup_now=):
	# v2 cpuset.cpus.effective, else the v1 cpuset.
	on_node "$node" bash -c 'cd "$1" && shift && for j; do
			echo "@$j"; cat "$j" 2>/dev/null || continue
			cg=$(sed -n "s/^cgroup=//p" "$j")
			echo "cgroup_now=$(cat "/sys/fs/cgroup$cg/cpuset.cpus.effective" 2>/dev/null ||
				cat "/sys/fs/cgroup/cpuset$cg/cpuset.cpus" 2>/dev/null)"
		done; true' - "$LWK_STATE_DIR/$node/casas" "$@" |
		awk -v dir="$LWK_WORK" '/^@/ { f = dir "/rec." substr($0, 2); next } { print > f }'
}

rec_field() {
	sed -n "s/^$2=//p" "$LWK_WORK/rec.$1" 2>/dev/null || true
}

# wait_status NODE STATUS JOB...: until each job's record says STATUS
# (jobs probe one at a time, each window a second or more under TCG: up
# to 40 of this cluster's job round trips, at least 150 s), then fetch
# them.
wait_status() {
	local node=$1 status=$2 bound j files=()
	shift 2
	bound=$(wait_bound 40)
	[ "$bound" -ge 150 ] || bound=150
	for j; do files+=("$LWK_STATE_DIR/$node/casas/$j"); done
	await_on "$node" "$bound" all-lines "status=$status" "${files[@]}" ||
		fail "jobs $* on $node are not all '$status' after $bound s: $(for j in "$@"; do record "$node" "$j"; job_story "$j" "$node"; done)"
	fetch "$node" "$@"
}

# wait_line NODE FILE REGEX: until a whole line of FILE on NODE matches
# REGEX (bash's extended expressions), up to 20 job round trips (at
# least 100 s).
wait_line() {
	local bound
	bound=$(wait_bound 20)
	[ "$bound" -ge 100 ] || bound=100
	await_on "$1" "$bound" line "$2" "$3"
}

# burn N SECONDS: N busy loops, as a script every node reads; SECONDS 0:
# until the job is cancelled (a test's waits under TCG add up past any
# fixed time: a job that ended on its own once looked like one dropped
# by a re-plan).  Nice 19: on the TCG guests a cpuset.mems write waits
# for every CPU's kworker, which busy loops at nice 0 starve for tens of
# seconds (measured).
burner() {
	cat >"$LWK_WORK/burn.sh" <<'EOF'
i=0
while [ "$i" -lt "$1" ]; do
	if [ "$2" = 0 ]; then
		nice -n 19 sh -c 'while :; do :; done' &
	else
		nice -n 19 timeout "$2" sh -c 'while :; do :; done' &
	fi
	i=$((i + 1))
done
env | grep '^SLURM_CASAS_' | sort
wait
EOF
	echo "bash $LWK_WORK/burn.sh"
}

# submit NAME LOOPS SECONDS [OPTIONS]: a contention-aware job on the
# shared node, asking for all its CPUs (the arbiter divides what Slurm
# allocated); prints the job id.
submit() {
	local node cpus b
	node=$(casas_node)
	cpus=$(node_cpus "$node")
	b=$(burner)
	sbatch --parsable -p cosched -w "$node" -n "$cpus" -J "$1" -o "$LWK_WORK/$1.out" \
		--contention-aware="${4:-event=task-clock,probe=300ms}" --wrap "$b $2 $3"
}

# job_story JOB NODE: what Slurm says of the job and the node's slurmd
# log lines about it, for a failure message.
job_story() {
	echo
	echo "--- job $1: $(scontrol show job -o "$1" 2>&1 |
		grep -oE ' (JobState|Reason|RunTime|TimeLimit|EndTime|ExitCode|NodeList)=[^ ]*' | tr '\n' ' ')"
	echo "--- $2's slurmd log on job $1:"
	grep -E "job $1\b|\[$1\.|step $1\.|StepId=$1\.|JobId=$1\b" "$(slurmd_log "$2")" 2>/dev/null | tail -n 30
}

count() {
	[ -n "$1" ] || { echo 0; return; }
	expand_list "$1" | wc -w
}

expand_list() {
	local part
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; elif [ -n "$part" ]; then echo "$part"; fi
	done
}

assert_disjoint() {
	local all
	all=$(for j in "$@"; do expand_list "$(rec_field "$j" dies)"; done)
	[ "$(wc -w <<<"$all")" = "$(sort -u <<<"$all" | wc -w)" ] ||
		fail "jobs $* share a die: $(for j in "$@"; do echo "$j: $(rec_field "$j" dies)"; done)"
}

# Each job's cgroup held exactly the CPUs its record gave it when fetched.
assert_cgroup_cpus() {
	local node=$1 j
	shift
	for j in "$@"; do
		[ "$(rec_field "$j" cgroup_now)" = "$(rec_field "$j" cpus)" ] ||
			fail "job $j's cgroup $(rec_field "$j" cgroup) on $node has CPUs $(rec_field "$j" cgroup_now), its record $(rec_field "$j" cpus)"
	done
}

# lone_dies CURVE DIES: the dies a job alone on a node of DIES dies holds
# by slurm-lwk(8): its curve's best count (the fewest of equals), then
# one more while the next costs it at most 5% (no gain past the last
# point probed).  CURVE is the record's ips= ("1:IPS,2:IPS,...").
lone_dies() {
	awk -v curve="$1" -v dies="$2" 'BEGIN {
		n = split(curve, pts, ",")
		for (i = 1; i <= n; i++) { split(pts[i], kv, ":"); ips[kv[1] + 0] = kv[2] + 0; if (kv[1] + 0 > last) last = kv[1] + 0 }
		for (k = last + 1; k <= dies; k++) ips[k] = ips[last]
		best = 1
		for (k = 2; k <= dies; k++) if (ips[k] > ips[best]) best = k
		while (best < dies && ips[best + 1] > 0 && ips[best] / ips[best + 1] <= 1.05) best++
		print best
	}'
}

test_two_jobs_get_disjoint_dies_and_the_one_that_scales_gets_more() {
	local node dies a b da db i log want
	need_split
	node=$(casas_node)
	dies=$(node_dies "$node")
	# One die's worth of busy loops short of the node: it gains up to
	# dies - 1, and the narrow job's one die's worth fills the last.
	a=$(submit "$(unique_name wide)" $(($(node_cpus "$node") - $(node_cpus "$node") / dies)) 0) ||
		fail "sbatch failed"
	defer scancel "$a"
	wait_status "$node" placed "$a"
	b=$(submit "$(unique_name narrow)" $(($(node_cpus "$node") / dies)) 0) || fail "sbatch failed"
	defer scancel "$b"
	wait_status "$node" placed "$a" "$b"
	assert_disjoint "$a" "$b"
	da=$(count "$(rec_field "$a" dies)")
	db=$(count "$(rec_field "$b" dies)")
	# The premise: one die's worth of loops does not go faster on two
	# dies.  On the emulated guests a narrow job's probe once measured
	# 1.6 times more on two dies (other guests' vCPUs on the same host
	# cores); the split then rightly follows that curve (the arbiter's
	# choice for given curves is check_arbiter's), and this run cannot
	# show what the test is for.
	if [ "$db" != 1 ] && [ -n "${LWK_GUEST_SHARE:-}" ] &&
		awk -v c="$(rec_field "$b" ips)" 'BEGIN { n = split(c, p, ","); if (n < 2) exit 1
			split(p[1], x, ":"); split(p[2], y, ":"); exit !(y[2] > 1.25 * x[2]) }'; then
		skip "the emulated node measured the narrow job's $((($(node_cpus "$node") / dies))) loops $(rec_field "$b" ips) (faster on two dies than one: another guest's load), so the split ($da / $db dies) followed it"
	fi
	[ "$db" = 1 ] && [ "$da" = $((dies - 1)) ] ||
		fail "dies: wide job $da, narrow job $db of $dies; curves: $(rec_field "$a" ips) / $(rec_field "$b" ips)"
	[ "$(rec_field "$a" ips | tr ',' '\n' | grep -c .)" -ge 2 ] ||
		fail "the wide job was probed on fewer than 2 dies: $(rec_field "$a" ips)"
	assert_cgroup_cpus "$node" "$a" "$b"
	log=$(slurmd_log "$node")
	assert_grep "lwk: contention-aware: job $b: probe on 1 die\(s\): " "$log"
	assert_grep "lwk: contention-aware: job $a: IPS curve 1:" "$log"
	# The narrow job leaves: the wide one is re-planned alone and gets
	# the node, save a last die its own curve says slows it by more
	# than 5% (slurm-lwk(8), "A die the optimum leaves idle").
	scancel "$b"
	wait_line "$node" "$LWK_STATE_DIR/$node/casas/$a" "split=1 job\(s\) on $dies dies by .*" ||
		fail "job $a was not re-planned alone 100 s or more after job $b left: $(record "$node" "$a")$(job_story "$a" "$node")"
	fetch "$node" "$a"
	want=$(lone_dies "$(rec_field "$a" ips)" "$dies")
	da=$(count "$(rec_field "$a" dies)")
	[ "$da" = "$want" ] ||
		fail "job $a alone holds $da dies, its curve $(rec_field "$a" ips) gives $want of $dies: $(record "$node" "$a")$(job_story "$a" "$node")"
	if [ "$want" -lt "$dies" ]; then echo "  (job $a's curve $(rec_field "$a" ips) falls by more than 5% on its last die: it keeps $want of $dies)"; fi
	assert_cgroup_cpus "$node" "$a"
	assert_grep "lwk: job $b on $node: contention-aware: job $b left: re-planning the others" "$(slurmd_log "$node")"
	[ ! -s "$LWK_WORK/rec.$b" ] || fetch "$node" "$b"
	[ ! -s "$LWK_WORK/rec.$b" ] || fail "job $b's record is still on $node"
}

test_three_jobs_share_a_node_on_disjoint_dies() {
	local node j jobs=() names=() n i
	need_split
	node=$(casas_node)
	[ "$(node_dies "$node")" -ge 3 ] || skip "needs three dies or more per node"
	for n in 1 2 3; do
		names+=("$(unique_name three)")
		j=$(submit "${names[-1]}" 2 0 event=task-clock,probe=100ms,max_dies=2) || fail "sbatch failed"
		defer scancel "$j"
		jobs+=("$j")
	done
	wait_status "$node" placed "${jobs[@]}"
	for j in "${jobs[@]}"; do
		n=$(count "$(rec_field "$j" dies)")
		[ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "job $j has $n dies (1 to max_dies=2): $(cat "$LWK_WORK/rec.$j")"
		[ "$(rec_field "$j" ips | tr ',' '\n' | grep -c .)" -le 2 ] ||
			fail "job $j was probed past max_dies=2: $(rec_field "$j" ips)"
	done
	assert_disjoint "${jobs[@]}"
	assert_cgroup_cpus "$node" "${jobs[@]}"
	# The tasks saw where they run.
	for j in "${jobs[@]}"; do
		scancel "$j"
	done
	for i in 0 1 2; do
		wait_job "${jobs[i]}"
		assert_grep "^SLURM_CASAS_RECORD=/.*/casas/${jobs[i]}\$" "$LWK_WORK/${names[i]}.out"
		assert_grep '^SLURM_CASAS_STATUS=probing$' "$LWK_WORK/${names[i]}.out"
		assert_grep '^SLURM_CASAS_DIES=[0-9]+$' "$LWK_WORK/${names[i]}.out" "held on one die for its probe"
	done
}

# A job whose turn to probe is long in coming (another job probes in
# windows of 20 s: about 110 s) is let go from its one die once it has
# waited as long as its own probe would take (0.1 s windows: under a
# second), and the other job is still probing then.
test_a_waiting_job_is_not_held_past_its_own_probe() {
	local node a b an bn deadline
	need_split
	node=$(casas_node)
	an=$(unique_name slowprobe)
	a=$(submit "$an" 1 0 event=task-clock,probe=20s) || fail "sbatch failed"
	defer scancel "$a"
	# Its tasks run: its probe has begun (the last task starts it).
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		grep -q '^SLURM_CASAS_STATUS=' "$LWK_WORK/$an.out" 2>/dev/null && break
		snooze 0.5
	done
	grep -q '^SLURM_CASAS_STATUS=' "$LWK_WORK/$an.out" 2>/dev/null ||
		fail "job $a's tasks did not start within $(wait_bound) s$(job_story "$a" "$node")"
	bn=$(unique_name quickprobe)
	b=$(submit "$bn" 1 0 event=task-clock,probe=100ms) || fail "sbatch failed"
	defer scancel "$b"
	wait_line "$node" "$LWK_STATE_DIR/$node/casas/$b" '^probing=0$' ||
		fail "job $b is still held: $(record "$node" "$b")$(job_story "$b" "$node")"
	fetch "$node" "$a" "$b"
	[ "$(rec_field "$a" probing)" -ge 1 ] ||
		fail "job $a's probe was over before job $b was let go (the release did not come first): $(cat "$LWK_WORK/rec.$a")"
	assert_grep "job $b: another job's probe outlasts this one's own" "$(slurmd_log "$node")" \
		"$node's slurmd log"
}

# deep_cgroups NODE CGROUP make|remove: four nested cgroups of 201-char
# names below a job's cgroup, with cpusets: a path the split's walk does
# not take (what a user can make below their step on cgroup v1, where
# Slurm 22.05 gives them its directories; made here as root).
deep_cgroups() {
	on_node "$1" bash -c 'd=/sys/fs/cgroup$1 n=$(printf "%0200d" 0) all=()
		for i in 1 2 3 4; do d=$d/$n$i; all+=("$d"); done
		if [ "$2" = make ]; then
			for i in 0 1 2 3; do
				mkdir "${all[i]}" || exit 1
				[ "$i" = 3 ] || echo +cpuset >"${all[i]}/cgroup.subtree_control" || exit 1
			done
		else
			for i in 3 2 1 0; do rmdir "${all[i]}" 2>/dev/null; done
		fi
		true' - "$2" "$3"
}

# script_deep NODE CGROUP: the job's batch script (comm slurm_script)
# moved into the deepest of deep_cgroups' cgroups, where a user on v1
# could move it: what stops the job must reach it there.
script_deep() {
	on_node "$1" bash -c 'top=/sys/fs/cgroup$1 d=$top n=$(printf "%0200d" 0)
		for i in 1 2 3 4; do d=$d/$n$i; done
		for procs in $(find "$top" -path "$top/$n*" -prune -o -name cgroup.procs -print); do
			for pid in $(cat "$procs"); do
				[ "$(cat /proc/$pid/comm 2>/dev/null)" = slurm_script ] || continue
				(cd "$d" && echo "$pid" >cgroup.procs) && exit 0
			done
		done
		exit 1' - "$2"
}

# A job whose CPUs cannot be narrowed to its share because of cgroups its
# user made keeps no CPUs it was not given: its record says refused, its
# processes are killed wherever they are below it (Slurm ends it,
# failed), and the slurmd log says why; the node stays usable.
test_a_job_that_cannot_be_narrowed_is_stopped() {
	local node a b an cg dies log
	need_split
	node=$(casas_node)
	# Its cgroups are made as root would on v2; on v1 its user makes them
	# (a_users_cgroups_below_its_step_are_removed_and_the_job_narrowed).
	on_node "$node" test -e /sys/fs/cgroup/cgroup.controllers ||
		skip "cgroup v2 only: on v1 the user's own cgroups are the case, which the next test takes"
	dies=$(node_dies "$node")
	an=$(unique_name wide)
	# Busy on every die: alone, it scales past one die, which the next
	# job's probe must narrow.
	a=$(sbatch --parsable -p cosched -w "$node" -n "$(node_cpus "$node")" -J "$an" -o "$LWK_WORK/$an.out" \
		--contention-aware=event=task-clock,probe=100ms \
		--wrap "$(burner) $(node_cpus "$node") 0 & while [ ! -e $LWK_WORK/$an.go ]; do sleep 1; done; echo still running; wait") ||
		fail "sbatch failed"
	defer scancel "$a"
	wait_status "$node" placed "$a"
	# Two dies or more: the next job's probe takes all but one of them.
	[ "$(count "$(rec_field "$a" dies)")" -ge 2 ] ||
		skip "job $a alone did not scale past one of the $dies dies ($(rec_field "$a" ips)): nothing for the next job to narrow"
	cg=$(rec_field "$a" cgroup)
	[ -n "$cg" ] || fail "job $a's record has no cgroup: $(cat "$LWK_WORK/rec.$a")"
	deep_cgroups "$node" "$cg" make || fail "cannot make the deep cgroups below $cg on $node"
	defer deep_cgroups "$node" "$cg" remove
	script_deep "$node" "$cg" || fail "cannot move job $a's batch script below $cg on $node"
	b=$(submit "$(unique_name narrowing)" 1 0 event=task-clock,probe=100ms) || fail "sbatch failed"
	defer scancel "$b"
	wait_job "$a"
	touch "$LWK_WORK/$an.go"
	[ "$job_state" = FAILED ] || fail "job $a ended $job_state, not FAILED$(job_story "$a" "$node")"
	assert_no_grep '^still running' "$LWK_WORK/$an.out" "job $a's output"
	log=$(slurmd_log "$node")
	assert_grep "job $a: its CPUs cannot be narrowed to its share" "$log" "$node's slurmd log"
	assert_grep "job $a: its user's cgroups keep CPUs that are others': its processes killed \\([1-9][0-9]* signals\\)" \
		"$log" "$node's slurmd log"
	wait_status "$node" placed "$b"
	deep_cgroups "$node" "$cg" remove
	scancel "$b"
	wait_job "$b"
	all_nodes_usable
}

# users_cgroups_gone NODE CGROUP: the cgroups below the v1 job cgroup's
# batch step, and what runs in them, gone (a test that failed before
# the take-back).
users_cgroups_gone() {
	on_node "$1" bash -c 'top=/sys/fs/cgroup/cpuset$1/step_batch
		[ -d "$top" ] || exit 0
		for d in $(find "$top" -mindepth 1 -depth -type d); do
			kill -9 $(cat "$d/cgroup.procs") 2>/dev/null
		done
		sleep 1
		for d in $(find "$top" -mindepth 1 -depth -type d); do rmdir "$d"; done
		true' - "$2"
}

# On cgroup v1 Slurm 22.05 gives a job's user its step's cgroup
# directory.  A user who makes cgroups below it, too deep for the
# narrowing to write, moves a process into the deepest and keeps its
# cgroup.procs open loses them: that process is killed, the cgroups are
# removed, the file kept open fails from then on, and the job is
# narrowed to its share all the same and runs on.
test_a_users_cgroups_below_its_step_are_removed_and_the_job_narrowed() {
	local node a b an out go make cpus cg
	need_split
	node=$(casas_node)
	on_node "$node" test -d /sys/fs/cgroup/cpuset ||
		skip "cgroup v1 only: Slurm gives users no cgroup directory on v2 (the bookworm guests booted with --cgroup v1 run it)"
	cpus=$(node_cpus "$node")
	an=$(unique_name usercg)
	# Written by the job's user (nobody).
	mkdir -m 1777 "$LWK_WORK/$an"
	out=$LWK_WORK/$an/out go=$LWK_WORK/$an/go make=$LWK_WORK/$an/make
	# As the user: busy on every CPU; once placed, four cgroups of
	# 200-character names below the batch step, a sleep moved into the
	# deepest, its cgroup.procs kept open on fd 7.
	a=$(cd /tmp && runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -p cosched -w "$node" \
		-n "$cpus" -J "$an" -o "$out" --contention-aware=event=task-clock,probe=100ms \
		--wrap "i=0 busy=; while [ \$i -lt $cpus ]; do nice -n 19 sh -c 'while :; do :; done' & busy=\"\$busy \$!\"; i=\$((i + 1)); done
			while [ ! -e '$make' ]; do sleep 1; done
			d=/sys/fs/cgroup/cpuset\$(sed -n 's/^[0-9]*:cpuset://p' /proc/self/cgroup)
			n=\$(printf %0200d 0)
			for i in 1 2 3 4; do
				d=\$d/\$n\$i
				mkdir \$d && cat \$d/../cpuset.cpus >\$d/cpuset.cpus && cat \$d/../cpuset.mems >\$d/cpuset.mems || echo cannot make \$d
			done
			sleep 100000 & inside=\$!
			echo \$inside >\$d/cgroup.procs && exec 7>\$d/cgroup.procs && echo moved in
			while [ ! -e '$go' ]; do sleep 1; done
			if kill -0 \$inside 2>/dev/null; then echo the process inside lives; fi
			if echo \$\$ >&7; then echo moved in again; else echo the kept file fails; fi
			echo still running; kill \$busy") || fail "sbatch as nobody failed"
	defer scancel "$a"
	wait_status "$node" placed "$a"
	[ "$(count "$(rec_field "$a" dies)")" -ge 2 ] ||
		skip "job $a alone did not scale past one die ($(rec_field "$a" ips)): nothing for the next job to narrow"
	cg=$(rec_field "$a" cgroup)
	# Slurm cannot remove a step's cgroup with the user's still in it.
	defer users_cgroups_gone "$node" "$cg"
	touch "$make"
	await_on "$LWK_HERE" "$(wait_bound)" line "$out" '(moved in|cannot make.*)' || true
	assert_grep '^moved in' "$out" "job $a's output"
	b=$(submit "$(unique_name narrowing)" 1 0 event=task-clock,probe=100ms) || fail "sbatch failed"
	defer scancel "$b"
	wait_status "$node" placed "$a" "$b"
	assert_cgroup_cpus "$node" "$a" "$b"
	assert_grep "job $a: its CPUs could not be narrowed: its cgroups taken back from its user \\([0-9]+ made root's, 4 of its own removed, [1-9][0-9]* signals to the processes in them\\)" \
		"$(slurmd_log "$node")" "$node's slurmd log"
	assert_no_grep "job $a: .*its processes killed" "$(slurmd_log "$node")" "$node's slurmd log"
	touch "$go"
	wait_job "$a"
	[ "$job_state" = COMPLETED ] ||
		fail "job $a ended $job_state, not COMPLETED; its output: $(head -c 2000 "$out")$(job_story "$a" "$node")"
	assert_no_grep '^the process inside lives' "$out" "job $a's output"
	assert_grep '^the kept file fails' "$out" "job $a's output"
	assert_grep '^still running' "$out" "job $a's output"
	scancel "$b"
	wait_job "$b"
	all_nodes_usable
}

test_without_counters_the_split_is_equal() {
	local node a counters
	need_cosched
	slurm_cgroups || skip "needs Slurm's job cgroups (TaskPlugin=task/cgroup, proctrack/cgroup); this cluster makes none"
	node=$(casas_node)
	# The default event: hardware instructions.
	a=$(submit "$(unique_name nocount)" 1 0 probe=200ms) || fail "sbatch failed"
	defer scancel "$a"
	await_on "$node" "$(wait_bound)" line "$LWK_STATE_DIR/$node/casas/$a" 'status=(placed|equal)' || true
	fetch "$node" "$a"
	counters=$(rec_field "$a" counters)
	[ -n "$counters" ] || fail "the probe did not say what it counted: $(cat "$LWK_WORK/rec.$a")"
	[[ $counters == none:* ]] ||
		skip "$node counts instructions ($counters): the fallback is for nodes without counters"
	[ "$(rec_field "$a" status)" = equal ] || fail "not an equal split: $(cat "$LWK_WORK/rec.$a")"
	# Alone on the node: an equal split of all its dies is all of them.
	[ "$(count "$(rec_field "$a" dies)")" = "$(node_dies "$node")" ] ||
		fail "job $a alone has dies $(rec_field "$a" dies): $(cat "$LWK_WORK/rec.$a")"
	[ "$(rec_field "$a" ips)" = "" ] || fail "a curve without counters: $(cat "$LWK_WORK/rec.$a")"
	assert_grep "lwk: contention-aware: job $a: cannot count 'instructions' here, the split is equal" \
		"$(slurmd_log "$node")"
	assert_cgroup_cpus "$node" "$a"
}

test_the_probe_counts_a_real_job_with_a_software_event() {
	local node a ips
	need_cosched
	slurm_cgroups || skip "needs Slurm's job cgroups (TaskPlugin=task/cgroup, proctrack/cgroup); this cluster makes none"
	node=$(casas_node)
	a=$(submit "$(unique_name count)" 1 0 event=task-clock,probe=200ms) || fail "sbatch failed"
	defer scancel "$a"
	wait_status "$node" placed "$a"
	ips=$(rec_field "$a" ips)
	# task-clock: ns of CPU per s.  The loop is a child of the batch
	# shell, which only waits (a few ms of CPU a second): more than a
	# fifth of a CPU counted means the child was.  Not "more than half":
	# the test command runs the bookworm guests and a package build
	# beside this stage, and the loop was seen to get 0.49 of a CPU in
	# a 200 ms window.  Never more than the die's CPUs.
	awk -v s="$ips" 'BEGIN { split(s, p, ","); split(p[1], kv, ":");
		exit !(kv[1] == 1 && kv[2] > 0.2e9 && kv[2] < 2.6e9) }' ||
		fail "a busy loop on one die counted $ips"
	if on_node "$node" test -d /sys/fs/cgroup/cpuset; then
		assert_grep 'per thread, inherited' "$LWK_WORK/rec.$a" "the record on v1"
	else
		assert_grep 'per CPU on the job.s cgroup' "$LWK_WORK/rec.$a" "the record on v2"
	fi
	assert_cgroup_cpus "$node" "$a"
}

# wait_file NODE FILE: until FILE is on NODE (wait_bound).
wait_file() {
	await_on "$1" "$(wait_bound)" exists "$2"
}

# lwk-sweep of the build tree on the host, the installed one on the guests.
sweep_tool() {
	if [ -z "${LWK_GUEST_SHARE:-}" ] && [ -x "$top/lwk-sweep" ]; then echo "$top/lwk-sweep"; else echo lwk-sweep; fi
}

# Without PrologFlags=Contain a job has no slurmstepd on a node between
# two of its steps (an salloc, a multi-node job's other nodes): it is
# still allocated there, and neither another job's arrival nor a sweep
# (slurmd's start, lwk-sweep) may take what it holds.
test_a_job_between_steps_keeps_its_record_when_another_arrives() {
	local node a b rec out split
	need_cosched
	node=$(casas_node)
	a=$(salloc --no-shell -p cosched -w "$node" -n1 -J "$(unique_name between)" 2>&1 |
		sed -n 's/.*Granted job allocation \([0-9][0-9]*\).*/\1/p')
	[ -n "$a" ] || fail "salloc --no-shell granted no allocation"
	defer scancel "$a"
	srun --jobid="$a" -n1 --contention-aware=event=task-clock,probe=100ms true ||
		fail "the step of job $a failed$(job_story "$a" "$node")"
	on_node "$node" pgrep -f "^slurmstepd: \[$a\." >/dev/null &&
		skip "a slurmstepd of job $a stays on $node between steps (PrologFlags=Contain): nothing to test"
	rec=$LWK_STATE_DIR/$node/casas/$a
	on_node "$node" test -e "$rec" || fail "job $a has no record on $node after its step$(job_story "$a" "$node")"
	# Another contention-aware job arrives: the node is re-planned.
	b=$(submit "$(unique_name arrive)" 1 0 event=task-clock,probe=100ms) || fail "sbatch failed"
	defer scancel "$b"
	wait_file "$node" "$LWK_STATE_DIR/$node/casas/$b" ||
		fail "job $b made no record on $node$(job_story "$b" "$node")"
	# Its join writes its record and then, under the same hold of the
	# node lock, re-plans (which would drop a's record): once the lock is
	# ours, that re-plan is done.
	on_node "$node" flock "$LWK_STATE_DIR/.node.lock" true || fail "cannot take the node lock on $node"
	on_node "$node" test -e "$rec" ||
		fail "job $a, allocated between two steps, lost its record when job $b arrived$(job_story "$a" "$node")"
	fetch "$node" "$b"
	if [ "$(rec_field "$b" status)" != off ]; then
		split=$(rec_field "$b" split)
		case $split in
		'' | 0\ * | 1\ *) fail "job $b's re-plan left out job $a, allocated between two steps: split=$split$(job_story "$a" "$node")" ;;
		esac
	fi
	# The sweep slurmd runs when it starts, by hand (on a site's cluster
	# lwk-sweep finds its configuration as Slurm's commands do).
	local ps=()
	[ -z "$LWK_DEV_DIR" ] || ps=(--plugstack "$LWK_DEV_DIR/plugstack.conf")
	out=$(on_node "$node" "$(sweep_tool)" "${ps[@]}" --node "$node" 2>&1) ||
		fail "lwk-sweep failed: $out"
	on_node "$node" test -e "$rec" ||
		fail "lwk-sweep dropped the record of job $a, allocated between two steps: $out$(job_story "$a" "$node")"
	# Its step ended during or before its probe: not held on one die.
	fetch "$node" "$a"
	[ "$(rec_field "$a" probing)" = 0 ] ||
		fail "job $a is still held for a probe after its step ended: $(cat "$LWK_WORK/rec.$a")"
	# Once the job ends, its record goes.
	scancel "$a"
	wait_job "$a"
	await_on "$node" "$(wait_bound)" gone "$rec" ||
		fail "job $a ended, its record is still on $node$(job_story "$a" "$node")"
}

# plant_gone_record NODE JOB: what a job killed with its slurmstepd
# leaves on NODE: a record, no process.  First until no other record is
# there: the epilog of an earlier test's job, still running, would
# re-plan and reap the planted one before the job under test does.
plant_gone_record() {
	await_on "$1" "$(wait_bound)" no-entry "$LWK_STATE_DIR/$1/casas" '^[0-9]' ||
		fail "contention-aware records still on $1 $(wait_bound) s after their jobs: $(on_node "$1" ls "$LWK_STATE_DIR/$1/casas")"
	on_node "$1" mkdir -p "$LWK_STATE_DIR/$1/casas"
	on_node "$1" bash -c "printf 'job=$2\nstatus=placed\ncgroup=/nonexistent/job_$2\nallowed_cpus=0\nallowed_mems=0\ndies=0\ncpus=0\nmems=0\n' \
		>$LWK_STATE_DIR/$1/casas/$2"
	on_node "$1" test -s "$LWK_STATE_DIR/$1/casas/$2" || fail "cannot plant the record of job $2 on $1"
}

test_a_crashed_jobs_dies_are_reclaimed() {
	local node dead=3999999 a
	need_own_cluster "records of gone jobs forged in the plugin's state on a node"
	need_cosched
	node=$(casas_node)
	plant_gone_record "$node" $dead
	defer on_node "$node" rm -f "$LWK_STATE_DIR/$node/casas/$dead"
	a=$(submit "$(unique_name reclaim)" 1 1 probe=100ms) || fail "sbatch failed"
	wait_job "$a"
	on_node "$node" test ! -e "$LWK_STATE_DIR/$node/casas/$dead" ||
		fail "the record of gone job $dead is still on $node"
	# From this job's step, or from the epilog of one that just ended.
	assert_grep "contention-aware: job $dead is gone: its dies return to the others" "$(slurmd_log "$node")"
	# The epilog of a job without slurm-lwk options re-plans too, and
	# says what it reclaimed (it once did so silently).
	dead=3999998
	plant_gone_record "$node" $dead
	defer on_node "$node" rm -f "$LWK_STATE_DIR/$node/casas/$dead"
	a=$(sbatch --parsable -p cosched -w "$node" -n1 -o /dev/null --wrap true) || fail "sbatch failed"
	defer scancel "$a"
	wait_job "$a"
	on_node "$node" test ! -e "$LWK_STATE_DIR/$node/casas/$dead" ||
		fail "the record of gone job $dead is still on $node after job $a's epilog"
	assert_grep "lwk: job $a on $node: contention-aware: job $dead is gone: its dies return to the others" \
		"$(slurmd_log "$node")"
}

test_without_job_cgroups_the_job_runs_where_slurm_put_it() {
	local node a out
	need_cosched
	slurm_cgroups && skip "this cluster makes job cgroups (the case without is the host's plain cluster)"
	node=$(casas_node)
	out=$(unique_name off)
	a=$(submit "$out" 1 1) || fail "sbatch failed"
	wait_job "$a"
	[ "$job_state" = COMPLETED ] || fail "job $a ended $job_state: $(cat "$LWK_WORK/$out.out")"
	assert_grep '^SLURM_CASAS_STATUS=off$' "$LWK_WORK/$out.out"
	assert_grep "lwk: step $a.batch: --contention-aware is off on $node: Slurm made no job cgroup with a cpuset on this node" \
		"$(slurmd_log "$node")"
	# Said once, naming the setting, when slurmd started.
	assert_grep "error: lwk: --contention-aware cannot split jobs on $node: .* has TaskPlugin=[^ ]*: task/cgroup is needed" \
		"$(slurmd_log "$node")"
}
