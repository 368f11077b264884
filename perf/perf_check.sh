#!/bin/sh
# Check the CSV of the benchmarks the way compare.sh --paths/--bw/--zmq-thr
# reads it (run by meson test, suite perf; every side forked with --local
# on shm).
#
#   perf_check.sh bw RMQ_BW
#       rmq_bw -S 1k,1m -I 20: header size,mbps,msgs_per_s,path,pattern,
#       snd_cpu_ns,rcv_cpu_ns,dropped (the first four as they always were),
#       one row per size, in order, positive figures, a path name, pattern
#       pair, nothing dropped
#   perf_check.sh pattern RMQ_BW PATTERN
#       the same with --pattern PATTERN (pushpull or pubsub) and sizes
#       64,1k,1m; PATTERN pushpull,pubsub (both pairs, windows alternating):
#       per size a row of each, in that order
#   perf_check.sh fanout RMQ_FANOUT_BIN
#       rmq_fanout -n 1,2 -M 2000: a row per mode and N, in order, positive
#       figures, the N = 1 rows' ratios 1, nothing dropped; both modes
#       measured (shm has remote reads: its log rows may not say n/a); then
#       the same with --drop, where dropped is a count (rmq_fanout itself
#       fails a run whose received + dropped is not N * M)
#   perf_check.sh path RMQ_PINGPONG PATH
#       rmq_pingpong --path PATH -S 64,65536 -I 50: every row names PATH;
#       a size the path cannot carry is a '-' row, and at least one size
#       must have been measured
#   perf_check.sh rpc RMQ_RPC PROVIDER
#       rmq_rpc -p PROVIDER -S 64,4096 -w 1,8 -I 2000: the header as
#       compare.sh --zmq-rpc reads it, one row per size and window in
#       order, positive rates and CPU figures, round-trip percentiles for
#       W = 1 only (rmq_rpc itself fails on any wrong reply)
set -eu
what=$1 bin=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
paths='inject|eager|rndv_read|rndv_send|ring|rndv_write|seg|local'

# check_bw SIZES PATTERN[,PATTERN]: rmq_bw's CSV in $out (per size a row
# of each pattern, in order)
check_bw() {
	awk -F, -v sizes="$1" -v pattern="$2" -v paths="^($paths)\$" '
	NR == 1 { if ($0 != "size,mbps,msgs_per_s,path,pattern,snd_cpu_ns,rcv_cpu_ns,dropped") { print "header: " $0; exit 1 }; next }
	{
		n = split(sizes, want, ",")
		np = split(pattern, pats, ",")
		row++
		if (NF != 8) { print "fields: " $0; exit 1 }
		if ($1 != want[int((row - 1) / np) + 1]) { print "row " row ": size " $1 " != " want[int((row - 1) / np) + 1]; exit 1 }
		if ($2 !~ /^[0-9.]+$/ || $2 <= 0) { print "bad MB/s: " $0; exit 1 }
		if ($3 !~ /^[0-9]+$/ || $3 <= 0) { print "bad msgs/s: " $0; exit 1 }
		if ($4 !~ paths) { print "bad path: " $0; exit 1 }
		if ($5 != pats[(row - 1) % np + 1]) { print "pattern " $5 " != " pats[(row - 1) % np + 1] ": " $0; exit 1 }
		if ($6 !~ /^[0-9.]+$/ || $6 <= 0) { print "bad sender CPU: " $0; exit 1 }
		if ($7 !~ /^[0-9.]+$/ || $7 <= 0) { print "bad receiver CPU: " $0; exit 1 }
		if ($8 != "0") { print "dropped: " $0; exit 1 }
	}
	END { if (row != split(sizes, w, ",") * split(pattern, p, ",")) { print "rows: " row; exit 1 } }' "$out"
}

case $what in
bw)
	sizes=1024,1048576
	timeout 60 "$bin" --local -p shm -S 1k,1m -I 20 --csv >"$out"
	cat "$out"
	check_bw "$sizes" pair
	echo "rmq_bw shm: ok"
	;;
pattern)
	pattern=$3 sizes=64,1024,1048576
	timeout 120 "$bin" --local -p shm --pattern "$pattern" -S "$sizes" \
		-I 20 --csv >"$out"
	cat "$out"
	check_bw "$sizes" "$pattern"
	echo "rmq_bw --pattern $pattern shm: ok"
	;;
fanout)
	# DROPPED: the pattern the dropped column must match
	check_fanout() {
		awk -F, -v dropped="$1" '
		NR == 1 { if ($0 != "mode,n,size,msgs,msgs_per_s,copies_per_s,mbps,pub_cpu_ns,sub_cpu_ns,rate_vs_n1,cpu_vs_n1,dropped") { print "header: " $0; exit 1 }; next }
		{
			split("push,1 push,2 log,1 log,2", want, " ")
			row++
			if (NF != 12) { print "fields: " $0; exit 1 }
			if ($1 "," $2 != want[row]) { print "row " row ": " $1 "," $2 " != " want[row]; exit 1 }
			if ($3 != 64 || $4 != 2000) { print "size/msgs: " $0; exit 1 }
			for (i = 5; i <= 11; i++)
				if ($i !~ /^[0-9.]+$/ || $i <= 0) { print "bad field " i ": " $0; exit 1 }
			if ($2 == 1 && ($10 != "1.000" || $11 != "1.000")) { print "N=1 ratio: " $0; exit 1 }
			if ($12 !~ dropped) { print "dropped: " $0; exit 1 }
		}
		END { if (row != 4) { print "rows: " row; exit 1 } }' "$out"
	}
	timeout 120 "$bin" --local -p shm -n 1,2 -M 2000 --csv >"$out"
	cat "$out"
	check_fanout '^0$'
	echo "rmq_fanout shm: ok"
	timeout 60 "$bin" --local -p shm -n 1,2 -M 2000 --drop --csv >"$out"
	cat "$out"
	check_fanout '^[0-9]+$'
	echo "rmq_fanout --drop shm: ok"
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
rpc)
	prov=$3
	timeout 60 "$bin" --local -p "$prov" -S 64,4096 -w 1,8 -I 2000 --csv >"$out"
	cat "$out"
	awk -F, '
	NR == 1 { if ($0 != "size,window,rpcs,rpc_per_s,client_cpu_ns,server_cpu_ns,rtt_p50_us,rtt_p99_us") { print "header: " $0; exit 1 }; next }
	{
		row++
		split("64,64,4096,4096", sz, ",")
		split("1,8,1,8", win, ",")
		if (NF != 8) { print "fields: " $0; exit 1 }
		if ($1 != sz[row] || $2 != win[row]) { print "row " row ": " $0; exit 1 }
		if ($3 != 2000 || $4 <= 0 || $5 <= 0 || $6 <= 0) { print "bad figures: " $0; exit 1 }
		if ($2 == 1 && ($7 <= 0 || $8 < $7)) { print "bad round trip: " $0; exit 1 }
		if ($2 != 1 && ($7 != 0 || $8 != 0)) { print "percentiles with W > 1: " $0; exit 1 }
	}
	END { if (row != 4) { print "rows: " row; exit 1 } }' "$out"
	echo "rmq_rpc $prov: ok"
	;;
*)
	echo "usage: $0 bw RMQ_BW | pattern RMQ_BW PATTERN | fanout RMQ_FANOUT_BIN | path RMQ_PINGPONG PATH | rpc RMQ_RPC PROVIDER" >&2
	exit 2
	;;
esac
