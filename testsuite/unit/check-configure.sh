#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# configure on fake Slurm installs (copies of the headers this build
# uses, with SLURM_VERSION_NUMBER rewritten, and a slurm.pc):
#   - Slurm 21.08 (--with-slurm): refused, naming what it found and what
#     is needed;
#   - headers 24.11.5 with a slurm.pc saying 24.05.1 under the prefix:
#     refused, naming both;
#   - headers and slurm.pc both 24.11.5, found through pkg-config
#     (PKG_CONFIG_PATH, no --with-slurm): accepted, built for 24.11;
#   - a prefix without headers: refused, naming where it looked.
# Runs a copy of configure in a scratch directory (the source tree may
# be configured in place).  One "ok:"/"FAIL:" line a case.
set -u
srcdir=${srcdir:-.}
incdir=${SLURM_INCDIR:-/usr/include}
if [ ! -f "$incdir/slurm/spank.h" ]; then
	echo "SKIP: no Slurm headers in $incdir to copy"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# fake_slurm DIR VNUM: Slurm's headers under DIR/include, version VNUM.
fake_slurm() {
	mkdir -p "$1/include/slurm"
	cp "$incdir"/slurm/*.h "$1/include/slurm/"
	sed -i "s/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER $2/" \
		"$1/include/slurm/slurm_version.h"
}
# slurm_pc DIR VERSION: DIR/lib/pkgconfig/slurm.pc as Slurm writes it.
slurm_pc() {
	mkdir -p "$1/lib/pkgconfig"
	printf 'libdir=%s/lib\nincludedir=%s/include\n\nName: slurm\nDescription: Slurm Workload Manager\nVersion: %s\nCflags: -I${includedir}\nLibs: -L${libdir} -lslurm\n' \
		"$1" "$1" "$2" >"$1/lib/pkgconfig/slurm.pc"
}
# run NAME ENV... -- ARGS...: configure in a fresh copy of its own
# ($tmp/NAME.src), in the background (the cases are independent; one
# at a time they took 47 s of the unit stage); output in $tmp/NAME.out,
# exit status in $tmp/NAME.rc.
run() {
	name=$1
	shift
	mkdir -p "$tmp/$name.src/spank"
	cp "$srcdir/configure" "$srcdir/Makefile.in" "$srcdir/slurm-lwk.spec.in" "$tmp/$name.src/"
	cp -R "$srcdir/build-aux" "$tmp/$name.src/"
	cp "$srcdir/spank/lwk_dispatch.c" "$tmp/$name.src/spank/"
	(
		cd "$tmp/$name.src" && env "$@" >"$tmp/$name.out" 2>&1
		echo $? >"$tmp/$name.rc"
	) &
}
# rc NAME: a finished case's exit status.
rc() { cat "$tmp/$1.rc" 2>/dev/null || echo 255; }
# expect NAME WHAT RC PATTERN...: exit status RC and every PATTERN in the output.
expect() {
	name=$1 what=$2 want=$3 rc=$4
	shift 4
	bad=
	if [ "$want" = fail ] && [ "$rc" = 0 ]; then
		bad="configure succeeded"
	elif [ "$want" = pass ] && [ "$rc" != 0 ]; then
		bad="configure failed ($(grep 'error:' "$tmp/$name.out" | head -n 1))"
	fi
	for p in "$@"; do
		[ -n "$bad" ] && break
		grep -qF -- "$p" "$tmp/$name.out" || bad="no '$p' in its output"
	done
	if [ -n "$bad" ]; then
		echo "FAIL: $what: $bad"
		sed 's/^/    /' "$tmp/$name.out" | tail -n 5
		failed=1
	else
		echo "ok: $what"
	fi
}

fake_slurm "$tmp/s2108" 0x150808
run old PKG_CONFIG_PATH= ./configure --with-slurm="$tmp/s2108"
fake_slurm "$tmp/mixed" 0x180b05
slurm_pc "$tmp/mixed" 24.05.1
run mixed ./configure --with-slurm="$tmp/mixed"
if [ -n "${PKG_CONFIG:-}" ]; then
	fake_slurm "$tmp/s2411" 0x180b05
	slurm_pc "$tmp/s2411" 24.11.5
	run pc PKG_CONFIG_PATH="$tmp/s2411/lib/pkgconfig" ./configure
fi
run none PKG_CONFIG_PATH= ./configure --with-slurm="$tmp/nothing"
wait

expect old "Slurm 21.08 is refused" fail "$(rc old)" \
	"error: Slurm 21.08.8 found ($tmp/s2108/include/slurm/slurm_version.h)" \
	"slurm-lwk needs Slurm 22.05 or newer"

expect mixed "a slurm.pc of another release than the headers is refused" fail "$(rc mixed)" \
	"$tmp/mixed/lib/pkgconfig/slurm.pc says Slurm 24.05.1" \
	"$tmp/mixed/include/slurm/slurm_version.h says 24.11.5"

if [ -z "${PKG_CONFIG:-}" ]; then
	echo "SKIP: Slurm found through slurm.pc: pkg-config is not installed"
else
	echo "built for: $(sed -n 's/^SLURM_MAJOR_MINOR = //p' "$tmp/pc.src/Makefile" 2>/dev/null)" >>"$tmp/pc.out"
	expect pc "Slurm 24.11 is found through slurm.pc" pass "$(rc pc)" \
		"Slurm headers:     $tmp/s2411/include (Slurm 24.11.5" \
		"slurm.pc:          $tmp/s2411/lib/pkgconfig/slurm.pc" \
		"built for: 24.11"
fi

expect none "a prefix without Slurm's headers is refused" fail "$(rc none)" \
	"slurm/slurm_version.h) not found under $tmp/nothing/include"

exit $failed
