#!/bin/bash
# Make the Python virtual environment of perf/peers with torch from PyPI.
# Usage: perf/peers/setup_venv.sh [VENV]   (default: $RRFP_PEERS_VENV or perf/peers/.venv)
#
# torch==2.11.0 is pinned. The Linux wheel from PyPI is a CUDA build and pulls
# about 4 GB of nvidia-* / cuda-* packages; `pip install --no-deps torch`
# does not import without them ("libcufile.so.0: cannot open shared object
# file"), so they are installed too, although the benchmark runs on the CPU.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${1:-${RRFP_PEERS_VENV:-$HERE/.venv}}
TORCH_VERSION=2.11.0
PYTHON=${PYTHON:-python3}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  echo "perf/peers: $VENV already has torch $TORCH_VERSION"
  exit 0
fi
if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
  echo "perf/peers: $PYTHON has no venv module (apt-get install python3-venv)" >&2
  exit 2
fi
echo "perf/peers: making $VENV with torch==$TORCH_VERSION (several GB of CUDA wheels; CPU is what is used)"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# numpy only keeps torch from warning at import ("Failed to initialize NumPy").
"$VENV/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" numpy
"$VENV/bin/python" -c "import torch, torch.distributed as d; from torch.distributed.pipelining import PipelineStage; assert d.is_gloo_available(); print('perf/peers: torch', torch.__version__, 'ready in $VENV')"
