#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The sampler's numbers are the same whichever source it reads
# (--sync-monitor source=bpf, taskstats, proc): the same processes, the
# same thread counts, CPU times within one clock tick.  Runs the real
# lwk-syncmon three times on the same processes, frozen with SIGSTOP
# after they spun (one of them has a thread that already exited, whose
# time the kernel keeps in the process's signal_struct): once found by
# their environment, and once in a job cgroup of their own on each
# cgroup mount the node has (v2, or hybrid as this host's
# /sys/fs/cgroup/unified; v1's cpuacct hierarchy), given with --cgroup
# as Slurm's job cgroup would be.  There the bpf source walks the job
# cgroup (Linux 6.7+); its fallbacks to the walk of every task (too
# many cgroups, a job cgroup made anew) are run too.
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
root=
mode=
kids=
stepd=
mon=
cleanup() {
	[ -n "$mon" ] && kill -TERM $mon 2>/dev/null
	[ -n "$kids$stepd" ] && kill -KILL $kids $stepd 2>/dev/null
	wait 2>/dev/null
	remove_cgroups
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
# sample NAME SOURCE [WHILE]: run the sampler with SOURCE into out.NAME
# until its first full sample (flush=1: written at every tick), up to 60
# s (loading BPF takes seconds on a guest); then, if given, run the
# command WHILE (it sees the sampler's output directory as $1) before
# stopping it.  Its exit status in rc.NAME.
sample() {
	local name=$1 src=$2
	shift 2
	mkdir -p "$tmp/out.$name"
	rm -f "$tmp/state/syncmon.log"
	"$bin" --job $job --node tnode --uid 0 --gid 0 --dir "$tmp/out.$name" --state "$tmp/state" \
		--options "interval=50ms,flush=1,source=$src" "${cgopt[@]}" 2>"$tmp/err.$name" &
	mon=$!
	for _ in $(seq 600); do
		grep -qs '"full_scan":true' "$tmp/out.$name"/* && break
		kill -0 $mon 2>/dev/null || break
		sleep 0.1
	done
	[ $# = 0 ] || "$@" "$tmp/out.$name"
	kill -TERM $mon 2>/dev/null
	wait $mon
	echo $? >"$tmp/rc.$name"
	mon=
	cp "$tmp/state/syncmon.log" "$tmp/log.$name" 2>/dev/null
}

# put_in_cgroups: each of the processes in a task cgroup of a step
# cgroup of the job cgroup $cg, as Slurm places a job's tasks; and
# $stepd, a stand-in for slurmstepd, where Slurm puts it: in the job
# level itself on v1, in step_0/slurm on v2 (not one of the job's).
put_in_cgroups() {
	local i=0 p
	for p in $kids; do
		mkdir -p "$cg/step_0/task_$i" && echo "$p" >"$cg/step_0/task_$i/cgroup.procs"
		i=$((i + 1))
	done
	if [ -e "$root/cgroup.controllers" ] || [ "$mode" = cgroup2 ]; then
		mkdir -p "$cg/step_0/slurm" && echo "$stepd" >"$cg/step_0/slurm/cgroup.procs"
	else
		echo "$stepd" >"$cg/cgroup.procs"
	fi
}

# anew DIR: the job cgroup removed and made again at the same path (as
# Slurm does between an allocation's steps when nothing else holds it),
# the processes back in it; then until a full sample in DIR lists them
# all again, up to 30 s.
anew() {
	local p d before lines
	before=$(cat "$1"/* | wc -l)
	for p in $kids $stepd; do echo "$p" >"$root/cgroup.procs"; done
	for d in "$cg"/step_0/task_* "$cg"/step_0/slurm "$cg/step_0" "$cg"; do [ ! -d "$d" ] || rmdir "$d"; done
	put_in_cgroups
	for _ in $(seq 300); do
		lines=$(tail -n +$((before + 1)) "$1"/* | grep '"full_scan":true')
		for p in $kids; do
			lines=$(grep "\"pid\":$p," <<<"$lines")
		done
		[ -n "$lines" ] && break
		sleep 0.1
	done
	# Then 20 ticks more: on the walk that follows the new cgroup they
	# read no fallback; on a link left on the old one, every one would.
	before=$(cat "$1"/* | wc -l)
	for _ in $(seq 600); do
		[ $(($(cat "$1"/* | wc -l) - before)) -ge 20 ] && break
		sleep 0.1
	done
}

# many_cgroups: 1100 empty cgroups under the job cgroup, more than the
# bpf source's cgroup walk visits (1024).
many_cgroups() {
	mkdir "$cg/many" && for i in $(seq 1100); do mkdir "$cg/many/c$i"; done
}

# One comparison: the workload, frozen, sampled by each source.  Mode
# "environment": the sampler finds the processes by their environment
# (no job cgroup: proctrack/linuxproc); "cgroup2 ROOT", "cgroup1 ROOT"
# and "freezer ROOT": they sit in task cgroups under a job cgroup of
# their own on the mount ROOT (v2, v1's cpuacct hierarchy, or v1's
# freezer one, which proctrack/cgroup makes where jobacct_gather/cgroup
# makes no cpuacct one), given with --cgroup, as Slurm's job cgroup
# would be.  On v1, one thread of the 4-thread process is moved alone
# to the root (v1 can): the process still counts whole.  Where the bpf
# source walks the job cgroup (6.7+), two more bpf runs (not in freezer:
# the walk is the same whatever the controller): with more cgroups under
# the job's than the walk visits (each tick read by the task walk
# instead), and with the job cgroup made anew while it samples (the walk
# follows it).
compare() {
	local s p
	mode=$1 root=${2:-}
	kids= cg= stepd=
	rm -rf "$tmp"/out.* "$tmp"/rc.* "$tmp"/log.* "$tmp/state"/*
	for n in 1 2 4; do
		SLURM_JOB_ID=$job SLURMD_NODENAME=tnode python3 "$tmp/spin.py" $n &
		kids="$kids $!"
	done
	SLURM_JOB_ID=$job SLURMD_NODENAME=tnode sleep 60 &
	kids="$kids $!"
	cgopt=()
	if [ "$mode" != environment ]; then
		cg=$root/lwk-check-sources.$$
		sleep infinity &
		stepd=$!
		put_in_cgroups
		cgopt=(--cgroup "$cg")
	fi
	echo "# $mode${root:+ $root}: the processes$kids${cg:+ in $cg/step_0/task_*}"
	# Until each spinner has its threads and has spun 0.3 s of CPU, up
	# to 120 s (python starts in seconds on an emulated guest), then
	# frozen.
	local want=(1 2 4) i ready
	for _ in $(seq 1200); do
		ready=1 i=0
		for p in $kids; do
			[ $i -lt 3 ] || break
			[ "$(sed -n 's/^Threads:[[:space:]]*//p' /proc/$p/status 2>/dev/null)" = "${want[i]}" ] &&
				[ "$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)" -ge $(($(getconf CLK_TCK) * 3 / 10)) ] || ready=0
			i=$((i + 1))
		done
		[ $ready = 1 ] && break
		sleep 0.1
	done
	if [ "$mode" = cgroup1 ] || [ "$mode" = freezer ]; then
		p=$(echo $kids | cut -d' ' -f3)
		ls /proc/$p/task | grep -vx "$p" | head -1 >"$root/tasks"
	fi
	kill -STOP $kids
	# Until every thread is stopped (state T): a spinner still running
	# has a CPU time that bpf and proc read to the instant and taskstats
	# only to the scheduler's last update, which on a guest starved of
	# host CPU was 230 ms behind.  At most 120 s, then said.
	local state
	for _ in $(seq 1200); do
		state=$(for p in $kids; do cat /proc/$p/task/*/stat 2>/dev/null; done |
			sed 's/.*) \(.\) .*/\1/' | sort -u | tr -d '\n')
		[ "$state" = T ] && break
		sleep 0.1
	done
	if [ "$state" != T ]; then
		echo "FAIL: $mode: the job's threads were not all stopped 120 s after SIGSTOP (states: $state)"
		fails=$((fails + 1))
		kill -KILL $kids $stepd 2>/dev/null
		wait 2>/dev/null
		remove_cgroups
		kids= cg= stepd=
		return
	fi
	sleep 0.3 # stopped everywhere: their CPU times no longer move
	for s in bpf taskstats proc; do
		sample $s $s
	done
	if [ "$(cat "$tmp/rc.bpf")" = 3 ]; then
		skip "source=bpf cannot work here: $(sed -n 's/.*source=bpf cannot work on this node: //p' "$tmp/state/syncmon.log" | head -1)"
	fi
	if [ "$mode" != environment ] && [ "$mode" != freezer ] &&
		head -1 "$tmp"/out.bpf/* | grep -q '"bpf_walk":"cgroup"'; then
		# 1100 cgroups made and removed take minutes on an emulated
		# guest: the host runs that one.
		if [ "${LWK_EMULATED:-0}" != 1 ]; then
			many_cgroups
			sample bpf-many bpf
			rmdir "$cg"/many/c[0-9]* "$cg/many"
		fi
		sample bpf-anew bpf anew
	fi
	python3 - "$tmp" "$kids" "$mode" <<'PY' || fails=$((fails + 1))
import json, os, re, sys
tmp, kids, mode = sys.argv[1], [int(p) for p in sys.argv[2].split()], sys.argv[3]
fails = 0
def ok(what, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + mode + ": " + what)
    fails += not cond
runs = {}
job_cpu = {}  # each run's job.cpu_us, sample by sample
for s in ("bpf", "taskstats", "proc", "bpf-many", "bpf-anew"):
    d = os.path.join(tmp, "out." + s)
    if not os.path.isdir(d):
        continue
    files = os.listdir(d)
    if len(files) != 1:
        ok("%s wrote one file" % s, False)
        continue
    lines = [json.loads(l) for l in open(os.path.join(d, files[0])) if l.strip()]
    full = [l for l in lines if "k" in l and l["full_scan"]]
    # The first full sample; after the job cgroup is made anew, the last.
    first = (full[-1] if s == "bpf-anew" else full[0]) if full else None
    foot = next((l for l in lines if "stop_ns" in l), None)
    log = open(os.path.join(tmp, "log." + s)).read() if os.path.exists(os.path.join(tmp, "log." + s)) else ""
    runs[s] = (lines[0], first, foot, log)
    job_cpu[s] = [l["job"]["cpu_us"] for l in lines if "k" in l]
head = runs.get("bpf", ({}, None, None, ""))[0]
ok("source=bpf: the header says bpf, and no fallback", head.get("source") == "bpf" and head.get("source_fallback") == "")
# The processes from the job cgroup, whatever its hierarchy; its CPU
# total only where it counts CPU (v2's cpu.stat, v1's cpuacct).
want_cg = (mode != "environment", mode in ("cgroup2", "cgroup1"))
ok("the header: job_cgroup %s, job_cgroup_cpu %s (%s, %s)" % (want_cg + (head.get("job_cgroup"), head.get("job_cgroup_cpu"))),
   (head.get("job_cgroup"), head.get("job_cgroup_cpu")) == want_cg)
# The walk: the job cgroup's tasks where there is one and the kernel has
# the css_task and task iterators (6.7), else every task of the node,
# saying why.
rel = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
want_walk = "cgroup" if mode != "environment" and rel >= (6, 7) else "tasks"
ok("source=bpf: walks %s on Linux %d.%d (%s: %s)" % (want_walk, rel[0], rel[1], head.get("bpf_walk"), head.get("bpf_walk_why")),
   head.get("bpf_walk") == want_walk and (head.get("bpf_walk_why") == "") == (want_walk == "cgroup"))
for s in ("bpf", "bpf-many", "bpf-anew"):
    if s not in runs:
        continue
    foot, log = runs[s][2] or {}, runs[s][3]
    fb = foot.get("bpf_walk_fallbacks")
    ok("%s: no failed read in the footer (%s)" % (s, foot.get("source_errors")), foot.get("source_errors") == 0)
    if s == "bpf":
        # Every tick read by the walk the header names.
        ok("bpf: no tick fell back from the cgroup walk, and it ended on it (%s, %s)" % (fb, foot.get("bpf_walk_end")),
           fb == 0 and foot.get("bpf_walk_end") == want_walk)
    elif s == "bpf-many":
        ok("bpf-many: past 1024 cgroups the ticks fall back to the task walk and the log says why (%s: %s)"
           % (fb, [l for l in log.splitlines() if "cgroup walk" in l][:1]),
           isinstance(fb, int) and fb >= 1 and "more cgroups under the job cgroup" in log)
    else:
        ok("bpf-anew: the job cgroup made anew is followed: 1 to 5 ticks fell back, not the 20 after (%s, ended on %s: %s)"
           % (fb, foot.get("bpf_walk_end"), [l for l in log.splitlines() if "cgroup walk" in l][:1]),
           isinstance(fb, int) and 1 <= fb <= 5 and foot.get("bpf_walk_end") == "cgroup")
        # The new cgroup counts from 0 (the processes are stopped):
        # the job's total keeps what the one before had counted.
        series = job_cpu.get(s, [])
        ok("bpf-anew: the job's CPU total never falls across the cgroup made anew (%s ... %s)"
           % (series[:1], series[-1:]),
           len(series) > 1 and all(b >= a for a, b in zip(series, series[1:])) and series[-1] > 0)
if runs.get("taskstats", ({}, None, None, ""))[0].get("source") != "taskstats":
    print("SKIP: %s: source=taskstats: %s" % (mode, runs.get("taskstats", ({}, None, None, ""))[0].get("source_fallback", "no output")))
    runs.pop("taskstats", None)
ok("source=proc: the header says proc", runs.get("proc", ({}, None, None, ""))[0].get("source") == "proc")
tick_us = 1000000 // (head.get("clk_tck") or 100)
procs = {}
for s, (h, first, _, _) in runs.items():
    if first is None:
        ok("%s: a full sample" % s, False)
        continue
    procs[s] = {p["pid"]: p for p in first["procs"]}
    ok("%s: the job's %d processes, no other (%s)" % (s, len(kids), sorted(procs[s])),
       sorted(procs[s]) == sorted(kids) and first["job"]["nprocs"] == len(kids))
    if not want_cg[1]:
        # No cgroup total: the job's is the sum of its processes'.
        ok("%s: job.cpu_us is the sum of the processes' (%d, %d)" % (s, first["job"]["cpu_us"], sum(p["cpu_us"] for p in first["procs"])),
           first["job"]["cpu_us"] == sum(p["cpu_us"] for p in first["procs"]))
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
pairs = [(a, b) for a, b in (("taskstats", "bpf"), ("proc", "bpf"), ("proc", "taskstats"),
                             ("proc", "bpf-many"), ("proc", "bpf-anew"))
         if a in procs and b in procs]
for s, t in pairs:
    a, b = procs[t], procs[s]
    common = sorted(set(a) & set(b))
    ok("%s and %s: the same thread counts (%s)" % (t, s, [(p, a[p]["threads"], b[p]["threads"]) for p in common]),
       all(a[p]["threads"] == b[p]["threads"] for p in common))
    diffs = [(p, a[p]["cpu_us"], b[p]["cpu_us"]) for p in common]
    ok("%s and %s: CPU times within %s (%s)" % (t, s, "two clock ticks below (proc rounds utime and stime down)"
       if s == "proc" else "one clock tick (taskstats %d below)" % (slack // tick_us), diffs),
       all(close(s, t.split("-")[0], x, y) for _, x, y in diffs))
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
	kill -KILL $kids $stepd 2>/dev/null
	wait 2>/dev/null
	remove_cgroups
	kids= cg= stepd=
}

# remove_cgroups: the job cgroup of a comparison, deepest first.
remove_cgroups() {
	[ -n "$cg" ] && [ -d "$cg" ] || return 0
	find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
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
# v1's freezer hierarchy: proctrack/cgroup's job cgroup, the one a v1
# node without jobacct_gather/cgroup has.
v1f=$(awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' /proc/mounts)
if [ -n "$v1f" ] && [ "$v1f" = "$v1" ]; then
	echo "SKIP: freezer is mounted with cpuacct at $v1f: the cgroup1 comparison was that hierarchy"
elif [ -n "$v1f" ]; then
	compare freezer "$v1f"
else
	echo "SKIP: no cgroup v1 freezer hierarchy: the v1 freezer --cgroup comparison is for v1 hosts (the guests are v2)"
fi
[ $fails = 0 ]
