#!/bin/sh
# Two hosts: network namespaces joined by a veth pair, addresses inside
# them only (10.77.x.0/24).  rmq_pingpong binds "*" in one and connects from
# the other over tcp and sockets, checking every byte.  Needs root and
# iproute2; says so and skips (77) when it cannot set the hosts up.
# Then the host of one side vanishes (its link goes down, no FIN, no RST):
# the other side's wait must end with ECONNRESET, from the control
# channel's keepalives, not hang or time out.
# usage: netns_run.sh PINGPONG PEER_LOST
set -u
pp=$1 lost=$2
. "$(dirname "$0")/netns_lib.sh"

fail=0
port=26000
for prov in tcp sockets; do
	for bindhost in '*' "$net.1"; do
		port=$((port + 1))
		FI_SOCKETS_PE_WAITTIME=0 ip netns exec "$a" timeout 60 "$pp" \
			--server -p "$prov" -B "$bindhost" -P "$port" &
		spid=$!
		if FI_SOCKETS_PE_WAITTIME=0 ip netns exec "$b" timeout 60 "$pp" \
			--connect "$net.1:$port" -p "$prov" -S 0,64,65536,1048576 \
			-I 50 --check --csv >/tmp/netns_$tag.out &&
			wait "$spid"; then
			echo "$prov bind $bindhost -> $net.1: ok"
			cat /tmp/netns_$tag.out
		else
			echo "$prov bind $bindhost -> $net.1: FAILED"
			cat /tmp/netns_$tag.out
			fail=1
		fi
		spid=
		rm -f /tmp/netns_$tag.out
	done
done

# tcp.interface names the veth on each host: a bind to * opens the
# fabric endpoint on that interface's domain and address (rmq.yaml(5)).
# libfabric's FI_TCP_IFACE (lo in the test environment) would hide it.
port=$((port + 1))
unset FI_TCP_IFACE
RMQ_TCP_INTERFACE="va$tag" ip netns exec "$a" timeout 60 "$pp" \
	--server -p tcp -B '*' -P "$port" &
spid=$!
if RMQ_TCP_INTERFACE="vb$tag" ip netns exec "$b" timeout 60 "$pp" \
	--connect "$net.1:$port" -p tcp -S 64,1048576 -I 50 --check \
	>/tmp/netns_$tag.out && wait "$spid" &&
	grep -Eq "provider tcp(;ofi_rxm)? \(domain vb$tag\)" /tmp/netns_$tag.out; then
	echo "tcp.interface vb$tag -> va$tag: ok"
else
	echo "tcp.interface: FAILED"
	fail=1
fi
cat /tmp/netns_$tag.out
spid=
rm -f /tmp/netns_$tag.out

# The host of the bound side vanishes while the other waits for it.
port=$((port + 1))
ip netns exec "$a" timeout 60 "$lost" serve "tcp://$net.1:$port" &
spid=$!
ip netns exec "$b" timeout 60 "$lost" wait "tcp://$net.1:$port" &
wpid=$!
sleep 1
ip -n "$a" link set "va$tag" down
if wait "$wpid"; then
	echo "lost host noticed: ok"
else
	echo "lost host: FAILED (no ECONNRESET)"
	fail=1
fi
exit $fail
