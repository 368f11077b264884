#!/usr/bin/env bash
# perf/compare.sh - run libfabric's fi_pingpong (the anchor) and librmq's
# rmq_pingpong side by side, on the same provider and sizes, in the same run,
# and print the ratios.  See docs/PERFORMANCE.md (in the source tree) for
# why the anchor must always be measured next to librmq: absolute figures
# are only comparable within one run on one machine.  With --zmq, ZeroMQ REQ/REP ping-pong
# (perf/zmq_pingpong, built when libzmq is found) is a second anchor,
# measured in the same loop.  With --fi-msg, for the tcp provider,
# fi_pingpong -p tcp -e msg (a connected MSG endpoint on the tcp provider
# alone, without ofi_rxm) is another anchor in the same loop, with the same
# placement; its mean one-way latency and rmq mean / fi-msg mean are added
# as columns at the end of the table and of the CSV rows.  With --mpi, for
# the shm provider, Open MPI's shared-memory transport is one more anchor in
# the same loop: perf/mpi_pingpong (an osu_latency-style MPI_Send/MPI_Recv
# ping-pong, built when an MPI C dependency is found) under mpirun -np 2
# --mca btl self,vader, ranks bound to CPU 0 and CPU 1; its mean one-way
# latency and rmq mean / mpi mean are added at the end as --fi-msg's are.
#
# --rmq-env VAR=VALUE (repeatable) sets VAR=VALUE in the environment of the
# librmq runs only (rmq_pingpong, rmq_bw; not fi_pingpong, ZeroMQ, MPI,
# cma_bw or rmq_bw --memcpy) and says so in the tables' headings: --rmq-env
# RMQ_LOCAL=1 sets librmq's same-host path against the same anchors.
#
# With --paths, rmq_pingpong runs once per librmq path, forced with --path,
# beside one fi_pingpong, and the table has a column per path.  With --bw,
# rmq_bw (streaming, osu_bw-style) runs per path too, next to rmq_bw
# --memcpy (one core's memcpy bandwidth), the bandwidth anchor: fabtests'
# fi_bw is not in Debian's libfabric-bin.
#
# With --zmq-thr, instead, streaming throughput against ZeroMQ: rmq_bw
# --pattern pushpull and pubsub next to perf/zmq_thr (built when libzmq is
# found) with the same pattern, librmq's shm against ZeroMQ's ipc:// and tcp
# against tcp://, each pair in the same round with the same placement
# (sender CPU 0, receiver CPU 1), -r rounds; a table of messages/s per size
# with the ratio rmq/zmq and the spread over the rounds.
#
# With --zmq-rpc, instead, DEALER/ROUTER requests against ZeroMQ's: see
# perf/rpc_compare.sh, which it runs with the other arguments.
#
# With --cma, instead, the local path's large messages against their bare
# copy: rmq_bw --local (sender CPU 0, receiver CPU 1) next to perf/cma_bw,
# process_vm_readv(2) by CPU 1 from a process on CPU 0 (what the local
# path's receiver does), per provider and size, -r rounds each alternating
# the two; a table of MB/s with the ratio rmq/cma and the per-round range.
#
# Conventions (as fi_pingpong): latency is one-way = round trip / 2,
# ping-pong MB/s = size / one-way time (MB = 10^6 bytes).  Both sides busy
# poll, pinned to CPU 0 and CPU 1.
#
# Environment:
#   RMQ_PINGPONG   path of rmq_pingpong (default: see "Binaries" below)
#   FI_PINGPONG    path of fi_pingpong  (default: fi_pingpong from PATH)
#   ZMQ_PINGPONG   path of zmq_pingpong (default: as rmq_pingpong)
#   RMQ_BW         path of rmq_bw       (default: as rmq_pingpong)
#   ZMQ_THR        path of zmq_thr      (default: as rmq_pingpong)
#   MPI_PINGPONG   path of mpi_pingpong (default: as rmq_pingpong)
#   CMA_BW         path of cma_bw       (default: as rmq_pingpong)
#   MPIRUN         Open MPI's mpirun    (default: mpirun from PATH)
#   OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are set to 1
#   for --mpi when run as root.
#   FI_SOCKETS_PE_WAITTIME, FI_TCP_IFACE, FI_SOCKETS_IFACE are set to 0, lo,
#   lo unless already set; they apply to both binaries.
#
# Binaries: with -b, BUILD_DIR/perf/NAME.  Without, the first found of: this
# script's directory, PREFIX/bin when this is the installed copy
# (PREFIX/share/librmq/perf/compare.sh), ./build/perf, then PATH.

set -euo pipefail

prog=${0##*/}

# --zmq-rpc: DEALER/ROUTER against ZeroMQ, a script of its own.
for arg in "$@"; do
	if [[ $arg == --zmq-rpc ]]; then
		rest=()
		for a in "$@"; do [[ $a == --zmq-rpc ]] || rest+=("$a"); done
		exec "$(dirname "$0")/rpc_compare.sh" "${rest[@]}"
	fi
done

usage() {
	cat <<EOF
Usage: $prog [-p PROVIDER ...] [-S SIZES] [-I ITER] [-r RUNS] [-b BUILD_DIR]
       [-T TIMEOUT] [--zmq TRANSPORT ...] [--zmq-same-cpu] [--csv FILE]
       [--fi-msg] [--mpi] [--rmq-env VAR=VALUE ...] [--paths LIST]
       [--bw [--bw-iters N] [--bw-window W]] [-v] [-h]
       $prog --zmq-thr [-p PROVIDER ...] [-S SIZES] [-r RUNS] [-b BUILD_DIR]
       [-T TIMEOUT] [--thr-patterns LIST] [--bw-iters N] [--bw-window W]
       [--rmq-env VAR=VALUE ...] [--csv FILE] [-v]
       $prog --cma [-p PROVIDER ...] [-S SIZES] [-r RUNS] [-b BUILD_DIR]
       [-T TIMEOUT] [--bw-iters N] [--bw-window W] [--rmq-env VAR=VALUE ...]
       [--csv FILE] [-v]

Runs fi_pingpong and rmq_pingpong side by side and prints, per provider, a
table of one-way latency and ping-pong bandwidth with the rmq/fi ratios.

  -p PROVIDER   shm (default), tcp, sockets; repeat or give a comma list.
                tcp = fi_pingpong -p tcp -e rdm (tcp;ofi_rxm) on 127.0.0.1.
  -S SIZES      message sizes in bytes, comma or space separated; k/m suffix
                allowed (default: 1 8 64 1024 4096 65536 1048576 4194304)
  -I ITER       iterations for every size (default: 100000 for <= 4 KiB,
                10000 for <= 64 KiB, 1000 above)
  -r RUNS       repeat each measurement RUNS times, report the median (3)
  -b BUILD_DIR  meson build directory; rmq_pingpong is
                BUILD_DIR/perf/rmq_pingpong unless RMQ_PINGPONG is set.
                Without -b: beside this script, then PREFIX/bin for the
                installed copy, then ./build/perf, then PATH
  -T TIMEOUT    seconds allowed for each single run (default 60, but 300 for
                sockets, whose fi_pingpong needs ~1 ms per message >= 512 B
                on two cores); a run that exceeds it is killed, shows FAIL
  --zmq TRANSPORT
                also run zmq_pingpong (ZeroMQ REQ/REP) over tcp or ipc in the
                same loop and add its p50 latency, MB/s and the ratio
                rmq p50 / zmq p50 per size; repeat or give a comma list.
                The binary is BUILD_DIR/perf/zmq_pingpong (built only when
                libzmq is found) unless ZMQ_PINGPONG is set; if it is
                missing the zmq columns are skipped with a warning.
  --zmq-same-cpu
                run both zmq_pingpong processes on CPU 0 (ZeroMQ's best
                placement on a 2-CPU host, docs/PERFORMANCE.md; ZeroMQ
                blocks, and waking a process on the other CPU costs ~50 us)
                instead of 0 and 1
  --fi-msg      for provider tcp, also run fi_pingpong -p tcp -e msg (the
                tcp provider's connected MSG endpoint, no ofi_rxm) in the
                same loop and with the same placement as the rdm run, and
                add columns "fi-msg us" (its median mean one-way us) and
                "rmq/fi-msg" (rmq mean / fi-msg mean; lower is better);
                '-' for the other providers.  The CSV rows get fimsg_lat_us
                and fimsg_lat_ratio at their end.  No --paths.
  --mpi         for provider shm, also run Open MPI's shared-memory
                transport, osu_latency-style: mpirun --allow-run-as-root
                -np 2 --cpu-set 0,1 --bind-to cpu-list:ordered --mca btl
                self,vader mpi_pingpong -S SIZE -I ITER --csv (ranks on CPU
                0 and CPU 1), in the same loop and rounds, and add columns
                "mpi mean" (size / its median MB/s: mean one-way us) and
                "rmq/mpi" (rmq mean / mpi mean; lower is better); '-' for
                the other providers.  The CSV rows get mpi_lat_us and
                mpi_lat_ratio at their end (after fi-msg's).  mpi_pingpong
                is BUILD_DIR/perf/mpi_pingpong (built when an MPI C
                dependency is found) unless MPI_PINGPONG is set; without it
                or mpirun the script stops.  No --paths.
  --rmq-env VAR=VALUE
                set VAR=VALUE in the environment of the librmq runs only
                (rmq_pingpong and rmq_bw, not fi_pingpong, ZeroMQ, MPI,
                cma_bw or rmq_bw --memcpy), shown in the tables' headings;
                repeat for more, e.g. --rmq-env RMQ_LOCAL=1 (librmq's
                same-host path)
  --csv FILE    also write the results as CSV (header lines start with '#')
  --paths LIST  instead of the table above, run rmq_pingpong once per path,
                forced with --path: inject, eager, ring, rndv_read,
                rndv_write, rndv_send, seg, or auto (by size); "all" = the
                seven paths.  One fi_pingpong per size and run as before;
                the table has one column per path: rmq mean one-way us and
                (rmq mean / fi mean), '-' where the path cannot carry the
                size, '*' on the fastest path of each size.  No --zmq.
  --bw          also run rmq_bw (window of W messages, one ack) for each
                --paths path (only by size without --paths), and rmq_bw
                --memcpy (one core's memcpy bandwidth, buffers rotated past
                the LLC), and print MB/s per path and, at >= 1 MiB,
                bw / memcpy.  fi_bw, if it is installed, is not run (see
                the header line about it).
  --bw-iters N  rmq_bw -I N (default: rmq_bw's: 100 up to 64 KiB, 20 above;
                with --zmq-thr zmq_thr's -I too)
  --bw-window W rmq_bw -W W (default: rmq_bw's, 64; with --zmq-thr zmq_thr's
                -W too)
  --zmq-thr     instead of all the above, streaming throughput against
                ZeroMQ: per round, rmq_bw --local --pattern P and zmq_thr
                --pattern P (BUILD_DIR/perf/zmq_thr unless ZMQ_THR is set),
                both sender on CPU 0 and receiver on CPU 1, over librmq's shm
                vs ZeroMQ ipc:// and tcp vs tcp:// (sockets vs tcp://).
                Default providers shm and tcp, sizes 8 64 1024 4096 65536
                1048576.  Prints, per pattern and provider, messages/s per
                size (median over -r rounds), the spread (max - min) /
                median, the ratio rmq/zmq of the medians and the range of
                the per-round ratios, and each side's CPU ns per message.
                Not with --zmq, --paths or --bw.
  --thr-patterns LIST
                with --zmq-thr: pushpull, pubsub (both by default) and/or
                pair (rmq_bw PAIR -> PAIR, set against ZeroMQ PUSH/PULL)
  --cma         instead of all the above, the local path's large messages
                against their bare copy: per provider, size and round,
                rmq_bw --local --cpus 0,1 -p PROVIDER -S SIZE (sender CPU 0,
                receiver CPU 1), then cma_bw --cpus 1,0 -S SIZE
                (BUILD_DIR/perf/cma_bw, not installed, unless CMA_BW is set):
                process_vm_readv(2) of SIZE bytes by CPU 1 from a process
                on CPU 0, repeated for 1 s; rmq_bw runs about as long
                (enough rounds for 16 GB, unless --bw-iters says how
                many; at least 20).  Default providers shm and tcp,
                sizes 65536 1048576 4194304.  Prints, per provider, MB/s per
                size of both (median [min-max] over -r rounds), rmq_bw's
                path, and rmq/cma (median [min-max] of the per-round
                ratios).  Not with --zmq, --paths, --bw, --zmq-thr,
                --fi-msg, --mpi or -I.
  -v            print every command to stderr as it is run
  -h, --help    this help

Exit status: 0 if every run succeeded, 1 if any run failed, 2 on bad usage.
EOF
}

die_usage() {
	printf '%s: %s\n' "$prog" "$1" >&2
	printf "Try '%s -h'.\n" "$prog" >&2
	exit 2
}

# ---------------------------------------------------------------- options

providers=()
sizes=()
iter_override=""
runs=3
build_dir=./build
build_dir_set=0 # -b given: its binaries only, as before
csv_file=""
zmq_transports=()
zmq_same_cpu=0
fi_msg=0      # --fi-msg
mpi=0         # --mpi
rmq_env=()    # --rmq-env VAR=VALUE ...
run_timeout="" # default: 60 s, 300 s for sockets (see timeout_for)
verbose=0
path_list=()  # --paths
do_bw=0       # --bw
bw_iters=""   # --bw-iters
bw_window=""  # --bw-window
do_thr=0      # --zmq-thr
thr_patterns=() # --thr-patterns
do_cma=0      # --cma
all_paths=(inject eager ring rndv_read rndv_write rndv_send seg)

add_list() { # add_list ARRAYNAME "a,b c"
	local -n _arr=$1
	local item
	for item in ${2//,/ }; do
		_arr+=("$item")
	done
}

to_bytes() { # 64 / 4k / 1m / 1MiB -> bytes
	local s=$1 n mult=1
	case $s in
	*[kK] | *[kK]i[bB] | *[kK][bB]) mult=1024 ;;
	*[mM] | *[mM]i[bB] | *[mM][bB]) mult=1048576 ;;
	*[gG] | *[gG]i[bB] | *[gG][bB]) mult=1073741824 ;;
	esac
	n=${s%%[!0-9]*}
	[[ -n $n && ${s:${#n}} =~ ^([kKmMgG](i?[bB])?)?$ ]] || return 1
	echo $((10#$n * mult))
}

need_arg() { [[ $# -ge 2 && -n $2 ]] || die_usage "option $1 needs an argument"; }

while [[ $# -gt 0 ]]; do
	case $1 in
	-p) need_arg "$@"; add_list providers "$2"; shift 2 ;;
	-p*) add_list providers "${1#-p}"; shift ;;
	-S) need_arg "$@"; add_list sizes "$2"; shift 2 ;;
	-S*) add_list sizes "${1#-S}"; shift ;;
	-I) need_arg "$@"; iter_override=$2; shift 2 ;;
	-I*) iter_override=${1#-I}; shift ;;
	-r) need_arg "$@"; runs=$2; shift 2 ;;
	-r*) runs=${1#-r}; shift ;;
	-b) need_arg "$@"; build_dir=$2; build_dir_set=1; shift 2 ;;
	-b*) build_dir=${1#-b}; build_dir_set=1; shift ;;
	-T) need_arg "$@"; run_timeout=$2; shift 2 ;;
	-T*) run_timeout=${1#-T}; shift ;;
	--zmq) need_arg "$@"; add_list zmq_transports "$2"; shift 2 ;;
	--zmq=*) add_list zmq_transports "${1#--zmq=}"; shift ;;
	--zmq-same-cpu) zmq_same_cpu=1; shift ;;
	--fi-msg) fi_msg=1; shift ;;
	--mpi) mpi=1; shift ;;
	--rmq-env) need_arg "$@"; rmq_env+=("$2"); shift 2 ;;
	--rmq-env=*) rmq_env+=("${1#--rmq-env=}"); shift ;;
	--paths) need_arg "$@"; add_list path_list "$2"; shift 2 ;;
	--paths=*) add_list path_list "${1#--paths=}"; shift ;;
	--bw) do_bw=1; shift ;;
	--zmq-thr) do_thr=1; shift ;;
	--cma) do_cma=1; shift ;;
	--thr-patterns) need_arg "$@"; add_list thr_patterns "$2"; shift 2 ;;
	--thr-patterns=*) add_list thr_patterns "${1#--thr-patterns=}"; shift ;;
	--bw-iters) need_arg "$@"; bw_iters=$2; shift 2 ;;
	--bw-iters=*) bw_iters=${1#--bw-iters=}; shift ;;
	--bw-window) need_arg "$@"; bw_window=$2; shift 2 ;;
	--bw-window=*) bw_window=${1#--bw-window=}; shift ;;
	--csv) need_arg "$@"; csv_file=$2; shift 2 ;;
	--csv=*) csv_file=${1#--csv=}; shift ;;
	-v) verbose=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done

if [[ $do_thr -eq 1 ]]; then
	[[ ${#providers[@]} -gt 0 ]] || providers=(shm tcp)
	[[ ${#sizes[@]} -gt 0 ]] || sizes=(8 64 1024 4096 65536 1048576)
	[[ ${#thr_patterns[@]} -gt 0 ]] || thr_patterns=(pushpull pubsub)
	[[ ${#zmq_transports[@]} -eq 0 && ${#path_list[@]} -eq 0 && $do_bw -eq 0 ]] ||
		die_usage "--zmq-thr does not go with --zmq, --paths or --bw"
	[[ $fi_msg -eq 0 ]] || die_usage "--zmq-thr does not go with --fi-msg"
	[[ $mpi -eq 0 ]] || die_usage "--zmq-thr does not go with --mpi"
	for t in "${thr_patterns[@]}"; do
		case $t in
		pushpull | pubsub | pair) ;;
		*) die_usage "unknown pattern '$t' (pushpull, pubsub, pair)" ;;
		esac
	done
fi
[[ ${#thr_patterns[@]} -eq 0 || $do_thr -eq 1 ]] ||
	die_usage "--thr-patterns needs --zmq-thr"
if [[ $do_cma -eq 1 ]]; then
	[[ ${#providers[@]} -gt 0 ]] || providers=(shm tcp)
	[[ ${#sizes[@]} -gt 0 ]] || sizes=(65536 1048576 4194304)
	[[ $do_thr -eq 0 ]] || die_usage "--cma does not go with --zmq-thr"
	[[ ${#zmq_transports[@]} -eq 0 && ${#path_list[@]} -eq 0 && $do_bw -eq 0 ]] ||
		die_usage "--cma does not go with --zmq, --paths or --bw"
	[[ $fi_msg -eq 0 ]] || die_usage "--cma does not go with --fi-msg"
	[[ $mpi -eq 0 ]] || die_usage "--cma does not go with --mpi"
	[[ -z $iter_override ]] || die_usage "--cma does not go with -I (use --bw-iters)"
fi
[[ ${#providers[@]} -gt 0 ]] || providers=(shm)
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1 8 64 1024 4096 65536 1048576 4194304)
[[ ${#zmq_transports[@]} -gt 0 || $zmq_same_cpu -eq 0 ]] ||
	die_usage "--zmq-same-cpu needs --zmq"

for p in "${providers[@]}"; do
	case $p in
	shm | tcp | sockets) ;;
	*) die_usage "unsupported provider '$p' (shm, tcp, sockets)" ;;
	esac
done
zts=()
for t in "${zmq_transports[@]}"; do
	case $t in
	tcp | ipc) [[ " ${zts[*]} " == *" $t "* ]] || zts+=("$t") ;;
	*) die_usage "unsupported zmq transport '$t' (tcp, ipc)" ;;
	esac
done
zmq_transports=("${zts[@]}")
for i in "${!sizes[@]}"; do
	b=$(to_bytes "${sizes[$i]}") || die_usage "bad size '${sizes[$i]}'"
	[[ $b -ge 1 ]] || die_usage "bad size '${sizes[$i]}'"
	sizes[i]=$b
done
[[ -z $iter_override || $iter_override =~ ^[1-9][0-9]*$ ]] ||
	die_usage "bad iteration count '$iter_override'"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die_usage "bad run count '$runs'"
[[ -z $run_timeout || $run_timeout =~ ^[1-9][0-9]*$ ]] ||
	die_usage "bad timeout '$run_timeout'"
pl=()
for pa in "${path_list[@]}"; do
	if [[ $pa == all ]]; then
		set -- "${all_paths[@]}"
	else
		[[ " ${all_paths[*]} auto " == *" $pa "* ]] ||
			die_usage "unknown path '$pa' (${all_paths[*]}, auto, all)"
		set -- "$pa"
	fi
	for one in "$@"; do
		[[ " ${pl[*]} " == *" $one "* ]] || pl+=("$one")
	done
done
path_list=("${pl[@]}")
[[ ${#path_list[@]} -eq 0 || ${#zmq_transports[@]} -eq 0 ]] ||
	die_usage "--zmq does not go with --paths"
[[ ${#path_list[@]} -eq 0 || $fi_msg -eq 0 ]] ||
	die_usage "--fi-msg does not go with --paths"
if [[ $fi_msg -eq 1 && " ${providers[*]} " != *" tcp "* ]]; then
	echo "$prog: warning: --fi-msg only measures provider tcp, which is not among -p ${providers[*]}; its columns will show '-'" >&2
fi
[[ ${#path_list[@]} -eq 0 || $mpi -eq 0 ]] ||
	die_usage "--mpi does not go with --paths"
if [[ $mpi -eq 1 && " ${providers[*]} " != *" shm "* ]]; then
	echo "$prog: warning: --mpi only measures provider shm, which is not among -p ${providers[*]}; its columns will show '-'" >&2
fi
for e in "${rmq_env[@]}"; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] ||
		die_usage "bad --rmq-env '$e' (VAR=VALUE)"
done
[[ -z $bw_iters && -z $bw_window || $do_bw -eq 1 || $do_thr -eq 1 || $do_cma -eq 1 ]] ||
	die_usage "--bw-iters and --bw-window need --bw, --zmq-thr or --cma"
[[ -z $bw_iters || $bw_iters =~ ^[1-9][0-9]*$ ]] ||
	die_usage "bad --bw-iters '$bw_iters'"
[[ -z $bw_window || $bw_window =~ ^[1-9][0-9]*$ ]] ||
	die_usage "bad --bw-window '$bw_window'"

# The installed copy lives in PREFIX/share/librmq/perf, the binaries in
# PREFIX/bin, and the caller's ./build is nothing of theirs: look beside the
# script first.  -b still means that build tree only.
script_dir=$(dirname "$0")
script_bindir=""
case $(cd "$script_dir" && pwd) in
*/share/librmq/perf) script_bindir=$(cd "$script_dir/../../../bin" 2>/dev/null && pwd) || true ;;
esac
default_bin() { # default_bin NAME: where NAME is unless its variable is set
	local dir
	if [[ $build_dir_set -eq 0 ]]; then
		for dir in "$script_dir" "$script_bindir" "$build_dir/perf"; do
			if [[ -n $dir && -x $dir/$1 && ! -d $dir/$1 ]]; then
				echo "$dir/$1"
				return
			fi
		done
		command -v "$1" 2>/dev/null && return
	fi
	echo "$build_dir/perf/$1" # for the message when it is missing
}
fi_bin=${FI_PINGPONG:-fi_pingpong}
rmq_bin=${RMQ_PINGPONG:-$(default_bin rmq_pingpong)}

# The version of the libfabric a librmq binary loads: a build against a
# libfabric in a prefix of its own (tools/libfabric2.sh) loads that one,
# whose fi_info sits in the prefix's bin/, not the one on PATH.
fi_loaded() {
	local lib info
	lib=$(ldd "$1" 2>/dev/null | awk '/libfabric\.so/ { print $3; exit }')
	info=$(dirname "${lib:-/nonexistent/x}")/../bin/fi_info
	[[ -n $lib && -x $info ]] || info=fi_info
	"$info" --version 2>/dev/null | head -n 1 || echo unknown
}
zmq_bin=${ZMQ_PINGPONG:-$(default_bin zmq_pingpong)}
bw_bin=${RMQ_BW:-$(default_bin rmq_bw)}
thr_bin=${ZMQ_THR:-$(default_bin zmq_thr)}
mpi_bin=${MPI_PINGPONG:-$(default_bin mpi_pingpong)}
cma_bin=${CMA_BW:-$(default_bin cma_bw)}
mpirun_bin=${MPIRUN:-mpirun}

# --zmq-thr and --cma run neither fi_pingpong nor rmq_pingpong.
[[ $do_thr -eq 1 || $do_cma -eq 1 ]] || command -v "$fi_bin" >/dev/null 2>&1 ||
	{ echo "$prog: $fi_bin not found (apt-get install libfabric-bin)" >&2; exit 2; }
[[ $do_thr -eq 1 || $do_cma -eq 1 ]] || [[ -x $rmq_bin && ! -d $rmq_bin ]] ||
	{ echo "$prog: $rmq_bin not found or not executable (build with -Dperf=true, or set RMQ_PINGPONG)" >&2; exit 2; }
if [[ $do_thr -eq 1 ]] && [[ ! -x $thr_bin || -d $thr_bin ]]; then
	echo "$prog: $thr_bin not found or not executable (built only when libzmq is found: apt-get install libzmq3-dev, or set ZMQ_THR)" >&2
	exit 2
fi
if [[ $do_bw -eq 1 || $do_thr -eq 1 || $do_cma -eq 1 ]] && [[ ! -x $bw_bin || -d $bw_bin ]]; then
	echo "$prog: $bw_bin not found or not executable (set RMQ_BW)" >&2
	exit 2
fi
if [[ $do_cma -eq 1 ]] && [[ ! -x $cma_bin || -d $cma_bin ]]; then
	echo "$prog: --cma: $cma_bin not found or not executable (built with -Dperf=true but not installed: give -b BUILD_DIR, or set CMA_BW)" >&2
	exit 2
fi
zmq_version="" zmq_skipped=""
if [[ ${#zmq_transports[@]} -gt 0 ]]; then
	if [[ -x $zmq_bin && ! -d $zmq_bin ]]; then
		zmq_version=$("$zmq_bin" --version 2>/dev/null | sed -n '1s/.*(\(.*\)).*/\1/p' || true)
		[[ -n $zmq_version ]] || zmq_version="version unknown"
	else
		echo "$prog: $zmq_bin not found or not executable (built only when libzmq is found: apt-get install libzmq3-dev, or set ZMQ_PINGPONG); skipping the zmq columns" >&2
		zmq_skipped=${zmq_transports[*]}
		zmq_transports=()
	fi
fi
zmq_flags=()
[[ $zmq_same_cpu -eq 0 ]] || zmq_flags=(--same-cpu)
# --mpi: Open MPI's flags.  --cpu-set with --bind-to core leaves both ranks
# bound to the whole set and conflicts with --map-by core; cpu-list:ordered
# puts rank 0 on CPU 0 and rank 1 on CPU 1, as taskset does the others.
mpi_version="" mpirun_version=""
mpi_flags=(--allow-run-as-root -np 2 --cpu-set "0,1" --bind-to cpu-list:ordered
	--mca btl "self,vader")
if [[ $mpi -eq 1 ]]; then
	if ! command -v "$mpirun_bin" >/dev/null 2>&1; then
		echo "$prog: --mpi: $mpirun_bin not found (apt-get install openmpi-bin, or set MPIRUN)" >&2
		exit 2
	fi
	if [[ ! -x $mpi_bin || -d $mpi_bin ]]; then
		echo "$prog: --mpi: $mpi_bin not found or not executable (built only when an MPI C dependency is found: apt-get install libopenmpi-dev, or set MPI_PINGPONG)" >&2
		exit 2
	fi
	mpirun_version=$("$mpirun_bin" --version 2>/dev/null | head -n 1 || true)
	if [[ $mpirun_version != *"Open MPI"* ]]; then
		echo "$prog: --mpi: $mpirun_bin is not Open MPI's mpirun (${mpirun_version:-no version}); set MPIRUN" >&2
		exit 2
	fi
	mpi_version=$("$mpi_bin" --version 2>/dev/null | sed -n '1s/^[^(]*(\(.*\))$/\1/p' || true)
	[[ -n $mpi_version ]] || mpi_version="version unknown"
	# mpirun refuses root without both (besides --allow-run-as-root)
	if [[ $(id -u) -eq 0 ]]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
fi
# --rmq-env: a prefix for the librmq commands, and how headings show it
rmq_pre=() rmq_envs=""
if [[ ${#rmq_env[@]} -gt 0 ]]; then
	rmq_pre=(env "${rmq_env[@]}")
	rmq_envs=$(printf '%q ' "${rmq_env[@]}")
fi
for c in taskset timeout awk sort; do
	command -v "$c" >/dev/null 2>&1 || { echo "$prog: $c not found" >&2; exit 2; }
done
if [[ $(nproc) -lt 2 ]]; then
	echo "$prog: warning: fewer than 2 CPUs; taskset -c 1 will fail" >&2
fi

# Environment shared by both binaries.  sockets is ~100x slower on two cores
# unless its progress thread busy-polls; tcp/sockets are pinned to loopback
# (otherwise the server listens on the first interface, e.g. eth0).
export FI_SOCKETS_PE_WAITTIME=${FI_SOCKETS_PE_WAITTIME:-0}
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
export FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
# fi_pingpong -e rdm on tcp as librmq runs tcp;ofi_rxm: its calls passed
# straight to the tcp provider (providers/tcp.c; 14.4-15.3 -> 9.9-10.4 us
# at 64 B on loopback, 27 Nov 2026).  0 in the environment: rxm's own
# protocol for both.
export FI_OFI_RXM_ENABLE_PASSTHRU=${FI_OFI_RXM_ENABLE_PASSTHRU:-1}

prov_env() { # the variables that matter for one provider, for the header
	case $1 in
	sockets) echo "FI_SOCKETS_PE_WAITTIME=$FI_SOCKETS_PE_WAITTIME FI_SOCKETS_IFACE=$FI_SOCKETS_IFACE " ;;
	tcp) echo "FI_TCP_IFACE=$FI_TCP_IFACE FI_OFI_RXM_ENABLE_PASSTHRU=$FI_OFI_RXM_ENABLE_PASSTHRU " ;;
	*) echo "" ;;
	esac
}

timeout_for() {
	if [[ -n $run_timeout ]]; then
		echo "$run_timeout"
	elif [[ $1 == sockets ]]; then
		echo 300
	else
		echo 60
	fi
}

iters_for() {
	if [[ -n $iter_override ]]; then
		echo "$iter_override"
	elif [[ $1 -le 4096 ]]; then
		echo 100000
	elif [[ $1 -le 65536 ]]; then
		echo 10000
	else
		echo 1000
	fi
}

# ------------------------------------------------------- process handling

r_lat="" r_bw="" r_path="" r_p99=""
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/rmq-compare.XXXXXX")
live_pids=() # pids of `timeout` wrappers; each leads its own process group

kill_group() { # kill a timeout wrapper and everything in its process group
	local pid=$1
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
	local pid
	for pid in "${live_pids[@]}"; do
		kill_group "$pid"
	done
	[[ ${#live_pids[@]} -eq 0 ]] || sleep 0.1
	for pid in "${live_pids[@]}"; do
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	rm -rf "$tmpdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forget_pid() {
	local keep=() p
	for p in "${live_pids[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	live_pids=("${keep[@]}")
}

# Run "$@" under timeout in the background, record its pid in $bg_pid.
# timeout puts itself in a new process group, so the group id is the pid and
# stray children (rmq_pingpong --local forks) can be killed with it.
start_bg() { # start_bg OUTFILE CMD...
	local out=$1
	shift
	[[ $verbose -eq 0 ]] || echo "+ $*" >&2
	timeout -k 5 "$tmo" "$@" >"$out" 2>&1 &
	bg_pid=$!
	live_pids+=("$bg_pid")
}

finish_bg() { # finish_bg PID -> exit status of the command; reaps its group
	local pid=$1 rc=0
	wait "$pid" || rc=$?
	kill_group "$pid"
	forget_pid "$pid"
	return "$rc"
}

port_in_use() { # any socket bound to this local TCP port, any state
	local hex
	hex=$(printf '%04X' "$1")
	awk -v h="$hex" 'FNR > 1 { n = split($2, a, ":"); if (a[n] == h) { f = 1; exit } }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v h="$hex" 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == h) { f = 1; exit } }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Control ports below the ephemeral range, a new one for every run.
next_port=$((20000 + $$ % 10000))
pick_port() {
	local tries=0
	while :; do
		next_port=$((next_port + 1))
		[[ $next_port -lt 32000 ]] || next_port=20000
		port_in_use "$next_port" || break
		tries=$((tries + 1))
		[[ $tries -lt 1000 ]] || { echo "$prog: no free port" >&2; return 1; }
	done
	port=$next_port
}

wait_listen() { # wait_listen PORT SERVER_PID
	local i
	for ((i = 0; i < 500; i++)); do
		port_listening "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

# -------------------------------------------------------------- one runs

fail_log() { # fail_log WHAT LOGFILE...
	local what=$1 f
	shift
	echo "$prog: FAIL: $what" >&2
	for f in "$@"; do
		[[ -s $f ]] && sed 's/^/    | /' "$f" | tail -n 8 >&2
	done
	return 0
}

# fi_once PROV SIZE ITERS [EP] -> sets r_lat r_bw, or returns 1.  EP is
# fi_pingpong's -e, rdm by default (msg for --fi-msg).  (No command
# substitution around these: the pids must stay visible to the EXIT trap.)
fi_once() {
	local prov=$1 size=$2 iters=$3 ep=${4:-rdm} port srv cli srv_pid cli_pid rc=0 src=0 i
	local name=fi_pingpong tag="fi"
	[[ $ep == rdm ]] || name="fi_pingpong -e $ep" tag=fi_$ep
	pick_port
	srv=$tmpdir/${tag}_srv.log cli=$tmpdir/${tag}_cli.log
	: >"$cli"
	start_bg "$srv" taskset -c 0 "$fi_bin" -p "$prov" -e "$ep" -I "$iters" -S "$size" -B "$port"
	srv_pid=$bg_pid
	if ! wait_listen "$port" "$srv_pid"; then
		finish_bg "$srv_pid" || true
		fail_log "$name server ($prov, $size B) did not listen on port $port" "$srv"
		return 1
	fi
	start_bg "$cli" taskset -c 1 "$fi_bin" -p "$prov" -e "$ep" -I "$iters" -S "$size" -P "$port" 127.0.0.1
	cli_pid=$bg_pid
	finish_bg "$cli_pid" || rc=$?
	# The server ends by itself once the client is done; give it 5 s.
	for ((i = 0; i < 250; i++)); do
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.02
	done
	kill -0 "$srv_pid" 2>/dev/null && kill_group "$srv_pid"
	finish_bg "$srv_pid" || src=$?
	if [[ $rc -ne 0 || $src -ne 0 ]]; then
		local why="exit $rc/$src"
		[[ $rc -eq 124 || $src -eq 124 ]] && why="timeout ${tmo}s"
		fail_log "$name $prov $size B -I $iters ($why)" "$cli" "$srv"
		return 1
	fi
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	if ! awk 'NF >= 8 && $1 ~ /^[0-9.]+[kmgt]?$/ && $(NF-1) ~ /^[0-9.]+$/ && $(NF-2) ~ /^[0-9.]+$/ {
			lat = $(NF-1); bw = $(NF-2); ok = 1 }
		END { if (!ok) exit 1; print lat, bw }' "$cli" >"$tmpdir/parsed"; then
		fail_log "cannot parse $name output ($prov, $size B)" "$cli"
		return 1
	fi
	read -r r_lat r_bw <"$tmpdir/parsed"
}

# csv_once NAME TAG SIZE ITERS CMD... -> sets r_lat r_bw r_path, or returns 1.
# CMD prints rmq_pingpong's CSV (size,lat_p50_us,lat_p99_us,mbps,path);
# NAME and TAG (provider or transport) only label failures.
csv_once() {
	local name=$1 tag=$2 size=$3 iters=$4 out err pid rc=0
	shift 4
	out=$tmpdir/$name.csv err=$tmpdir/$name.err
	# stdout must stay clean CSV: stderr goes to its own file
	[[ $verbose -eq 0 ]] || echo "+ $*" >&2
	timeout -k 5 "$tmo" "$@" >"$out" 2>"$err" </dev/null &
	pid=$!
	live_pids+=("$pid")
	finish_bg "$pid" || rc=$?
	if [[ $rc -ne 0 ]]; then
		local why="exit $rc"
		[[ $rc -eq 124 ]] && why="timeout ${tmo}s"
		fail_log "$name $tag $size B -I $iters ($why)" "$out" "$err"
		return 1
	fi
	# size,lat_p50_us,lat_p99_us,mbps,path (columns found by name)
	if ! awk -F, -v want="$size" '
		{ sub(/\r$/, "") }
		!hdr {
			for (i = 1; i <= NF; i++) { f = $i; gsub(/[ \t]/, "", f); col[f] = i }
			if (col["size"] && col["lat_p50_us"] && col["mbps"]) hdr = 1
			else split("", col)
			next }
		hdr && $col["size"] == want && $col["lat_p50_us"] ~ /^[0-9.eE+-]+$/ {
			lat = $col["lat_p50_us"]; bw = $col["mbps"]
			p99 = col["lat_p99_us"] ? $col["lat_p99_us"] : "-"
			path = col["path"] ? $col["path"] : "-"
			gsub(/[ \t]/, "_", path); if (path == "") path = "-"
			ok = 1 }
		# rmq_pingpong --path: a size that path cannot carry
		hdr && $col["size"] == want && $col["lat_p50_us"] == "-" {
			lat = "-"; bw = "-"; path = "-"; p99 = "-"; ok = 1 }
		END { if (!ok) exit 1; print lat, bw, path, p99 }' "$out" >"$tmpdir/parsed"; then
		fail_log "cannot parse $name CSV ($tag, $size B)" "$out" "$err"
		return 1
	fi
	read -r r_lat r_bw r_path r_p99 <"$tmpdir/parsed"
}

# rmq_once PROV SIZE ITERS -> sets r_lat r_bw r_path, or returns 1
rmq_once() {
	csv_once rmq_pingpong "$1" "$2" "$3" \
		"${rmq_pre[@]}" "$rmq_bin" --local -p "$1" -S "$2" -I "$3" --csv
}

# rmq_path_once PROV PATH SIZE ITERS -> sets r_lat r_bw r_path (r_lat "-":
# the path cannot carry SIZE), or returns 1
rmq_path_once() {
	csv_once rmq_pingpong "$1 --path $2" "$3" "$4" \
		"${rmq_pre[@]}" "$rmq_bin" --local -p "$1" --path "$2" -S "$3" -I "$4" --csv
}

# run_csv NAME WHAT CMD... -> CMD's stdout in $tmpdir/NAME.csv, or returns 1
# (WHAT only labels a failure)
run_csv() {
	local name=$1 what=$2 out err pid rc=0
	shift 2
	out=$tmpdir/$name.csv err=$tmpdir/$name.err
	[[ $verbose -eq 0 ]] || echo "+ $*" >&2
	timeout -k 5 "$tmo" "$@" >"$out" 2>"$err" </dev/null &
	pid=$!
	live_pids+=("$pid")
	finish_bg "$pid" || rc=$?
	if [[ $rc -ne 0 ]]; then
		local why="exit $rc"
		[[ $rc -eq 124 ]] && why="timeout ${tmo}s"
		fail_log "$what ($why)" "$out" "$err"
		return 1
	fi
}

# bw_pick NAME SIZE [PATH] -> "mbps msgs_per_s path" of SIZE's row (of the
# row whose path is PATH if given) in rmq_bw's CSV (size,mbps,msgs_per_s,
# path first, then what newer rmq_bw adds); mbps "-" for a size the forced
# path cannot carry
bw_pick() {
	awk -F, -v want="$2" -v p="${3:-}" '
		NR == 1 { if (index($0, "size,mbps,msgs_per_s,path") != 1) exit 1; next }
		$1 == want && (p == "" || $4 == p) && ($2 ~ /^[0-9.]+$/ || $2 == "-") {
			print $2, $3, $4; ok = 1; exit }
		END { if (!ok) exit 1 }' "$tmpdir/$1.csv"
}

# bw_once PROV PATH SIZE -> sets r_bw r_mps r_path, or returns 1
bw_once() {
	local args=(--local -p "$1" --path "$2" -S "$3" --csv)
	[[ -z $bw_iters ]] || args+=(-I "$bw_iters")
	[[ -z $bw_window ]] || args+=(-W "$bw_window")
	run_csv rmq_bw "rmq_bw $1 --path $2 $3 B" "${rmq_pre[@]}" "$bw_bin" "${args[@]}" ||
		return 1
	if ! bw_pick rmq_bw "$3" >"$tmpdir/parsed"; then
		fail_log "cannot parse rmq_bw CSV ($1 --path $2, $3 B)" \
			"$tmpdir/rmq_bw.csv" "$tmpdir/rmq_bw.err"
		return 1
	fi
	read -r r_bw r_mps r_path <"$tmpdir/parsed"
}

# zmq_once TRANSPORT SIZE ITERS -> sets r_lat r_bw r_path, or returns 1.
# zmq_pingpong forks and pins itself (CPU 0 and 1, or 0 with --same-cpu)
# and picks its own ephemeral port or ipc path.
zmq_once() {
	csv_once zmq_pingpong "$1" "$2" "$3" \
		"$zmq_bin" --transport "$1" "${zmq_flags[@]}" -S "$2" -I "$3" --csv
}

# mpi_once SIZE ITERS -> sets r_lat r_bw r_path, or returns 1.  mpirun
# binds the two ranks; mpi_pingpong prints rmq_pingpong's CSV.
mpi_once() {
	csv_once mpi_pingpong shm "$1" "$2" \
		"$mpirun_bin" "${mpi_flags[@]}" "$mpi_bin" -S "$1" -I "$2" --csv
}

median() { # values on stdin, one per line
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m }'
}

fmt() { # 2 significant decimals, or pass FAIL through
	case $1 in
	FAIL | -) echo "$1" ;;
	*) awk -v x="$1" 'BEGIN { printf "%.2f\n", x }' ;;
	esac
}

ratio() { # ratio A B = A/B
	if [[ $1 == FAIL || $2 == FAIL || $1 == - || $2 == - ]]; then
		echo "-"
	else
		awk -v a="$1" -v b="$2" 'BEGIN {
			if (b + 0 == 0) { print "-"; exit }
			r = a / b; printf (r < 0.1 ? "%.4f\n" : "%.2f\n"), r }'
	fi
}

# ------------------------------------------------------------- --zmq-thr

# thr_transport PROV: the ZeroMQ transport librmq's provider is set against
thr_transport() {
	case $1 in
	shm) echo ipc ;;
	*) echo tcp ;;
	esac
}

# thr_pick NAME SIZE -> "msgs_per_s mbps snd_cpu_ns rcv_cpu_ns dropped" of
# SIZE's row in $tmpdir/NAME.csv (rmq_bw's or zmq_thr's CSV, columns found
# by name)
thr_pick() {
	awk -F, -v want="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
			if (!col["size"] || !col["msgs_per_s"] || !col["snd_cpu_ns"]) exit 1
			next }
		$col["size"] == want && $col["msgs_per_s"] ~ /^[0-9.]+$/ {
			print $col["msgs_per_s"], $col["mbps"], $col["snd_cpu_ns"],
				$col["rcv_cpu_ns"], $col["dropped"]; ok = 1; exit }
		END { if (!ok) exit 1 }' "$tmpdir/$1.csv"
}

# stats: values on stdin, one per line -> "median min max spread_pct"
stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.10g %.10g %.10g %.1f\n", m, v[1], v[NR], (m > 0 ? (v[NR] - v[1]) / m * 100 : 0) }'
}

header_out() { # COLUMNS: the header lines, and the CSV file's with COLUMNS
	local l
	for l in "${header[@]}"; do echo "# $l"; done
	[[ -n $csv_file ]] || return 0
	{
		for l in "${header[@]}"; do echo "# $l"; done
		echo "$1"
	} >"$csv_file"
}

thr_main() {
	local r prov pat zp zt size key list v lo hi args=()
	local -A rmq_mps=() zmq_mps=() rat_runs=() rmq_mb=() zmq_mb=()
	local -A rmq_snd=() zmq_snd=() rmq_rcv=() zmq_rcv=() rmq_drop=() zmq_drop=()
	local -A failed_r=() failed_z=()
	local zmq_version
	any_fail=0
	list=$(IFS=,; echo "${sizes[*]}")
	[[ -z $bw_iters ]] || args+=(-I "$bw_iters")
	[[ -z $bw_window ]] || args+=(-W "$bw_window")
	zmq_version=$("$thr_bin" --version 2>/dev/null | sed -n '1s/.*(\(.*\)).*/\1/p' || true)
	header=(
		"librmq vs ZeroMQ, streaming throughput, $(date '+%Y-%m-%d %H:%M:%S %z')"
		"host: $(hostname 2>/dev/null || uname -n)  kernel: $(uname -srm)  cpus: $(nproc)"
		"libfabric: $(fi_loaded "$bw_bin")"
		"rmq_bw: $rmq_envs$bw_bin --local --cpus 0,1 -p PROV --pattern P -S $list${args[*]:+ ${args[*]}} --csv"
		"zmq_thr: $thr_bin (${zmq_version:-version unknown}) --cpus 0,1 --transport T --pattern P -S $list${args[*]:+ ${args[*]}} --csv"
		"pairs: $(for p in "${providers[@]}"; do printf 'rmq %s / zmq %s, ' "$p" "$(thr_transport "$p")"; done | sed 's/, $//'); patterns: ${thr_patterns[*]}"
		"$runs round(s); each round runs every pair and pattern, rmq then zmq; sender CPU 0, receiver CPU 1"
		"per size a window of ${bw_window:-64} messages then one ack on a PAIR, ${bw_iters:-100 (<= 64 KiB) / 20} timed rounds; msgs/s = messages / time"
		"msgs/s = median over the rounds; spread = (max - min) / median, in %; rmq/zmq = ratio of the medians (higher: librmq faster), [min-max] of the per-round ratios"
		"snd/rcv ns = CPU ns per message of the sending / receiving process (median); drop = messages dropped, summed over the rounds (rmq: rmq_stats of the PUB; zmq: gaps the receiver saw)"
	)
	[[ -z $rmq_envs ]] ||
		header+=("rmq env: ${rmq_envs% } (rmq_bw only; zmq_thr runs without)")
	header_out "pattern,provider,zmq_transport,size,rmq_msgs_per_s,rmq_spread_pct,zmq_msgs_per_s,zmq_spread_pct,ratio,ratio_min,ratio_max,rmq_mbps,zmq_mbps,rmq_snd_cpu_ns,zmq_snd_cpu_ns,rmq_rcv_cpu_ns,zmq_rcv_cpu_ns,rmq_dropped,zmq_dropped"
	for ((r = 1; r <= runs; r++)); do
		for prov in "${providers[@]}"; do
			tmo=$(timeout_for "$prov")
			zt=$(thr_transport "$prov")
			for pat in "${thr_patterns[@]}"; do
				local ok_r=1 ok_z=1 msg
				run_csv rmq_thr "rmq_bw $prov --pattern $pat" \
					"${rmq_pre[@]}" "$bw_bin" --local --cpus 0,1 -p "$prov" --pattern "$pat" \
					-S "$list" "${args[@]}" --csv || ok_r=0
				# PAIR has no ZeroMQ twin here: set against PUSH/PULL
				zp=$pat
				[[ $zp != pair ]] || zp=pushpull
				run_csv zmq_thr "zmq_thr $zt --pattern $zp" \
					"$thr_bin" --cpus 0,1 --transport "$zt" --pattern "$zp" \
					-S "$list" "${args[@]}" --csv || ok_z=0
				msg=""
				for size in "${sizes[@]}"; do
					key="$pat|$prov|$size"
					local rm="" zm="" rb rs rc rd zb zs zc zd
					if [[ $ok_r -eq 1 ]] && v=$(thr_pick rmq_thr "$size"); then
						read -r rm rb rs rc rd <<<"$v"
						rmq_mps[$key]+="$rm " rmq_mb[$key]+="$rb "
						rmq_snd[$key]+="$rs " rmq_rcv[$key]+="$rc "
						rmq_drop[$key]=$(( ${rmq_drop[$key]:-0} + ${rd:-0} ))
					else
						failed_r[$key]=1 rm=FAIL
						[[ $ok_r -eq 0 ]] || fail_log "no $size B row in rmq_bw's CSV ($prov $pat)" \
							"$tmpdir/rmq_thr.csv" "$tmpdir/rmq_thr.err"
					fi
					if [[ $ok_z -eq 1 ]] && v=$(thr_pick zmq_thr "$size"); then
						read -r zm zb zs zc zd <<<"$v"
						zmq_mps[$key]+="$zm " zmq_mb[$key]+="$zb "
						zmq_snd[$key]+="$zs " zmq_rcv[$key]+="$zc "
						zmq_drop[$key]=$(( ${zmq_drop[$key]:-0} + ${zd:-0} ))
					else
						failed_z[$key]=1 zm=FAIL
						[[ $ok_z -eq 0 ]] || fail_log "no $size B row in zmq_thr's CSV ($zt $pat)" \
							"$tmpdir/zmq_thr.csv" "$tmpdir/zmq_thr.err"
					fi
					[[ $rm == FAIL || $zm == FAIL ]] ||
						rat_runs[$key]+="$(ratio "$rm" "$zm") "
					msg+=", $size B $rm/$zm"
				done
				echo "[round $r/$runs $pat rmq $prov / zmq $zt, msgs/s]${msg#,}" >&2
			done
		done
	done
	local rowf='| %8s | %11s | %6s | %11s | %6s | %7s | %13s | %8s | %8s | %8s | %8s | %11s |\n'
	for pat in "${thr_patterns[@]}"; do
		for prov in "${providers[@]}"; do
			zt=$(thr_transport "$prov")
			echo
			echo "## $pat: rmq_bw $prov${rmq_envs:+ (${rmq_envs% })} vs zmq_thr $zt$([[ $pat != pair ]] || echo ' pushpull'), messages/s"
			echo
			# shellcheck disable=SC2059
			printf "$rowf" size "rmq msgs/s" "spread" "zmq msgs/s" "spread" rmq/zmq "[min-max]" \
				"rmq snd" "zmq snd" "rmq rcv" "zmq rcv" "drop r/z"
			# shellcheck disable=SC2059
			printf "$rowf" "-------:" "----------:" "-----:" "----------:" "-----:" "------:" \
				"------------:" "-------:" "-------:" "-------:" "-------:" "----------:"
			for size in "${sizes[@]}"; do
				key="$pat|$prov|$size"
				local rmed=FAIL rsp=- zmed=FAIL zsp=- rat=- rrange=- rmb=- zmb=- lo=- hi=-
				local rs=- zs=- rc=- zc=-
				# A side that failed in any round shows FAIL.
				if [[ -z ${failed_r[$key]:-} ]]; then
					read -r rmed _ _ rsp <<<"$(printf '%s' "${rmq_mps[$key]}" | tr ' ' '\n' | stats)"
					rmb=$(printf '%s' "${rmq_mb[$key]}" | tr ' ' '\n' | median)
					rs=$(printf '%s' "${rmq_snd[$key]}" | tr ' ' '\n' | median)
					rc=$(printf '%s' "${rmq_rcv[$key]}" | tr ' ' '\n' | median)
				else
					any_fail=1
				fi
				if [[ -z ${failed_z[$key]:-} ]]; then
					read -r zmed _ _ zsp <<<"$(printf '%s' "${zmq_mps[$key]}" | tr ' ' '\n' | stats)"
					zmb=$(printf '%s' "${zmq_mb[$key]}" | tr ' ' '\n' | median)
					zs=$(printf '%s' "${zmq_snd[$key]}" | tr ' ' '\n' | median)
					zc=$(printf '%s' "${zmq_rcv[$key]}" | tr ' ' '\n' | median)
				else
					any_fail=1
				fi
				rat=$(ratio "$rmed" "$zmed")
				if [[ $rat != - && -n ${rat_runs[$key]:-} ]]; then
					read -r _ lo hi _ <<<"$(printf '%s' "${rat_runs[$key]}" | tr ' ' '\n' | stats)"
					rrange="$lo-$hi"
				fi
				# shellcheck disable=SC2059
				printf "$rowf" "$size" "$(fmt0 "$rmed")" "$rsp" "$(fmt0 "$zmed")" "$zsp" "$rat" "$rrange" \
					"$(fmt0 "$rs")" "$(fmt0 "$zs")" "$(fmt0 "$rc")" "$(fmt0 "$zc")" \
					"${rmq_drop[$key]:--}/${zmq_drop[$key]:--}"
				if [[ -n $csv_file ]]; then
					printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' \
						"$pat" "$prov" "$zt" "$size" "$rmed" "$rsp" "$zmed" "$zsp" \
						"$rat" "$lo" "$hi" "$rmb" "$zmb" "$rs" "$zs" "$rc" "$zc" \
						"${rmq_drop[$key]:--}" "${zmq_drop[$key]:--}" >>"$csv_file"
				fi
			done
		done
	done
	if [[ $any_fail -ne 0 ]]; then
		echo >&2
		echo "$prog: some runs failed (see FAIL above)" >&2
		return 1
	fi
	return 0
}

fmt0() { # no decimals, or pass FAIL and - through
	case $1 in
	FAIL | -) echo "$1" ;;
	*) awk -v x="$1" 'BEGIN { printf "%.0f\n", x }' ;;
	esac
}

if [[ $do_thr -eq 1 ]]; then
	rc=0
	thr_main || rc=$?
	exit "$rc"
fi

# ------------------------------------------------------------------ --cma

# cma_pick NAME SIZE -> mbps of SIZE's row in $tmpdir/NAME.csv (cma_bw's
# CSV: size,mbps,reads_per_s,what; columns found by name)
cma_pick() {
	awk -F, -v want="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
			if (!col["size"] || !col["mbps"]) exit 1
			next }
		$col["size"] == want && $col["mbps"] ~ /^[0-9.]+$/ {
			print $col["mbps"]; ok = 1; exit }
		END { if (!ok) exit 1 }' "$tmpdir/$1.csv"
}

# range_cell MEDIAN MIN MAX: "median [min-max]" with fmt0, or FAIL
range_cell() {
	[[ $1 != FAIL ]] || { echo FAIL; return; }
	echo "$(fmt0 "$1") [$(fmt0 "$2")-$(fmt0 "$3")]"
}

# cma_main: per provider, size and round, rmq_bw --local then cma_bw; one
# table per provider.  rmq_bw --local puts its sender (the parent) on the
# first of --cpus and its receiver (the child) on the second; the local
# path's receiver is the one that calls process_vm_readv, so cma_bw reads
# from CPU 1 and its holder sits on CPU 0.
cma_main() {
	local prov size r v rb rp cb l msg iw=()
	local rmed rlo rhi cmed clo chi rat rtlo rthi rcell ccell tcell path
	local rmq_cpus="0,1" cma_cpus="1,0"
	local rowf='| %8s | %22s | %-16s | %22s | %20s |\n'
	any_fail=0
	[[ -z $bw_iters ]] || iw+=(-I "$bw_iters")
	[[ -z $bw_window ]] || iw+=(-W "$bw_window")
	header=(
		"librmq vs process_vm_readv, streaming bandwidth of the local path, $(date '+%Y-%m-%d %H:%M:%S %z')"
		"host: $(hostname 2>/dev/null || uname -n)  kernel: $(uname -srm)  cpus: $(nproc)"
		"libfabric: $(fi_loaded "$bw_bin")"
		"rmq_bw: $rmq_envs$bw_bin --local --cpus $rmq_cpus -p PROV -S SIZE${iw[*]:+ ${iw[*]}} --csv (sender CPU 0, receiver CPU 1)"
		"cma_bw: $cma_bin --cpus $cma_cpus -S SIZE --csv (process_vm_readv by CPU 1, rmq_bw's receiver, from a process on CPU 0, its sender; the same 2 buffers, 1 s per size)"
		"$runs round(s) per provider and size, each rmq_bw then cma_bw; rmq_bw: per size a window of ${bw_window:-64} messages then one 8 B ack, ${bw_iters:+$bw_iters timed rounds}${bw_iters:-timed rounds enough for about 16 GB a run (1 s at the bare copy's rate, cma_bw's run length)}"
		"MB/s = bytes / time (MB = 10^6 B), median [min-max] over the rounds; rmq/cma = median [min-max] of the per-round ratios rmq_bw MB/s / cma_bw MB/s (1 = the bare copy)"
	)
	[[ -z $rmq_envs ]] ||
		header+=("rmq env: ${rmq_envs% } (rmq_bw only; cma_bw runs without)")
	header_out "provider,size,rmq_mbps,rmq_mbps_min,rmq_mbps_max,rmq_path,cma_mbps,cma_mbps_min,cma_mbps_max,ratio,ratio_min,ratio_max"
	for prov in "${providers[@]}"; do
		tmo=$(timeout_for "$prov")
		echo
		echo "## provider $prov: rmq_bw vs process_vm_readv, MB/s${rmq_envs:+, rmq with ${rmq_envs% }}"
		echo
		echo "    timeout per run: ${tmo}s"
		echo "    rmq_bw: $(prov_env "$prov")$rmq_envs$bw_bin --local --cpus $rmq_cpus -p $prov -S SIZE${iw[*]:+ ${iw[*]}}${bw_iters:- -I N} --csv${bw_iters:-  (N: 16 GB / (window x SIZE), at least 20)}"
		echo "    cma_bw: $cma_bin --cpus $cma_cpus -S SIZE --csv"
		echo
		# shellcheck disable=SC2059
		printf "$rowf" size "rmq MB/s [min-max]" "rmq path" "cma MB/s [min-max]" "rmq/cma [min-max]"
		# shellcheck disable=SC2059
		printf "$rowf" "-------:" "---------------------:" "----------------" \
			"---------------------:" "-------------------:"
		for size in "${sizes[@]}"; do
			local rmq_mbs="" cma_mbs="" rats="" paths="" failed_r=0 failed_c=0
			local siw=("${iw[@]}") n
			if [[ -z $bw_iters ]]; then
				# As long a run as cma_bw's: a 0.1 s one (20
				# rounds at 1 MiB) swung with the host's phases.
				n=$((16000000000 / (${bw_window:-64} * size)))
				((n >= 20)) || n=20
				siw+=(-I "$n")
			fi
			for ((r = 1; r <= runs; r++)); do
				rb=FAIL cb=FAIL rp=-
				if run_csv rmq_bw "rmq_bw $prov $size B" "${rmq_pre[@]}" "$bw_bin" \
					--local --cpus "$rmq_cpus" -p "$prov" -S "$size" "${siw[@]}" --csv; then
					if v=$(bw_pick rmq_bw "$size") && [[ ${v%% *} != - ]]; then
						read -r rb _ rp <<<"$v"
						rmq_mbs+="$rb " paths+="$rp "
					else
						fail_log "no $size B row in rmq_bw's CSV ($prov)" \
							"$tmpdir/rmq_bw.csv" "$tmpdir/rmq_bw.err"
					fi
				fi
				if run_csv cma_bw "cma_bw $size B" \
					"$cma_bin" --cpus "$cma_cpus" -S "$size" --csv; then
					if v=$(cma_pick cma_bw "$size"); then
						cb=$v cma_mbs+="$cb "
					else
						fail_log "no $size B row in cma_bw's CSV" \
							"$tmpdir/cma_bw.csv" "$tmpdir/cma_bw.err"
					fi
				fi
				[[ $rb != FAIL ]] || failed_r=1
				[[ $cb != FAIL ]] || failed_c=1
				msg="rmq $rb MB/s ($rp), cma $cb MB/s"
				if [[ $rb != FAIL && $cb != FAIL ]]; then
					v=$(ratio "$rb" "$cb")
					rats+="$v " msg+=", rmq/cma $v"
				fi
				echo "[$prov cma ${size} B run $r/$runs] $msg" >&2
			done
			# A side that failed in any round shows FAIL, the ratio '-'.
			rmed=FAIL rlo=- rhi=- cmed=FAIL clo=- chi=- rat=- rtlo=- rthi=-
			if [[ $failed_r -eq 0 ]]; then
				read -r rmed rlo rhi _ <<<"$(printf '%s' "$rmq_mbs" | tr ' ' '\n' | stats)"
			else
				any_fail=1
			fi
			if [[ $failed_c -eq 0 ]]; then
				read -r cmed clo chi _ <<<"$(printf '%s' "$cma_mbs" | tr ' ' '\n' | stats)"
			else
				any_fail=1
			fi
			if [[ $failed_r -eq 0 && $failed_c -eq 0 && -n $rats ]]; then
				read -r rat rtlo rthi _ <<<"$(printf '%s' "$rats" | tr ' ' '\n' | stats)"
			fi
			path=$(printf '%s' "$paths" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd/ -)
			rcell=$(range_cell "$rmed" "$rlo" "$rhi")
			ccell=$(range_cell "$cmed" "$clo" "$chi")
			tcell=-
			[[ $rat == - ]] || tcell="$rat [$rtlo-$rthi]"
			# shellcheck disable=SC2059
			printf "$rowf" "$size" "$rcell" "${path:--}" "$ccell" "$tcell"
			if [[ -n $csv_file ]]; then
				printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$prov" "$size" \
					"$rmed" "$rlo" "$rhi" "${path:--}" "$cmed" "$clo" "$chi" \
					"$rat" "$rtlo" "$rthi" >>"$csv_file"
			fi
		done
	done
	if [[ $any_fail -ne 0 ]]; then
		echo >&2
		echo "$prog: some runs failed (see FAIL above)" >&2
		return 1
	fi
	return 0
}

if [[ $do_cma -eq 1 ]]; then
	rc=0
	cma_main || rc=$?
	exit "$rc"
fi

# ------------------------------------------------------------------ header

fi_version=$(fi_loaded "$rmq_bin")
zmq_cpus="0,1"
[[ $zmq_same_cpu -eq 0 ]] || zmq_cpus="0,0 (same CPU)"
if [[ ${#zmq_transports[@]} -gt 0 ]]; then
	header=(
		"librmq vs fi_pingpong and ZeroMQ, $(date '+%Y-%m-%d %H:%M:%S %z')"
		"host: $(hostname 2>/dev/null || uname -n)  kernel: $(uname -srm)  cpus: $(nproc)"
		"libfabric: $fi_version"
		"rmq_pingpong: $rmq_bin"
		"zmq_pingpong: $zmq_bin ($zmq_version), REQ/REP over ${zmq_transports[*]}, cpus $zmq_cpus"
		"median of $runs run(s), fi, rmq and zmq runs interleaved (zmq is measured again for each provider)"
		"one-way latency = round trip / 2; MB/s = size / one-way time (MB = 10^6 B)"
		"lat ratio = rmq mean / fi mean (fi_pingpong reports means; lower is better); bw ratio = rmq/fi (higher is better)"
		"rmq p50/p99 = rmq_pingpong's median and 99th percentile one-way us (medians over the runs)"
		"zmq T p50 = zmq_pingpong's p50 in us; rmq/zmq T = rmq p50 / zmq T p50 (lower is better)"
	)
else
	header=(
		"librmq vs fi_pingpong, $(date '+%Y-%m-%d %H:%M:%S %z')"
		"host: $(hostname 2>/dev/null || uname -n)  kernel: $(uname -srm)  cpus: $(nproc)"
		"libfabric: $fi_version"
		"rmq_pingpong: $rmq_bin"
		"median of $runs run(s), fi and rmq runs interleaved"
		"one-way latency = round trip / 2; MB/s = size / one-way time (MB = 10^6 B)"
		"lat ratio = rmq mean / fi mean (fi_pingpong reports means; lower is better); bw ratio = rmq/fi (higher is better)"
	)
	[[ -z $zmq_skipped ]] ||
		header+=("zmq_pingpong: $zmq_bin not found, zmq columns ($zmq_skipped) skipped")
fi
if [[ $fi_msg -eq 1 ]]; then
	header+=(
		"fi-msg: $fi_bin -p tcp -e msg (connected MSG endpoint of the tcp provider alone, no ofi_rxm), provider tcp only, run after the rdm fi_pingpong in each round, same placement"
		"fi-msg us = its median mean one-way us; rmq/fi-msg = rmq mean / fi-msg mean (lower is better); '-' for providers other than tcp"
	)
fi
if [[ $mpi -eq 1 ]]; then
	header+=(
		"mpi: $mpi_bin ($mpi_version), osu_latency-style MPI_Send/MPI_Recv between 2 ranks, Open MPI's shared memory (btl self,vader), provider shm only, run after fi_pingpong in each round, ranks on CPUs 0 and 1"
		"mpi mean = size / its median MB/s (mean one-way us); rmq/mpi = rmq mean / mpi mean (lower is better); '-' for providers other than shm"
	)
fi
[[ -z $rmq_envs ]] ||
	header+=("rmq env: ${rmq_envs% } (rmq_pingpong and rmq_bw only; fi_pingpong, ZeroMQ, MPI and memcpy run without)")
if [[ ${#path_list[@]} -gt 0 ]]; then
	header+=(
		"paths: ${path_list[*]}, each forced with rmq_pingpong --path (RMQ_PATH on both sockets)"
		"path cell = rmq mean one-way us (rmq mean / fi mean, the lat ratio above); * = fastest path at that size (lowest mean)"
		"'-' = the path cannot carry that size (rmq_pingpong skipped it: EMSGSIZE or ENOTSUP); FAIL = the run failed; ! = rmq_stats says another path carried it"
	)
fi
bw_csv_file=""
if [[ $do_bw -eq 1 ]]; then
	fi_dir=$(dirname "$(command -v "$fi_bin")")
	fi_tools=$(for f in "$fi_dir"/fi_*; do [[ -x $f ]] && printf '%s ' "${f##*/}"; done)
	if command -v fi_bw >/dev/null 2>&1; then
		fi_bw_note="fi_bw: $(command -v fi_bw) is installed but not run (its output is not parsed here); memcpy is the bandwidth anchor"
	else
		fi_bw_note="fi_bw: not installed ($fi_dir has only: ${fi_tools% }; fi_bw comes with fabtests, not in Debian's libfabric-bin): memcpy is the only bandwidth anchor"
	fi
	[[ -z $csv_file ]] || bw_csv_file=${csv_file%.csv}.bw.csv
	header+=(
		"rmq_bw: $bw_bin, per size a window of ${bw_window:-64} messages then one 8 B ack, ${bw_iters:-100 (<= 64 KiB) / 20} timed rounds; MB/s = bytes / time (10^6)"
		"memcpy: rmq_bw --memcpy, one core (CPU 0), source and destination rotate through pools larger than the LLC (cache misses); hot = the same 2 buffers"
		"bw / memcpy = rmq_bw MB/s / memcpy MB/s, shown at >= 1 MiB as (rotated / hot)"
		"$fi_bw_note"
	)
	[[ -z $bw_csv_file ]] || header+=("bandwidth CSV: $bw_csv_file")
fi

# fimsg_on PROV: does --fi-msg measure this provider?  (tcp only)
fimsg_on() { [[ $fi_msg -eq 1 && $1 == tcp ]]; }

# mpi_on PROV: does --mpi measure this provider?  (shm only)
mpi_on() { [[ $mpi -eq 1 && $1 == shm ]]; }

mpi_cmd() { # the mpirun command line, for headers
	echo "$mpirun_bin ${mpi_flags[*]} $mpi_bin -S SIZE -I ITER --csv"
}

zmq_cmd() { # the zmq_pingpong command line for one transport, for headers
	echo "$zmq_bin --transport $1${zmq_flags[*]:+ ${zmq_flags[*]}} -S SIZE -I ITER --csv"
}

csv_init() {
	[[ -n $csv_file ]] || return 0
	if [[ $do_bw -eq 1 ]]; then
		{
			for l in "${header[@]}"; do echo "# $l"; done
			echo "provider,size,path,rmq_mbps,rmq_msgs_per_s,rmq_path,memcpy_mbps,memcpy_hot_mbps,bw_memcpy_ratio,bw_memcpy_hot_ratio"
		} >"$bw_csv_file"
	fi
	if [[ ${#path_list[@]} -gt 0 ]]; then
		{
			for l in "${header[@]}"; do echo "# $l"; done
			for p in "${providers[@]}"; do
				echo "# $p server: $(prov_env "$p")taskset -c 0 $fi_bin -p $p -e rdm -I ITER -S SIZE -B PORT"
				echo "# $p client: $(prov_env "$p")taskset -c 1 $fi_bin -p $p -e rdm -I ITER -S SIZE -P PORT 127.0.0.1"
				echo "# $p rmq:    $(prov_env "$p")$rmq_envs$rmq_bin --local -p $p --path PATH -S SIZE -I ITER --csv"
			done
			echo "provider,size,iters,fi_lat_us,path,rmq_p50_us,rmq_mean_us,lat_ratio,rmq_mbps,rmq_path,fastest"
		} >"$csv_file"
		return 0
	fi
	{
		local l
		for l in "${header[@]}"; do echo "# $l"; done
		for p in "${providers[@]}"; do
			echo "# $p server: $(prov_env "$p")taskset -c 0 $fi_bin -p $p -e rdm -I ITER -S SIZE -B PORT"
			echo "# $p client: $(prov_env "$p")taskset -c 1 $fi_bin -p $p -e rdm -I ITER -S SIZE -P PORT 127.0.0.1"
			echo "# $p rmq:    $(prov_env "$p")$rmq_envs$rmq_bin --local -p $p -S SIZE -I ITER --csv"
			if fimsg_on "$p"; then
				echo "# $p fi-msg server: $(prov_env "$p")taskset -c 0 $fi_bin -p $p -e msg -I ITER -S SIZE -B PORT"
				echo "# $p fi-msg client: $(prov_env "$p")taskset -c 1 $fi_bin -p $p -e msg -I ITER -S SIZE -P PORT 127.0.0.1"
			fi
			if mpi_on "$p"; then
				echo "# $p mpi:    $(mpi_cmd)"
			fi
		done
		for t in "${zmq_transports[@]}"; do
			echo "# zmq $t: $(zmq_cmd "$t")"
		done
		printf '%s' "provider,size,iters,fi_lat_us,rmq_p50_us,rmq_mean_us,lat_ratio,fi_mbps,rmq_mbps,bw_ratio,rmq_path,rmq_p99_us"
		for t in "${zmq_transports[@]}"; do
			printf ',zmq_%s_p50_us,zmq_%s_mbps,zmq_%s_lat_ratio' "$t" "$t" "$t"
		done
		[[ $fi_msg -eq 0 ]] || printf ',fimsg_lat_us,fimsg_lat_ratio'
		[[ $mpi -eq 0 ]] || printf ',mpi_lat_us,mpi_lat_ratio'
		printf '\n'
	} >"$csv_file"
}

for l in "${header[@]}"; do echo "# $l"; done
csv_init

row_fmt='| %8s | %6s | %9s | %14s | %11s | %9s | %9s | %9s | %8s | %-20s |'
zmq_fmt=' %11s | %12s | %11s |'
fimsg_fmt=' %10s | %10s |'
mpi_fmt=' %9s | %8s |'

# the 10 fi/rmq columns, then 3 per zmq transport, then with --fi-msg the
# 2 fi-msg columns, then with --mpi the 2 mpi columns (always the last 2
# arguments, fi-msg's the 2 before)
print_row() {
	local fm=() mp=()
	# shellcheck disable=SC2059
	printf "$row_fmt" "${@:1:10}"
	shift 10
	if [[ $mpi -eq 1 ]]; then
		mp=("${@: -2}")
		set -- "${@:1:$#-2}"
	fi
	if [[ $fi_msg -eq 1 ]]; then
		fm=("${@: -2}")
		set -- "${@:1:$#-2}"
	fi
	while [[ $# -ge 3 ]]; do
		# shellcheck disable=SC2059
		printf "$zmq_fmt" "$1" "$2" "$3"
		shift 3
	done
	# shellcheck disable=SC2059
	[[ ${#fm[@]} -eq 0 ]] || printf "$fimsg_fmt" "${fm[@]}"
	# shellcheck disable=SC2059
	[[ ${#mp[@]} -eq 0 ]] || printf "$mpi_fmt" "${mp[@]}"
	printf '\n'
}

zmq_heads=() zmq_rules=()
for t in "${zmq_transports[@]}"; do
	zmq_heads+=("zmq $t p50" "zmq $t MB/s" "rmq/zmq $t")
	zmq_rules+=("----------:" "-----------:" "----------:")
done
fimsg_heads=() fimsg_rules=()
if [[ $fi_msg -eq 1 ]]; then
	fimsg_heads=("fi-msg us" "rmq/fi-msg")
	fimsg_rules=("---------:" "---------:")
fi
mpi_heads=() mpi_rules=()
if [[ $mpi -eq 1 ]]; then
	mpi_heads=("mpi mean" "rmq/mpi")
	mpi_rules=("--------:" "-------:")
fi

any_fail=0

# ------------------------------------------------------ --paths and --bw

# Does this cell hold a number (not FAIL or -)?
is_num() { [[ $1 =~ ^[0-9.eE+-]+$ && $1 != - ]]; }

# The rows of the --paths table: size, iters, fi, one cell per path, fastest.
paths_row() {
	local a
	printf '| %8s | %6s | %9s |' "$1" "$2" "$3"
	shift 3
	for a in "${@:1:$#-1}"; do
		printf ' %16s |' "$a"
	done
	printf ' %-10s |\n' "${!#}"
}

# paths_table PROV: fi_pingpong once and rmq_pingpong once per path, per
# size and run; one row per size.
paths_table() {
	local prov=$1 size iters r pa msg fi_lat best bestv m cells=() rules=()
	local fi_lats fi_failed
	tmo=$(timeout_for "$prov")
	echo
	echo "## provider $prov: one column per forced path${rmq_envs:+, rmq with ${rmq_envs% }}"
	echo
	echo "    timeout per run: ${tmo}s"
	echo "    server: $(prov_env "$prov")taskset -c 0 $fi_bin -p $prov -e rdm -I ITER -S SIZE -B PORT"
	echo "    client: $(prov_env "$prov")taskset -c 1 $fi_bin -p $prov -e rdm -I ITER -S SIZE -P PORT 127.0.0.1"
	echo "    rmq:    $(prov_env "$prov")$rmq_envs$rmq_bin --local -p $prov --path PATH -S SIZE -I ITER --csv"
	echo
	for pa in "${path_list[@]}"; do rules+=("---------------:"); done
	paths_row size iters "fi us" "${path_list[@]}" fastest
	paths_row "-------:" "-----:" "--------:" "${rules[@]}" "----------"
	for size in "${sizes[@]}"; do
		iters=$(iters_for "$size")
		fi_lats=() fi_failed=0
		local -A lats=() bws=() taken=() failed=() skipped=() mean=()
		for ((r = 1; r <= runs; r++)); do
			if fi_once "$prov" "$size" "$iters"; then
				fi_lats+=("$r_lat")
				msg="fi $r_lat us"
			else
				fi_failed=1 msg="fi FAIL"
			fi
			for pa in "${path_list[@]}"; do
				if ! rmq_path_once "$prov" "$pa" "$size" "$iters"; then
					failed[$pa]=1 msg+=", $pa FAIL"
				elif [[ $r_lat == - ]]; then
					skipped[$pa]=1 msg+=", $pa -"
				else
					lats[$pa]+="$r_lat " bws[$pa]+="$r_bw "
					taken[$pa]+="$r_path "
					msg+=", $pa $r_lat us ($r_path)"
				fi
			done
			echo "[$prov ${size} B x$iters run $r/$runs] $msg" >&2
		done
		if [[ $fi_failed -eq 0 ]]; then
			fi_lat=$(printf '%s\n' "${fi_lats[@]}" | median)
		else
			fi_lat=FAIL any_fail=1
		fi
		# The mean as the default table has it: size / median MB/s.
		best="" bestv=""
		for pa in "${path_list[@]}"; do
			if [[ -n ${failed[$pa]:-} ]]; then
				mean[$pa]=FAIL any_fail=1
			elif [[ -n ${skipped[$pa]:-} ]]; then
				mean[$pa]=-
			else
				m=$(printf '%s' "${bws[$pa]}" | tr ' ' '\n' | median)
				mean[$pa]=$(awk -v s="$size" -v b="$m" \
					'BEGIN { if (b > 0) printf "%.3f", s / b; else print "-" }')
			fi
			if is_num "${mean[$pa]}" && { [[ -z $bestv ]] ||
				awk -v a="${mean[$pa]}" -v b="$bestv" 'BEGIN { exit !(a < b) }'; }; then
				best=$pa bestv=${mean[$pa]}
			fi
		done
		cells=()
		for pa in "${path_list[@]}"; do
			local cell=${mean[$pa]} how
			how=$(printf '%s' "${taken[$pa]:-}" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd/ -)
			if is_num "$cell"; then
				cell="$(fmt "$cell") ($(ratio "${mean[$pa]}" "$fi_lat"))"
				[[ $pa != "$best" ]] || cell+="*"
				[[ $pa == auto || $how == "$pa" ]] || cell+="!"
			fi
			cells+=("$cell")
			if [[ -n $csv_file ]]; then
				local p50=-
				[[ -z ${lats[$pa]:-} ]] ||
					p50=$(printf '%s' "${lats[$pa]}" | tr ' ' '\n' | median)
				printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$prov" "$size" "$iters" \
					"$(fmt "$fi_lat")" "$pa" "$(fmt "$p50")" "$(fmt "${mean[$pa]}")" \
					"$(ratio "${mean[$pa]}" "$fi_lat")" \
					"$(printf '%s' "${bws[$pa]:--}" | tr ' ' '\n' | median)" \
					"${how:--}" "$([[ $pa == "$best" ]] && echo 1 || echo 0)" >>"$csv_file"
			fi
		done
		paths_row "$size" "$iters" "$(fmt "$fi_lat")" "${cells[@]}" "${best:--}"
		unset lats bws taken failed skipped mean
	done
}

# memcpy_anchor: rmq_bw --memcpy RUNS times over all sizes; fills mc_rot
# and mc_hot (size -> median MB/s, or FAIL).
declare -A mc_rot=() mc_hot=()
memcpy_anchor() {
	local r size v list
	local -A rot=() hot=()
	list=$(IFS=,; echo "${sizes[*]}")
	tmo=$(( ${run_timeout:-60} > 120 ? ${run_timeout:-60} : 120 ))
	for ((r = 1; r <= runs; r++)); do
		if ! run_csv memcpy "rmq_bw --memcpy -S $list" \
			"$bw_bin" --memcpy -S "$list" --csv; then
			any_fail=1
			continue
		fi
		for size in "${sizes[@]}"; do
			v=$(bw_pick memcpy "$size" memcpy) && rot[$size]+="${v%% *} "
			v=$(bw_pick memcpy "$size" memcpy_hot) && hot[$size]+="${v%% *} "
		done
		echo "[memcpy run $r/$runs] done" >&2
	done
	for size in "${sizes[@]}"; do
		mc_rot[$size]=FAIL mc_hot[$size]=FAIL
		[[ -z ${rot[$size]:-} ]] ||
			mc_rot[$size]=$(printf '%s' "${rot[$size]}" | tr ' ' '\n' | median)
		[[ -z ${hot[$size]:-} ]] ||
			mc_hot[$size]=$(printf '%s' "${hot[$size]}" | tr ' ' '\n' | median)
	done
}

# bw_table PROV PATH...: rmq_bw per path and size; MB/s, then bw / memcpy.
bw_table() {
	local prov=$1 size r pa msg best bestv cells=() rules=() ratios=()
	shift
	local paths=("$@")
	tmo=$(timeout_for "$prov")
	echo
	echo "## provider $prov: streaming bandwidth (rmq_bw), MB/s${rmq_envs:+, rmq with ${rmq_envs% }}"
	echo
	echo "    timeout per run: ${tmo}s"
	echo "    rmq_bw: $(prov_env "$prov")$rmq_envs$bw_bin --local -p $prov --path PATH -S SIZE${bw_iters:+ -I $bw_iters}${bw_window:+ -W $bw_window} --csv"
	echo "    memcpy: $bw_bin --memcpy -S SIZES --csv"
	echo
	for pa in "${paths[@]}"; do rules+=("---------------:"); done
	paths_row size memcpy "hot" "${paths[@]}" fastest
	paths_row "-------:" "-----:" "--------:" "${rules[@]}" "----------"
	for size in "${sizes[@]}"; do
		local -A vals=() mpss=() taken=() failed=() skipped=() med=()
		for ((r = 1; r <= runs; r++)); do
			msg=""
			for pa in "${paths[@]}"; do
				if ! bw_once "$prov" "$pa" "$size"; then
					failed[$pa]=1 msg+=", $pa FAIL"
				elif [[ $r_bw == - ]]; then
					skipped[$pa]=1 msg+=", $pa -"
				else
					vals[$pa]+="$r_bw " mpss[$pa]+="$r_mps "
					taken[$pa]+="$r_path "
					msg+=", $pa $r_bw MB/s ($r_path)"
				fi
			done
			echo "[$prov bw ${size} B run $r/$runs]${msg#,}" >&2
		done
		best="" bestv=""
		for pa in "${paths[@]}"; do
			if [[ -n ${failed[$pa]:-} ]]; then
				med[$pa]=FAIL any_fail=1
			elif [[ -n ${skipped[$pa]:-} ]]; then
				med[$pa]=-
			else
				med[$pa]=$(printf '%s' "${vals[$pa]}" | tr ' ' '\n' | median)
			fi
			if is_num "${med[$pa]}" && { [[ -z $bestv ]] ||
				awk -v a="${med[$pa]}" -v b="$bestv" 'BEGIN { exit !(a > b) }'; }; then
				best=$pa bestv=${med[$pa]}
			fi
		done
		cells=() ratios=()
		for pa in "${paths[@]}"; do
			local cell=${med[$pa]} how rr rh
			how=$(printf '%s' "${taken[$pa]:-}" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd/ -)
			rr=$(ratio "${med[$pa]}" "${mc_rot[$size]}")
			rh=$(ratio "${med[$pa]}" "${mc_hot[$size]}")
			if is_num "$cell"; then
				cell=$(awk -v x="$cell" 'BEGIN { printf "%.0f", x }')
				[[ $pa != "$best" ]] || cell+="*"
				[[ $pa == auto || $how == "$pa" ]] || cell+="!"
			fi
			cells+=("$cell")
			ratios+=("$rr / $rh")
			if [[ -n $bw_csv_file ]]; then
				printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$prov" "$size" "$pa" \
					"$(fmt "${med[$pa]}")" \
					"$(printf '%s' "${mpss[$pa]:--}" | tr ' ' '\n' | median)" \
					"${how:--}" "$(fmt "${mc_rot[$size]}")" "$(fmt "${mc_hot[$size]}")" \
					"$rr" "$rh" >>"$bw_csv_file"
			fi
		done
		paths_row "$size" "$(fmt "${mc_rot[$size]}" | sed 's/\..*//')" \
			"$(fmt "${mc_hot[$size]}" | sed 's/\..*//')" "${cells[@]}" "${best:--}"
		[[ $size -lt 1048576 ]] || ratio_rows+=("$(paths_row "$size" "" "" "${ratios[@]}" "${best:--}")")
		unset vals mpss taken failed skipped med
	done
	if [[ ${#ratio_rows[@]} -gt 0 ]]; then
		echo
		echo "    bw / memcpy at >= 1 MiB, each cell: (bw / memcpy rotated past the LLC) / (bw / memcpy hot):"
		echo
		paths_row size "" "" "${paths[@]}" "fastest bw"
		paths_row "-------:" "-----:" "--------:" "${rules[@]}" "----------"
		printf '%s\n' "${ratio_rows[@]}"
	fi
	ratio_rows=()
}
ratio_rows=()

if [[ ${#path_list[@]} -gt 0 ]]; then
	for prov in "${providers[@]}"; do
		paths_table "$prov"
	done
	if [[ $do_bw -eq 1 ]]; then
		memcpy_anchor
		for prov in "${providers[@]}"; do
			bw_table "$prov" "${path_list[@]}"
		done
	fi
	if [[ $any_fail -ne 0 ]]; then
		echo >&2
		echo "$prog: some runs failed (see FAIL above)" >&2
		exit 1
	fi
	exit 0
fi

for prov in "${providers[@]}"; do
	tmo=$(timeout_for "$prov")
	echo
	echo "## provider $prov${rmq_envs:+, rmq with ${rmq_envs% }}"
	echo
	echo "    timeout per run: ${tmo}s"
	echo "    server: $(prov_env "$prov")taskset -c 0 $fi_bin -p $prov -e rdm -I ITER -S SIZE -B PORT"
	echo "    client: $(prov_env "$prov")taskset -c 1 $fi_bin -p $prov -e rdm -I ITER -S SIZE -P PORT 127.0.0.1"
	echo "    rmq:    $(prov_env "$prov")$rmq_envs$rmq_bin --local -p $prov -S SIZE -I ITER --csv"
	for t in "${zmq_transports[@]}"; do
		echo "    zmq $t: $(zmq_cmd "$t")"
	done
	if fimsg_on "$prov"; then
		echo "    fi-msg server: $(prov_env "$prov")taskset -c 0 $fi_bin -p $prov -e msg -I ITER -S SIZE -B PORT"
		echo "    fi-msg client: $(prov_env "$prov")taskset -c 1 $fi_bin -p $prov -e msg -I ITER -S SIZE -P PORT 127.0.0.1"
	elif [[ $fi_msg -eq 1 ]]; then
		echo "    fi-msg: not run for $prov (tcp only)"
	fi
	if mpi_on "$prov"; then
		echo "    mpi:    $(mpi_cmd)"
	elif [[ $mpi -eq 1 ]]; then
		echo "    mpi: not run for $prov (shm only)"
	fi
	echo
	print_row size iters "fi us" "rmq p50/p99 us" "rmq mean us" "lat ratio" "fi MB/s" "rmq MB/s" "bw ratio" "rmq path" \
		"${zmq_heads[@]}" "${fimsg_heads[@]}" "${mpi_heads[@]}"
	print_row "-------:" "-----:" "--------:" "-------------:" "----------:" "--------:" "--------:" "--------:" "-------:" "--------------------" \
		"${zmq_rules[@]}" "${fimsg_rules[@]}" "${mpi_rules[@]}"

	for size in "${sizes[@]}"; do
		iters=$(iters_for "$size")
		fi_lats=() fi_bws=() rmq_lats=() rmq_bws=() paths=() rmq_p99s=()
		fi_failed=0 rmq_failed=0 fimsg_lats=() fimsg_failed=0
		mpi_bws=() mpi_failed=0
		declare -A zmq_lats=() zmq_bws=() zmq_failed=()
		for ((r = 1; r <= runs; r++)); do
			if fi_once "$prov" "$size" "$iters"; then
				fi_lats+=("$r_lat") fi_bws+=("$r_bw")
				fi_note="fi $r_lat us"
			else
				fi_failed=1 fi_note="fi FAIL"
			fi
			if fimsg_on "$prov"; then
				if fi_once "$prov" "$size" "$iters" msg; then
					fimsg_lats+=("$r_lat")
					fi_note+=", fi-msg $r_lat us"
				else
					fimsg_failed=1 fi_note+=", fi-msg FAIL"
				fi
			fi
			if mpi_on "$prov"; then
				if mpi_once "$size" "$iters"; then
					mpi_bws+=("$r_bw")
					fi_note+=", mpi $r_lat us"
				else
					mpi_failed=1 fi_note+=", mpi FAIL"
				fi
			fi
			if rmq_once "$prov" "$size" "$iters"; then
				rmq_lats+=("$r_lat") rmq_bws+=("$r_bw") paths+=("$r_path")
				rmq_p99s+=("$r_p99")
				rmq_msg="rmq $r_lat us"
			else
				rmq_failed=1 rmq_msg="rmq FAIL"
			fi
			zmq_msg=""
			for t in "${zmq_transports[@]}"; do
				if zmq_once "$t" "$size" "$iters"; then
					zmq_lats[$t]+="$r_lat " zmq_bws[$t]+="$r_bw "
					zmq_msg+=", zmq $t $r_lat us"
				else
					zmq_failed[$t]=1 zmq_msg+=", zmq $t FAIL"
				fi
			done
			echo "[$prov ${size} B x$iters run $r/$runs] $fi_note, $rmq_msg$zmq_msg" >&2
		done

		if [[ $fi_failed -eq 0 ]]; then
			fi_lat=$(printf '%s\n' "${fi_lats[@]}" | median)
			fi_bw=$(printf '%s\n' "${fi_bws[@]}" | median)
		else
			fi_lat=FAIL fi_bw=FAIL any_fail=1
		fi
		if [[ $rmq_failed -eq 0 ]]; then
			rmq_lat=$(printf '%s\n' "${rmq_lats[@]}" | median)
			rmq_p99=$(printf '%s\n' "${rmq_p99s[@]}" | median)
			rmq_bw=$(printf '%s\n' "${rmq_bws[@]}" | median)
			path=$(printf '%s\n' "${paths[@]}" | awk '!seen[$0]++' | paste -sd/ -)
		else
			rmq_lat=FAIL rmq_bw=FAIL path=- any_fail=1 rmq_p99=FAIL
		fi
		zmq_cols=()
		for t in "${zmq_transports[@]}"; do
			if [[ -z ${zmq_failed[$t]:-} ]]; then
				zl=$(printf '%s' "${zmq_lats[$t]}" | tr ' ' '\n' | median)
				zb=$(printf '%s' "${zmq_bws[$t]}" | tr ' ' '\n' | median)
			else
				zl=FAIL zb=FAIL any_fail=1
			fi
			zmq_cols+=("$(fmt "$zl")" "$(fmt "$zb")" "$(ratio "$rmq_lat" "$zl")")
		done
		# fi_pingpong reports a mean: compare it with rmq's mean
		# (size / MB/s), not with rmq's median.
		rmq_mean=$(awk -v s="$size" -v b="$rmq_bw" \
			'BEGIN { if (b ~ /^[0-9.]+$/ && b > 0 && s > 0) printf "%.3f", s / b; else print "-" }')
		lat_r=$(ratio "$rmq_mean" "$fi_lat")
		bw_r=$(ratio "$rmq_bw" "$fi_bw")
		fimsg_cols=()
		if fimsg_on "$prov"; then
			if [[ $fimsg_failed -eq 0 ]]; then
				fimsg_lat=$(printf '%s\n' "${fimsg_lats[@]}" | median)
			else
				fimsg_lat=FAIL any_fail=1
			fi
			fimsg_cols=("$(fmt "$fimsg_lat")" "$(ratio "$rmq_mean" "$fimsg_lat")")
		elif [[ $fi_msg -eq 1 ]]; then
			fimsg_cols=(- -)
		fi
		# As rmq mean: size / median MB/s (mpi_pingpong's MB/s is
		# size / its mean one-way time).
		mpi_cols=()
		if mpi_on "$prov"; then
			if [[ $mpi_failed -eq 0 ]]; then
				mpi_bw=$(printf '%s\n' "${mpi_bws[@]}" | median)
				mpi_lat=$(awk -v s="$size" -v b="$mpi_bw" \
					'BEGIN { if (b > 0) printf "%.3f", s / b; else print "-" }')
			else
				mpi_lat=FAIL any_fail=1
			fi
			mpi_cols=("$(fmt "$mpi_lat")" "$(ratio "$rmq_mean" "$mpi_lat")")
		elif [[ $mpi -eq 1 ]]; then
			mpi_cols=(- -)
		fi
		fi_lat=$(fmt "$fi_lat") fi_bw=$(fmt "$fi_bw")
		rmq_lat=$(fmt "$rmq_lat") rmq_bw=$(fmt "$rmq_bw") rmq_mean=$(fmt "$rmq_mean")
		rmq_p99=$(fmt "$rmq_p99")

		print_row "$size" "$iters" "$fi_lat" "$rmq_lat/$rmq_p99" "$rmq_mean" "$lat_r" "$fi_bw" "$rmq_bw" "$bw_r" "$path" \
			"${zmq_cols[@]}" "${fimsg_cols[@]}" "${mpi_cols[@]}"
		if [[ -n $csv_file ]]; then
			{
				printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s' "$prov" "$size" "$iters" \
					"$fi_lat" "$rmq_lat" "$rmq_mean" "$lat_r" "$fi_bw" "$rmq_bw" "$bw_r" "$path" "$rmq_p99"
				[[ ${#zmq_cols[@]} -eq 0 ]] || printf ',%s' "${zmq_cols[@]}"
				[[ ${#fimsg_cols[@]} -eq 0 ]] || printf ',%s' "${fimsg_cols[@]}"
				[[ ${#mpi_cols[@]} -eq 0 ]] || printf ',%s' "${mpi_cols[@]}"
				printf '\n'
			} >>"$csv_file"
		fi
	done
done

# --bw without --paths: the path each size takes by itself.
if [[ $do_bw -eq 1 ]]; then
	memcpy_anchor
	for prov in "${providers[@]}"; do
		bw_table "$prov" auto
	done
fi

if [[ $any_fail -ne 0 ]]; then
	echo >&2
	echo "$prog: some runs failed (see FAIL above)" >&2
	exit 1
fi
exit 0
