#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testsuite/unit/check-package.sh DIR: the packages scripts/package put
# in DIR, checked against the Slurm this host builds for (its
# slurm_version.h, read here, not taken from the build):
#   .deb  Version names the release (+slurmMAJOR.MINOR); Depends pins the
#         package that owns the plugin directory to that release series
#         (>= MM~, << next~), and dpkg (in a scratch root and database)
#         installs it beside that package of this release only; lwk.so
#         in that directory, its plugin_version
#         the headers' major.minor; the commands, the sampler where lwk.so
#         looks for it, lwk-sweep's libslurmfull.so in the pinned package's
#         directory; the man pages, job_submit.lua, the example
#         plugstack.conf.d/lwk.conf naming the packaged lwk.so; nothing
#         under /etc and no maintainer script (installing enables
#         nothing); lintian on the .deb and the .changes prints no error
#         or warning (what it would say is explained in
#         debian/*lintian-overrides);
#   .rpm  Release names the release (.slurmMAJOR.MINOR); Requires pins
#         slurm to it, and rpm --test (a scratch database with a stand-in
#         slurm) accepts this release only; the same files as the .deb (man pages' .gz, the
#         plugin directory and Debian's changelog, copyright and lintian
#         overrides aside); lwk-sweep's libslurmfull.so beside lwk.so; nothing
#         under /etc; lwk.so's plugin_version.
# One "ok:"/"FAIL:"/"SKIP:" line a check; exits 1 on any failure.
set -u
dir=${1:?usage: check-package.sh DIR}
dir=$(cd "$dir" && pwd) || exit 1
incdir=${SLURM_INCDIR:-/usr/include}
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

vnum=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$incdir/slurm/slurm_version.h" 2>/dev/null)
if [ -z "$vnum" ]; then
	echo "FAIL: no SLURM_VERSION_NUMBER in $incdir/slurm/slurm_version.h"
	exit 1
fi
mm=$(printf '%d.%02d' $((vnum >> 16)) $(((vnum >> 8) & 255)))
next=$(printf '%d.%02d' $((vnum >> 16)) $((((vnum >> 8) & 255) + 1)))
echo "built for Slurm $mm (from $incdir/slurm/slurm_version.h); the pin's upper bound is $next"

# plugin_version FILE: the plugin_version an ELF plugin exports, as 0xMMmmuu.
plugin_version() {
	local addr
	addr=$(objdump -T "$1" 2>/dev/null | awk '$NF == "plugin_version" { print $1 }')
	[ -n "$addr" ] || return 1
	objdump -s --start-address=0x"$addr" --stop-address=$((0x$addr + 4)) "$1" |
		awk 'NR > 4 || /^ [0-9a-f]+ / { print $2; exit }' |
		sed 's/\(..\)\(..\)\(..\)\(..\)/0x\4\3\2\1/'
}
# same_series V: V (0x...) is the headers' major.minor.
same_series() { [ -n "$1" ] && [ $(($1 & 0xffff00)) = $((vnum & 0xffff00)) ]; }
# Slurm versions around the one built for: an older and a newer
# release series, and a later micro release of this one.
major=$((vnum >> 16))
older=$((major - 1)).08.8
newer=$((major + 2)).11.5
same=$mm.99

# dpkg_accepts DEB OWNER VERSION: does dpkg configure DEB where OWNER
# VERSION is installed?  In a scratch root with a scratch database
# holding OWNER at VERSION and every other dependency at any version:
# the host's dpkg database and files are not touched.  Prints dpkg's
# complaint.
dpkg_accepts() {
	local root=$tmp/dpkg-$3 p
	mkdir -p "$root/admin/updates" "$root/admin/info" "$root/admin/triggers" "$root/inst"
	touch "$root/admin/available"
	for p in $(dpkg-deb -f "$1" Depends | tr ',|' '\n\n' | sed 's/(.*//; s/:any//; s/ //g' | sort -u); do
		if [ "$p" = "$2" ]; then
			printf 'Package: %s\nStatus: install ok installed\nArchitecture: all\nVersion: %s\nMaintainer: none\nDescription: stand-in\n\n' "$p" "$3-1"
		else
			printf 'Package: %s\nStatus: install ok installed\nArchitecture: all\nVersion: 99:99\nMaintainer: none\nDescription: stand-in\n\n' "$p"
		fi
	done >"$root/admin/status"
	dpkg --admindir="$root/admin" --instdir="$root/inst" --force-not-root --force-script-chrootless \
		--log=/dev/null -i "$1" >"$root/out" 2>&1
	local rc=$?
	grep -A2 'depends on' "$root/out" | tr -s ' \n' ' '
	return $rc
}

# rpm_accepts RPM VERSION: does rpm find RPM's slurm requirements met
# where slurm VERSION is installed?  A stand-in slurm package in a
# scratch database (rpm --test: nothing is installed).  Prints the
# unmet slurm requirements.
rpm_accepts() {
	local d=$tmp/rpm-$2
	mkdir -p "$d/db"
	printf 'Name: slurm\nVersion: %s\nRelease: 1\nSummary: stand-in\nLicense: none\nBuildArch: %s\n%%description\nstand-in\n%%files\n' \
		"$2" "$(rpm --eval '%{_arch}')" >"$d/slurm.spec"
	rpmbuild -bb --quiet --define "_topdir $d/top" "$d/slurm.spec" >/dev/null 2>&1 || { echo "cannot build a stand-in slurm $2"; return 2; }
	rpm --dbpath "$d/db" --initdb
	rpm --dbpath "$d/db" -i --justdb --nodeps "$d"/top/RPMS/*/slurm-"$2"-1.*.rpm >/dev/null 2>&1
	rpm --dbpath "$d/db" -i --test "$1" 2>&1 | grep '^[[:space:]]*slurm[ (].* is needed by' | sed 's/^[[:space:]]*//; s/ is needed by.*//' | paste -sd, -
	! rpm --dbpath "$d/db" -i --test "$1" 2>&1 | grep -q '^[[:space:]]*slurm[ (].* is needed by'
}

# ---- the .deb
mapfile -t debs < <(ls "$dir"/slurm-lwk_*.deb 2>/dev/null)
if [ ${#debs[@]} != 1 ]; then
	fail "one slurm-lwk .deb in $dir (found ${#debs[@]})"
else
	deb=${debs[0]}
	ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
	version=$(dpkg-deb -f "$deb" Version)
	depends=$(dpkg-deb -f "$deb" Depends)
	check "the .deb's version $version names Slurm $mm" [ "${version##*+slurm}" = "$mm" ]
	dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$tmp/deb.files"
	plugin=$(grep '/lwk\.so$' "$tmp/deb.files")
	plugdir=${plugin%/lwk.so}
	# The package that owns the plugin directory here: Debian's
	# slurm-wlm-basic-plugins or SchedMD's slurm-smd.
	owner=$(dpkg-query -S "$plugdir/libslurmfull.so" 2>/dev/null | cut -d: -f1)
	check "lwk.so in Slurm's plugin directory (${plugin:-no lwk.so}; libslurmfull.so there from ${owner:-no package})" \
		test -n "$plugin" -a -n "$owner"
	pin_lo=$(grep -c "\(^\|, \)${owner:-?} (>= $mm~)\(,\|$\)" <<<"$depends")
	pin_hi=$(grep -c "\(^\|, \)${owner:-?} (<< $next~)\(,\|$\)" <<<"$depends")
	check "Depends pins ${owner:-the owner of the plugin directory} to $mm.x ($depends)" \
		test "$pin_lo" = 1 -a "$pin_hi" = 1
	for f in /usr/bin/lwk-topology /usr/sbin/lwk-sweep /usr/bin/syncmon-report \
		/usr/libexec/slurm-lwk/lwk-syncmon \
		/usr/share/man/man1/slurm-lwk.1.gz /usr/share/man/man1/lwk-topology.1.gz \
		/usr/share/man/man1/syncmon-report.1.gz /usr/share/man/man5/lwk_policy.conf.5.gz \
		/usr/share/man/man8/slurm-lwk.8.gz /usr/share/man/man8/lwk-sweep.8.gz \
		/usr/share/slurm-lwk/lwk_policy.lua /usr/share/slurm-lwk/job_submit.lua \
		/usr/share/slurm-lwk/lwk_policy.conf.example \
		/usr/share/doc/slurm-lwk/examples/plugstack.conf.d/lwk.conf; do
		check "the .deb has $f" grep -qxF "$f" "$tmp/deb.files"
	done
	check "the .deb installs nothing under /etc" eval '! grep -q "^/etc" "$tmp/deb.files"'
	dpkg-deb -e "$deb" "$tmp/deb.control"
	check "the .deb has no conffile and no maintainer script" \
		eval '[ -z "$(ls "$tmp/deb.control" | grep -vx "control\|md5sums")" ]'
	said=$(dpkg_accepts "$deb" "${owner:-?}" "$same")
	check "dpkg installs it beside ${owner:-?} $same-1${said:+ ($said)}" test $? = 0
	said=$(dpkg_accepts "$deb" "${owner:-?}" "$newer")
	check "dpkg refuses it beside ${owner:-?} $newer-1 (${said:-no complaint})" \
		eval '[ -n "$said" ] && [[ $said == *"depends on ${owner:-?} (<< $next~)"* ]]'
	said=$(dpkg_accepts "$deb" "${owner:-?}" "$older")
	check "dpkg refuses it beside ${owner:-?} $older-1 (${said:-no complaint})" \
		eval '[ -n "$said" ] && [[ $said == *"depends on ${owner:-?} (>= $mm~)"* ]]'
	dpkg-deb -x "$deb" "$tmp/deb"
	pv=$(plugin_version "$tmp/deb$plugin")
	check "the .deb's lwk.so has plugin_version ${pv:-none}, Slurm $mm's" same_series "$pv"
	check "the example snippet loads the packaged lwk.so" \
		grep -qx "required $plugin on_error=fail_job" "$tmp/deb/usr/share/doc/slurm-lwk/examples/plugstack.conf.d/lwk.conf"
	check "lwk.so runs the sampler where the .deb puts it (/usr/libexec/slurm-lwk/)" \
		grep -aq '/usr/libexec/slurm-lwk/lwk-syncm' "$tmp/deb$plugin"
	check "lwk-sweep loads $plugdir/libslurmfull.so (from $owner)" \
		grep -aqF "$plugdir/libslurmfull.so" "$tmp/deb/usr/sbin/lwk-sweep"
	if ! command -v lintian >/dev/null; then
		echo "SKIP: lintian is not installed (scripts/deps installs it as root)"
	else
		changes=$(ls "$dir"/slurm-lwk_*.changes 2>/dev/null | head -n 1)
		lintian ${changes:-$deb} >"$tmp/lintian.out" 2>&1
		grep -v 'running with root privileges is not recommended' "$tmp/lintian.out" >"$tmp/lintian.said"
		if grep -q '^[EW]: ' "$tmp/lintian.said"; then
			fail "lintian on $(basename "${changes:-$deb}"):"
			sed 's/^/    /' "$tmp/lintian.said"
		else
			ok "lintian on $(basename "${changes:-$deb}"): no error or warning"
		fi
	fi
fi

# ---- the .rpm
mapfile -t rpms < <(ls "$dir"/slurm-lwk-*.rpm 2>/dev/null | grep -v -- '-debug')
if ! command -v rpm >/dev/null; then
	echo "SKIP: the RPM: rpm is not installed (scripts/deps installs it as root)"
elif [ ${#rpms[@]} != 1 ]; then
	fail "one slurm-lwk RPM in $dir (found ${#rpms[@]})"
else
	r=${rpms[0]}
	release=$(rpm -qp --qf '%{RELEASE}' "$r" 2>/dev/null)
	check "the RPM's release $release names Slurm $mm" [ "${release#*.slurm}" = "$mm" ]
	rpm -qRp "$r" 2>/dev/null >"$tmp/rpm.requires"
	pin_lo=$(grep -cx "slurm\(([^)]*)\)\? >= $mm" "$tmp/rpm.requires")
	pin_hi=$(grep -cx "slurm\(([^)]*)\)\? < $next" "$tmp/rpm.requires")
	check "Requires pins slurm to $mm.x ($(grep '^slurm' "$tmp/rpm.requires" | paste -sd, -))" \
		test "$pin_lo" = 1 -a "$pin_hi" = 1
	said=$(rpm_accepts "$r" "$same")
	check "rpm installs it beside slurm $same${said:+ (unmet: $said)}" test $? = 0
	said=$(rpm_accepts "$r" "$newer")
	check "rpm refuses it beside slurm $newer (unmet: ${said:-nothing})" \
		eval '[[ $said == *"< $next"* ]]'
	said=$(rpm_accepts "$r" "$older")
	check "rpm refuses it beside slurm $older (unmet: ${said:-nothing})" \
		eval '[[ $said == *">= $mm"* ]]'
	rpm -qlp "$r" 2>/dev/null >"$tmp/rpm.all"
	check "the RPM installs nothing under /etc" eval '! grep -q "^/etc" "$tmp/rpm.all"'
	# Files only (directories and build-ids aside), man pages by name,
	# the plugin directory as "PLUGINDIR".
	norm() {
		grep -v '^/usr/lib/\.build-id' |
			sed -e 's|\.gz$||' -e "s|^$2/lwk\.so$|PLUGINDIR/lwk.so|" |
			grep -vx '/usr/share/doc/slurm-lwk/changelog\|/usr/share/doc/slurm-lwk/copyright\|/usr/share/lintian/overrides/slurm-lwk' |
			grep -v '/$' | sort >"$1"
	}
	rplugin=$(grep '/lwk\.so$' "$tmp/rpm.all")
	check "the RPM's lwk.so is in SchedMD's plugin directory ($rplugin)" \
		[ "$rplugin" = "$(rpm --eval '%{_libdir}')/slurm/lwk.so" ]
	mkdir -p "$tmp/rpm"
	(cd "$tmp/rpm" && rpm2cpio "$r" | cpio -idm --quiet)
	find "$tmp/rpm" ! -type d | sed "s|^$tmp/rpm||" | norm "$tmp/rpm.files" "${rplugin%/lwk.so}"
	[ -z "${plugin:-}" ] || sed 's|/$||' "$tmp/deb.files" | while read -r f; do
		[ -d "$tmp/deb$f" ] || echo "$f"
	done | norm "$tmp/deb.norm" "$plugdir"
	if [ -n "${plugin:-}" ]; then
		if diff "$tmp/deb.norm" "$tmp/rpm.files" >"$tmp/files.diff"; then
			ok "the RPM has the .deb's files ($(wc -l <"$tmp/rpm.files"))"
		else
			fail "the RPM's files differ from the .deb's (< deb, > rpm):"
			grep '^[<>]' "$tmp/files.diff" | sed 's/^/    /'
		fi
	fi
	check "the RPM's lwk-sweep loads ${rplugin%/lwk.so}/libslurmfull.so" \
		grep -aqF "${rplugin%/lwk.so}/libslurmfull.so" "$tmp/rpm/usr/sbin/lwk-sweep"
	pv=$(plugin_version "$tmp/rpm$rplugin")
	check "the RPM's lwk.so has plugin_version ${pv:-none}, Slurm $mm's" same_series "$pv"
fi
exit $failed
