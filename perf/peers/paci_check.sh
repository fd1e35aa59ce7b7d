#!/bin/bash
# CTest perf.paci_reference: `rrfp train --async paci` against PACI's rules
# written out in plain PyTorch (paci_reference.py, one process, no runtime).
# Under rrfp-fixed each stage runs its 1F1B order, so the version every pass
# reads is fixed, and the two must give the same losses step by step: a
# stale backward that read the wrong weights, a gradient summed into the
# wrong group or an update at the wrong place would change them. Exits 77
# (CTest SKIP_RETURN_CODE) when no Python with torch is found (Debian's
# python3-torch, which scripts/install-deps.sh installs, is enough).
# Usage: perf/peers/paci_check.sh RRFP_BINARY OUT_DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RRFP=${1:?usage: paci_check.sh RRFP_BINARY OUT_DIR}
OUT=${2:?usage: paci_check.sh RRFP_BINARY OUT_DIR}
PY=""
for p in "${RRFP_TORCH_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$p" ] && "$p" -c "import torch" 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "SKIP: no python3 that imports torch (apt-get install python3-torch)"; exit 77; }
mkdir -p "$OUT"
export STARPU_SCHED=rrfp-fixed STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
# stages layers A lr: drift up to 2 on the first stages; up to 1 with a larger lr
for cfg in "8 8 4 1e-3" "4 4 2 3e-3"; do
  read -r P L A lr <<<"$cfg"
  tag="p$P.a$A"
  "$RRFP" train --stages "$P" --layers "$L" --lr "$lr" --steps 8 --async paci --accumulate "$A" --window 30 \
    --quiet --json "$OUT/rrfp.$tag.json"
  "$PY" "$HERE/paci_reference.py" --stages "$P" --layers "$L" --microbatches "$A" --lr "$lr" --steps 8 \
    --json "$OUT/torch.$tag.json" >/dev/null
  python3 - "$OUT/rrfp.$tag.json" "$OUT/torch.$tag.json" "$tag" <<'PY'
import json, sys
rrfp = [s["loss"] for s in json.load(open(sys.argv[1]))["steps"]]
ref = json.load(open(sys.argv[2]))["losses"]
worst = max(abs(a - b) for a, b in zip(rrfp, ref))
print(f"{sys.argv[3]}: rrfp {' '.join(f'{x:.4f}' for x in rrfp)}")
print(f"{sys.argv[3]}: torch {' '.join(f'{x:.4f}' for x in ref)}  (largest difference {worst:.2e})")
if len(rrfp) != len(ref) or worst > 1e-4:
    sys.exit(f"{sys.argv[3]}: rrfp's PACI losses differ from the PyTorch reference")
PY
done
