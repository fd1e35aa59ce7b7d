#!/usr/bin/env bash
# Installs every Debian package RRFP needs; idempotent (apt-get only what is missing).
set -euo pipefail
PKGS=(build-essential cmake pkg-config git
      libhwloc-dev libfxt-dev libopenmpi-dev openmpi-bin   # StarPU 1.4.10 is built below
      libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcairo2-dev
      libtorch-dev python3
      libopenblas0-openmp      # LibTorch's libblas.so.3: the OpenMP build, as LibTorch's own threads
      libgoogle-perftools-dev) # tcmalloc for the training programs (docs/training.md)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libblas.so.3 and liblapack.so.3 are Debian alternatives: the netlib
# reference (15-20x slower on gpt-tiny) wins when it was set by hand, so
# point both at OpenBLAS unless an optimised BLAS is already chosen.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for lib in libblas.so.3 liblapack.so.3; do
  name="$lib-$arch"
  want="/usr/lib/$arch/openblas-openmp/$lib"
  now=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p')
  case "$now" in
    */blas/*|*/lapack/*|"") $SUDO update-alternatives --set "$name" "$want" ;;
  esac
done

# StarPU 1.4.10 with StarPU-MPI, hwloc, FxT (and CUDA where nvcc is found),
# from Debian's source package into /opt/rrfp/starpu-1.4.10; reused once built.
"$(dirname "$0")/build-starpu.sh"
