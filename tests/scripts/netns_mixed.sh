#!/bin/sh
# One bound socket, two peers: one on its host (the same network namespace,
# so the local path) and one on another (a namespace across a veth pair,
# so the provider), for PUSH/PULL, REQ/REP and PUB/SUB over tcp and
# sockets.  Every message is checked, and each side checks which of its
# messages went by the local path (tests/programs/mixed.c).  Needs root
# and iproute2; says so and skips (77) when it cannot set the hosts up.
# usage: netns_mixed.sh MIXED
set -u
mixed=$1
. "$(dirname "$0")/netns_lib.sh"

fail=0
port=27000
run() { # where pattern... : the command, its output kept on failure
	ns=$1
	shift
	ip netns exec "$ns" timeout 120 "$mixed" "$@"
}
for prov in tcp sockets; do
	for pat in "pull push 400" "rep req 200" "pub sub 200"; do
		set -- $pat
		srv=$1 cli=$2 n=$3
		port=$((port + 1))
		ep="$prov://$net.1:$port"
		run "$a" "$srv" "$ep" "$n" >/tmp/mixed_s$tag 2>&1 &
		spid=$!
		run "$a" "$cli" "$ep" 0 "$n" local >/tmp/mixed_l$tag 2>&1 &
		lpid=$!
		run "$b" "$cli" "$ep" 1 "$n" remote >/tmp/mixed_r$tag 2>&1
		rrc=$?
		wait "$lpid"
		lrc=$?
		wait "$spid"
		src=$?
		spid=
		if [ "$src$lrc$rrc" = 000 ]; then
			echo "$prov $srv/$cli, one local and one remote peer: ok"
		else
			echo "$prov $srv/$cli: FAILED (bound $src, local $lrc," \
			     "remote $rrc)"
			fail=1
		fi
		cat /tmp/mixed_s$tag /tmp/mixed_l$tag /tmp/mixed_r$tag
		rm -f /tmp/mixed_s$tag /tmp/mixed_l$tag /tmp/mixed_r$tag
	done
done
exit $fail
