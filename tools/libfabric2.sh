#!/bin/bash
# Build libfabric 2.1.0 from Debian 13's source into a prefix, so librmq can
# be built and tested against it beside Debian 12's 1.17 (issue 43).
#
#   tools/libfabric2.sh [PREFIX]        (default: build-libfabric2/prefix)
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig meson setup build-lf2
#
# Only the Debian archive: the orig tarball of trixie's libfabric, fetched
# with apt-get source from a deb-src line in a sources file of our own (the
# tarball arrives even where the mirror lacks the .dsc and apt exits
# non-zero).  Needs autoconf, automake, libtool and root for the sources
# file (or RMQ_LIBFABRIC_TARBALL=FILE naming the tarball already fetched).
# The providers librmq runs here (tcp, rxm, shm, sm2, sockets, udp, rxd);
# fi_info and fi_pingpong go to PREFIX/bin.  A prefix that already holds
# 2.1.0 is kept (CI's cache): delete it to rebuild.
set -euo pipefail

version=2.1.0
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$top/build-libfabric2/prefix}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
pc=$prefix/lib/pkgconfig/libfabric.pc

if [[ -f $pc ]] && grep -qx "Version: $version" "$pc"; then
	echo "libfabric2.sh: libfabric $version already in $prefix"
	exit 0
fi

work=$(dirname "$prefix")/src
mkdir -p "$work"
tarball=${RMQ_LIBFABRIC_TARBALL:-$work/libfabric_$version.orig.tar.xz}
if [[ ! -f $tarball ]]; then
	list=/etc/apt/sources.list.d/rmq-trixie-src.sources
	if [[ ! -f $list ]]; then
		if [[ $(id -u) != 0 ]]; then
			echo "libfabric2.sh: needs root to add $list" \
			     "(or RMQ_LIBFABRIC_TARBALL=FILE)" >&2
			exit 1
		fi
		cat >"$list" <<-EOF
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: trixie
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt-get update -qq
	fi
	# apt exits non-zero where the mirror lacks the .dsc; the orig
	# tarball is all we need, checked below.
	(cd "$work" && apt-get source --download-only -qq \
		"libfabric=$version-1.1" >/dev/null 2>&1) ||
		(cd "$work" && apt-get source --download-only -qq libfabric \
			>/dev/null 2>&1) || true
	if [[ ! -f $tarball ]]; then
		echo "libfabric2.sh: the Debian archive gave no" \
		     "libfabric_$version.orig.tar.xz (see $list)" >&2
		exit 1
	fi
fi

src=$work/libfabric-$version
rm -rf "$src"
tar -xf "$tarball" -C "$work"
cd "$src"
log=$work/build.log
echo "libfabric2.sh: building libfabric $version into $prefix (log: $log)"
{
	./autogen.sh
	./configure --prefix="$prefix" --disable-static --enable-only \
		--enable-tcp --enable-rxm --enable-shm --enable-sm2 \
		--enable-sockets --enable-udp --enable-rxd
	make -j"$(nproc)"
	make install
} >"$log" 2>&1 || {
	tail -n 30 "$log" >&2
	echo "libfabric2.sh: build failed (log: $log)" >&2
	exit 1
}
grep -qx "Version: $version" "$pc"
echo "libfabric2.sh: done; PKG_CONFIG_PATH=$prefix/lib/pkgconfig"
