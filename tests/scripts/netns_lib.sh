# Two hosts for the netns tests, sourced by netns_run.sh and
# netns_faults.sh: network namespaces $a and $b joined by a veth pair
# (va$tag in $a with $net.1, vb$tag in $b with $net.2), addresses inside
# them only.  Needs root and iproute2: says so and skips (77) otherwise.
# Removed at exit.
# The suite's FI_TCP_IFACE=lo would pin tcp to loopback, where a bind to *
# opens its provider endpoint (lib/conn/addr.c): two hosts need the veth.
unset FI_TCP_IFACE
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root to create network namespaces"
	exit 77
fi
if ! command -v ip >/dev/null; then
	echo "SKIP: iproute2 (ip) not installed"
	exit 77
fi
tag=$$
a=rmq_a$tag b=rmq_b$tag net=10.77.$((tag % 250 + 1))
netns_cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
}
trap netns_cleanup EXIT
netns_setup() {
	ip netns add "$a" && ip netns add "$b" &&
	ip link add "va$tag" type veth peer name "vb$tag" &&
	ip link set "va$tag" netns "$a" && ip link set "vb$tag" netns "$b" &&
	ip -n "$a" addr add "$net.1/24" dev "va$tag" &&
	ip -n "$b" addr add "$net.2/24" dev "vb$tag" &&
	ip -n "$a" link set "va$tag" up && ip -n "$b" link set "vb$tag" up &&
	ip -n "$a" link set lo up && ip -n "$b" link set lo up
}
if ! netns_setup; then
	echo "SKIP: cannot create network namespaces and a veth pair here"
	exit 77
fi
