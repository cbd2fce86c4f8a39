# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the integration tests.  Sourced by testsuite/integration/run;
# each t*.sh file defines functions named test_*, run one by one in a
# subshell.  A test passes by returning 0, fails with a message through
# fail(), and skips with a reason through skip().
#
# Set by the runner:
#   SLURM_CONF      the cluster under test
#   LWK_PRIVATE     1 when the runner started the cluster itself (tests
#                   that edit plugstack.conf or drain nodes run only then)
#   LWK_DEV_DIR     that cluster's directory (logs, plugstack.conf)
#   LWK_NODES       the number of nodes
#   LWK_WORK        a scratch directory for job output

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

# Wait for job $1 to finish; its state ends up in $job_state.
wait_job() {
	local i
	for ((i = 0; i < 240; i++)); do
		job_state=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
		case $job_state in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
			return 0 ;;
		esac
		sleep 0.25
	done
	fail "job $1 did not finish within 60 s (state $job_state)"
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

# The slurmd log of a node of the private cluster.
slurmd_log() {
	echo "$LWK_DEV_DIR/log/slurmd-$1.log"
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

need_private() {
	[ "${LWK_PRIVATE:-0}" = 1 ] ||
		skip "needs the private dev cluster (it edits plugstack.conf or reads daemon logs); pointed at $SLURM_CONF"
}

all_nodes_usable() {
	local bad
	bad=$(sinfo -h -N -o '%N %t' | grep -vE ' (idle|mix|alloc|comp|plnd)$' || true)
	[ -z "$bad" ] || fail "nodes not usable: $bad"
}

# Where the plugin keeps its per-job state on each node: the dev
# cluster's plugstack.conf sets state_dir; the guests use the default.
if [ -n "${LWK_GUEST_SHARE:-}" ]; then
	LWK_STATE_DIR=/run/slurm-lwk
else
	LWK_STATE_DIR=${LWK_DEV_DIR:+$LWK_DEV_DIR/lwkstate}
fi

# lwk_tool NAME: the project's command to run on a node.  On the host
# the build tree's, never one installed by an earlier build (it may be
# stale, and a fresh machine has none); the guests run the one their
# image installed.
lwk_tool() {
	if [ -z "${LWK_GUEST_SHARE:-}" ] && [ -x "$top/$1" ]; then
		echo "$top/$1"
	else
		echo "$1"
	fi
}

# on_node NODE CMD...: run CMD as root on NODE and print its output
# (within ON_NODE_SECONDS, default 60).
# Every node of the host's dev cluster is this machine; a guest runs it
# through its command inbox in the shared directory (scripts/vm/guest-init).
on_node() {
	local node=$1 name i rc
	shift
	if [ -z "${LWK_GUEST_SHARE:-}" ] || [ "$node" = "$(hostname -s)" ]; then
		"$@"
		return
	fi
	name=$LWK_GUEST_SHARE/cmd/$node/test-$$-$RANDOM
	printf '%q ' "$@" >"$name.tmp"
	echo >>"$name.tmp"
	mv "$name.tmp" "$name.cmd"
	for ((i = 0; i < ${ON_NODE_SECONDS:-60} * 10; i++)); do
		[ -e "$name.rc" ] && break
		sleep 0.1
	done
	[ -e "$name.rc" ] || fail "$node did not run '$*' within ${ON_NODE_SECONDS:-60} s"
	cat "$name.out"
	rc=$(cat "$name.rc")
	rm -f "$name".*
	return "$rc"
}

# on_each_node CMD...: CMD on every node (once on the host's dev cluster);
# succeeds when it succeeded on some node.
on_each_node() {
	local node any=1
	if [ -z "${LWK_GUEST_SHARE:-}" ]; then
		"$@"
		return
	fi
	for node in $(sinfo -h -N -o '%N' | sort -u); do
		on_node "$node" "$@" && any=0
	done
	return $any
}
