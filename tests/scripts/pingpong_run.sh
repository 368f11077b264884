#!/bin/sh
# Run rmq_pingpong the ways a user does and check its CSV: under mpirun -np 2
# (mode mpi), as --server/--connect (mode standalone) and --local; mode
# mpialt runs perf/mpi_pingpong --rmq PROVIDER --fi PROVIDER under mpirun
# instead (MPI, librmq and bare libfabric alternated in the same two ranks:
# per size an mpi row, a librmq row, an fi row and three ratio lines).
# An extra argument to mpialt goes to mpi_pingpong (--fi-wait: the bare
# loop's CQ has a wait fd; "--page-aligned --zero-copy": page-aligned
# buffers and librmq's zero-copy calls; the header must then say so).
# usage: pingpong_run.sh MODE PINGPONG PROVIDER [MPI_PINGPONG_FLAG]
set -eu
mode=$1 pp=$2 prov=$3 extra=${4:-}
sizes=0,1,64,4096,65536,1048576
out=$(mktemp)
trap 'rm -f "$out"; [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null || true' EXIT

case $mode in
mpi | mpialt)
	mpirun=$(command -v mpirun || true)
	if [ -z "$mpirun" ]; then
		echo "SKIP: mpirun not installed (apt-get install openmpi-bin)"
		exit 77
	fi
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	if [ "$mode" = mpialt ]; then
		sizes=0,64,4096,1048576
		timeout 120 "$mpirun" --oversubscribe -np 2 -x FI_TCP_IFACE \
			"$pp" --rmq "$prov" --fi "$prov" $extra -S "$sizes" \
			-I 400 -W 20 -B 4 --csv >"$out"
		cat "$out"
		case $extra in
		--fi-wait)
			grep -q "^# and librmq .* ping-pong (fi_pingpong's way, its CQ with a wait fd)," "$out" ||
				{ echo "the header does not say the bare loop's CQ has a wait fd"; exit 1; } ;;
		"--page-aligned --zero-copy")
			grep -q "^# with page-aligned buffers, librmq's zero-copy calls$" "$out" ||
				{ echo "the header does not say the buffers are page-aligned and librmq zero-copy"; exit 1; } ;;
		'') ;;
		*) echo "pingpong_run.sh: unknown flag $extra"; exit 2 ;;
		esac
		# Comments aside: the header, then per size an mpi, a librmq
		# and an fi row; then per size three ratio lines (librmq over
		# MPI, over libfabric, over the better) of 4 blocks each.
		awk -v sizes="$sizes" '
		/^# [0-9]+ B: librmq \/ / {
			if ($2 != want[row / 3] || row % 3 != 0) { print "ratio line out of place: " $0; exit 1 }
			if ($0 !~ /mean one-way: [0-9.]+ over all; per block median [0-9.]+ \[[0-9.]+-[0-9.]+\], 4 blocks of 100 round trips$/) { print "bad ratio line: " $0; exit 1 }
			ratios++; next
		}
		# A size librmq took by the local path: how many came straight
		# from the peer memory, after its ratio lines.
		/^# [0-9]+ B: librmq on rank 0 took / {
			if ($0 !~ /^# [0-9]+ B: librmq on rank 0 took [0-9]+ of [0-9]+ local messages straight from the peer.s memory/ || $9 + 0 > $11 + 0 || $11 + 0 <= 0) { print "bad direct line: " $0; exit 1 }
			if ($2 != want[row / 3] || row % 3 != 0 || ratios != row) { print "direct line out of place: " $0; exit 1 }
			direct[$2] = 1; next
		}
		/^#/ { next }
		!hdr { if ($0 != "size,lat_p50_us,lat_p99_us,mbps,path") { print "header: " $0; exit 1 }; hdr = 1; n = split(sizes, want, ","); next }
		{
			split($0, f, ",")
			row++
			if (f[1] != want[int((row + 2) / 3)]) { print "row " row ": size " f[1]; exit 1 }
			if (f[2] !~ /^[0-9.]+$/ || f[2] <= 0 || f[3] < f[2]) { print "bad latency: " $0; exit 1 }
			if (row % 3 == 1 && f[5] != "mpi") { print "not mpi: " $0; exit 1 }
			if (row % 3 == 2 && f[5] !~ /^(inject|eager|ring|rndv_read|rndv_write|rndv_send|seg|local)$/) { print "bad path: " $0; exit 1 }
			if (row % 3 == 0 && f[5] != "fi") { print "not fi: " $0; exit 1 }
			if (row % 3 == 2 && f[5] == "local") local[f[1]] = 1
		}
		END {
			if (row != 3 * n || ratios != 3 * n) { print "rows " row ", ratio lines " ratios; exit 1 }
			for (k in local) if (!(k in direct)) { print k " B went local, no direct line"; exit 1 }
			for (k in direct) if (!(k in local)) { print k " B has a direct line, not local"; exit 1 }
		}' "$out"
		echo "mpi_pingpong --rmq $prov --fi $prov $extra: ok"
		exit 0
	fi
	timeout 120 "$mpirun" --oversubscribe -np 2 "$pp" -p "$prov" \
		-S "$sizes" -I 200 --csv --check >"$out"
	;;
standalone)
	# Below the kernel's ephemeral range (32768-60999): a port there
	# could be some connection's local end (a CI run failed so).  A
	# server that cannot bind exits at once: then another port.
	for try in 1 2 3; do
		port=$(( 20000 + ($$ * 7 + try * 1009) % 10000 ))
		timeout 120 "$pp" --server -p "$prov" -B 127.0.0.1 -P "$port" &
		spid=$!
		sleep 0.2
		kill -0 "$spid" 2>/dev/null && break
		wait "$spid"
	done
	timeout 120 "$pp" --connect "127.0.0.1:$port" -p "$prov" \
		-S "$sizes" -I 200 --csv --check >"$out"
	wait "$spid"
	spid=
	;;
local)
	timeout 120 "$pp" --local -p "$prov" -S "$sizes" -I 200 --csv \
		--check >"$out"
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac

cat "$out"
# A header, then one row per size, in order, with numbers and a path.
awk -F, -v sizes="$sizes" '
NR == 1 { if ($0 != "size,lat_p50_us,lat_p99_us,mbps,path") exit 1; next }
{
	n = split(sizes, want, ",")
	row++
	if ($1 != want[row]) { print "row " row ": size " $1 " != " want[row]; exit 1 }
	if ($2 !~ /^[0-9.]+$/ || $2 <= 0 || $3 < $2) { print "bad latency: " $0; exit 1 }
	if ($5 !~ /^(inject|eager|ring|rndv_read|rndv_write|rndv_send|seg|local)$/) { print "bad path: " $0; exit 1 }
}
END { if (row != split(sizes, w, ",")) { print "rows: " row; exit 1 } }' "$out"
echo "rmq_pingpong $mode $prov: ok"
