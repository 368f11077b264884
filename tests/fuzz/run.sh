#!/bin/sh
# Run one libFuzzer target on a copy of its committed seed corpus
# (tests/fuzz/meson.build registers one test per target, suite 'fuzz').
#
#   run.sh FUZZER CORPUS_DIR ARTIFACT_DIR [libFuzzer flags...]
#
# RMQ_FUZZ_SECONDS: how long (-max_total_time), default 60.  The corpus is
# copied to a temporary directory, so the committed one is never changed;
# what the run adds is thrown away.  A crash, a leak, a sanitizer report
# or a failed check exits 1; its input is kept in ARTIFACT_DIR (in the
# build directory) and named on stderr: reproduce with `FUZZER FILE`.
set -eu

if [ $# -lt 3 ]; then
	echo "usage: $0 FUZZER CORPUS_DIR ARTIFACT_DIR [libFuzzer flags]" >&2
	exit 2
fi
fuzzer=$1
corpus=$2
artifacts=$3
shift 3

secs=${RMQ_FUZZ_SECONDS:-60}
case $secs in
'' | *[!0-9]*)
	echo "RMQ_FUZZ_SECONDS must be a number of seconds, not '$secs'" >&2
	exit 2
	;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/rmq-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/corpus" "$artifacts"
cp "$corpus"/* "$work/corpus/"

# libFuzzer stops itself after -max_total_time (checked between inputs,
# and -timeout bounds one input); the outer bound is for a fuzzer that
# hangs anyway, which counts as a failure.
rc=0
timeout --kill-after=30 $((secs * 2 + 120)) "$fuzzer" \
	-max_total_time="$secs" \
	-error_exitcode=1 \
	-timeout=25 \
	-rss_limit_mb=2048 \
	-print_final_stats=1 \
	-artifact_prefix="$artifacts/" \
	"$@" "$work/corpus" || rc=$?

if [ "$rc" -ne 0 ]; then
	echo "$(basename "$fuzzer"): exit status $rc" >&2
	for f in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* \
		"$artifacts"/oom-*; do
		[ -e "$f" ] && echo "reproducer: $f  (run: $fuzzer $f)" >&2
	done
	exit 1
fi
echo "$(basename "$fuzzer"): $secs s on $(find "$corpus" -type f | wc -l) seeds, no crash, no leak"
