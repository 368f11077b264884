#!/usr/bin/env bash
# perf/rpc_compare.sh (run as perf/compare.sh --zmq-rpc): librmq's
# DEALER/ROUTER request rate against ZeroMQ's, measured the same way in the
# same run.  Per round, alternated: rmq_rpc --local and zmq_rpc, each pair
# on the same placement (client CPU 0, server CPU 1), with the same sizes,
# windows and request counts; and rmq_pingpong on the same pair of CPUs,
# for the check that a W = 1 round trip is about two one-way latencies.
#
# Pairs (-p): shm = librmq on the same host by its default path (the
# same-host link) against ZeroMQ ipc://; tcp = librmq tcp with RMQ_LOCAL=0
# (the provider, as a peer on another host) against ZeroMQ tcp://.
#
# Output: per pair, size and window, the median [min-max] over the rounds
# of RPC/s for each and of the ratio rmq/zmq, the CPU ns per RPC on each
# side (client/server, medians), and at W = 1 the round trip's p50/p99
# beside 2 x rmq_pingpong's one-way p50 (and their ratio).  --csv FILE gets
# every row of every round.
set -euo pipefail

prog="compare.sh --zmq-rpc"
providers=()
sizes=64,4096
windows=1,64
iters=""
runs=3
build_dir=""
csv_file=""

usage() {
	cat <<EOF
Usage: $prog [-p shm|tcp ...] [-S SIZES] [-w WINDOWS] [-I ITER] [-r RUNS]
       [-b BUILD_DIR] [--csv FILE]
Defaults: -p shm,tcp -S 64,4096 -w 1,64 -r 3 (rmq_rpc's request counts).
EOF
}

while [[ $# -gt 0 ]]; do
	case $1 in
	-p) providers+=(${2//,/ }); shift 2 ;;
	-S) sizes=$2; shift 2 ;;
	-w) windows=$2; shift 2 ;;
	-I) iters=$2; shift 2 ;;
	-r) runs=$2; shift 2 ;;
	-b) build_dir=$2; shift 2 ;;
	--csv) csv_file=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "$prog: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
done
[[ ${#providers[@]} -gt 0 ]] || providers=(shm tcp)
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$prog: bad -r $runs" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
bin() { # the first of: -b's perf/, this directory, ./build/perf, PATH
	local name=$1 d
	for d in ${build_dir:+"$build_dir/perf"} "$here" ./build/perf; do
		[[ -x $d/$name ]] && { echo "$d/$name"; return; }
	done
	command -v "$name" || { echo "$prog: $name not found" >&2; exit 1; }
}
RMQ_RPC=${RMQ_RPC:-$(bin rmq_rpc)}
ZMQ_RPC=${ZMQ_RPC:-$(bin zmq_rpc)}
RMQ_PINGPONG=${RMQ_PINGPONG:-$(bin rmq_pingpong)}
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo} FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
export FI_SOCKETS_PE_WAITTIME=${FI_SOCKETS_PE_WAITTIME:-0}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
iter_args=()
[[ -n $iters ]] && iter_args=(-I "$iters")

# rows: prov round who size window rpcs rpc_per_s cli_ns srv_ns p50 p99
: >"$tmp/rows"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
for ((r = 1; r <= runs; r++)); do
	for prov in "${providers[@]}"; do
		case $prov in
		shm) zt=ipc env_rmq=() ;;
		tcp) zt=tcp env_rmq=(RMQ_LOCAL=0) ;;
		*) echo "$prog: -p shm or tcp" >&2; exit 2 ;;
		esac
		env "${env_rmq[@]}" "$RMQ_RPC" --local -p "$prov" -S "$sizes" \
			-w "$windows" "${iter_args[@]}" --csv >"$tmp/rmq" ||
			{ echo "$prog: rmq_rpc -p $prov failed" >&2; exit 1; }
		"$ZMQ_RPC" --transport "$zt" -S "$sizes" -w "$windows" \
			"${iter_args[@]}" --csv >"$tmp/zmq" ||
			{ echo "$prog: zmq_rpc --transport $zt failed" >&2; exit 1; }
		env "${env_rmq[@]}" "$RMQ_PINGPONG" --local -p "$prov" \
			-S "$sizes" -I 20000 --csv >"$tmp/pp" ||
			{ echo "$prog: rmq_pingpong -p $prov failed" >&2; exit 1; }
		for who in rmq zmq; do
			tail -n +2 "$tmp/$who" | sed "s/^/$prov,$r,$who,/" \
				>>"$tmp/rows"
		done
		# one-way p50 per size, as pseudo-rows of window 0
		tail -n +2 "$tmp/pp" | awk -F, -v p="$prov" -v r="$r" \
			'{ printf "%s,%s,pp,%s,0,0,0,0,0,%s,%s\n", p, r, $1, $2, $3 }' \
			>>"$tmp/rows"
	done
done
[[ -z $csv_file ]] || {
	echo "provider,round,who,size,window,rpcs,rpc_per_s,client_cpu_ns,server_cpu_ns,rtt_p50_us,rtt_p99_us"
	cat "$tmp/rows"
} >"$csv_file"

# The table: medians and ranges over the rounds.
python3 - "$tmp/rows" <<'EOF'
import sys, statistics as st
rows = [l.strip().split(',') for l in open(sys.argv[1]) if l.strip()]
def med(v): return st.median(v)
def cell(v, f='%.0f'):
    return (f + ' [' + f + '-' + f + ']') % (med(v), min(v), max(v))
keys = []
for r in rows:
    k = (r[0], int(r[3]), int(r[4]))
    if r[2] != 'pp' and k not in keys:
        keys.append(k)
print('%-4s %6s %3s  %-30s %-30s %-20s %-11s %-11s %s' % (
    'pair', 'size', 'W', 'rmq RPC/s', 'zmq RPC/s', 'rmq/zmq',
    'rmq cpu ns', 'zmq cpu ns', 'W=1 rtt p50/p99 us; 2 x one-way p50'))
for prov, size, w in keys:
    def pick(who, col):
        return {int(r[1]): float(r[col]) for r in rows
                if r[0] == prov and r[2] == who and int(r[3]) == size
                and int(r[4]) == w}
    rr, zr = pick('rmq', 6), pick('zmq', 6)
    ratio = [rr[k] / zr[k] for k in rr if k in zr and zr[k] > 0]
    cpu = lambda who: '%.0f/%.0f' % (med(list(pick(who, 7).values())),
                                     med(list(pick(who, 8).values())))
    lat = ''
    if w == 1:
        p50 = med(list(pick('rmq', 9).values()))
        p99 = med(list(pick('rmq', 10).values()))
        ow = [float(r[9]) for r in rows if r[0] == prov and r[2] == 'pp'
              and int(r[3]) == size]
        if ow:
            two = 2 * med(ow)
            lat = '%.2f/%.2f; %.2f (%.2fx)' % (p50, p99, two, p50 / two)
    print('%-4s %6d %3d  %-30s %-30s %-20s %-11s %-11s %s' % (
        prov, size, w, cell(list(rr.values())), cell(list(zr.values())),
        cell(ratio, '%.2f'), cpu('rmq'), cpu('zmq'), lat))
EOF
