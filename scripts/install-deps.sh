#!/usr/bin/env bash
# Installs every Debian package RRFP needs; idempotent (apt-get only what is missing).
# --cuda also makes /opt/rrfp/torch-cuda (RRFP_TORCH_CUDA_VENV), a virtual
# environment with PyPI's torch==2.11.0 (CUDA 13 LibTorch, about 4.6 GB),
# for cmake -DRRFP_CUDA=ON (docs/gpu.md).
set -euo pipefail
CUDA=0
for a in "$@"; do
  case $a in
    --cuda) CUDA=1 ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# //'; exit 0 ;;
    *) echo "install-deps: unknown option '$a' (--cuda, --help)" >&2; exit 2 ;;
  esac
done
PKGS=(build-essential cmake pkg-config git
      libhwloc-dev libfxt-dev libopenmpi-dev openmpi-bin   # StarPU 1.4.10 is built below
      libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcairo2-dev
      libtorch-dev python3 python3-venv
      python3-torch            # perf/peers/async_reference.py: PACI's and AMDP's rules in plain PyTorch, a test's reference
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

if [ "$CUDA" = 1 ]; then
  VENV=${RRFP_TORCH_CUDA_VENV:-/opt/rrfp/torch-cuda}
  TORCH_VERSION=2.11.0
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION' or not torch.version.cuda)" 2>/dev/null; then
    echo "install-deps: $VENV already has CUDA torch $TORCH_VERSION"
  else
    command -v nvcc >/dev/null || echo "install-deps: warning: no nvcc on PATH; the CUDA build needs the CUDA toolkit" >&2
    echo "install-deps: making $VENV with torch==$TORCH_VERSION (CUDA LibTorch, about 4.6 GB)"
    $SUDO python3 -m venv "$VENV"
    $SUDO "$VENV/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" numpy  # numpy: no warning at import
    "$VENV/bin/python" -c "import torch; print('install-deps: torch', torch.__version__, 'CUDA', torch.version.cuda, 'in $VENV')"
  fi
fi
