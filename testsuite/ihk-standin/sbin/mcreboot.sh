#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stand-in for IHK/McKernel's mcreboot.sh (see ../lib.sh): the options of
# the real script, checked against this machine.
set -u
# slurm-lwk runs tools through fexecve(): $0 is then /dev/fd/N.
self=$0
case $self in /dev/fd/*) self=$(readlink "/proc/$$/fd/${self#/dev/fd/}") ;; esac
. "$(dirname "$self")/../lib.sh"
standin_log "$@"
cpus='' mem='' map='' owner=''
while getopts :c:m:r:o:f:i:k:q:d:tO opt; do
	case $opt in
	c) cpus=$OPTARG ;;
	m) mem=$OPTARG ;;
	r) map=$OPTARG ;;
	o) owner=$OPTARG ;;
	f | i | k | q | d | t | O) ;;
	*) die "invalid option -$OPTARG" ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || die "unexpected argument '$1'"
[ "$(id -u)" = 0 ] || die "mcreboot.sh must run as root"
[ ! -e "$IHK_STANDIN/os0" ] || die "an OS instance is already booted; mcstop+release.sh first"
[ -n "$cpus" ] || die "no CPUs (-c)"
online=" $(expand_list "$(cat /sys/devices/system/cpu/online)") "
app=$(expand_list "$cpus")
for c in $app; do
	[[ $online == *" $c "* ]] || die "CPU $c is not online"
done
[ "$(wc -w <<<"$app")" -lt "$(wc -w <<<"$online")" ] || die "Linux needs at least one CPU"
# -m <size>@<NUMA-id>,...: each node must exist.
[[ $mem =~ ^[0-9]+[kKmMgG]?@[0-9]+(,[0-9]+[kKmMgG]?@[0-9]+)*$ ]] || die "invalid memory list '$mem'"
IFS=, read -ra chunks <<<"$mem"
for m in "${chunks[@]}"; do
	[ -d "/sys/devices/system/node/node${m#*@}" ] || die "NUMA node ${m#*@} does not exist"
done
# -r <CPU list>:<Linux CPU>+...: the lists cover exactly the -c CPUs,
# each target a Linux CPU (online, not given to McKernel).
[[ $map =~ ^[0-9,-]+:[0-9]+(\+[0-9,-]+:[0-9]+)*$ ]] || die "invalid IKC map '$map'"
covered=''
IFS=+ read -ra pairs <<<"$map"
for pair in "${pairs[@]}"; do
	to=${pair#*:}
	[[ $online == *" $to "* ]] || die "IKC target CPU $to is not online"
	[[ " $app " != *" $to "* ]] || die "IKC target CPU $to is one of McKernel's"
	covered+=" $(expand_list "${pair%:*}")"
done
[ "$(tr ' ' '\n' <<<"$covered" | grep . | sort -n | tr '\n' ' ')" = \
  "$(tr ' ' '\n' <<<"$app" | sort -n | tr '\n' ' ')" ] || die "IKC map '$map' does not cover the CPUs '$cpus' once each"
# -o <user>[:<group>]: the owner of /dev/mcd*, /dev/mcos*.
[[ $owner =~ ^[a-z0-9_]+(:[a-z0-9_]+)?$ ]] && getent passwd "${owner%%:*}" >/dev/null ||
	die "invalid owner '$owner'"
printf 'status RUNNING\ncpus %s\nmem %s\nikc_map %s\nowner %s\n' "$cpus" "$mem" "$map" "$owner" \
	>"$IHK_STANDIN/os0"
# The owner's mcexec logs its calls too.
chmod 666 "$IHK_STANDIN/calls"
