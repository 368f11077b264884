#!/bin/sh
# rmq_tune as a user runs it: a quick run over shm must write a file that
# says it was tuned and that librmq loads (rmq_pingpong runs with it when
# given), and bad usage must fail with a message.
# Usage: tune_run.sh RMQ_TUNE [RMQ_PINGPONG]
set -u
tune=$1
pingpong=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# expect NAME FILE PATTERN: FILE contains PATTERN (grep -E)
expect() {
	grep -Eq -- "$3" "$2" || { fail "$1: no /$3/ in $2"; cat "$2" >&2; }
}

start=$(date +%s)
"$tune" -p shm --quick -o "$tmp/tuned.yaml" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { fail "quick run: exit $rc"; cat "$tmp/err" >&2; }
echo "rmq_tune --quick took $(($(date +%s) - start)) s"
cat "$tmp/err"
expect quick "$tmp/tuned.yaml" '^  tuned: true$'
expect quick "$tmp/tuned.yaml" '^provider: shm$'
expect quick "$tmp/tuned.yaml" '^  pair:$'
expect quick "$tmp/tuned.yaml" '^  reqrep:$'
expect quick "$tmp/tuned.yaml" '^  rndv: (rndv_read|rndv_write|rndv_send|seg)$'
expect quick "$tmp/tuned.yaml" '^# +64 +[0-9.]+ '
expect stderr "$tmp/err" 'PAIR: inject <= '
expect stderr "$tmp/err" 'wrote .*tuned.yaml'
grep -q 'warning' "$tmp/err" && fail "quick run: warnings (engine failures)"

if [ -n "$pingpong" ]; then
	RMQ_CONFIG="$tmp/tuned.yaml" "$pingpong" --local -p shm -S 64,65536 \
		-I 100 --csv >"$tmp/pp" 2>&1 ||
		fail "pingpong with the file: exit $?"
	expect pingpong "$tmp/pp" '^64,[0-9.]+,'
	expect pingpong "$tmp/pp" '^65536,[0-9.]+,'
	RMQ_CONFIG="$tmp/tuned.yaml" "$pingpong" --local -p shm -S 64 -I 100 \
		--reqrep --csv >"$tmp/pp" 2>&1 ||
		fail "reqrep with the file: exit $?"
	expect reqrep "$tmp/pp" '^64,[0-9.]+,'
fi

# Bad usage: status 2 and a message that names the problem.
usage() {
	name=$1
	pattern=$2
	shift 2
	"$tune" "$@" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "$name: exit $rc, not 2"
	expect "$name" "$tmp/out" "$pattern"
}
usage nosuch "unknown provider 'nosuch'" -p nosuch --quick
usage noprov '-p PROVIDER is required' --quick
usage badsize "bad -S '64,huge'" -p shm -S 64,huge
usage badsize2 "bad -S '2g'" -p shm -S 2g
usage baditers "bad -I '0'" -p shm -I 0
usage badpat "bad --patterns 'pub'" -p shm --patterns pub
[ -e "$tmp/never.yaml" ] && fail "a failed run left a file"

# A provider that is not on this machine: status 1, no file.
"$tune" -p verbs --quick -o "$tmp/never.yaml" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "verbs: exit $rc, not 1 (no RDMA NIC here?)"
expect verbs "$tmp/out" 'cannot bind verbs://.*No such device'
[ -e "$tmp/never.yaml" ] && fail "verbs: a file was written"

[ $fails -eq 0 ] && echo "rmq_tune: all checks passed"
exit $fails
