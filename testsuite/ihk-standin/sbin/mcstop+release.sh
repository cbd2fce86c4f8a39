#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stand-in for IHK/McKernel's mcstop+release.sh (see ../lib.sh): no options.
set -u
# slurm-lwk runs tools through fexecve(): $0 is then /dev/fd/N.
self=$0
case $self in /dev/fd/*) self=$(readlink "/proc/$$/fd/${self#/dev/fd/}") ;; esac
. "$(dirname "$self")/../lib.sh"
standin_log "$@"
[ $# = 0 ] || die "mcstop+release.sh takes no arguments"
[ "$(id -u)" = 0 ] || die "mcstop+release.sh must run as root"
rm -f "$IHK_STANDIN/os0"
