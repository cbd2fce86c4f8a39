# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The options exist where users look for them, and bad values are refused
# before a job exists.

test_help_lists_the_options_in_sbatch_srun_salloc() {
	local cmd
	for cmd in sbatch srun salloc; do
		$cmd --help >"$LWK_WORK/help" 2>&1 || true
		assert_grep '--lwk\[?=os=N' "$LWK_WORK/help" "$cmd --help"
		assert_grep '--sync-monitor\[?=interval=D' "$LWK_WORK/help" "$cmd --help"
		assert_grep '--contention-aware\[?=probe=D' "$LWK_WORK/help" "$cmd --help"
	done
}

# refused CMD OPTION KEY ALLOWED: CMD with OPTION exits non-zero with a
# message naming KEY and ALLOWED, and no job of that name exists.
refused() {
	local cmd=$1 opt=$2 key=$3 allowed=$4 name
	name=$(unique_name refused)
	case $cmd in
	sbatch) run_expect_fail "$LWK_WORK/err" sbatch -J "$name" "$opt" --wrap true ;;
	srun) run_expect_fail "$LWK_WORK/err" srun -J "$name" "$opt" true ;;
	salloc) run_expect_fail "$LWK_WORK/err" salloc -J "$name" "$opt" true ;;
	esac
	assert_grep "error: lwk: .*$key" "$LWK_WORK/err" "$cmd $opt"
	assert_grep "$allowed" "$LWK_WORK/err" "$cmd $opt"
	[ "$(jobs_named "$name")" = 0 ] || fail "$cmd $opt created a job"
}

test_sbatch_refuses_bad_values_without_creating_a_job() {
	refused sbatch --lwk=os=abc "os='abc' is not valid" "whole number from 1 to 1024"
	refused sbatch --sync-monitor=interval=5ms "interval" "from 10ms to 3600s"
	refused sbatch --contention-aware=max_dies=1,min_dies=2 "max_dies=1" "at least min_dies"
}

test_srun_refuses_bad_values_without_creating_a_job() {
	refused srun --lwk=hugepage=4M "hugepage" "one of none\|2M\|1G"
	refused srun --sync-monitor=offset=1s,interval=1s "offset" "smaller than the interval"
	refused srun --contention-aware=objective=speed "objective" "antt\|stp"
}

test_salloc_refuses_bad_values_without_creating_a_job() {
	refused salloc --lwk=mem=lots "mem" "suffix K, M, G or T"
	refused salloc --sync-monitor=source=perf "source" "auto\|taskstats\|proc"
}

test_unknown_key_lists_the_allowed_keys() {
	refused sbatch --lwk=cores=2 "unknown key 'cores'" "allowed keys: os, mem, numa, backend, hugepage, deleg_mem, deleg_cpu"
	refused srun --lwk=os=1,os=2 "key 'os' is given twice" "os"
}

test_lwk_and_contention_aware_are_refused_together() {
	local name
	name=$(unique_name both)
	run_expect_fail "$LWK_WORK/err" sbatch -J "$name" --lwk --contention-aware --wrap true
	assert_grep "lwk: --lwk and --contention-aware cannot be used together" "$LWK_WORK/err"
	[ "$(jobs_named "$name")" = 0 ] || fail "a job was created"
}
