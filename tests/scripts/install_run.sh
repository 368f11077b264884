#!/bin/sh
# The install as a user meets it.  meson install into a staging directory
# (DESTDIR: the build's own prefix may be /usr/local, not ours to write),
# then the installed examples/reqrep.c built against it twice, with
# pkg-config and with CMake's find_package(librmq), and both run without
# LD_LIBRARY_PATH; then an installed tool, also without LD_LIBRARY_PATH.
# With a static librmq.a installed too (-Ddefault_library=both), the
# example again linked with it, both ways.
# Usage: install_run.sh BUILD_DIR PREFIX LIBDIR BINDIR (LIBDIR and BINDIR
# as Meson's options: relative to PREFIX, or absolute)
set -u
build=$1 prefix=$2 libdir=$3 bindir=$4
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
cc=${CC:-cc}

if ! command -v cmake >/dev/null 2>&1; then
	echo "SKIP: cmake is not installed (apt-get install cmake)"
	exit 77
fi
if ! command -v pkg-config >/dev/null 2>&1; then
	echo "SKIP: pkg-config is not installed"
	exit 77
fi

# Whatever runs here must find librmq by itself.  Built against a
# libfabric in a prefix of its own (tools/libfabric2.sh), that libfabric
# is found as its user finds it: its .pc on PKG_CONFIG_PATH, its libdir on
# LD_LIBRARY_PATH (which the linker also searches for librmq.so's needs).
unset LD_LIBRARY_PATH
case ${RMQ_FABRIC_LIBDIR:-} in
""|/usr/lib*|/lib*) ;;
*)
	export LD_LIBRARY_PATH=$RMQ_FABRIC_LIBDIR
	export PKG_CONFIG_PATH="$RMQ_FABRIC_PCDIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# run NAME CMD...: CMD must succeed; its output is shown only if it fails.
run() {
	run_name=$1
	shift
	"$@" >"$tmp/out" 2>&1
	run_rc=$?
	[ $run_rc -eq 0 ] && return 0
	fail "$run_name: exit $run_rc from: $*"
	cat "$tmp/out" >&2
	return 1
}

# linked NAME BIN shared|static: BIN loads librmq.so from $L (not some
# other librmq on the machine), or has librmq linked in.
linked() {
	ldd "$2" >"$tmp/ldd" 2>&1
	if [ "$3" = shared ]; then
		grep -q "librmq\.so\.[0-9]* => $L/librmq\.so" "$tmp/ldd" ||
			{ fail "$1: librmq not loaded from $L"; cat "$tmp/ldd" >&2; }
	elif grep -q 'librmq\.so' "$tmp/ldd"; then
		fail "$1: librmq.so loaded, not linked in"
		cat "$tmp/ldd" >&2
	fi
}

run install meson install -C "$build" --no-rebuild --quiet --destdir "$dest" ||
	exit 1
# Under DESTDIR every installed path is $dest followed by the real one.
L=$dest$libdir
for f in "$dest$prefix/include/rmq.h" "$L/pkgconfig/librmq.pc" \
	"$L/cmake/librmq/librmqConfig.cmake" \
	"$L/cmake/librmq/librmqConfigVersion.cmake"; do
	[ -f "$f" ] || fail "not installed: $f"
done
src=$(find "$dest" -path '*/doc/librmq/examples/reqrep.c' | head -n 1)
[ -n "$src" ] || { fail "examples/reqrep.c not installed"; exit 1; }
# What -lrmq and librmq::librmq link: the shared library if installed;
# with both (-Ddefault_library=both), the static one is linked again below.
kind=static
[ -e "$L/librmq.so" ] && kind=shared
both=no
[ $kind = shared ] && [ -e "$L/librmq.a" ] && both=yes

# pkg-config.  The .pc names the real prefix; PKG_CONFIG_SYSROOT_DIR puts
# the staging directory in front of its paths.  A .pc carries no rpath,
# and this libdir is not one the loader searches, so the binary gets its
# own (-Wl,-rpath), as a user installing to such a prefix would give it.
export PKG_CONFIG_PATH="$L/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_SYSROOT_DIR="$dest"
cflags=$(pkg-config --cflags librmq) || fail "pkg-config --cflags librmq"
libs=$(pkg-config --libs librmq) || fail "pkg-config --libs librmq"
# shellcheck disable=SC2086 # the flags are words
run pkg-config-build "$cc" -std=c11 -o "$tmp/reqrep_pc" "$src" \
	$cflags $libs "-Wl,-rpath,$L" &&
	run pkg-config-run "$tmp/reqrep_pc" &&
	linked pkg-config "$tmp/reqrep_pc" $kind
if [ $both = yes ]; then
	# librmq.a itself, its dependencies shared: the .pc's Requires.private
	# name them.  (`pkg-config --static --libs librmq` says the same and
	# more: libfabric's own private libraries, which Debian 12 cannot link
	# (-lpsm_infinipath, -lpsm2, -lrdmacm) unless their -dev packages are
	# installed.)
	deps=$(pkg-config --print-requires-private librmq | cut -d' ' -f1)
	# shellcheck disable=SC2086
	deplibs=$(pkg-config --libs $deps) || fail "pkg-config --libs $deps"
	# shellcheck disable=SC2086
	run pkg-config-static-build "$cc" -std=c11 -o "$tmp/reqrep_pc_static" \
		"$src" $cflags "$L/librmq.a" $deplibs -pthread &&
		run pkg-config-static-run "$tmp/reqrep_pc_static" &&
		linked pkg-config-static "$tmp/reqrep_pc_static" static
fi
unset PKG_CONFIG_SYSROOT_DIR

# CMake: find_package from CMAKE_PREFIX_PATH.  CMake gives a binary in its
# build tree an rpath to the directory of each library it links by full
# path, as librmq::librmq is, so this one needs no -Wl,-rpath.
mkdir "$tmp/cm"
cp "$src" "$tmp/cm/reqrep.c"
cat >"$tmp/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(rmq_install_check C)
find_package(librmq 0.1 REQUIRED)
add_executable(reqrep reqrep.c)
target_link_libraries(reqrep PRIVATE librmq::librmq)
# Before 1.0 another minor release is another ABI: not this one.
find_package(librmq 0.2 QUIET)
if(librmq_FOUND)
  message(FATAL_ERROR "find_package(librmq 0.2) accepted ${librmq_VERSION}")
endif()
EOF
cmake_build() { # cmake_build NAME DIR [-DVAR=VALUE...]
	cb_name=$1 cb_dir=$2
	shift 2
	run "$cb_name-configure" cmake -S "$tmp/cm" -B "$cb_dir" \
		-DCMAKE_PREFIX_PATH="$dest$prefix" -DCMAKE_C_COMPILER="$cc" "$@" &&
		run "$cb_name-build" cmake --build "$cb_dir" &&
		run "$cb_name-run" "$cb_dir/reqrep"
}
if cmake_build cmake "$tmp/cm/build"; then
	linked cmake "$tmp/cm/build/reqrep" $kind
fi
if [ $both = yes ] && cmake_build cmake-static "$tmp/cm/build-static" \
	-DLIBRMQ_USE_STATIC_LIBS=ON; then
	linked cmake-static "$tmp/cm/build-static/reqrep" static
fi

# The installed tools.  Their rpath names the real libdir, which under
# DESTDIR is not where the library is, so those that load librmq.so cannot
# run from here: check the rpath they carry instead (none under /usr,
# where the loader looks anyway: see rmq_rpath in meson.build).  rmq_info
# links the engine statically and runs.
if run rmq_info "$dest$bindir/rmq_info" -p shm; then
	grep -q '^librmq ' "$tmp/out" ||
		{ fail "rmq_info: no 'librmq VERSION' line"; cat "$tmp/out" >&2; }
fi
[ "$prefix" = /usr ] || for exe in "$dest$bindir"/rmq_*; do
	readelf -d "$exe" >"$tmp/dyn" 2>&1 || { fail "readelf $exe"; continue; }
	grep -q 'NEEDED.*\[librmq\.so' "$tmp/dyn" || continue
	grep -Eq "(RPATH|RUNPATH).*\[(.*:)?$libdir(:.*)?\]" "$tmp/dyn" ||
		{ fail "${exe##*/}: no rpath to $libdir"; grep -E 'RPATH|RUNPATH' "$tmp/dyn" >&2; }
done

[ $fails -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
[ $both = yes ] && kind="$kind and static"
echo "install: librmq $kind, built against with pkg-config and CMake, ran"
