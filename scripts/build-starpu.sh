#!/usr/bin/env bash
# Builds StarPU 1.4.10 (StarPU-MPI, hwloc, FxT; CUDA where nvcc is found)
# from Debian's source package into a fixed prefix, once: a prefix that
# already holds 1.4.10 built with the same patches (scripts/patches/,
# recorded in PREFIX/share/rrfp-starpu-patches) is reused. The source comes from Debian's unstable
# suite through a private apt configuration; the system's sources are
# not touched. Usage: scripts/build-starpu.sh [PREFIX]
# (default /opt/rrfp/starpu-1.4.10; CMake looks there, RRFP_STARPU_PREFIX).
set -euo pipefail
VERSION=1.4.10
PREFIX=${1:-${RRFP_STARPU_PREFIX:-/opt/rrfp/starpu-$VERSION}}
here=$(cd "$(dirname "$0")" && pwd)
pc="$PREFIX/lib/pkgconfig/starpu-1.4.pc"
stamp="$PREFIX/share/rrfp-starpu-patches"
patches=$(cd "$here/patches" && sha256sum starpu-"$VERSION"-*.patch)
if [ -f "$pc" ] && grep -q "^Version: $VERSION" "$pc" && [ "$(cat "$stamp" 2>/dev/null)" = "$patches" ]; then
  echo "build-starpu: StarPU $VERSION already in $PREFIX"
  exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
work=$(mktemp -d /tmp/rrfp-starpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# A private apt configuration with one deb-src line (Debian's unstable
# suite carries starpu 1.4.10+dfsg-2; bookworm's own sources hold 1.3.10).
mkdir -p lists/partial
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main" >sources.list
APT=(apt-get -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$work/lists" -o APT::Sandbox::User=root)
echo "build-starpu: fetching Debian's source package of StarPU $VERSION"
"${APT[@]}" update -qq
"${APT[@]}" source --download-only -qq "starpu=$VERSION+dfsg-2" 2>/dev/null || "${APT[@]}" source --download-only -qq starpu
tar xzf starpu_"$VERSION"+dfsg.orig.tar.gz
cd starpu-"$VERSION"+dfsg
# CUDA 13 removed cudaDeviceProp::computeMode; harmless without CUDA.
patch -p1 -s <"$here/patches/starpu-1.4.10-cuda13-computemode.patch"
# heteroprio with tasks pinned to one worker (task->workerids, as ours are):
# a worker stopped at the first bucket task it could not run (a hang) and a
# failed steal decremented a counter (an assertion at deinit). docs/runtime.md.
patch -p1 -s <"$here/patches/starpu-1.4.10-heteroprio-restricted-tasks.patch"
# StarPU-MPI's progress thread: STARPU_MPI_POLL_BACKOFF_MAX_US pauses its
# polls while it only waits for envelopes (it otherwise takes a core per
# process; the rrfp drivers set it, docs/mpi.md).
patch -p1 -s <"$here/patches/starpu-1.4.10-mpi-poll-backoff.patch"
cuda=()
if command -v nvcc >/dev/null 2>&1; then
  cuda=(--with-cuda-dir="$(dirname "$(dirname "$(command -v nvcc)")")")
else
  cuda=(--disable-cuda)
fi
echo "build-starpu: configuring (${cuda[0]%%=*}) and building into $PREFIX"
# --enable-maxcpus=64: the default is this machine's core count rounded up
# (2 here), which would cap every process at 2 CPU workers.
./configure -q --prefix="$PREFIX" "${cuda[@]}" --with-fxt --enable-maxcpus=64 \
  --disable-build-tests --disable-build-examples --disable-build-doc --disable-static \
  --disable-starpufft --disable-opencl --disable-fortran --disable-socl --disable-starpupy \
  >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
make -s -j"$(nproc)" >make.log 2>&1 || { tail -40 make.log; exit 1; }
# Not install-strip: StarPU's internal symbols name its frames in TSan
# reports, which tests/tsan.supp matches (and in debuggers).
$SUDO make -s install >install.log 2>&1 || { tail -20 install.log; exit 1; }
grep -q "^Version: $VERSION" "$pc"
echo "$patches" | $SUDO tee "$stamp" >/dev/null
echo "build-starpu: StarPU $VERSION installed in $PREFIX ($(du -sh "$PREFIX" | cut -f1))"
