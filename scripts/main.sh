#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: a short gpt-tiny
# training on 2 pipeline stages (StarPU, the default rrfp-wait policy, 1F1B hint) on the
# generated corpus. Extra arguments go to `rrfp train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)" --target rrfp_cli
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
exec build/rrfp train --model gpt-tiny --stages 2 --microbatches 4 --hint 1f1b --steps 60 "$@"
