# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the integration tests.  Sourced by testsuite/integration/run;
# each t*.sh file defines functions named test_*, run one by one in a
# subshell.  A test passes by returning 0, fails with a message through
# fail(), and skips with a reason through skip().
#
# Set by the runner:
#   SLURM_CONF      the cluster under test
#   LWK_PRIVATE     1 when the runner owns the cluster (it started it,
#                   or the guests' own): tests that change its
#                   configuration or restart its daemons run only then
#                   (need_own_cluster); 0 on a site's cluster
#   LWK_DEV_DIR     an owned cluster's directory (logs, plugstack.conf)
#   LWK_NODES       the number of nodes
#   LWK_WORK        a scratch directory for job output

# snooze SECONDS: sleep without a process.  Under emulation every fork
# and exec costs the guest tens of milliseconds of its CPUs, which the
# tests' wait loops spent four times a second: a timed read of a pipe
# that never has data is bash's own.
snooze() {
	[ -n "${lwk_nap_fd:-}" ] || exec {lwk_nap_fd}<> <(:)
	read -rt "$1" -u "$lwk_nap_fd" || :
}

# The node this runs on (on_node runs a command for it in place).
LWK_HERE=$(hostname -s)

# The nodes the tests use, by number: node1, node2, node3 on an owned
# cluster (the dev cluster's and the guests' names); on a site's, those
# of the partition it names (LWK_TEST_NODES, set by the runner), in
# order, and no other: a number past them names none.  Tests name them
# $NODE1.. or node_n N.
if [ "${LWK_PRIVATE:-0}" = 1 ]; then
	lwk_nodes=(node1 node2 node3)
	lwk_nodes=("${lwk_nodes[@]:0:${LWK_NODES:-3}}")
	node_n() {
		echo "${lwk_nodes[$(($1 - 1))]:-node$1}"
	}
else
	IFS=, read -ra lwk_nodes <<<"${LWK_TEST_NODES:-}"
	node_n() {
		echo "${lwk_nodes[$(($1 - 1))]:-}"
	}
fi
export NODE1 NODE2 NODE3
NODE1=$(node_n 1) NODE2=$(node_n 2) NODE3=$(node_n 3)

# defer CMD...: run CMD after this test, whatever its outcome (restore a
# config file, cancel a job).  The runner runs them in reverse order.
defer() {
	printf '%q ' "$@" >>"$LWK_WORK/.defer"
	printf '\n' >>"$LWK_WORK/.defer"
}

fail() {
	echo "    $*" >&2
	exit 1
}

skip() {
	echo "$*" >"$LWK_WORK/.skip"
	exit 77
}

# A job name no other test uses, to find (or not find) its job later.
unique_name() {
	echo "lwkt-$1-$$-$RANDOM"
}

# Jobs with this name that slurmctld knows of, in any state.
jobs_named() {
	squeue -h -t all -n "$1" -o '%i' 2>/dev/null | wc -l
}

# wait_bound [ROUND_TRIPS]: how long a test waits for what this cluster
# does in a job's life (a job's start and end, a step's, an epilog's):
# ROUND_TRIPS (default 30) times LWK_JOB_PACE, the seconds a trivial
# job took from sbatch to its end on this cluster (the runner measures
# it once: about 1 s on the host, 3 to 10 s on the emulated guests),
# and never less than 60 s.  A loaded or emulated machine gets longer
# waits; a stuck job still fails in bounded time.
# A test's own waiting loop is bounded the same way:
#   for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
wait_bound() {
	local b=$((${1:-30} * ${LWK_JOB_PACE:-2}))
	[ "$b" -ge 60 ] || b=60
	echo "$b"
}

# job_states JOB SECONDS: the job's state, a line at a time, for up to
# SECONDS.  Where a Slurm client costs little (a trivial job took under
# 3 s) scontrol every quarter second; on a slower cluster (the emulated
# guests, where one scontrol costs most of a second of CPU) one squeue
# that asks every second.
job_states() {
	if [ "${LWK_JOB_PACE:-1}" -lt 3 ]; then
		local end=$((SECONDS + $2))
		while [ $SECONDS -lt "$end" ]; do
			scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
			snooze 0.25
		done
	else
		# Line-buffered: into a pipe, squeue's stdio would keep its
		# lines until it exits.
		exec timeout "$2" stdbuf -oL squeue -h -i 1 -t all -j "$1" -o %T 2>/dev/null
	fi
}

# Wait for job $1 to finish; its state ends up in $job_state.  Bounded
# by $2 seconds, default wait_bound; past it the failure says the state
# it saw, and for a job left COMPLETING what its nodes' epilogs did.
wait_job() {
	local bound=${2:-$(wait_bound)} t0=$SECONDS comp='' fd line left states
	job_state=
	exec {fd}< <(job_states "$1" "$bound")
	states=$!
	while left=$((t0 + bound - SECONDS)) && [ "$left" -gt 0 ] && IFS= read -r -t "$left" -u "$fd" line; do
		[[ $line =~ ^[A-Z_]+$ ]] || continue
		job_state=$line
		case $job_state in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
			exec {fd}<&-
			kill "$states" 2>/dev/null || :
			return 0 ;;
		COMPLETING) [ -n "$comp" ] || comp=$SECONDS ;;
		esac
	done
	exec {fd}<&-
	kill "$states" 2>/dev/null || :
	# The stream ended early (squeue could not ask): once more, directly.
	line=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	case $line in
	COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
		job_state=$line
		return 0 ;;
	esac
	[ $((SECONDS - t0)) -ge "$bound" ] || fail "job $1: slurmctld could not be asked for its state (last seen ${job_state:-none})"
	job_state=${line:-$job_state}
	fail "job $1 did not finish within $bound s (state ${job_state:-unknown to slurmctld}${comp:+, COMPLETING for the last $((SECONDS - comp)) s})$(
		[ "$job_state" != COMPLETING ] || epilog_story "$1")"
}

# epilog_story JOB: why a job stays COMPLETING, node by node: the
# epilogs still running there (slurmd's "slurmstepd spank epilog" and
# the like) with their age, and the slurmd log's lines on the job, the
# plugin's epilog timing among them ("epilog took ...").
epilog_story() {
	local node nl
	nl=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p' | head -1)
	for node in $(scontrol show hostnames "$nl" 2>/dev/null); do
		echo
		echo "--- $node: what still runs for job $1 (age in s, command):"
		on_node "$node" ps -eo etimes=,args= 2>/dev/null | grep -E "spank|[e]pilog|\[$1\.|lwk-syncmon --job $1 " |
			grep -v grep | head -n 8
		echo "--- $node: its slurmd log on job $1:"
		grep -E "job $1\b|\[$1\.|JobId=$1\b" "$(slurmd_log "$node")" 2>/dev/null | tail -n 15
	done
}

# run_expect_fail OUTFILE CMD...: CMD must exit non-zero; stderr to OUTFILE.
run_expect_fail() {
	local out=$1
	shift
	if "$@" >"$out" 2>&1; then
		fail "'$*' succeeded; expected a refusal. Output: $(cat "$out")"
	fi
}

# assert_grep PATTERN FILE [WHAT]
assert_grep() {
	grep -qE -- "$1" "$2" || fail "${3:-$2} lacks /$1/: $(head -c 2000 "$2")"
}

assert_no_grep() {
	if grep -qE -- "$1" "$2"; then
		fail "${3:-$2} has /$1/: $(grep -E -- "$1" "$2" | head -3)"
	fi
}

# config_value KEY: slurm.conf's KEY as slurmctld has it.
config_value() {
	scontrol show config | sed -n "s/^$1 *= *//p"
}

# daemon_log DAEMON NODE: a file (local) with the text of DAEMON's log on
# NODE as it is now.  An owned cluster's logs are in its directory; a
# site's are where slurm.conf puts them (SlurmdLogFile with %n and %h,
# SlurmctldLogFile), read on the node, or in the journal (slurmd.service,
# slurmctld.service) when it sets none.
daemon_log() {
	local daemon=$1 node=$2 file out
	if [ "${LWK_PRIVATE:-0}" = 1 ]; then
		if [ "$daemon" = slurmctld ]; then echo "$LWK_DEV_DIR/log/slurmctld.log"; else echo "$LWK_DEV_DIR/log/slurmd-$node.log"; fi
		return
	fi
	out=$LWK_WORK/log-$daemon-$node.$RANDOM
	if [ "$daemon" = slurmctld ]; then file=$(config_value SlurmctldLogFile); else file=$(config_value SlurmdLogFile); fi
	file=${file//%n/$node}
	if [[ $file == *%h* ]]; then
		file=${file//%h/$(scontrol show node "$node" | sed -n 's/.* NodeHostName=\([^ ]*\).*/\1/p')}
	fi
	# What this run can have logged: the file's last 64 MiB, the
	# journal since the run began.
	if [ -n "$file" ] && [ "$file" != "(null)" ]; then
		on_node "$node" tail -c 64M "$file" >"$out" 2>/dev/null || true
	else
		on_node "$node" journalctl -u "$daemon" --no-pager -q -o short-iso \
			--since "${LWK_RUN_START:-today}" >"$out" 2>/dev/null || true
	fi
	echo "$out"
}

# slurmd_log NODE, slurmctld_log: daemon_log's file for each.
slurmd_log() {
	daemon_log slurmd "$1"
}

# every_slurmd_log: the text of every node's slurmd log.
every_slurmd_log() {
	local n
	for n in "${lwk_nodes[@]}"; do
		cat "$(slurmd_log "$n")"
	done
}

slurmctld_log() {
	local host
	host=$(config_value 'SlurmctldHost\[0\]')
	host=${host%%(*}
	daemon_log slurmctld "${host:-$LWK_HERE}"
}

# job_sluid JID: the job's SLUID while Slurm knows the job (scontrol
# shows it with -d), which names its cgroup v2 directory from 26.05 on
# (unless CgroupJobIdPaths=yes); nothing before 26.05.
job_sluid() {
	scontrol -d show job -o "$1" 2>/dev/null | grep -o ' SLUID=[^ ]*' | cut -d= -f2 || true
}

# Does Slurm track jobs in cgroups here (job cgroups the plugin can use)?
slurm_cgroups() {
	# grep -c reads to the end: with -q it exits at the match, scontrol
	# dies of SIGPIPE and pipefail turned a yes into a no.
	[ "$(scontrol show config | grep -c '^ProctrackType *= proctrack/cgroup')" != 0 ]
}

# need_policy_routing: skip where the run sends every job to a partition
# (a site's test partition that is not its default): the policy routes
# a --contention-aware job without --partition to its co-scheduling one.
need_policy_routing() {
	[ -z "${SBATCH_PARTITION:-}" ] ||
		skip "sends a --contention-aware job without --partition to the policy's routing; the run gives every job one (LWK_TEST_PARTITION=$LWK_TEST_PARTITION is not the default partition)"
}

# need_own_cluster WHAT: skip on a cluster the runner does not own (a
# site's): the test changes WHAT (its configuration, a daemon), which a
# site does on a cluster of its own for testing, not on production.
need_own_cluster() {
	[ "${LWK_PRIVATE:-0}" = 1 ] ||
		skip "changes the cluster ($1): for a cluster of one's own"
}

# The file with the plugin's line, which the tests edit: plugstack.conf
# itself, or on Debian's layout (the site stack's guests) the
# plugstack.conf.d/lwk.conf it includes.
if [ -n "${LWK_DEV_DIR:-}" ] && [ -e "$LWK_DEV_DIR/plugstack.conf.d/lwk.conf" ]; then
	LWK_PLUGSTACK=$LWK_DEV_DIR/plugstack.conf.d/lwk.conf
else
	LWK_PLUGSTACK=${LWK_DEV_DIR:+$LWK_DEV_DIR/plugstack.conf}
fi

# plugstack_set FILE KEY=VALUE...: the plugin's line in FILE with these
# arguments, in place of any it had for the same keys (the package's
# example line already says on_error=fail_job).
plugstack_set() {
	local conf=$1 kv
	shift
	for kv in "$@"; do
		sed -i -e "/^[^#]*lwk[.]so/s| ${kv%%=*}=[^ ]*||" -e "/^[^#]*lwk[.]so/s|\$| $kv|" "$conf"
	done
}

# with_plugstack ARGS CMD...: run CMD with plugstack.conf arguments ARGS,
# then put the original back (a job submitted in CMD must have started
# its steps by then: slurmstepd reads plugstack.conf at each launch).
with_plugstack() {
	local args=$1 conf=$LWK_PLUGSTACK rc=0
	shift
	cp "$conf" "$LWK_WORK/plugstack.orig"
	defer cp "$LWK_WORK/plugstack.orig" "$conf" # even if "$@" fails the test
	# shellcheck disable=SC2086 # one word an argument
	plugstack_set "$conf" $args
	"$@" || rc=$?
	cp "$LWK_WORK/plugstack.orig" "$conf"
	return $rc
}

all_nodes_usable() {
	local bad
	bad=$(sinfo -h -N ${LWK_TEST_PARTITION:+-p "$LWK_TEST_PARTITION"} -o '%N %t' | grep -vE ' (idle|mix|alloc|comp|plnd)$' || true)
	[ -z "$bad" ] || fail "nodes not usable: $bad"
}

# plugin_arg KEY: the value of KEY= on the plugin's line in this
# cluster's plugstack.conf (PlugStackConfig, else beside slurm.conf) or
# the files its include lines name (globs, relative to its directory).
plugin_arg() {
	local conf dir files=() inc f
	conf=$(config_value PlugStackConfig)
	[ -n "$conf" ] && [ "$conf" != "(null)" ] || conf=${SLURM_CONF%/*}/plugstack.conf
	dir=${conf%/*}
	[ -r "$conf" ] || return 0
	files=("$conf")
	while read -r _ inc; do
		[[ $inc == /* ]] || inc=$dir/$inc
		for f in $inc; do [ -r "$f" ] && files+=("$f"); done
	done < <(grep -iE '^[[:space:]]*include[[:space:]]' "$conf")
	grep -hE '^[^#]*lwk[.]so' "${files[@]}" | grep -oE "(^|[[:space:]])$1=[^[:space:]]*" | tail -1 | sed 's/^[[:space:]]*[^=]*=//'
}

# Where the plugin keeps its per-job state on each node: the dev
# cluster's plugstack.conf sets state_dir; the guests use the default; a
# site's line may set it.
if [ "${LWK_PRIVATE:-0}" != 1 ]; then
	LWK_STATE_DIR=$(plugin_arg state_dir)
	LWK_STATE_DIR=${LWK_STATE_DIR:-/run/slurm-lwk}
elif [ -n "${LWK_GUEST_SHARE:-}" ]; then
	LWK_STATE_DIR=/run/slurm-lwk
else
	LWK_STATE_DIR=${LWK_DEV_DIR:+$LWK_DEV_DIR/lwkstate}
fi

# lwk_tool NAME: the project's command to run on a node.  On the host
# the build tree's, never one installed by an earlier build (it may be
# stale, and a fresh machine has none); the guests run the one their
# image installed.
lwk_tool() {
	if [ -z "${LWK_GUEST_SHARE:-}" ] && [ "${LWK_PRIVATE:-0}" = 1 ] && [ -x "$top/$1" ]; then
		echo "$top/$1"
	else
		echo "$1"
	fi
}

# on_node NODE CMD...: run CMD as root on NODE and print its output
# (within ON_NODE_SECONDS, default wait_bound's: a guest under load was
# seen to take more than 60 s over one bpftool).
# Every node of the host's dev cluster is this machine; a guest runs it
# through its command inbox in the shared directory (scripts/vm/guest-init);
# a site's node through LWK_TEST_ON_NODE (default ssh in batch mode),
# given the node's name and the command quoted for bash (printf %q: the
# node's root shell must be bash), its stdin /dev/null (ssh would read
# the caller's: the runner's list of cleanups, a file being read).
on_node() {
	local node=$1 name rc deadline secs=${ON_NODE_SECONDS:-}
	shift
	# wait_bound's, without a fork.
	[ -n "$secs" ] || { secs=$((30 * ${LWK_JOB_PACE:-2})); [ "$secs" -ge 60 ] || secs=60; }
	if [ "$node" = "$LWK_HERE" ] || { [ -z "${LWK_GUEST_SHARE:-}" ] && [ "${LWK_PRIVATE:-0}" = 1 ]; }; then
		"$@"
		return
	fi
	if [ -z "${LWK_GUEST_SHARE:-}" ]; then
		# shellcheck disable=SC2086 # a command and its options
		timeout "$secs" ${LWK_TEST_ON_NODE:-ssh -o BatchMode=yes} "$node" "$(printf '%q ' "$@")" </dev/null
		return
	fi
	name=$LWK_GUEST_SHARE/cmd/$node/test-$$-$RANDOM
	printf '%q ' "$@" >"$name.tmp"
	echo >>"$name.tmp"
	mv "$name.tmp" "$name.cmd"
	# Wake its inbox at once (scripts/vm/guest-init); lost, it is found
	# within a second (five, should the folder change in the tick of
	# its last listing).
	{ echo >"/dev/udp/$node/7077"; } 2>/dev/null || :
	for ((deadline = SECONDS + secs; SECONDS < deadline; )); do
		[ -e "$name.rc" ] && break
		snooze 0.1
	done
	[ -e "$name.rc" ] || fail "$node did not run '$*' within $secs s"
	cat "$name.out"
	read -r rc <"$name.rc"
	rm -f "$name".*
	return "$rc"
}

# await_on NODE SECONDS WHAT ARGS...: on NODE, until await.sh's WHAT
# holds (exists, gone, line, all-lines, no-entry), for at most SECONDS;
# fails as the command does when it did not.
await_on() {
	local node=$1 secs=$2
	shift 2
	# The script's text, not its path: a site's nodes need not have
	# the source tree.
	ON_NODE_SECONDS=$((secs + 30)) on_node "$node" bash -c "$(cat "$here/await.sh")" await.sh "$secs" "$@"
}

# on_each_node CMD...: CMD on every node (once on the host's dev cluster);
# succeeds when it succeeded on some node.
on_each_node() {
	local node any=1
	if [ -z "${LWK_GUEST_SHARE:-}" ] && [ "${LWK_PRIVATE:-0}" = 1 ]; then
		"$@"
		return
	fi
	for node in "${lwk_nodes[@]}"; do
		on_node "$node" "$@" && any=0
	done
	return $any
}
