#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run the job_submit.lua spec under every Lua that slurmctld may embed
# and that is installed: 5.1 (Debian 12's slurmctld) and 5.3.
# Exit 77 (automake's SKIP) with the reason when nothing can run it.
srcdir=${srcdir:-.}
BUSTED=${BUSTED:-$(command -v busted)}
if [ -z "$BUSTED" ]; then
	echo "SKIP: busted is not installed (Debian package lua-busted)"
	exit 77
fi
ran=0
for lua in "${LUA51:-$(command -v lua5.1)}" "${LUA53:-$(command -v lua5.3)}"; do
	[ -n "$lua" ] || continue
	echo "== busted under $("$lua" -v 2>&1)"
	# busted's runner is a Lua script: run it with the chosen interpreter.
	(cd "$srcdir" && srcdir="$srcdir" "$lua" "$BUSTED" --output=TAP testsuite/lua/job_submit_spec.lua) || exit 1
	ran=$((ran + 1))
done
if [ $ran -lt 2 ]; then
	echo "SKIP: need both lua5.1 and lua5.3 to check the 5.1-5.4 promise"
	exit 77
fi
