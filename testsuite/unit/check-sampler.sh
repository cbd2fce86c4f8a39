#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lwk-syncmon on its own, outside Slurm: it finds the processes of a job
# by their environment, ticks on the grid, flushes at flush ticks only,
# pins itself with --cpus, writes its footer on SIGTERM, and stops by
# itself once its job has left the node.
# Needs root (it takes the job user's identity); exit 77 otherwise.
set -u
bin=${SYNCMON:-./lwk-syncmon}
fails=0
ok() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: lwk-syncmon must run as root (it opens its output as the job's user)"
	exit 77
fi
tmp=$(mktemp -d)
# The job user (nobody) reaches its own directories in it.
chmod 711 "$tmp"
trap 'kill $kids 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out" "$tmp/state"
kids=
for _ in $(seq 20); do
	SLURM_JOB_ID=4242 SLURMD_NODENAME=tnode sleep 30 &
	kids="$kids $!"
done
SLURM_JOB_ID=4243 SLURMD_NODENAME=tnode sleep 30 & # another job: not counted
kids="$kids $!"
# Until every child has exec'd with its environment: before that its
# /proc/PID/environ is this shell's, and a first full scan made then
# (a loaded machine, make distcheck's parallel tests) misses it until
# the next full scan, 10 ticks later.
for _ in $(seq 100); do
	late=0
	for k in $kids; do
		tr '\0' '\n' </proc/$k/environ 2>/dev/null | grep -q '^SLURM_JOB_ID=424[23]$' || late=1
	done
	[ $late = 0 ] && break
	sleep 0.1
done
"$bin" --job 4242 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/state" \
	--options interval=50ms,flush=4,fullscan=10 --cpus 0 &
mon=$!
# 1.5 s from its first tick on (its log says where it writes once it
# has started), not from its fork: loading the BPF source takes longer
# on a busy machine.
for _ in $(seq 100); do grep -q '^.*writing ' $tmp/state/syncmon.log 2>/dev/null && break; sleep 0.1; done
sleep 1.5
ok "pinned to CPU 0 by --cpus" "grep -q '^Cpus_allowed_list:[[:space:]]*0$' /proc/$mon/status"
ok "its pid is in the state directory" "[ \"\$(cat $tmp/state/syncmon.pid)\" = $mon ]"
# Once its source is open it holds no capability to load BPF or to go
# past the user's quota: CAP_SYS_ADMIN (21), CAP_SYS_RESOURCE (24),
# CAP_PERFMON (38), CAP_BPF (39).
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/$mon/status)
ok "it gave up CAP_SYS_ADMIN, CAP_SYS_RESOURCE, CAP_PERFMON and CAP_BPF (CapEff $capeff)" \
	"[ -n '$capeff' ] && [ \$(( 0x$capeff & ((1 << 21) | (1 << 24) | (1 << 38) | (1 << 39)) )) = 0 ]"
# For the rest of the job it keeps CAP_DAC_READ_SEARCH (2, the job's
# 0400 environ files), CAP_NET_ADMIN (12, taskstats) and, finding the
# job by its environment (no --cgroup), CAP_SYS_PTRACE (19); before
# Linux 5.19 the BPF ones (21, 38, 39) to read its BPF fds: nothing in
# its bounding set, no new privileges.
allowed=$(((1 << 2) | (1 << 12) | (1 << 19)))
if printf '%s\n5.19\n' "$(uname -r | cut -d- -f1)" | sort -V -C; then
	allowed=$((allowed | (1 << 21) | (1 << 38) | (1 << 39)))
fi
ok "it keeps only what sampling needs (CapEff $capeff)" "[ \$(( 0x$capeff & ~$allowed )) = 0 ]"
ok "its bounding set is empty" "grep -q '^CapBnd:[[:space:]]*0*$' /proc/$mon/status"
ok "no_new_privs is set" "grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/$mon/status"
# The BPF objects it holds (the source=bpf that auto picks where it can):
# their ids, from its fds, to look for once it has gone.
bpf_ids=$(cat /proc/$mon/fdinfo/* 2>/dev/null | sed -n 's/^\(prog_id\|link_id\|map_id\):[[:space:]]*\([0-9]*\)$/\1 \2/p' | sort -u)
kill -TERM $mon
wait $mon
ok "exits 0 on SIGTERM" "[ $? = 0 ]"
f=$tmp/out/syncmon-4242-tnode.jsonl
if ! head -1 "$f" | grep -q '"source":"bpf"'; then
	echo "SKIP: nothing of BPF to find unloaded: the sampler used $(head -1 "$f" | sed -n 's/.*"source":"\([a-z]*\)".*/\1/p')"
elif ! command -v bpftool >/dev/null; then
	echo "SKIP: nothing of BPF left loaded: no bpftool to look with"
else
	ok "it held its BPF program, link and map while it ran ($(echo $bpf_ids))" \
		"echo '$bpf_ids' | grep -q '^prog_id ' && echo '$bpf_ids' | grep -q '^link_id ' && echo '$bpf_ids' | grep -q '^map_id '"
	# The kernel frees a program after an RCU grace period, and its
	# maps after it: up to 5 s.
	for _ in $(seq 50); do
		left=$(echo "$bpf_ids" | while read -r kind id; do
			[ -n "$id" ] && bpftool "${kind%_id}" show id "$id" >/dev/null 2>&1 && echo "$kind $id"
		done)
		[ -z "$left" ] && break
		sleep 0.1
	done
	ok "nothing of it stays loaded in the kernel after it exits${left:+ ($left)}" "[ -z '$left' ]"
fi
# In a pid namespace of its own (slurmd in a container) the task
# iterator's pids are not the ones the sampler lists: auto says so and
# reads another source, which sees the job's process.
if [ "$(head -1 "$f" | sed -n 's/.*"source":"\([a-z]*\)".*/\1/p')" != bpf ]; then
	echo "SKIP: a pid namespace's fallback: the sampler does not use bpf here"
elif ! command -v unshare >/dev/null; then
	echo "SKIP: a pid namespace's fallback: no unshare"
else
	mkdir -p "$tmp/ns-out" "$tmp/ns-state"
	SLURM_JOB_ID=4245 SLURMD_NODENAME=tnode unshare -p -f --mount-proc sh -c \
		"sleep 30 & env -u SLURM_JOB_ID '$bin' --job 4245 --node tnode --uid 0 --gid 0 --dir '$tmp/ns-out' \
		--state '$tmp/ns-state' --options interval=50ms,flush=1 & m=\$!; sleep 1; kill -TERM \$m; wait \$m"
	nsf=$tmp/ns-out/syncmon-4245-tnode.jsonl
	ok "in a pid namespace of its own: not bpf, and the header says why ($(head -1 "$nsf" | grep -o '"source":.*"idle' ))" \
		"head -1 '$nsf' | grep -q '\"source_fallback\":\"bpf: the sampler runs in a pid namespace of its own'"
	ok "in a pid namespace of its own: the job's process is seen" "grep -q '\"comm\":\"sleep\"' '$nsf'"
fi
ok "one file, named by job and node" "[ -f $f ]"
ok "a header first" "head -1 $f | grep -q '^{\"format\":\"slurm-lwk-syncmon\",\"version\":1,\"job\":4242,\"node\":\"tnode\"'"
ok "a footer last, nothing lost" "tail -1 $f | grep -q '^{\"end\":true,.*\"dropped\":0'"
samples=$(grep -c '^{"k"' "$f")
span=$(sed -n 's/^{"k":\([0-9]*\),.*/\1/p' "$f" | sed -n '1p;$p' | paste -sd' ' - | awk '{ print $2 - $1 + 1 }')
# How many ticks fit in 1.5 s is the benchmarks' business (tick
# lateness), and how long it ran past them is this script's (a loaded
# machine takes longer over the checks above before it sends TERM):
# here, it kept sampling, and never more samples than the ticks its
# first and last samples span.
ok "it sampled on ($samples samples over a span of ${span:-no} ticks of 50 ms, at least 12)" \
	"[ $samples -ge 12 ] && [ -n '$span' ] && [ $samples -le ${span:-0} ]"
# With the span bound above this keeps a sampler that ticks faster than
# its grid from passing: none is taken before its tick (the times are
# compared as digit strings: ns since the epoch exceed a double).
ok "no sample before its tick: t_ns >= t_ideal_ns" \
	"sed -n 's/^{\"k\":[0-9]*,\"t_ideal_ns\":\([0-9]*\),\"t_ns\":\([0-9]*\),.*/\1 \2/p' $f | awk '{ i = \"\" \$1; t = \"\" \$2; if (length(t) < length(i) || (length(t) == length(i) && t < i)) bad = 1; n++ } END { exit bad || !n }'"
ok "one sample a tick: k only grows" \
	"sed -n 's/^{\"k\":\([0-9]*\),.*/\1/p' $f | awk 'NR > 1 && \$1 <= prev {bad=1} {prev=\$1} END {exit bad}'"
ok "every sample saw the job's 20 processes and not the other job's" \
	"! grep '^{\"k\"' $f | grep -vq '\"nprocs\":20,'"
# ns timestamps exceed a double: check the last 8 digits as text.
ok "ticks on the 50 ms grid" \
	"! sed -n 's/^{\"k\":[0-9]*,\"t_ideal_ns\":\([0-9]*\),.*/\1/p' $f | grep -qv '[05]0000000$'"
ok "flush ticks are exactly those with k % 4 == 0" \
	"! sed -n 's/^{\"k\":\([0-9]*\),.*\"flush\":\([a-z]*\),.*/\1 \2/p' $f | awk '((\$1 % 4 == 0) != (\$2 == \"true\")) {bad=1} END {exit !bad}'"
ok "idle processes skipped between full scans" "grep -q '\"full_scan\":false.*\"skipped\":20,' $f"
ok "the log says where it wrote" "grep -q 'writing $f' $tmp/state/syncmon.log"
# The BPF walks load from the light skeletons (relocated in the kernel):
# libbpf's only where those fail, which the log would say.
if grep -q 'reading processes from bpf' $tmp/state/syncmon.log; then
	ok "the bpf source loaded from the light skeleton" \
		"grep -q 'reading processes from bpf (light skeleton)' $tmp/state/syncmon.log"
fi
"$bin" --job 4242 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/state" --cpus x >/dev/null 2>&1
ok "a bad --cpus is refused (exit 2)" "[ $? = 2 ]"
# The safety net for a job whose epilog never runs: it stops once the job
# has had no process on the node for --orphan-after seconds, not before.
SLURM_JOB_ID=4244 SLURMD_NODENAME=tnode sleep 30 &
job=$!
kids="$kids $job"
"$bin" --job 4244 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/state" \
	--options interval=50ms,fullscan=4 --orphan-after 1 &
mon=$!
sleep 1.5
ok "runs on while the job has a process (orphan-after 1 s, 1.5 s in)" "kill -0 $mon"
kill $job
for _ in $(seq 60); do kill -0 $mon 2>/dev/null || break; sleep 0.1; done
ok "stops by itself about 1 s after the job's last process" "! kill -0 $mon 2>/dev/null"
wait $mon
ok "says why it stopped" "grep -q 'job 4244 has had no process on tnode for 1 s: stopping' $tmp/state/syncmon.log"
ok "and still writes its footer" "tail -1 $tmp/out/syncmon-4244-tnode.jsonl | grep -q '^{\"end\":true'"
"$bin" --job 4244 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/state" --orphan-after 0 >/dev/null 2>&1
ok "--orphan-after 0 is refused (exit 2)" "[ $? = 2 ]"
# The site's syncmon_fifo=: a real-time class, at the priority given
# (1 to 49, below threaded IRQ handlers), only pinned (--cpus), said in
# its log and its header; nothing else is a priority.
for bad in 0 50 x 4294967303; do
	"$bin" --job 4244 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/state" --fifo $bad >/dev/null 2>&1
	ok "--fifo $bad is refused (exit 2)" "[ $? = 2 ]"
done
fifo_run() { # STATE-DIR ARGS...: a sampler of job 4248 until its log says its class
	local state=$1
	shift
	rm -rf "$state" && mkdir "$state"
	"$bin" --job 4248 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$state" \
		--options interval=50ms "$@" &
	mon=$!
	for _ in $(seq 100); do grep -q 'SCHED_FIFO' "$state/syncmon.log" 2>/dev/null && break; sleep 0.1; done
}
SLURM_JOB_ID=4248 SLURMD_NODENAME=tnode sleep 30 &
kids="$kids $!"
if ! chrt -f 1 true 2>/dev/null; then
	echo "SKIP: --fifo: this machine refuses SCHED_FIFO to root (a container without CAP_SYS_NICE)"
else
	fifo_run "$tmp/fifo-state" --fifo 7 --cpus 0
	# /proc/PID/stat: field 40 rt_priority, 41 policy (1: SCHED_FIFO).
	ok "--fifo 7: it runs SCHED_FIFO at priority 7" \
		"[ \"\$(awk '{print \$40, \$41}' /proc/$mon/stat)\" = '7 1' ]"
	kill $mon
	wait $mon
	ok "--fifo 7: its log says so, and the most a tick may take (10% of 50 ms, at least 5 ms)" \
		"grep -q 'running SCHED_FIFO at priority 7 (syncmon_fifo=7), at most 5 ms a tick' $tmp/fifo-state/syncmon.log"
	ok "--fifo 7: its header says so" "head -1 $tmp/out/syncmon-4248-tnode.jsonl | grep -q '\"sched_fifo\":7,'"
	rm -f "$tmp/out/syncmon-4248-tnode.jsonl"
	fifo_run "$tmp/fifo-state" --fifo 7
	ok "--fifo 7 without --cpus: the normal class" "[ \"\$(awk '{print \$41}' /proc/$mon/stat)\" = 0 ]"
	kill $mon
	wait $mon
	ok "--fifo 7 without --cpus: its log says why" \
		"grep -q 'syncmon_fifo=7 without --cpus: a real-time sampler must be pinned' $tmp/fifo-state/syncmon.log"
	ok "--fifo 7 without --cpus: its header says 0" "head -1 $tmp/out/syncmon-4248-tnode.jsonl | grep -q '\"sched_fifo\":0,'"
	# A tick that runs past its share (here a /proc of 3000 processes
	# of the job to scan, 5 ms allowed): the kernel's SIGXCPU puts it
	# back in the normal class, for good.
	mkdir "$tmp/bigproc"
	(cd "$tmp/bigproc" && seq 100000 103000 | xargs mkdir &&
		for d in 1*; do printf 'SLURM_JOB_ID=4249\0SLURMD_NODENAME=tnode\0' >"$d/environ"; done)
	for f in stat meminfo loadavg uptime; do cat /proc/$f >"$tmp/bigproc/$f"; done
	rm -rf "$tmp/big-state" && mkdir "$tmp/big-state"
	"$bin" --job 4249 --node tnode --uid 0 --gid 0 --dir "$tmp/out" --state "$tmp/big-state" \
		--options interval=50ms,source=proc --proc "$tmp/bigproc" --cpus 0 --fifo 3 &
	mon=$!
	for _ in $(seq 100); do grep -q 'normal class from now on' "$tmp/big-state/syncmon.log" 2>/dev/null && break; sleep 0.1; done
	ok "--fifo 3, a tick past its 5 ms: back in the normal class" "[ \"\$(awk '{print \$41}' /proc/$mon/stat)\" = 0 ]"
	kill $mon
	wait $mon
	ok "--fifo 3, a tick past its 5 ms: its log says so" \
		"grep -q 'a tick ran past its share at SCHED_FIFO (syncmon_fifo=3): sampling in the normal class from now on' $tmp/big-state/syncmon.log"
fi
ok "without --fifo: the header says 0" "head -1 $tmp/out/syncmon-4242-tnode.jsonl | grep -q '\"sched_fifo\":0,'"
# A job of another user than root, found by its environment: with only
# what it keeps, the sampler still reads the job's processes (their
# environ is theirs, mode 0400).
mkdir -m 777 "$tmp/user-out"
for _ in 1 2 3; do
	SLURM_JOB_ID=4247 SLURMD_NODENAME=tnode setpriv --reuid 65534 --regid 65534 --clear-groups sleep 30 &
	kids="$kids $!"
done
sleep 0.3
rm -rf "$tmp/user-state" && mkdir "$tmp/user-state"
timeout -s TERM 2 "$bin" --job 4247 --node tnode --uid 65534 --gid 65534 --dir "$tmp/user-out" \
	--state "$tmp/user-state" --options interval=50ms,fullscan=1 >/dev/null 2>&1
f=$tmp/user-out/syncmon-4247-tnode.jsonl
ok "a job of uid 65534: every sample after the first saw its 3 processes" \
	"[ \$(grep -c '^{\"k\"' $f) -ge 5 ] && ! grep '^{\"k\"' $f | tail -n +2 | grep -vq '\"nprocs\":3,'"
# The output directory is opened as the job's user, whole: not through
# /proc's links to another process's directories, which root follows
# past directories the user cannot enter (here a 0700 one of root's),
# nor through the user's own (a magic link is never a directory to
# write into).  The job's user: nobody (65534).
mkdir -m 700 "$tmp/root-only"
mkdir -m 777 "$tmp/root-only/open"
(cd "$tmp/root-only/open" && exec sleep 30 3<"$tmp/root-only/open") &
held=$!
kids="$kids $held"
mkdir -m 777 "$tmp/own"
(cd "$tmp/own" && exec setpriv --reuid 65534 --regid 65534 --clear-groups sleep 30) &
own=$!
kids="$kids $own"
sleep 0.3
for link in "/proc/$held/cwd" "/proc/$held/fd/3" "/proc/$own/cwd"; do
	rm -rf "$tmp/link-state"
	mkdir "$tmp/link-state"
	timeout -s TERM 5 "$bin" --job 4246 --node tnode --uid 65534 --gid 65534 --dir "$link" \
		--state "$tmp/link-state" --options interval=50ms >/dev/null 2>&1
	ok "$link: nothing written through it" "[ -z \"\$(find $tmp/root-only/open $tmp/own -mindepth 1)\" ]"
	ok "$link: the log says it could not open it" \
		"grep -q 'cannot open the output directory $link as uid 65534: ' $tmp/link-state/syncmon.log"
done
ok "a link to the user's own process's directory: said to be a magic link" \
	"grep -q 'as uid 65534: it goes through a /proc magic link' $tmp/link-state/syncmon.log"
[ $fails = 0 ]
