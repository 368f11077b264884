#!/bin/sh
# rmq_info as a user runs it: the tables it prints must follow the provider,
# the configuration file, the environment and --strict, and bad input must
# fail with a message.  Usage: info_run.sh RMQ_INFO
set -u
info=$1
# What it prints depends on these: start from none (RMQ_STRICT=1 is set
# for the strict suite).
for v in $(env | sed -n 's/^\(RMQ_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# expect NAME PATTERN: the last output contains PATTERN (grep -E)
expect() {
	grep -Eq -- "$2" "$tmp/out" || { fail "$1: no /$2/"; cat "$tmp/out" >&2; }
}

"$info" -p shm >"$tmp/out" 2>&1 || fail "shm: exit $?"
expect shm '^provider shm: libfabric shm'
expect shm 'inject size: +4096 bytes \(payload by inject <= 4096, header as CQ data\)'
expect shm '0 \.\. 4096 +inject +fi_info'
expect shm '4097 \.\. +rndv_read +provider row'
expect shm 'wait fd: +no'
expect shm 'strict mode: +no'
expect shm 'NUMA placement'
expect shm 'ring +yes'
hwloc=yes
grep -q 'machine: built without hwloc' "$tmp/out" && hwloc=no
if [ $hwloc = no ]; then
	expect shm 'chosen: +no node -- built without hwloc'
else
	expect shm 'chosen: +node [0-9]+ -- no NIC in fi_info \(shm/loopback\): the (calling thread.s|only) node [0-9]+$'
	expect shm 'memory: +(bound to node [0-9]+|first touch)'
	expect shm 'test slab of 1048576 bytes: (bound|first touch), pages on node [0-9]+$'

	# NUMA placement on a topology of another machine (tests/data, as
	# check_numa uses): two nodes; where rmq_info runs is unknown there, and
	# nothing is bound.
	xml=$(dirname "$0")/../data/numa_two_nodes.xml
	env -u HWLOC_COMPONENTS HWLOC_XMLFILE=$xml "$info" -p shm >"$tmp/out" 2>&1 || fail "xml: exit $?"
	expect xml 'machine: 2 NUMA nodes \(topology from XML\); this thread.s CPU is unknown'
	expect xml 'chosen: +no node -- no NIC in fi_info \(shm/loopback\): the calling thread.s node is unknown'
	expect xml 'memory: +first touch \(no node\)'
	env -u HWLOC_COMPONENTS HWLOC_XMLFILE=$xml RMQ_NUMA_POLICY=node RMQ_NUMA_NODE=1 "$info" -p shm \
		>"$tmp/out" 2>&1 || fail "xml node 1: exit $?"
	expect 'xml node 1' 'chosen: +node 1 -- policy node 1 from the config$'
	expect 'xml node 1' 'cpus: +2-3 '
	expect 'xml node 1' 'memory: +first touch \(the topology is not this machine.s\)'
	RMQ_NUMA_POLICY=off "$info" -p shm >"$tmp/out" 2>&1 || fail "numa off: exit $?"
	expect 'numa off' 'chosen: +no node -- policy off \(numa.policy\)'
	expect 'numa off' 'test slab of [0-9]+ bytes: first touch'
fi

"$info" -p tcp --pattern reqrep >"$tmp/out" 2>&1 || fail "tcp: exit $?"
# The row for the libfabric loaded: tcp;ofi_rxm on 1.x, the tcp
# provider's own RDM endpoint on 2.x (providers/tcp.c).
v2=
if grep -q '^provider tcp: libfabric tcp, 2\.' "$tmp/out"; then
	v2=1
	expect tcp 'row: +tcp \(its libfabric 2\.x row\), measured on libfabric 2\.1'
else
	expect tcp '^provider tcp: libfabric tcp;ofi_rxm, 1\.'
	expect tcp 'row: +tcp, measured on libfabric 1\.17'
fi
expect tcp 'path table, REQ/REP'
grep -q 'path table, PAIR' "$tmp/out" && fail "tcp: --pattern reqrep printed PAIR"
# ofi_rxm passes calls straight to the tcp provider (librmq's default
# FI_OFI_RXM_ENABLE_PASSTHRU=1, no FI_MULTI_RECV asked): its inject size
# is 128, where ofi_rxm's own was 64.
expect tcp 'inject size: +128 bytes'
# Eager to 4 KiB, then the ring (providers/tcp.c, measured 27 Nov).
expect tcp '129 \.\. 4096 +eager +provider row'
expect tcp '4097 \.\. 65536 +ring +provider row'
expect tcp 'lands only while the target progresses'
# With rxm's own protocol (lib/caps.c): inject 64, the ring, as measured
# with that protocol, and no eager range.  (1.x: no rxm on 2.x's row.)
if [[ -z $v2 ]]; then
	FI_OFI_RXM_ENABLE_PASSTHRU=0 "$info" -p tcp --pattern reqrep >"$tmp/out" 2>&1 ||
		fail "tcp rxm: exit $?"
	expect 'tcp rxm' 'caps:.*FI_MULTI_RECV'
	expect 'tcp rxm' '65 \.\. 65536 +ring +provider row'
fi

cat >"$tmp/tuned.yaml" <<YAML
thresholds:
  ring_max: 32KiB
  tuned: true
  reqrep:
    rndv: rndv_write
YAML
RMQ_EAGER_MAX=8192 "$info" -p shm -c "$tmp/tuned.yaml" >"$tmp/out" 2>&1 ||
	fail "tuned: exit $?"
expect tuned "configuration: $tmp/tuned.yaml \(written by rmq_tune\)"
expect tuned '4097 \.\. 8192 +eager +environment'
expect tuned "8193 \.\. 32768 +ring +tuned \($tmp/tuned.yaml\)"
expect tuned "32769 \.\. +rndv_write +tuned"
expect tuned "thresholds.ring_max: 32KiB  # file $tmp/tuned.yaml"
expect tuned "thresholds.eager_max: 8KiB  # environment \(RMQ_EAGER_MAX or RMQ_THRESHOLDS_EAGER_MAX\)"
expect tuned "limits.sndhwm: 1000  # default"

"$info" -p shm --strict >"$tmp/out" 2>&1 || fail "strict: exit $?"
expect strict 'strict mode: +yes'
expect strict 'cq_data_size: +4 bytes'
expect strict 'FI_MR_LOCAL applied'
RMQ_STRICT=1 "$info" -p tcp >"$tmp/out" 2>&1 || fail "RMQ_STRICT: exit $?"
expect RMQ_STRICT 'strict mode: +yes'

printf 'thresholds:\n  path: ring\n' >"$tmp/forced.yaml"
"$info" -p shm -c "$tmp/forced.yaml" >"$tmp/out" 2>&1 || fail "forced: exit $?"
expect forced 'every size +ring +forced \(YAML'

# Sections by socket name, and rmq_info --name.
cat >"$tmp/named.yaml" <<YAML
thresholds:
  sockets:
    "bulk*":
      rndv: rndv_write
      eager_max: 8KiB
    ctl:
      path: eager
YAML
"$info" -p tcp -c "$tmp/named.yaml" --name bulk7 --pattern pair >"$tmp/out" 2>&1 ||
	fail "named: exit $?"
expect named "path table, PAIR, socket 'bulk7':"
expect named "129 \.\. 8192 +eager +YAML, socket name \($tmp/named.yaml: thresholds.sockets.bulk\*\)"
expect named "8193 \.\. 65536 +ring +provider row"
expect named "65537 \.\. +rndv_write +YAML, socket name"
expect named "\"thresholds.sockets.bulk\*.rndv\": rndv_write  # file $tmp/named.yaml:4"
"$info" -p tcp -c "$tmp/named.yaml" --name ctl >"$tmp/out" 2>&1 || fail "ctl: exit $?"
expect ctl 'every size +eager +forced \(YAML, socket name'
"$info" -p tcp -c "$tmp/named.yaml" --name other >"$tmp/out" 2>&1 || fail "other: exit $?"
expect other "socket 'other' \(no thresholds.sockets section matches\)"
expect other '65537 \.\. +rndv_read +provider row'
"$info" --name 'a.b' >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "bad --name: exit not 2"

# provider_order and the interface knob.
RMQ_PROVIDER_ORDER=efa,sockets,tcp "$info" >"$tmp/out" 2>&1 || fail "order: exit $?"
expect order '^provider sockets: libfabric sockets'
expect order '^provider auto: sockets, the first of provider_order \[efa,sockets,tcp\] this machine has$'
RMQ_PROVIDER_ORDER=efa,verbs "$info" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "order none: exit not 1"
expect 'order none' 'provider auto: none of provider_order \[efa,verbs\] is available on this machine \(available here: '
# Without FI_TCP_IFACE (lo in the test environment) libfabric lists every
# interface's domain, lo after the others: the knob must pick it.
RMQ_TCP_INTERFACE=lo env -u FI_TCP_IFACE "$info" -p tcp >"$tmp/out" 2>&1 ||
	fail "iface lo: exit $?"
expect 'iface lo' 'domain lo, endpoint FI_EP_RDM'
RMQ_SOCKETS_INTERFACE=lo "$info" -p sockets >"$tmp/out" 2>&1 ||
	fail "sockets iface lo: exit $?"
expect 'sockets iface lo' 'domain lo, endpoint FI_EP_RDM'
RMQ_TCP_INTERFACE=nosuch9 "$info" -p tcp >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "iface missing: exit not 1"
expect 'iface missing' "RMQ_TCP_INTERFACE: 'nosuch9' is not a network interface on this machine \(interfaces here: lo"
printf 'numa:\n  policy: cpuset\n  cpuset: "0"\n' >"$tmp/cpuset.yaml"
if [ $hwloc = yes ]; then
	"$info" -p shm -c "$tmp/cpuset.yaml" >"$tmp/out" 2>&1 || fail "cpuset: exit $?"
	expect cpuset 'chosen: +node [0-9]+ -- policy cpuset 0 from the config: node [0-9]+$'
	expect cpuset 'cpus: +0 '
fi

"$info" -p nosuch >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "unknown provider: exit not 2"
expect nosuch "unknown provider 'nosuch'"
"$info" -p verbs >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "verbs: exit not 1 (no RDMA NIC here)"
expect verbs 'provider verbs not available here'
printf 'thresholds:\n  rndv: rndv_reed\n' >"$tmp/bad.yaml"
"$info" -c "$tmp/bad.yaml" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "bad config: exit not 1"
"$info" --pattern pub >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "bad pattern: exit not 2"

[ $fails -eq 0 ] && echo "rmq_info: all checks passed"
exit $fails
