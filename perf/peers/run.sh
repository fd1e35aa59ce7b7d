#!/bin/bash
# One command: make the venv if needed, then run the benchmark.
# Usage: perf/peers/run.sh [bench_peers.py options]   (--help for them)
# e.g.   perf/peers/run.sh --rounds 3 --steps 12 --sizes default,large
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${RRFP_PEERS_VENV:-$HERE/.venv}
"$HERE/setup_venv.sh" "$VENV" >&2
exec "$VENV/bin/python" "$HERE/bench_peers.py" --python "$VENV/bin/python" "$@"
