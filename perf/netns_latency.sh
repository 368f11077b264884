#!/bin/bash
# perf/netns_latency.sh - librmq's provider paths between two "hosts"
# beside the bare tcp provider, in one loop.
#
# Two network namespaces joined by a veth pair
# (tests/scripts/netns_lib.sh; root and iproute2 needed, else it says so
# and exits 77), so the peers are on different hosts as librmq sees them
# (the namespace is part of its host identity): no local path, tcp;ofi_rxm
# carries everything.  For each
# size and round, one after the other with the same placement (server in
# the first namespace on CPU 0, client in the second on CPU 1):
#
#   fi_pingpong -p tcp -e rdm   tcp;ofi_rxm, the endpoint librmq uses,
#                               with FI_OFI_RXM_ENABLE_PASSTHRU=1 as
#                               librmq sets it (rxm hands its calls to
#                               the tcp provider; 0 in the environment:
#                               rxm's own protocol, for both)
#   fi_pingpong -p tcp -e msg   the tcp provider's connected endpoint
#   rmq_pingpong -p tcp         --server / --connect, PAIR
#
# and prints the median of the rounds' mean one-way latencies (fi_pingpong
# reports a mean; rmq's mean = size / its MB/s, as fi_pingpong counts),
# rmq's p50/p99 (median over rounds), and rmq / fi ratios with their range
# over the rounds.
#
# Usage: netns_latency.sh [-S SIZES] [-r RUNS] [-I ITER] [-b BUILD_DIR]
#                         [--rmq-env VAR=VALUE ...]
#   -S  sizes, comma separated (default 64,1024,4096,16384,65536)
#   -r  rounds (default 3)
#   -I  iterations per run (default 20000 up to 4 KiB, 5000 above)
#   -b  build tree (default: build beside this script's parent)
set -u

here=$(cd "$(dirname "$0")" && pwd)
sizes=64,1024,4096,16384,65536
runs=3 iters= build=$here/../build
rmq_env=()
while [ $# -gt 0 ]; do
	case $1 in
	-S) sizes=$2; shift 2 ;;
	-r) runs=$2; shift 2 ;;
	-I) iters=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	--rmq-env) rmq_env+=("$2"); shift 2 ;;
	-h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "netns_latency.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
rmq_pp=$build/perf/rmq_pingpong
if [ ! -x "$rmq_pp" ]; then
	echo "netns_latency.sh: no $rmq_pp (build first, or -b)" >&2
	exit 2
fi
command -v fi_pingpong >/dev/null || {
	echo "SKIP: fi_pingpong not installed (libfabric-bin)"; exit 77; }

# shellcheck source=../tests/scripts/netns_lib.sh
. "$here/../tests/scripts/netns_lib.sh"
tmp=$(mktemp -d)
trap 'netns_cleanup; rm -rf "$tmp"' EXIT
srv_ip=$net.1
export FI_PROVIDER=tcp
# The anchor as librmq runs tcp;ofi_rxm (providers/tcp.c).
export FI_OFI_RXM_ENABLE_PASSTHRU=${FI_OFI_RXM_ENABLE_PASSTHRU:-1}
port=$((20000 + tag % 20000))

# fi_run EP SIZE ITERS -> "mean_us" on stdout, or nothing
fi_run() {
	local ep=$1 size=$2 it=$3 spid out=$tmp/fi.out
	port=$((port + 1))
	FI_TCP_IFACE=va$tag ip netns exec "$a" taskset -c 0 \
		timeout 60 fi_pingpong -p tcp -e "$ep" -I "$it" -S "$size" \
		-B "$port" >"$tmp/fi_srv.out" 2>&1 &
	spid=$!
	sleep 0.3
	FI_TCP_IFACE=vb$tag ip netns exec "$b" taskset -c 1 \
		timeout 60 fi_pingpong -p tcp -e "$ep" -I "$it" -S "$size" \
		-P "$port" "$srv_ip" >"$out" 2>&1
	wait "$spid" 2>/dev/null
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	awk 'NF >= 8 && $1 ~ /^[0-9.]+[kmgt]?$/ && $(NF-1) ~ /^[0-9.]+$/ {
		lat = $(NF-1) } END { if (lat != "") print lat }' "$out"
}

# rmq_run SIZE ITERS -> "mean_us p50 p99 path", or nothing
rmq_run() {
	local size=$1 it=$2 spid out=$tmp/rmq.out
	port=$((port + 1))
	ip netns exec "$a" env "${rmq_env[@]}" taskset -c 0 timeout 60 \
		"$rmq_pp" -p tcp --server -B "$srv_ip" -P "$port" \
		>"$tmp/rmq_srv.out" 2>&1 &
	spid=$!
	sleep 0.3
	ip netns exec "$b" env "${rmq_env[@]}" taskset -c 1 timeout 60 \
		"$rmq_pp" -p tcp --connect "$srv_ip:$port" -S "$size" \
		-I "$it" --csv >"$out" 2>"$tmp/rmq_cli.err"
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	awk -F, -v s="$size" '$1 == s && $4 > 0 {
		printf "%.3f %s %s %s\n", s / $4, $2, $3, $5 }' "$out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.2f-%.2f", lo, hi }'; }

echo "# netns_latency.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs"
echo "# two netns + veth ($srv_ip <-> $net.2), server CPU 0, client CPU 1; $runs rounds"
echo "# rmq env: ${rmq_env[*]:-(none)}; both: FI_OFI_RXM_ENABLE_PASSTHRU=$FI_OFI_RXM_ENABLE_PASSTHRU"
echo
printf '| %7s | %9s | %9s | %9s | %13s | %14s | %14s | %s |\n' size \
	"fi rdm" "fi msg" "rmq mean" "rmq p50/p99" "rmq/rdm" "rmq/msg" path
printf '|%s|\n' "--------:|----------:|----------:|----------:|--------------:|---------------:|---------------:|------"
rc=0
IFS=, read -r -a size_list <<<"$sizes"
for size in "${size_list[@]}"; do
	it=${iters:-$([ "$size" -le 4096 ] && echo 20000 || echo 5000)}
	: >"$tmp/rdm" ; : >"$tmp/msg" ; : >"$tmp/rmq"
	: >"$tmp/r_rdm"; : >"$tmp/r_msg"; : >"$tmp/p50"; : >"$tmp/p99"
	path=-
	for ((r = 0; r < runs; r++)); do
		fr=$(fi_run rdm "$size" "$it")
		fm=$(fi_run msg "$size" "$it")
		rq=$(rmq_run "$size" "$it")
		if [ -z "$fr" ] || [ -z "$fm" ] || [ -z "$rq" ]; then
			echo "round $r, $size B: a run failed (rdm '$fr' msg '$fm' rmq '$rq')" >&2
			cat "$tmp/rmq_cli.err" >&2
			rc=1
			continue
		fi
		read -r rm p50 p99 path <<<"$rq"
		echo "$fr" >>"$tmp/rdm"; echo "$fm" >>"$tmp/msg"; echo "$rm" >>"$tmp/rmq"
		echo "$p50" >>"$tmp/p50"; echo "$p99" >>"$tmp/p99"
		awk -v a="$rm" -v b="$fr" 'BEGIN { printf "%.3f\n", a / b }' >>"$tmp/r_rdm"
		awk -v a="$rm" -v b="$fm" 'BEGIN { printf "%.3f\n", a / b }' >>"$tmp/r_msg"
	done
	[ -s "$tmp/rmq" ] || continue
	printf '| %7s | %9.2f | %9.2f | %9.2f | %6.2f/%6.2f | %4.2f [%s] | %4.2f [%s] | %s |\n' \
		"$size" "$(median <"$tmp/rdm")" "$(median <"$tmp/msg")" \
		"$(median <"$tmp/rmq")" "$(median <"$tmp/p50")" "$(median <"$tmp/p99")" \
		"$(median <"$tmp/r_rdm")" "$(range <"$tmp/r_rdm")" \
		"$(median <"$tmp/r_msg")" "$(range <"$tmp/r_msg")" "$path"
done
exit $rc
