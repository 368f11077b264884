#!/usr/bin/env bash
# perf/compare_lf.sh - librmq built on libfabric 1.17 and on 2.1, each
# beside its own fi_pingpong (and fi_pingpong -e msg), alternating in one
# run, so that the two versions meet the same machine state (issue 43;
# docs/PERFORMANCE.md, "libfabric 2.1").
#
#   perf/compare_lf.sh OLD_BUILD NEW_BUILD NEW_PREFIX [-r ROUNDS] [-- ARGS]
#
# OLD_BUILD and NEW_BUILD are meson build directories (NEW_BUILD set up
# with PKG_CONFIG_PATH=NEW_PREFIX/lib/pkgconfig); NEW_PREFIX is where
# tools/libfabric2.sh installed 2.1 (its bin/fi_pingpong is the new
# anchor; the old one is fi_pingpong from PATH).  Each round runs
# perf/compare.sh once per build with ARGS (default: -p tcp --fi-msg -p
# shm, 64 B to 64 KiB, 20000 iterations), -r 1, old first on odd rounds
# and new first on even ones; the CSV rows of every run go to
# perf/results/compare_lf-DATE.csv with the version in front.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 3 ]] || { sed -n '2,16p' "$0" >&2; exit 2; }
old=$1 new=$2 prefix=$3
shift 3
rounds=3
if [[ ${1:-} == -r ]]; then
	rounds=$2
	shift 2
fi
[[ ${1:-} == -- ]] && shift
args=("$@")
[[ ${#args[@]} -gt 0 ]] ||
	args=(-p tcp -p shm --fi-msg -S 64,1024,4096,16384,65536 -I 20000)

mkdir -p "$here/results"
csv=$here/results/compare_lf-$(date -u +%Y%m%dT%H%M).csv
: >"$csv"

run() { # run LABEL BUILD FI_PINGPONG
	local out
	out=$(mktemp)
	echo "== libfabric $1 ($2), round $r"
	FI_PINGPONG=$3 "$here/compare.sh" -b "$2" -r 1 --csv "$out" \
		"${args[@]}"
	sed "s/^/$1,/" "$out" >>"$csv"
	rm -f "$out"
}

for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then
		run 1.17 "$old" "$(command -v fi_pingpong)"
		run 2.1 "$new" "$prefix/bin/fi_pingpong"
	else
		run 2.1 "$new" "$prefix/bin/fi_pingpong"
		run 1.17 "$old" "$(command -v fi_pingpong)"
	fi
done
echo "CSV: $csv"
