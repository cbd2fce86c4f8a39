#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every man page renders with man -l and groff prints no warning.
srcdir=${srcdir:-.}
MAN=${MAN:-$(command -v man)}
if [ -z "$MAN" ]; then
	echo "SKIP: man is not installed (Debian package man-db)"
	exit 77
fi
rc=0
for page in "$srcdir"/man/*.[0-9]; do
	out=$(MANWIDTH=80 LC_ALL=C.UTF-8 "$MAN" --warnings -l "$page" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "FAIL: $page: $out"
		rc=1
	elif ! MANWIDTH=80 "$MAN" -l "$page" 2>/dev/null | grep -q 'SEE ALSO'; then
		echo "FAIL: $page renders without its SEE ALSO section"
		rc=1
	else
		echo "ok: $page"
	fi
done
exit $rc
