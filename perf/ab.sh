#!/bin/bash
# ab.sh: two builds of librmq, A and B, measured in turn on this host, so
# that the host's phases (which on a virtual machine outlast a run and set
# its figures twofold) fall on both alike: the A/B a change that must not
# cost speed is held to (docs/PERFORMANCE.md, "A/B of two builds").
#
#   perf/ab.sh [-r ROUNDS] [-I ITER] BUILD_A BUILD_B
#
# Each round runs, for A then B (B then A in odd rounds):
#   mpi_pingpong --rmq P --fi P -S 64,4096,65536 (P = shm, and tcp with
#     RMQ_LOCAL=0: the fabric link; shm's ranks take the local link),
#     under mpirun -np 2 --bind-to core: librmq's p50 one-way and its
#     per-block median ratio to the bare libfabric loop in the same ranks;
#   rmq_bw --local --cpus 1,0 --pattern pushpull -S 8,64,1024 -W 1000
#     -I 500 on shm and tcp (RMQ_LOCAL=0): messages per second.
# It prints one CSV row per measurement (round,build,bench,prov,size,
# metric,value) and, at the end, per cell: A's and B's median [min-max]
# and B's median over A's.  A cell whose ranges overlap moved by less
# than the run-to-run spread.
set -eu
rounds=5 iter=4000
while getopts r:I: o; do
	case $o in
	r) rounds=$OPTARG ;;
	I) iter=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-I ITER] BUILD_A BUILD_B" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-I ITER] BUILD_A BUILD_B" >&2; exit 2; }
A=$1 B=$2
for b in "$A" "$B"; do
	for t in perf/mpi_pingpong perf/rmq_bw; do
		[ -x "$b/$t" ] || { echo "$0: $b/$t: not built" >&2; exit 2; }
	done
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
out=$(mktemp)
trap 'rm -f "$out" "$out.1"' EXIT

pingpong() { # build label prov env...
	local b=$1 label=$2 prov=$3
	shift 3
	env "$@" timeout 300 mpirun --oversubscribe --bind-to core -np 2 \
		-x FI_TCP_IFACE -x RMQ_LOCAL "$b/perf/mpi_pingpong" \
		--rmq "$prov" --fi "$prov" -S 64,4096,65536 -I "$iter" -B 4 \
		--csv >"$out.1" 2>/dev/null || { echo "# $label $prov: failed" >&2; return 0; }
	awk -F, -v r="$round" -v l="$label" -v p="$prov" '
		/^[0-9]/ && $5 != "mpi" && $5 != "fi" {
			print r "," l ",pingpong," p "," $1 ",p50_us," $2 }
		/^# [0-9]+ B: librmq \/ libfabric/ {
			sz = $0; sub(/^# /, "", sz); sub(/ B:.*/, "", sz)
			m = $0; sub(/.*per block median /, "", m); sub(/ .*/, "", m)
			print r "," l ",pingpong," p "," sz ",over_fi," m }' "$out.1"
}

bw() { # build label prov env...
	local b=$1 label=$2 prov=$3
	shift 3
	env "$@" timeout 300 "$b/perf/rmq_bw" --local --cpus 1,0 -p "$prov" \
		--pattern pushpull -S 8,64,1024 -W 1000 -I 500 --csv \
		>"$out.1" 2>/dev/null ||
		{ echo "# $label $prov bw: failed" >&2; return 0; }
	awk -F, -v r="$round" -v l="$label" -v p="$prov" '
		/^[0-9]/ { print r "," l ",pushpull," p "," $1 ",msgs_per_s," $3 }' \
		"$out.1"
}

one() { # build label
	pingpong "$1" "$2" shm RMQ_LOCAL=1
	pingpong "$1" "$2" tcp RMQ_LOCAL=0
	bw "$1" "$2" shm RMQ_LOCAL=1
	bw "$1" "$2" tcp RMQ_LOCAL=0
}

echo "round,build,bench,prov,size,metric,value" | tee "$out"
for round in $(seq 1 "$rounds"); do
	if [ $((round % 2)) -eq 1 ]; then
		one "$A" A | tee -a "$out"
		one "$B" B | tee -a "$out"
	else
		one "$B" B | tee -a "$out"
		one "$A" A | tee -a "$out"
	fi
done

echo
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds rounds, A = $A, B = $B"
echo "# bench,prov,size,metric: A median [min-max]; B median [min-max]; B/A"
awk -F, 'NR > 1 && NF == 7 {
	k = $3 "," $4 "," $5 "," $6; v[k, $2, ++n[k, $2]] = $7; keys[k] = 1 }
function med(k, b,   i, j, t, c, a) {
	c = n[k, b]
	for (i = 1; i <= c; i++) a[i] = v[k, b, i] + 0
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
		if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	lo[b] = a[1]; hi[b] = a[c]
	return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	for (k in keys) {
		ma = med(k, "A"); mb = med(k, "B")
		printf "%s: %.3f [%.3f-%.3f]; %.3f [%.3f-%.3f]; %.3f\n", k, ma,
		    lo["A"], hi["A"], mb, lo["B"], hi["B"], ma ? mb / ma : 0
	}
}' "$out" | sort
