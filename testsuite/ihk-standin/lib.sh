# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The IHK/McKernel stand-in's shared state and checks.  No machine here
# has IHK's kernel modules, so the tests of slurm-lwk's mckernel backend
# run these scripts instead of IHK's tools: each takes the arguments the
# real tool takes (mcreboot.sh -c/-m/-r/-o, ihkosctl 0 get status,
# ihkconfig 0 query cpu|mem, mcstop+release.sh, mcexec PROGRAM), refuses
# what the real one would refuse, and records every call in
# $IHK_STANDIN/calls.  "Booting" records the partition in $IHK_STANDIN/os0.
IHK_STANDIN=/run/ihk-standin
mkdir -p "$IHK_STANDIN"

standin_log() {
	echo "$(basename "${self:-$0}") $*" >>"$IHK_STANDIN/calls"
}

die() {
	echo "error: $*" >&2
	exit 1
}

# expand_list "0-2,5": "0 1 2 5"; dies on anything else.
expand_list() {
	local part out=() a b
	[[ $1 =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || die "invalid CPU list '$1'"
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		a=${part%-*} b=${part#*-}
		[ "$a" -le "$b" ] || die "invalid range '$part'"
		out+=($(seq "$a" "$b"))
	done
	echo "${out[*]}"
}
