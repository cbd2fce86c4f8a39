#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The layout of spank/ (README, "Layout"), checked on the built tree:
#   - no source file over 600 lines and no function over 80, unless a
#     comment "layout: whole" says why it reads better whole (a table, a
#     switch): in a long file's first 40 lines, or in the 5 lines above a
#     long function;
#   - includes name headers by their path below spank/ ("node/cgroup.h")
#     and run one way: the glue (spank/*.c) and the commands (cmd/) over
#     sweep/, sweep/ over the parts (lwk/, syncmon/, casas/), the parts
#     over node/, node/ over common/; a part never includes another's;
#   - no cycle between files or folders in what calls what, read from
#     the objects' symbols (nm): file A depends on B when A uses a
#     symbol B defines.
# One "ok:"/"FAIL:" line a rule; exits 1 on any failure.
set -u
src=${srcdir:-.}
failed=0
fail() { echo "FAIL: $*"; failed=1; }

cd "$src" || exit 99
# Generated files (the BPF skeleton, in an in-tree build) are not ours to lay out.
mapfile -t files < <(find spank -name '*.[ch]' ! -name '*.skel.h' ! -name '*.lskel.h' | sort)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no sources under $src/spank"; exit 1; }

# part FILE: the folder a file belongs to ("glue" at the top), in
# $part.  (Functions that set a variable, not print: a command
# substitution forks, and these run for every file, include and edge.)
part() {
	case $1 in
	spank/*/*) part=${1#spank/} part=${part%%/*} ;;
	*) part=glue ;;
	esac
}
# rank PART: in $rank; lower ranks are below; a file includes its own
# part and the parts ranked below its own.  Peers (the same rank) never
# meet.
rank() {
	case $1 in
	common) rank=0 ;;
	node) rank=1 ;;
	lwk | syncmon | casas) rank=2 ;;
	sweep) rank=3 ;;
	cmd | glue) rank=4 ;;
	*) rank=-1 ;;
	esac
}

# ---- sizes (each tool once over every file: under load a fork and exec
# a file made this check take half a minute)
bad=0
while read -r n f; do
	[ "$f" != total ] || continue
	if [ "$n" -gt 600 ] && ! head -40 "$f" | grep -q 'layout: whole'; then
		fail "$f has $n lines (at most 600, or a 'layout: whole' comment saying why)"
		bad=1
	fi
done < <(wc -l "${files[@]}")
[ $bad = 1 ] || echo "ok: every file under spank/ has at most 600 lines"

bad=0
# A function: its signature starts a line at column 0, its body opens
# with "{" alone at column 0 and closes with "}" alone.
while read -r f len line name; do
	fail "$f:$line: $name is $len lines (at most 80, or a 'layout: whole' comment above it)"
	bad=1
done < <(awk '
	FNR == 1 { sig = 0; start = 0; delete text }
	/^[A-Za-z_].*\(/ && !/;[ \t]*$/ && sig == 0 { sig = FNR; name = $0 }
	/^\{/ && sig { start = FNR; from = sig }
	/^\}/ && start {
		n = FNR - start - 1
		if (n > 80) {
			whole = 0
			for (i = from - 5; i < from; i++) if (i in text && text[i] ~ /layout: whole/) whole = 1
			if (!whole) { sub(/\(.*/, "", name); sub(/.*[ *]/, "", name); print FILENAME, n, from, name "()" }
		}
		start = 0
	}
	/^[^A-Za-z_]/ || /;[ \t]*$/ || /^\{/ { if (!start && $0 !~ /^[ \t]/) sig = 0 }
	{ text[FNR] = $0; if (/^\{/ || /^\}/) sig = 0 }
' "${files[@]}")
[ $bad = 1 ] || echo "ok: no function under spank/ has more than 80 lines"

# ---- includes
bad=0
for f in "${files[@]}"; do
	part "$f"
	rank "$part"
	[ "$rank" -ge 0 ] || { fail "$f: folder spank/$part/ has no place in the layers (testsuite/unit/check-layout.sh)"; bad=1; }
done
while IFS=: read -r f line inc; do
	part "$f"
	own=$part
	rank "$own"
	own_rank=$rank
	[ "$own_rank" -ge 0 ] || continue
	case $inc in
	lwk_plugin.h) to=glue ;;
	*/*) to=${inc%%/*} ;;
	*) fail "$f:$line: #include \"$inc\": name it by its path below spank/"; bad=1; continue ;;
	esac
	# A generated header (the BPF skeleton) is in the build tree, if built.
	[ -e "spank/$inc" ] || [[ $inc == *.skel.h || $inc == *.lskel.h ]] ||
		{ fail "$f:$line: #include \"$inc\": no spank/$inc"; bad=1; continue; }
	[ "$to" = "$own" ] && continue
	if [ "$own" = cmd ] && [ "$to" = glue ]; then
		fail "$f:$line: a command includes the plugin's glue ($inc)"
		bad=1
	elif rank "$to" && [ "$rank" -ge "$own_rank" ]; then
		fail "$f:$line: spank/$own/ includes $inc: $to/ is not below $own/"
		bad=1
	fi
done < <(grep -Hn '^#include "' "${files[@]}" | sed 's/^\([^:]*\):\([0-9]*\):#include "\([^"]*\)".*/\1:\2:\3/')
[ $bad = 1 ] || echo "ok: includes run one way (glue and cmd, sweep, the parts, node, common) and no part includes another's"

# ---- cycles, from the objects (the build tree is the current directory
# of make check; $src when built in place)
cd - >/dev/null || exit 99
command -v nm >/dev/null && command -v tsort >/dev/null || { echo "FAIL: nm or tsort missing"; exit 1; }
obj_of() { # the object built from spank/D/N.c
	local d=${1%/*} n=${1##*/} o
	n=${n%.c}
	for o in "$d/.libs/$n.o" "$d/$n.o" "$d"/*-"$n".o; do
		[ -e "$o" ] && { echo "$o"; return; }
	done
}
defs=$(mktemp) uses=$(mktemp) objs=() srcs=()
trap 'rm -f "$defs" "$uses"' EXIT
for f in "${files[@]}"; do
	[[ $f == *.c ]] || continue
	[[ $f == *.bpf.c ]] && continue # a BPF program, built into a skeleton, not linked
	o=$(obj_of "$f")
	# The batch source's loader or its stand-in: configure builds one
	# of the two (HAVE_BPF), and the other has no object.
	case $f in
	spank/node/taskiter.c | spank/node/taskiter_none.c)
		[ -n "$o" ] || [ -z "$(obj_of spank/node/taskiter.c)$(obj_of spank/node/taskiter_none.c)" ] || continue ;;
	esac
	[ -n "$o" ] || { fail "$f: no object built (run make first)"; continue; }
	objs+=("$o") srcs+=("$f")
done
# nm once over every object (-A: each line named by its object), the
# objects mapped back to their sources.
src_of=$(for i in "${!objs[@]}"; do echo "${objs[$i]} ${srcs[$i]}"; done)
nm -A -g --defined-only "${objs[@]}" | awk -v map="$src_of" '
	BEGIN { n = split(map, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], p, " "); src[p[1]] = p[2] } }
	{ o = $1; sub(/:[^:]*$/, "", o) } $2 ~ /[TDBRV]/ { print $3, src[o] }' >"$defs"
nm -A -u "${objs[@]}" | awk -v map="$src_of" '
	BEGIN { n = split(map, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], p, " "); src[p[1]] = p[2] } }
	{ o = $1; sub(/:[^:]*$/, "", o); print $NF, src[o] }' >"$uses"
edges=$(join <(sort -u "$uses") <(sort -u "$defs") | awk '$2 != $3 { print $2, $3 }' | sort -u)
for what in files folders; do
	if [ $what = folders ]; then
		pairs=$(while read -r a b; do
			part "$a"
			pa=$part
			part "$b"
			[ "$pa" = "$part" ] || echo "$pa $part"
		done <<<"$edges" | sort -u)
	else
		pairs=$edges
	fi
	if loop=$( { echo "$pairs" | tsort >/dev/null; } 2>&1) && [ -z "$loop" ]; then
		echo "ok: no cycle between $what"
	else
		fail "a cycle between $what: $(echo "$loop" | sed -n 's/^tsort: //p' | grep -v 'input contains a loop' | tr '\n' ' ')"
	fi
done
[ $failed = 0 ]
