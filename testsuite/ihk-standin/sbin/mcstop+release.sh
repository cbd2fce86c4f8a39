#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Stand-in for IHK/McKernel's mcstop+release.sh (see ../lib.sh): no options.
set -u
. "$(dirname "$0")/../lib.sh"
standin_log "$@"
[ $# = 0 ] || die "mcstop+release.sh takes no arguments"
[ "$(id -u)" = 0 ] || die "mcstop+release.sh must run as root"
rm -f "$IHK_STANDIN/os0"
