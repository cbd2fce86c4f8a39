# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testsuite/budget.sh: where the test command's time goes.  Sourced by
# scripts/test, which calls stage_open and stage_close around each stage,
# part_took after each part of one, and test_times on each integration
# runner's output.  At its end, time_table prints every stage with its
# time and budget, and every test or part over 30 s.
#
# The budgets: what each stage may take on the 2-core machine CI uses,
# from a fresh clone, the guest images cached but for the package (a
# cold image is built in the background while the host stages run; a
# guest stage's wait for it is one of its parts).  Stages run at once
# from the fuzz stage on (doc/testing.md): distcheck and the packages
# at nice 19 beside the rest, the bookworm guests beside the host's
# integration stages, their SMT guest beside trixie's and sid's stages;
# so a background stage's budget
# is what it may take there, and the run as a whole has its own,
# run_budget below.  A stage over its budget is printed with the tests and parts that took
# longest, and listed again in the table: a slow creep is seen the day
# it starts.  It is not a test failure (how fast a machine runs is the
# benchmarks' business, never a test's); LWK_BUDGET_FAIL=1 makes it
# one, for a pipeline that wants the run to stop there.
# trixie's guests run the site stack (systemd, MariaDB and slurmdbd, an
# extern step beside every job, irqbalance): its stage took 540 s alone
# on this machine (2026-11-29) before the irqbalance test (65 s alone,
# 149 s in a whole run before it asked irqbalance for 1 s passes).
declare -A stage_budget=(
	[build]=180 [unit]=240 [fuzz]=60 [distcheck]=900 [packages]=600
	[integration]=360 [cgroup]=240 [guests]=1000 [smt]=300 [trixie]=720 [sid]=420
)
stage_order=(build unit fuzz distcheck packages integration cgroup guests smt trixie sid)
# The whole run, every stage: the 30 minutes a typical run should take.
run_budget=1800
budget_over=()
# Lines "stage NAME SECONDS" and "item STAGE SECONDS WHAT", in run order.
times_file=$logs/times
: >"$times_file"
cur_stage='' cur_t0=''

# stage_open NAME: stage NAME begins; its time runs until stage_close.
stage_open() {
	cur_stage=$1
	cur_t0=$(date +%s)
}

# stage_close: the current stage has ended: its time, against its budget.
stage_close() {
	local secs b
	[ -n "$cur_stage" ] || return 0
	secs=$(($(date +%s) - cur_t0))
	b=${stage_budget[$cur_stage]:-}
	echo "stage $cur_stage $secs $((cur_t0 - ${start:-$cur_t0}))" >>"$times_file"
	echo "$cur_stage stage: $secs s${b:+ (budget $b s)}"
	if [ -n "$b" ] && [ "$secs" -gt "$b" ]; then
		budget_over+=("$cur_stage: $secs s, budget $b s")
		echo "OVER BUDGET: stage $cur_stage took $secs s, $((secs - b)) s over its $b s; what took longest in it:"
		items_of "$cur_stage" | head -n 5 | sed 's/^/    /'
	fi
	cur_stage=
}

# part_took WHAT T0: a part of the current stage (a cluster's start, a
# check program, a soak) has taken the time since T0 (date +%s).
part_took() {
	local secs=$(($(date +%s) - $2))
	printf '    (%s: %d s)\n' "$1" "$secs"
	[ -z "$cur_stage" ] || echo "item $cur_stage $secs $1" >>"$times_file"
}

# test_times LABEL LOG: each test's time from an integration runner's
# output ("PASS: NAME" or "FAIL: NAME", then its lines, then "    (N s)").
test_times() {
	[ -n "$cur_stage" ] || return 0
	awk -v stage="$cur_stage" -v label="$1" '
		/^(PASS|FAIL): / { name = substr($0, 7); next }
		name != "" && /^    \([0-9]+ s\)$/ {
			s = $0; gsub(/[^0-9]/, "", s)
			print "item", stage, s, label ": " name
			name = ""
		}' "$2" >>"$times_file"
}

# items_of STAGE: its tests and parts, the longest first, "N s  WHAT".
items_of() {
	awk -v stage="$1" '$1 == "item" && $2 == stage {
		what = $0; sub(/^item [^ ]+ [0-9]+ /, "", what); print $3, what }' "$times_file" |
		sort -k1,1nr | awk '{ n = $1; $1 = ""; printf "%5d s %s\n", n, substr($0, 2) }'
}

# time_table TOTAL [whole]: every stage that ran, when it began, its
# time and budget; with "whole" (every stage ran) the whole run against
# run_budget; then every test and part over 30 s.  Returns 1 when
# something went over its budget and LWK_BUDGET_FAIL=1.
time_table() {
	local s secs from b mark
	printf 'where the %d s went (budgets: testsuite/budget.sh; stages from the same second on ran at once):\n' "$1"
	printf '  %-12s %6s %7s %8s\n' stage from time budget
	for s in "${stage_order[@]}"; do
		secs= from=
		read -r secs from < <(awk -v s="$s" '$1 == "stage" && $2 == s { print $3, $4 }' "$times_file")
		[ -n "$secs" ] || continue
		b=${stage_budget[$s]:-}
		mark=
		[ -z "$b" ] || [ "$secs" -le "$b" ] || mark="  OVER BUDGET"
		printf '  %-12s %4d s %5d s %6s s%s\n' "$s" "${from:-0}" "$secs" "${b:--}" "$mark"
	done
	if [ "${2:-}" = whole ]; then
		mark=
		if [ "$1" -gt "$run_budget" ]; then
			mark="  OVER BUDGET"
			budget_over+=("the whole run: $1 s, budget $run_budget s")
		fi
		printf '  %-12s %6s %5d s %6s s%s\n' "whole run" "" "$1" "$run_budget" "$mark"
	fi
	echo "tests and parts over 30 s, the longest first:"
	awk '$1 == "item" && $3 > 30 { what = $0; sub(/^item [^ ]+ [0-9]+ /, "", what)
		printf "%5d s  %-12s %s\n", $3, $2, what; n++ } END { if (!n) print "  (none)" }' "$times_file" | sort -k1,1nr
	if [ ${#budget_over[@]} -gt 0 ]; then
		echo "over budget:"
		printf '  - %s\n' "${budget_over[@]}"
		[ "${LWK_BUDGET_FAIL:-0}" != 1 ] || return 1
	fi
	return 0
}
