#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testsuite/integration/await.sh SECONDS WHAT ARGS...: on a node (run
# there by lib.sh's on_node), until WHAT holds, for at most SECONDS;
# exits 0 once it holds, 1 when it did not in time.
#
#   exists PATH              PATH is there
#   gone PATH                PATH is not there
#   line FILE REGEX          a whole line of FILE matches REGEX (bash's
#                            extended expressions, anchored at both ends)
#   all-lines REGEX FILE...  each FILE has a whole line matching REGEX
#   no-entry DIR REGEX       no entry of DIR has a name matching REGEX
#
# Only bash's own commands between looks, four times a second: under
# emulation a grep or a sleep each time costs the node tens of
# milliseconds of its CPUs, taken from the jobs the test is watching.
set -u
seconds=$1 what=$2
shift 2
exec {nap}<> <(:)

has_line() { # FILE REGEX
	local l
	[ -r "$1" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do
		[[ $l =~ ^($2)$ ]] && return 0
	done <"$1"
	return 1
}

holds() {
	local f
	case $what in
	exists) [ -e "$1" ] ;;
	gone) [ ! -e "$1" ] ;;
	line) has_line "$1" "$2" ;;
	all-lines)
		local re=$1
		shift
		for f; do has_line "$f" "$re" || return 1; done ;;
	no-entry)
		for f in "$1"/*; do
			[ -e "$f" ] || continue
			[[ ${f##*/} =~ $2 ]] && return 1
		done
		return 0 ;;
	*) echo "await.sh: unknown condition '$what' (exists, gone, line, all-lines, no-entry)" >&2; exit 2 ;;
	esac
}

end=$((SECONDS + seconds))
while :; do
	holds "$@" && exit 0
	[ "$SECONDS" -lt "$end" ] || exit 1
	read -rt 0.25 -u "$nap" || :
done
