#!/bin/sh
# Network faults between two hosts (network namespaces joined by a veth
# pair, netns_lib.sh; root only, skips otherwise), with
# tests/programs/flap:
#  1. PUSH/PULL over tcp and sockets, timeouts.keepalive_ms 10 s: the link
#     goes down for 1 s, then for 5 s, in the middle of the stream; every
#     message arrives, in order, once.
#  2. REQ/REP over tcp, the same: no request fails.
#  3. keepalive_ms 2 s and the link down for 6 s: the peer is declared
#     lost.  REQ/REP: the waiting request fails with a clear error within
#     about 2 s of the outage, the REQ asks again and is answered once the
#     link is back.  PUSH/PULL: what was in flight may be lost, but nothing
#     arrives twice or out of order, and the stream goes on.
#  4. A tbf rate limit (40 Mbit/s) on the sender's link: the sender is
#     held to the rate (backpressure), and its memory does not grow.
# usage: netns_faults.sh FLAP
set -u
flap=$1
. "$(dirname "$0")/netns_lib.sh"
export FI_SOCKETS_PE_WAITTIME=0

fail=0
port=27000
out=/tmp/netns_faults_$tag

# After DELAY s, the link of host b goes down for SECS s.
outage() {
	(sleep "$1"; ip -n "$b" link set "vb$tag" down; sleep "$2";
	 ip -n "$b" link set "vb$tag" up) &
}

# run NAME SERVER-ARGS -- CLIENT-ARGS: the server in a, the client in b;
# both must exit 0.
run() {
	name=$1
	shift
	sargs=
	while [ "$1" != -- ]; do
		sargs="$sargs $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	ip netns exec "$a" timeout 120 "$flap" $sargs >"$out.s" 2>&1 &
	spid=$!
	sleep 0.3
	if ip netns exec "$b" timeout 120 "$flap" "$@" >"$out.c" 2>&1 &&
		wait "$spid"; then
		echo "$name: ok"
	else
		echo "$name: FAILED"
		fail=1
	fi
	spid=
	wait # the outage, if any
	sed 's/^/    /' "$out.s" "$out.c"
}

export RMQ_TIMEOUTS_KEEPALIVE_MS=10000
for prov in tcp sockets; do
	port=$((port + 1))
	ep="$prov://$net.1:$port"
	outage 2 1
	outage 5 5
	run "$prov PUSH/PULL, link down 1 s and 5 s" \
		pull "$ep" 3000 -- push "$ep" 3000 300
done

port=$((port + 1))
ep="tcp://$net.1:$port"
outage 2 1
outage 5 5
run "tcp REQ/REP, link down 1 s and 5 s" rep "$ep" -- req "$ep" 400 40

export RMQ_TIMEOUTS_KEEPALIVE_MS=2000
port=$((port + 1))
ep="tcp://$net.1:$port"
outage 3 6
FLAP_ERRORS_OK=1 run "tcp REQ/REP, keepalive 2 s, link down 6 s" \
	rep "$ep" -- req "$ep" 300 30
# The failure came from the keepalive, soon after the outage (3 s).
first=$(sed -n 's/.*failed (first at \([0-9.]*\) s).*/\1/p' "$out.c")
if [ -z "$first" ] || [ "$first" = -1.0 ] ||
	! awk -v t="$first" 'BEGIN { exit !(t >= 3.5 && t <= 7.5) }'; then
	echo "  the failed request should fail 1-4 s after the outage: $first"
	fail=1
fi
port=$((port + 1))
ep="tcp://$net.1:$port"
outage 3 6
FLAP_GAPS_OK=1 run "tcp PUSH/PULL, keepalive 2 s, link down 6 s" \
	pull "$ep" 2000 -- push "$ep" 2000 200
grep -q "peers lost [1-9]" "$out.c" || {
	echo "  the pusher did not declare its peer lost"
	fail=1
}
unset RMQ_TIMEOUTS_KEEPALIVE_MS

# Backpressure: 40 Mbit/s (5 MB/s) out of b.
port=$((port + 1))
ep="tcp://$net.1:$port"
tc -n "$b" qdisc add dev "vb$tag" root tbf rate 40mbit burst 64kb \
	latency 50ms || {
	echo "SKIP: tbf not available"
	exit 77
}
run "tcp PUSH/PULL through tbf 40 Mbit/s" sink "$ep" 6 -- blast "$ep" 6
if ! awk '/^blast:/ { mb = $2; rss0 = $7; peak = $11 + 0 }
	END { if (mb > 5.5 || peak - rss0 > 65536) exit 1 }' "$out.c"; then
	echo "  the sender was not held to the rate, or its memory grew"
	fail=1
fi
rm -f "$out.s" "$out.c"
exit $fail
