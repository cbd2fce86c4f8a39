#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sampler's numbers are the same whichever source it reads
# (--sync-monitor source=bpf, taskstats, proc): the same processes, the
# same thread counts, CPU times within one clock tick.  Runs the real
# lwk-syncmon three times on the same processes, frozen with SIGSTOP
# after they spun (one of them has a thread that already exited, whose
# time the kernel keeps in the process's signal_struct): once found by
# their environment, and once in a cgroup of their own on the cgroup v2
# mount (given with --cgroup, as Slurm's job cgroup would be), when the
# node has one (v2, or hybrid as this host's /sys/fs/cgroup/unified).
#
# Needs root and the bpf source (exit 77, with the reason, otherwise);
# taskstats missing is a skip of that source only.  Runs from make
# check, or by hand on a node with the package installed:
#   SYNCMON=/usr/libexec/slurm-lwk/lwk-syncmon bash check-sources.sh
set -u
bin=${SYNCMON:-./lwk-syncmon}
fails=0
ok() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the sampler must run as root (it loads BPF, takes the job user's identity)"
command -v python3 >/dev/null || skip "python3 is needed to compare the samples"
[ -x "$bin" ] || skip "no sampler at $bin (set SYNCMON)"
job=4250
tmp=$(mktemp -d)
cg=
kids=
cleanup() {
	[ -n "$kids" ] && kill -KILL $kids 2>/dev/null
	wait 2>/dev/null
	[ -n "$cg" ] && rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/state"

# The workload: processes of 1, 2 and 4 spinning threads, each after a
# thread that spun 0.2 s and exited, and one idle process.
cat >"$tmp/spin.py" <<'PY'
import sys, threading, time
def spin(until):
    while time.time() < until:
        pass
t = threading.Thread(target=spin, args=(time.time() + 0.2,))
t.start()
t.join()
for _ in range(int(sys.argv[1]) - 1):
    threading.Thread(target=spin, args=(float("inf"),), daemon=True).start()
spin(float("inf"))
PY
# One comparison: the workload, frozen, sampled by each source.  Mode
# "environment": the sampler finds the processes by their environment
# (no job cgroup: proctrack/linuxproc, or cgroup v1 as on this host);
# "cgroup2 ROOT": they sit in a cgroup of their own under the cgroup v2
# mount ROOT, given with --cgroup, as Slurm's job cgroup would be.
compare() {
	local mode=$1 root=${2:-} s mon
	kids= cg=
	rm -rf "$tmp"/out.* "$tmp"/rc.* "$tmp/state"/*
	for n in 1 2 4; do
		SLURM_JOB_ID=$job SLURMD_NODENAME=tnode python3 "$tmp/spin.py" $n &
		kids="$kids $!"
	done
	SLURM_JOB_ID=$job SLURMD_NODENAME=tnode sleep 60 &
	kids="$kids $!"
	# In a cgroup, off emulated guests: a process of more threads than
	# the bpf source's cgroup walk holds (8192), asleep, so that its
	# reads go through the walk of every task instead.
	local big=
	if [ "$mode" != environment ] && [ "${LWK_EMULATED:-0}" != 1 ]; then
		SLURM_JOB_ID=$job SLURMD_NODENAME=tnode python3 -c '
import threading, time
threading.stack_size(65536)
for _ in range(8250):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
time.sleep(3600)' &
		big=$!
		kids="$kids $big"
	fi
	cgopt=()
	if [ "$mode" != environment ]; then
		cg=$root/lwk-check-sources.$$
		mkdir "$cg" && for p in $kids; do echo "$p" >"$cg/cgroup.procs"; done
		cgopt=(--cgroup "$cg")
	fi
	echo "# $mode${root:+ $root}: the processes$kids${cg:+ in $cg}"
	# Until each spinner has its threads and has spun 0.3 s of CPU, up
	# to 120 s (python starts in seconds on an emulated guest), then
	# frozen.
	local want=(1 2 4) i p ready
	for _ in $(seq 1200); do
		ready=1 i=0
		for p in $kids; do
			[ $i -lt 3 ] || break
			[ "$(sed -n 's/^Threads:[[:space:]]*//p' /proc/$p/status 2>/dev/null)" = "${want[i]}" ] &&
				[ "$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)" -ge $(($(getconf CLK_TCK) * 3 / 10)) ] || ready=0
			i=$((i + 1))
		done
		[ -z "$big" ] || [ "$(sed -n 's/^Threads:[[:space:]]*//p' /proc/$big/status 2>/dev/null)" = 8251 ] || ready=0
		[ $ready = 1 ] && break
		sleep 0.1
	done
	kill -STOP $kids
	sleep 0.3 # stopped everywhere: their CPU times no longer move
	for s in bpf taskstats proc; do
		mkdir -p "$tmp/out.$s"
		"$bin" --job $job --node tnode --uid 0 --gid 0 --dir "$tmp/out.$s" --state "$tmp/state" \
			--options "interval=50ms,flush=1,source=$s" "${cgopt[@]}" 2>"$tmp/err.$s" &
		mon=$!
		# Until its first full sample is written (flush=1: at every
		# tick), up to 60 s: loading BPF takes seconds on a guest.
		for _ in $(seq 600); do
			grep -qs '"full_scan":true' "$tmp/out.$s"/* && break
			kill -0 $mon 2>/dev/null || break
			sleep 0.1
		done
		kill -TERM $mon 2>/dev/null
		wait $mon
		echo $? >"$tmp/rc.$s"
	done
	if [ "$(cat "$tmp/rc.bpf")" = 3 ]; then
		skip "source=bpf cannot work here: $(sed -n 's/.*source=bpf cannot work on this node: //p' "$tmp/state/syncmon.log" | head -1)"
	fi
	python3 - "$tmp" "$kids" "$mode" "$big" <<'PY' || fails=$((fails + 1))
import json, os, sys
tmp, kids, mode, big = sys.argv[1], [int(p) for p in sys.argv[2].split()], sys.argv[3], sys.argv[4]
fails = 0
def ok(what, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + mode + ": " + what)
    fails += not cond
runs = {}
for s in ("bpf", "taskstats", "proc"):
    d = os.path.join(tmp, "out." + s)
    files = os.listdir(d) if os.path.isdir(d) else []
    if len(files) != 1:
        ok("source=%s wrote one file" % s, False)
        continue
    lines = [json.loads(l) for l in open(os.path.join(d, files[0])) if l.strip()]
    head, first = lines[0], next((l for l in lines if "k" in l and l["full_scan"]), None)
    foot = next((l for l in lines if "stop_ns" in l), None)
    runs[s] = (head, first, foot)
head = runs.get("bpf", ({}, None, None))[0]
ok("source=bpf: the header says bpf, and no fallback", head.get("source") == "bpf" and head.get("source_fallback") == "")
# The walk: the job cgroup's tasks where there is one and the kernel has
# the css_task iterator (6.7), else every task of the node, saying why.
rel = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
if mode == "environment":
    want_walk = "tasks"
else:
    want_walk = "cgroup" if rel >= (6, 7) else "tasks"
ok("source=bpf: walks %s on Linux %d.%d (%s: %s)" % (want_walk, rel[0], rel[1], head.get("bpf_walk"), head.get("bpf_walk_why")),
   head.get("bpf_walk") == want_walk and (head.get("bpf_walk_why") == "") == (want_walk == "cgroup"))
foot = runs.get("bpf", ({}, None, None))[2] if "bpf" in runs else None
ok("source=bpf: no failed read in the footer (%s)" % (foot or {}).get("source_errors"),
   foot is not None and foot.get("source_errors") == 0)
# The process of 8251 threads does not fit the cgroup walk: every sample
# of it was read by the task walk, and only then.
want_over = bool(big) and want_walk == "cgroup"
ok("source=bpf: %s (bpf_walk_overflows %s)" % ("a job of more threads than the cgroup walk holds is read by the task walk"
   if want_over else "no tick overflowed the cgroup walk", (foot or {}).get("bpf_walk_overflows")),
   foot is not None and (foot.get("bpf_walk_overflows", 0) > 0) == want_over)
if runs.get("taskstats", ({}, None, None))[0].get("source") != "taskstats":
    print("SKIP: %s: source=taskstats: %s" % (mode, runs.get("taskstats", ({}, None, None))[0].get("source_fallback", "no output")))
    runs.pop("taskstats", None)
ok("source=proc: the header says proc", runs.get("proc", ({}, None, None))[0].get("source") == "proc")
tick_us = 1000000 // (head.get("clk_tck") or 100)
procs = {}
for s, (h, first, _) in runs.items():
    if first is None:
        ok("source=%s: a full sample" % s, False)
        continue
    procs[s] = {p["pid"]: p for p in first["procs"]}
    ok("source=%s: the job's %d processes, no other (%s)" % (s, len(kids), sorted(procs[s])),
       sorted(procs[s]) == sorted(kids) and first["job"]["nprocs"] == len(kids))
# proc rounds utime and stime down to a clock tick each: it is up to two
# ticks below the run time the others read, never above it.  taskstats
# counts a thread that exited when the exit is notified, a little before
# its clock stops (the rest reaches the process's total that proc and
# bpf read): microseconds on hardware, up to 28 ms seen on an emulated
# guest, where LWK_EMULATED=1 (scripts/test's guest stages) allows five
# ticks for it; one elsewhere.
slack = (5 if os.environ.get("LWK_EMULATED") == "1" else 1) * tick_us
def close(s, t, x, y):
    d = x - y  # t's value less s's
    if (s, t) == ("taskstats", "bpf"):
        return -tick_us <= d <= slack
    if (s, t) == ("proc", "bpf"):
        return 0 <= d < 2 * tick_us
    if (s, t) == ("proc", "taskstats"):
        return -slack <= d < 2 * tick_us
    return abs(d) <= tick_us
pairs = [(a, b) for a, b in (("taskstats", "bpf"), ("proc", "bpf"), ("proc", "taskstats"))
         if a in procs and b in procs]
for s, t in pairs:
    a, b = procs[t], procs[s]
    common = sorted(set(a) & set(b))
    ok("%s and %s: the same thread counts (%s)" % (t, s, [(p, a[p]["threads"], b[p]["threads"]) for p in common]),
       all(a[p]["threads"] == b[p]["threads"] for p in common))
    diffs = [(p, a[p]["cpu_us"], b[p]["cpu_us"]) for p in common]
    ok("%s and %s: CPU times within %s (%s)" % (t, s, "two clock ticks below (proc rounds utime and stime down)"
       if s == "proc" else "one clock tick (taskstats %d below)" % (slack // tick_us), diffs), all(close(s, t, x, y) for _, x, y in diffs))
# Resident memory, summed over the job's processes by the sampler (not
# read from a cgroup: the environment mode), of frozen processes.  bpf
# reads the kernel's fast counters (on 6.1 through its pre-6.2 path);
# /proc read the same until recent kernels (7.2 here), which add each
# CPU's pending part: at most a batch of pages per CPU for each of the
# three counters (percpu_counter_batch, max(32, 2 x CPUs)).
if mode == "environment" and "bpf" in runs and "proc" in runs and runs["bpf"][1] and runs["proc"][1]:
    rb, rp = runs["bpf"][1]["job"]["rss_kb"], runs["proc"][1]["job"]["rss_kb"]
    ncpu = os.cpu_count() or 1
    lag_kb = len(kids) * 3 * ncpu * max(32, 2 * ncpu) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    ok("bpf and proc: the job's resident memory within the kernel's per-CPU lag of %d KiB (%d KiB, %d KiB)"
       % (lag_kb, rb, rp), rb > 0 and abs(rb - rp) <= lag_kb)
# Each spinner (the first three; the last is the idle one, whose start
# alone took 0.36 s of CPU on an emulated guest) spun 0.3 s before the
# freeze.
for s in procs:
    ok("%s: the spinners ran (over 0.25 s of CPU each)" % s,
       all(procs[s].get(p, {}).get("cpu_us", 0) > 250000 for p in kids[:3]))
sys.exit(1 if fails else 0)
PY
	kill -KILL $kids 2>/dev/null
	wait 2>/dev/null
	[ -n "$cg" ] && rmdir "$cg"
	kids= cg=
}

compare environment
# Every cgroup v2 mount: /sys/fs/cgroup on a v2 host, the "unified"
# hierarchy of a hybrid one (no controllers there, but cgroup.procs and
# cpu.stat, which is what the sampler reads).
v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$v2" ]; then
	compare cgroup2 "$v2"
else
	echo "SKIP: no cgroup v2 mount: the --cgroup comparison is for v2 hosts"
fi
# A cgroup v1 hierarchy, as Slurm's job cgroup on a v1 node: the one
# with cpuacct, which the sampler reads for the job's total.
v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ { print $2; exit }' /proc/mounts)
if [ -n "$v1" ]; then
	compare cgroup1 "$v1"
else
	echo "SKIP: no cgroup v1 cpuacct hierarchy: the v1 --cgroup comparison is for v1 hosts (the guests are v2)"
fi
[ $fails = 0 ]
