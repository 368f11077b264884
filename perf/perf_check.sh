#!/bin/sh
# Check the CSV of the benchmarks the way compare.sh --paths/--bw reads it
# (run by meson test, suite perf; both sides forked with --local on shm).
#
#   perf_check.sh bw RMQ_BW
#       rmq_bw -S 1k,1m -I 20: header size,mbps,msgs_per_s,path, one row
#       per size, in order, positive figures, a path name
#   perf_check.sh path RMQ_PINGPONG PATH
#       rmq_pingpong --path PATH -S 64,65536 -I 50: every row names PATH;
#       a size the path cannot carry is a '-' row, and at least one size
#       must have been measured
set -eu
what=$1 bin=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
paths='inject|eager|rndv_read|rndv_send|ring|rndv_write|seg'

case $what in
bw)
	sizes=1024,1048576
	timeout 60 "$bin" --local -p shm -S 1k,1m -I 20 --csv >"$out"
	cat "$out"
	awk -F, -v sizes="$sizes" -v paths="^($paths)\$" '
	NR == 1 { if ($0 != "size,mbps,msgs_per_s,path") { print "header: " $0; exit 1 }; next }
	{
		n = split(sizes, want, ",")
		row++
		if (NF != 4) { print "fields: " $0; exit 1 }
		if ($1 != want[row]) { print "row " row ": size " $1 " != " want[row]; exit 1 }
		if ($2 !~ /^[0-9.]+$/ || $2 <= 0) { print "bad MB/s: " $0; exit 1 }
		if ($3 !~ /^[0-9]+$/ || $3 <= 0) { print "bad msgs/s: " $0; exit 1 }
		if ($4 !~ paths) { print "bad path: " $0; exit 1 }
	}
	END { if (row != split(sizes, w, ",")) { print "rows: " row; exit 1 } }' "$out"
	echo "rmq_bw shm: ok"
	;;
path)
	path=$3 sizes=64,65536
	timeout 60 "$bin" --local -p shm --path "$path" -S "$sizes" -I 50 \
		--csv >"$out"
	cat "$out"
	awk -F, -v sizes="$sizes" -v path="$path" '
	NR == 1 { if ($0 != "size,lat_p50_us,lat_p99_us,mbps,path") { print "header: " $0; exit 1 }; next }
	{
		n = split(sizes, want, ",")
		row++
		if (NF != 5) { print "fields: " $0; exit 1 }
		if ($1 != want[row]) { print "row " row ": size " $1 " != " want[row]; exit 1 }
		if ($5 != path) { print "path " $5 " != forced " path ": " $0; exit 1 }
		if ($2 == "-") {
			if ($3 != "-" || $4 != "-") { print "half a skip: " $0; exit 1 }
			next
		}
		if ($2 !~ /^[0-9.]+$/ || $2 <= 0 || $3 < $2) { print "bad latency: " $0; exit 1 }
		measured++
	}
	END {
		if (row != split(sizes, w, ",")) { print "rows: " row; exit 1 }
		if (!measured) { print "no size measured"; exit 1 }
	}' "$out"
	echo "rmq_pingpong --path $path shm: ok"
	;;
*)
	echo "usage: $0 bw RMQ_BW | path RMQ_PINGPONG PATH" >&2
	exit 2
	;;
esac
