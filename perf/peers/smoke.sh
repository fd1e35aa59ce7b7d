#!/bin/bash
# CTest perf.peers_smoke: one short round of two configurations on both sides;
# fails unless every run exits 0 with finite, falling losses. Exits 77 (CTest
# SKIP_RETURN_CODE) when the venv with torch is not there: it is made only by
# perf/peers/setup_venv.sh (or run.sh), never by the test.
# Usage: perf/peers/smoke.sh RRFP_BINARY OUT_DIR
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RRFP=${1:?usage: smoke.sh RRFP_BINARY OUT_DIR}
OUT=${2:?usage: smoke.sh RRFP_BINARY OUT_DIR}
VENV=${RRFP_PEERS_VENV:-$HERE/.venv}
if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch.distributed.pipelining" 2>/dev/null; then
  echo "SKIP: no venv with torch at $VENV (perf/peers/setup_venv.sh makes it)"
  exit 77
fi
exec "$VENV/bin/python" "$HERE/bench_peers.py" --quick --configs plain,1f1b --check \
  --rrfp "$RRFP" --python "$VENV/bin/python" --out "$OUT" --timeout 240
