#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# syncmon-report on the fixture files of testsuite/fixtures/syncmon:
#
#   job 4242, 3 nodes, 100 ms ticks k = 17950000000 ... 17950000019
#     node1  19 samples: tick 17950000010 skipped (the footer says 1)
#     node2  19 whole samples, line 21 cut short, no footer (killed)
#     node3  20 samples, every tick exactly 5 ms later than the earlier
#            of node1 and node2; clock not synchronised; 1 early flush
#   job 4243, node1: in the same directory, must not be merged
#   bad/   job 4242 on a 200 ms grid (node4), a file of another format
#          (node5), a damaged line in the middle (node6)
#
# The summary checks run with --no-plots, so they run without matplotlib;
# the plot checks are skipped (exit 77) when Debian's python3 lacks it.
srcdir=${srcdir:-.}
PYTHON=/usr/bin/python3
report=$srcdir/scripts/syncmon-report
fx=$srcdir/testsuite/fixtures/syncmon
failed=0

ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

if [ ! -x "$PYTHON" ]; then
	echo "SKIP: $PYTHON is missing (Debian package python3)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# Run the report: stdout in $tmp/out, stderr in $tmp/err, status in $st.
report() {
	"$PYTHON" "$report" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
}

# The fields of node $1's row of the table (fields 2... of the line).
row() {
	awk -v n="$1" '$1 == n { $1 = ""; print substr($0, 2); exit }' "$tmp/out"
}

# expect DESCRIPTION ACTUAL EXPECTED
expect() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		fail "$1: got '$2', expected '$3'"
	fi
}

# expect_in DESCRIPTION FILE FIXED-STRING
expect_in() {
	if grep -qF -- "$3" "$2"; then
		ok "$1"
	else
		fail "$1: no '$3' in: $(cat "$2")"
	fi
}

# ------------------------------------------------- summary (no matplotlib)

report --no-plots --job 4242 "$fx"
expect "the report of job 4242 from its directory exits 0" "$st" 0
[ -s "$tmp/err" ] && fail "the report wrote to stderr: $(cat "$tmp/err")"
expect "three node rows" "$(grep -c '^node[0-9] ' "$tmp/out")" 3
cp "$tmp/out" "$tmp/summary"

# Row fields: samples skipped, cost median p99 max, lateness median p99
# max, busy%, job CPU seconds, early/oversize/dropped.
expect "node1: 19 samples, 1 tick skipped (footer), cost 0.160/0.400/0.400 ms" \
	"$(row node1 | cut -d' ' -f1-5)" "19 1 0.160 0.400 0.400"
expect "node1: mean busy 50.5 %, 4.80 CPU seconds, nothing early/oversize/dropped" \
	"$(row node1 | cut -d' ' -f9-)" "50.5 4.80 0/0/0"
expect "node2: 19 samples (the cut line is not one), 0 skipped" \
	"$(row node2 | cut -d' ' -f1-2)" "19 0"
expect "node2: no footer, said on its row" \
	"$(row node2 | cut -d' ' -f11-)" "no footer (sampler killed?)"
expect_in "node2: the cut last line is reported with its line number" "$tmp/out" \
	"syncmon-4242-node2.jsonl: line 21 is cut short (57 bytes"
expect "node3: lateness median/p99/max 5.048/5.065/5.065 ms" \
	"$(row node3 | cut -d' ' -f6-8)" "5.048 5.065 5.065"
expect "node3: mean busy 95.0 %, 6.20 CPU seconds, 1 early flush" \
	"$(row node3 | cut -d' ' -f9-)" "95.0 6.20 1/0/0"
expect "cross-node spread: 18 common ticks, median/p99/max exactly the 5 ms built in" \
	"$(sed -n 's/^cross-node spread of t_ns over \(.*\)$/\1/p' "$tmp/out")" \
	"18 ticks present on all 3 nodes: median 5.000 ms, p99 5.000 ms, max 5.000 ms"
expect "clock: node1 synced" "$(awk '$1 == "node1" && $2 == "synced"' "$tmp/out" | wc -l)" 1
expect_in "clock: node3 not synchronised, with its status" "$tmp/out" \
	"node3  NOT SYNCED  status 0x0041"

report --no-plots "$fx/syncmon-4242-node3.jsonl" "$fx/syncmon-4242-node1.jsonl" \
	"$fx/syncmon-4242-node2.jsonl"
if [ "$st" = 0 ] && cmp -s "$tmp/out" "$tmp/summary"; then
	ok "the same report from the files named, in another order"
else
	fail "the files named give another report (exit $st): $(diff "$tmp/summary" "$tmp/out")"
fi

# Without a job cgroup, job.cpu_us sums the processes present and is 0
# once they exited: the job used what its processes last had.  Fixture:
# ranks that ran 3 s and 5 s and exited, and an idle helper (0.2 s)
# listed at full scans only.
report --no-plots "$fx/exited"
expect "job 4244 (no job cgroup, every process exited): 8.20 CPU seconds, not 0.00" \
	"$(row node1 | cut -d' ' -f10)" "8.20"
# The same in a v1 freezer job cgroup (proctrack/cgroup without
# jobacct_gather/cgroup): the processes are the cgroup's, but the CPU
# total is still their sum (job_cgroup_cpu false).
report --no-plots "$fx/freezer"
expect "job 4245 (a freezer job cgroup, no CPU total, every process exited): 8.20 CPU seconds" \
	"$(row node1 | cut -d' ' -f10)" "8.20"
# A job cgroup that counts CPU: its total, exited processes included
# (the processes' last values sum to 8.20 here), across a cgroup Slurm
# removed and made anew (its total restarts: 6.40 before, 2.10 after);
# and a file from before job_cgroup_cpu, whose job_cgroup said the same
# (6.40 and 2.60: the processes' sum would say 8.20).
report --no-plots "$fx/cgroup"
expect "job 4246 (a job cgroup's CPU total, made anew once): 8.50 CPU seconds, not 2.10 or 8.20" \
	"$(row node1 | cut -d' ' -f10)" "8.50"
expect "job 4246 (an older file: job_cgroup alone): the cgroup's totals, 9.00 CPU seconds, not 8.20" \
	"$(row node2 | cut -d' ' -f10)" "9.00"

# --------------------------------------------------------------- refusals

report --no-plots "$fx"
expect "a directory with two jobs and no --job: refused, exit 1" "$st" 1
expect_in "... naming the other job's file" "$tmp/err" "job 4243: $fx/syncmon-4243-node1.jsonl"

report --no-plots "$fx/syncmon-4242-node1.jsonl" "$fx/syncmon-4243-node1.jsonl"
expect "files of two jobs named: refused, exit 1" "$st" 1
expect_in "... naming the file" "$tmp/err" "syncmon-4243-node1.jsonl"

report --no-plots --job 4242 "$fx/syncmon-4243-node1.jsonl"
expect "--job 4242 with a file of job 4243: refused, exit 1" "$st" 1
expect_in "... naming the file" "$tmp/err" "syncmon-4243-node1.jsonl (job 4243)"

report --no-plots "$fx/syncmon-4242-node1.jsonl" "$fx/bad/syncmon-4242-node4.jsonl"
expect "another tick interval: refused, exit 1" "$st" 1
expect_in "... naming the file and its interval" "$tmp/err" \
	"interval 200000 us, offset 0 us: $fx/bad/syncmon-4242-node4.jsonl"

cp "$fx/syncmon-4242-node1.jsonl" "$tmp/syncmon-4242-node1.1.jsonl"
report --no-plots "$fx/syncmon-4242-node1.jsonl" "$tmp/syncmon-4242-node1.1.jsonl"
expect "two files of one node: refused, exit 1" "$st" 1
expect_in "... naming both" "$tmp/err" \
	"node node1: $fx/syncmon-4242-node1.jsonl, $tmp/syncmon-4242-node1.1.jsonl"

report --no-plots "$fx/syncmon-4242-node1.jsonl" "$fx/bad/syncmon-4242-node5.jsonl"
expect "a file of another format: exit 2" "$st" 2
expect_in "... naming the file and line 1" "$tmp/err" \
	"$fx/bad/syncmon-4242-node5.jsonl:1: not a syncmon header"

report --no-plots "$fx/bad/syncmon-4242-node6.jsonl"
expect "a damaged line before the last: exit 2" "$st" 2
expect_in "... naming the file and line 3" "$tmp/err" "$fx/bad/syncmon-4242-node6.jsonl:3:"

report --no-plots "$tmp/no-such-dir"
expect "a missing operand: exit 2" "$st" 2

# A matplotlib that cannot be imported: a package of that name first on
# the path, whatever the machine has.
mkdir -p "$tmp/nompl/matplotlib"
echo 'raise ImportError("No module named matplotlib (test)")' >"$tmp/nompl/matplotlib/__init__.py"
mkdir "$tmp/png-none"
PYTHONPATH=$tmp/nompl report --no-plots --job 4242 --out "$tmp/png-none" "$fx"
if [ "$st" = 0 ] && cmp -s "$tmp/out" "$tmp/summary" && [ -z "$(ls "$tmp/png-none")" ]; then
	ok "--no-plots without matplotlib: the same summary, no plot"
else
	fail "--no-plots without matplotlib: exit $st, $(cat "$tmp/err"), files: $(ls "$tmp/png-none")"
fi
PYTHONPATH=$tmp/nompl report --job 4242 --out "$tmp/png-none" "$fx"
expect "plots without matplotlib: exit 2" "$st" 2
expect_in "... naming the Debian package" "$tmp/err" "python3-matplotlib"

# ------------------------------------------------------------------ plots

if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
	[ $failed = 0 ] || exit 1
	echo "SKIP: $PYTHON cannot import matplotlib (Debian package python3-matplotlib)," \
		"plots not checked"
	exit 77
fi

report --job 4242 --out "$tmp/png" "$fx"
expect "the report with plots exits 0" "$st" 0
for what in cpu cost lateness; do
	png=$tmp/png/syncmon-4242-$what.png
	if [ ! -f "$png" ]; then
		fail "syncmon-4242-$what.png: not written ($(cat "$tmp/err"))"
		continue
	fi
	sig=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
	size=$(wc -c <"$png")
	if [ "$sig" != 89504e470d0a1a0a ]; then
		fail "syncmon-4242-$what.png: not a PNG (starts with $sig)"
	elif [ "$size" -lt 10000 ]; then
		fail "syncmon-4242-$what.png: only $size bytes"
	else
		ok "syncmon-4242-$what.png: a PNG of $size bytes"
	fi
done
expect_in "the plots are listed" "$tmp/out" "plots: $tmp/png/syncmon-4242-cpu.png"

exit $failed
