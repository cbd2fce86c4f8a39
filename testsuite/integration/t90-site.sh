# shellcheck shell=bash disable=SC2154  # job_state is set by wait_job in lib.sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What a site's stack adds around the plugin, where the cluster has it
# (the trixie guests run it: scripts/vmcluster's site stack): accounting
# in slurmdbd, systemd managing slurmd's scope, the extern step with a
# private /tmp for each job (job_container/tmpfs), configless nodes.
# Each test skips, saying which setting it needs, on a cluster without.

# need_config KEY VALUE: skip unless slurm.conf's KEY is VALUE here.
need_config() {
	local v
	v=$(config_value "$1")
	[ "$v" = "$2" ] || skip "needs $1=$2 (here: ${v:-unset})"
}

# The last node: a compute node other than the controller on the guests.
last_node() {
	node_n "$LWK_NODES"
}

# sacct_line JID: "State|ExitCode" of the job's allocation, once
# slurmdbd has its end (the controller sends it when the job ends).
sacct_line() {
	local jid=$1 line deadline
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		line=$(sacct -n -X -P -j "$jid" -o State,ExitCode 2>/dev/null | head -1)
		case $line in
		'' | PENDING* | RUNNING* | COMPLETING*) snooze 0.5 ;;
		*) echo "$line"; return 0 ;;
		esac
	done
	echo "${line:-no record}"
}

# Every job reaches accounting with its state and exit code, as the
# site's users and reports read them: a plain job, an --lwk job that
# exits 3, and a step the node refused (the reason is in the job's own
# output: no SPANK call writes an accounting field from the node).
test_accounting_records_each_job_with_its_state_and_exit_code() {
	need_config AccountingStorageType accounting_storage/slurmdbd
	local node plain failing refused name line
	node=$(last_node)
	plain=$(sbatch --parsable -N1 -w "$node" -o /dev/null --wrap true) || fail "sbatch failed"
	failing=$(sbatch --parsable -N1 -w "$node" -o /dev/null --lwk=os=1 --wrap 'exit 3') || fail "sbatch --lwk failed"
	name=$(unique_name refused)
	run_expect_fail "$LWK_WORK/err" srun -J "$name" -N1 -w "$node" --lwk=os=1024 true
	assert_grep "lwk: --lwk: os=1024 leaves no App core" "$LWK_WORK/err" "srun's output"
	refused=$(squeue -h -t all -n "$name" -o %i | head -1)
	[ -n "$refused" ] || fail "no job named $name"
	wait_job "$plain"
	wait_job "$failing"
	line=$(sacct_line "$plain")
	[ "$line" = "COMPLETED|0:0" ] || fail "job $plain in accounting: $line, expected COMPLETED|0:0"
	line=$(sacct_line "$failing")
	[ "$line" = "FAILED|3:0" ] || fail "--lwk job $failing in accounting: $line, expected FAILED|3:0"
	line=$(sacct_line "$refused")
	[[ $line == FAILED\|* ]] || fail "refused job $refused in accounting: $line, expected FAILED"
	all_nodes_usable
}

# An --lwk job's partitions live below Slurm's scope, which systemd
# manages (slurmd.service has Delegate=yes): when the job ends, systemd
# sees no failed unit and no scope of the job's, and no cgroup of the
# job's is left in the tree.
test_an_lwk_job_leaves_nothing_in_systemds_view() {
	local node jid out left
	node=$(last_node)
	on_node "$node" test -d /run/systemd/system || skip "needs systemd on $node"
	jid=$(sbatch --parsable -N1 -w "$node" -o "$LWK_WORK/lwk.out" --lwk=os=1 \
		--wrap 'srun grep Cpus_allowed_list /proc/self/status') || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/lwk.out")"
	out=$(on_node "$node" systemctl list-units --failed --plain --no-legend)
	[ -z "$out" ] || fail "failed units on $node after job $jid: $out"
	out=$(on_node "$node" systemctl list-units --type=scope --plain --no-legend)
	left=$(grep -v -e '^init\.scope ' -e "^${node}_slurmstepd\\.scope " <<<"$out" || true)
	[ -z "$left" ] || fail "scopes on $node after job $jid: $left"
	grep -q "^${node}_slurmstepd\\.scope " <<<"$out" || fail "no ${node}_slurmstepd.scope on $node: $out"
	left=$(on_node "$node" find /sys/fs/cgroup -type d -name "job_$jid")
	[ -z "$left" ] || fail "cgroups of job $jid left on $node: $left"
	out=$(on_node "$node" systemctl is-system-running || true)
	[ "$out" = running ] || fail "$node's systemd is $out after job $jid"
}

# With job_container/tmpfs each job has a /tmp of its own; the sampler,
# which starts beside the job, writes nothing into it.
test_the_sampler_leaves_the_jobs_private_tmp_alone() {
	need_config JobContainerType job_container/tmpfs
	local node jid dir=$LWK_WORK/sm-tmp mark
	node=$(last_node)
	mkdir -p "$dir"
	mark=lwk-private-tmp-$$-$RANDOM
	jid=$(sbatch --parsable -N1 -w "$node" -o "$LWK_WORK/tmp.out" --sync-monitor=interval=50ms,dir="$dir" \
		--wrap "ls -A /tmp >$LWK_WORK/tmp.before; touch /tmp/$mark; srun sleep 2; ls -A /tmp >$LWK_WORK/tmp.after") ||
		fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "job $jid ended $job_state: $(cat "$LWK_WORK/tmp.out")"
	ls "$dir"/syncmon-"$jid"-*.jsonl >/dev/null 2>&1 || fail "no sampler output for job $jid in $dir"
	[ ! -s "$LWK_WORK/tmp.before" ] || fail "job $jid's /tmp at its start: $(cat "$LWK_WORK/tmp.before")"
	[ "$(cat "$LWK_WORK/tmp.after")" = "$mark" ] ||
		fail "job $jid's /tmp at its end holds more than its own file: $(cat "$LWK_WORK/tmp.after")"
	# And it was the job's own /tmp: the node's has no such file.
	! on_node "$node" test -e "/tmp/$mark" || fail "the job's file is in $node's /tmp: no private /tmp"
}

# A configless node has no slurm.conf of its own: lwk-sweep finds
# slurmd's cached copy as Slurm's commands do, reads plugstack.conf
# from beside it (and the node's own plugstack.conf.d it includes),
# and asks slurmctld with it.
test_lwk_sweep_finds_the_configuration_on_a_configless_node() {
	local node jid out
	node=$(last_node)
	on_node "$node" test ! -e /etc/slurm/slurm.conf -a -e /run/slurm/conf/slurm.conf ||
		skip "needs a configless node ($node has /etc/slurm/slurm.conf or no /run/slurm/conf)"
	jid=$(sbatch --parsable -N1 -w "$node" -o /dev/null --lwk=os=1 --wrap 'srun sleep 300') ||
		fail "sbatch failed"
	defer scancel "$jid"
	await_on "$node" "$(wait_bound)" exists "$LWK_STATE_DIR/$node/$jid/lwk.state" ||
		fail "no --lwk state of job $jid on $node"
	out=$(on_node "$node" env -u SLURM_CONF "$(lwk_tool lwk-sweep)" --node "$node" --dry-run 2>&1) ||
		fail "lwk-sweep --dry-run failed on $node: $out"
	grep -q "^job $jid: running, kept$" <<<"$out" || fail "lwk-sweep on $node: $out"
	! grep -q "slurmctld cannot be asked" <<<"$out" || fail "lwk-sweep on $node could not load libslurm: $out"
	scancel "$jid"
	wait_job "$jid"
}

# slurmctld reads the policy file as SlurmUser: a file it cannot read
# refuses the plugin's jobs at submit with the file and the reason, plain
# jobs still run, and making it readable needs no restart.
test_a_policy_file_slurmctld_cannot_read_is_named_at_submit() {
	need_own_cluster "lwk_policy.conf's permissions"
	local user conf mode owner jid
	user=$(config_value SlurmUser)
	user=${user%%(*}
	[ -n "$user" ] && [ "$user" != root ] || skip "needs slurmctld as a user other than root (SlurmUser=${user:-unset})"
	conf=$(config_value SLURM_CONF)
	conf=${conf%/*}/lwk_policy.conf
	[ -e "$conf" ] || skip "no $conf next to slurm.conf"
	mode=$(stat -c %a "$conf")
	owner=$(stat -c %u:%g "$conf")
	defer chmod "$mode" "$conf"
	defer chown "$owner" "$conf"
	chown 0:0 "$conf"
	chmod 600 "$conf"
	run_expect_fail "$LWK_WORK/err" sbatch --lwk --wrap true
	assert_grep "lwk_policy.conf: Permission denied" "$LWK_WORK/err" "sbatch's refusal"
	jid=$(sbatch --parsable -H -o /dev/null --wrap true) || fail "a plain job was refused"
	scancel "$jid"
	chown "$owner" "$conf"
	chmod "$mode" "$conf"
	jid=$(sbatch --parsable -H -o /dev/null --lwk --wrap true) || fail "an --lwk job is still refused once the file is readable"
	scancel "$jid"
}

# irqbalance_ask NODE MESSAGE: irqbalance's answer on NODE (its socket
# takes only root's messages with their credentials attached: Python's
# sendmsg, which every guest has).
irqbalance_ask() {
	on_node "$1" python3 -c '
import glob, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(glob.glob("/run/irqbalance/irqbalance*.sock")[0])
s.sendmsg([sys.argv[1].encode()], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS,
    struct.pack("iII", os.getpid(), os.getuid(), os.getgid()))])
print(s.recv(4096).decode())' "$2"
}

# banned_cpus NODE: the CPUs irqbalance keeps IRQs off now, a cpulist.
banned_cpus() {
	irqbalance_ask "$1" setup | python3 -c '
import sys
m = int(sys.stdin.read().split("BANNED ")[1].split()[0].replace(",", ""), 16)
print(",".join(str(c) for c in range(m.bit_length()) if m >> c & 1))'
}

# cpus_union LIST...: the CPUs of these cpulists, one CPU each, by number.
cpus_union() {
	python3 -c '
import sys
s = set()
for t in sys.argv[1:]:
    for p in t.split(","):
        if p:
            a, _, b = p.partition("-")
            s.update(range(int(a), int(b or a) + 1))
print(",".join(map(str, sorted(s))))' "$@"
}

# irqs_on NODE CPULIST IRQ...: the IRQs of these whose affinity has a
# CPU of CPULIST.
irqs_on() {
	local node=$1 cpus=$2
	shift 2
	on_node "$node" python3 -c '
import sys
def cpus(text):
    out = set()
    for part in text.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out
app = cpus(sys.argv[1])
for irq in sys.argv[2:]:
    try:
        aff = cpus(open("/proc/irq/%s/smp_affinity_list" % irq).read())
    except OSError:
        continue
    if aff & app:
        print(irq, end=" ")' "$cpus" "$@"
}

# own_banned NODE: the CPUs irqbalance on NODE keeps IRQs off by
# itself, as irqbalance(1) says it decides: IRQBALANCE_BANNED_CPUS or
# IRQBALANCE_BANNED_CPULIST in its environment, else the kernel's
# isolated and nohz_full CPUs (a cpulist, one CPU each).
own_banned() {
	on_node "$1" python3 -c '
import subprocess
pid = subprocess.run(["systemctl", "show", "-P", "MainPID", "irqbalance"], capture_output=True, text=True).stdout.strip()
env = dict(v.split("=", 1) for v in open("/proc/%s/environ" % pid).read().split("\0") if "=" in v)
def cpus(text):
    out = set()
    for part in text.strip().split(","):
        if part and part[0].isdigit():
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out
if env.get("IRQBALANCE_BANNED_CPUS"):
    m = int(env["IRQBALANCE_BANNED_CPUS"].replace(",", ""), 16)
    s = {c for c in range(m.bit_length()) if m >> c & 1}
elif env.get("IRQBALANCE_BANNED_CPULIST"):
    s = cpus(env["IRQBALANCE_BANNED_CPULIST"])
else:
    s = cpus(open("/sys/devices/system/cpu/isolated").read()) | cpus(open("/sys/devices/system/cpu/nohz_full").read())
print(",".join(map(str, sorted(s))))'
}

# lwk_job_irqs NODE OUT WANT SECONDS [first]: an --lwk job on NODE,
# once its partition is ready and irqbalance bans WANT ("app": the
# job's App CPUs and its own), its moved IRQs looked at once a second
# for SECONDS after a rescan (as irqbalance makes on its own when CPUs
# or IRQs come and go; SIGHUP asks for one, unless one was just made: a
# new ban makes one too), every IRQ placed anew at its next pass (a
# rescan pass places nothing); "first": until a look finds one back.
# Writes to OUT the shell assignments app= (its App CPUs), moved= (the
# IRQs the plugin moved off them), kept= (those the kernel keeps where
# they are: per-CPU, managed), back= (each moved IRQ found back on an
# App CPU, once a look), secs= (the looks).  The job sleeps far longer
# than all this (its end puts the IRQs back); ended here.
lwk_job_irqs() {
	local node=$1 out=$2 want=$3 secs=$4 first=${5:-} jid state app listed kept moved='' back='' i
	jid=$(sbatch --parsable -N1 -w "$node" -o "$LWK_WORK/irq.out" --lwk=os=1 --wrap 'srun sleep 1000') ||
		fail "sbatch failed"
	defer scancel "$jid"
	state=$LWK_STATE_DIR/$node/$jid/lwk.state
	await_on "$node" "$(wait_bound)" line "$state" 'ready' || fail "job $jid's partition not ready on $node"
	app=$(on_node "$node" sed -n 's/^app_cpus //p' "$state")
	[ "$want" != app ] || want=$(cpus_union "$app" "$own")
	await_banned "$node" "$want" ||
		fail "irqbalance bans CPUs '$(banned_cpus "$node")' during job $jid, expected '$want' (App CPUs $app, its own '$own')"
	listed=$(on_node "$node" sed -n 's/^irq \([0-9]*\) .*/\1/p' "$state" | sort -un | tr '\n' ' ')
	# shellcheck disable=SC2086 # one IRQ a word
	kept=" $(unmovable "$node" $listed)"
	for i in $listed; do [[ $kept == *" $i "* ]] || moved+="$i "; done
	on_node "$node" systemctl kill -s HUP irqbalance
	for ((i = 1; i <= secs; i++)); do
		snooze 1
		# shellcheck disable=SC2086 # one IRQ a word
		[ -z "$moved" ] || back+=$(irqs_on "$node" "$app" $moved)
		[ -z "$first" ] || [ -z "$back" ] || break
	done
	printf 'app=%q moved=%q kept=%q back=%q secs=%q\n' "$app" "$moved" "$kept" "$back" "$((i > secs ? secs : i))" >"$out"
	scancel "$jid"
	wait_job "$jid"
}

# unmovable NODE IRQ...: the IRQs of these whose affinity the kernel
# does not let anyone set (per-CPU, managed): writing an IRQ's own
# affinity back to it fails for those, and changes nothing for others.
unmovable() {
	local node=$1
	shift
	on_node "$node" python3 -c '
import sys
for irq in sys.argv[1:]:
    path = "/proc/irq/%s/smp_affinity_list" % irq
    try:
        cur = open(path).read().strip()
        with open(path, "w") as f:
            f.write(cur)
    except OSError:
        print(irq, end=" ")' "$@"
}

# With irqbalance running, the IRQs the plugin moves off the App cores
# stay off them for the whole job, through irqbalance's rescans
# (irqbalance is told to keep off them), and after the job irqbalance
# may use those cores again.  The same job with lwk_irqbalance=no,
# first, measures what irqbalance does left alone.  irqbalance passes
# once a second while the test runs (from its first pass after it is
# asked; 10 s otherwise): the looks cover two 10 s passes left alone
# (a rescan, then a placement), one when told (its ban's rescan seen).
test_irqbalance_keeps_off_the_app_cores_during_an_lwk_job() {
	need_own_cluster "irqbalance's pass interval"
	local node own app moved kept back secs alone
	node=$(last_node)
	on_node "$node" sh -c 'ls /run/irqbalance/irqbalance*.sock' >/dev/null 2>&1 ||
		skip "needs irqbalance running on $node"
	irqbalance_ask "$node" "settings sleep 1" >/dev/null
	defer irqbalance_ask "$node" "settings sleep 10"
	own=$(own_banned "$node") || fail "cannot tell what irqbalance on $node bans by itself"
	# An earlier job's end is taken in at irqbalance's next pass.
	await_banned "$node" "$own" || fail "irqbalance on $node bans '$(banned_cpus "$node")', not its own '$own'"
	with_plugstack "lwk_irqbalance=no" lwk_job_irqs "$node" "$LWK_WORK/irq.alone" "$own" 22 first
	# shellcheck disable=SC1091 # written just above
	. "$LWK_WORK/irq.alone"
	[ -n "$moved" ] || skip "no IRQ of $node could be moved off App CPUs $app"
	alone="$(wc -w <<<"$back") of IRQs $moved back on App CPUs $app within $secs s of a rescan"
	[ -n "$back" ] ||
		skip "left alone, irqbalance put none of IRQs $moved back on App CPUs $app within 22 s of a rescan: the ban cannot be told from no ban here"
	lwk_job_irqs "$node" "$LWK_WORK/irq.told" app 12
	# shellcheck disable=SC1091
	. "$LWK_WORK/irq.told"
	[ -z "$back" ] || fail "IRQs back on App CPUs $app during the job with irqbalance told: $back"
	await_banned "$node" "$own" ||
		fail "irqbalance bans CPUs '$(banned_cpus "$node")' after the job, expected its own '$own'"
	echo "measure: irqbalance on $node after a rescan: with lwk_irqbalance=no, $alone; told by the plugin, none of IRQs $moved on them over $secs s (the kernel keeps IRQs$kept where they are)"
}

# await_banned NODE CPUS: until irqbalance on NODE bans exactly CPUS (a
# ban is taken in at its next pass: every 10 s), for at most 25 s.
await_banned() {
	local deadline
	for ((deadline = SECONDS + 25; SECONDS < deadline; )); do
		[ "$(banned_cpus "$1")" = "$2" ] && return 0
		snooze 1
	done
	return 1
}

# node_is_usable NODE: until slurmctld has NODE idle (a restarted slurmd
# registers again), within wait_bound.
node_is_usable() {
	local deadline
	for ((deadline = SECONDS + $(wait_bound); SECONDS < deadline; )); do
		[[ $(sinfo -h -n "$1" -o %t) == idle ]] && return 0
		snooze 1
	done
	return 1
}

# reinstall NODE CONF SAVED [LINK]: the package and the plugin's line
# back on NODE after the removal test (LINK: what its plugstack.conf.d
# was a link to), slurmd restarted with them; dpkg tried again for 2
# minutes (a removal cut short may still hold its lock).  Marks it done.
reinstall() {
	ON_NODE_SECONDS=300 on_node "$1" sh -c "for i in \$(seq 60); do
			dpkg -i /var/cache/slurm-lwk-test/slurm-lwk_*.deb >/dev/null 2>&1 && break; sleep 2; done
		dpkg -s slurm-lwk >/dev/null &&
		if [ -n '$4' ]; then rm -rf '${2%/*}' && ln -s '$4' '${2%/*}'; else cp '$3' '$2'; fi &&
		systemctl restart slurmd" ||
		fail "cannot install the package on $1 again"
	node_is_usable "$1" || fail "$1 is not idle after the package was installed again"
	touch "$LWK_WORK/reinstalled"
}

# The admin guide's removal, exactly its commands (the block marked
# "vmcluster: remove"), on a compute node after an --lwk job: nothing of
# the plugin is left (no file or cgroup named after it; hugepages and
# irqbalance's bans, which the job's epilog gave back, stay so), and the
# node runs jobs.  The package is then installed again.
test_the_guides_removal_leaves_nothing_of_the_plugin() {
	need_own_cluster 'the package, removed and installed again'
	local node block conf=/etc/slurm/plugstack.conf.d/lwk.conf saved huge jid left own out link
	node=$(last_node)
	on_node "$node" sh -c "ls /var/cache/slurm-lwk-test/slurm-lwk_*.deb && test -e $conf" >/dev/null ||
		skip "needs the package's .deb in /var/cache/slurm-lwk-test and $conf (the site stack's guests)"
	block=$(awk '/<!-- vmcluster: remove -->/ { f = 1; next }
		f && /^```sh$/ { g = 1; next } g && /^```$/ { exit } g' "$top/doc/admin-guide.md")
	[ -n "$block" ] || fail "doc/admin-guide.md has no block marked 'vmcluster: remove'"
	saved=$LWK_WORK/lwk.conf.saved
	on_node "$node" cp "$conf" "$saved" || fail "cannot keep $conf"
	huge=$(on_node "$node" sh -c 'cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages')
	jid=$(sbatch --parsable -N1 -w "$node" -o /dev/null --lwk=mem=16M --wrap 'srun true') || fail "sbatch failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "--lwk job $jid ended $job_state"
	await_on "$node" "$(wait_bound)" no-entry "$LWK_STATE_DIR/$node" '^[0-9]' ||
		fail "job $jid's state is still on $node"
	# The guests share plugstack.conf.d between nodes: this node's own
	# copy, so that the removal leaves the plugin on the others.
	link=$(on_node "$node" sh -c "readlink ${conf%/*} || true")
	if [ -n "$link" ]; then
		on_node "$node" sh -c "rm ${conf%/*} && mkdir ${conf%/*} && cp $link/*.conf ${conf%/*}/" ||
			fail "cannot give $node a plugstack.conf.d of its own"
	fi
	rm -f "$LWK_WORK/reinstalled"
	defer "[ -e '$LWK_WORK/reinstalled' ] || reinstall '$node' '$conf' '$saved' '$link'"
	# An admin answers apt's question (apt 3 asks before it removes).
	out=$(ON_NODE_SECONDS=600 on_node "$node" bash -c 'yes | sh -ec "$1"' removal "$block" 2>&1) ||
		fail "the guide's removal failed on $node: $out"
	on_node "$node" sh -c '! dpkg -s slurm-lwk >/dev/null 2>&1' || fail "slurm-lwk is still installed on $node"
	# Not the guests' own tools (lwk-guest-*) nor the test's copy.
	left=$(on_node "$node" sh -c "find /etc /usr /var /run /sys/fs/cgroup -path /var/cache/slurm-lwk-test -prune -o \
		-iname '*lwk*' ! -iname '*lwk-guest*' -print 2>/dev/null; exit 0") || fail "cannot look for what is left on $node"
	[ -z "$left" ] || fail "left on $node after the guide's removal: $left"
	[ "$(on_node "$node" sh -c 'cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages')" = "$huge" ] ||
		fail "hugepages on $node differ from before the job"
	if on_node "$node" systemctl -q is-active irqbalance; then
		own=$(own_banned "$node") || fail "cannot tell what irqbalance on $node bans by itself"
		await_banned "$node" "$own" || fail "irqbalance on $node bans '$(banned_cpus "$node")', not its own '$own'"
	fi
	node_is_usable "$node" || fail "$node is not idle after the removal"
	jid=$(sbatch --parsable -N1 -w "$node" -o /dev/null --wrap true) || fail "sbatch of a plain job failed"
	wait_job "$jid"
	[ "$job_state" = COMPLETED ] || fail "a plain job on $node ended $job_state after the removal"
	reinstall "$node" "$conf" "$saved" "$link"
}
