#!/bin/bash
# CTest perf.async_reference: `rrfp train --async paci` and
# `--async amdp --deterministic` against their rules written out in plain
# PyTorch (async_reference.py, one process, no runtime). PACI runs under
# rrfp-fixed, where each stage follows its 1F1B order, so the version every
# pass reads is fixed; reproducible AMDP fixes the versions itself. So the
# losses must agree step by step: a stale backward that read the wrong
# weights, a gradient summed into the wrong group or an update at the wrong
# place would change them. Exits 77 (CTest SKIP_RETURN_CODE) when no Python
# imports torch (Debian's python3-torch, which scripts/install-deps.sh
# installs, is enough).
# Usage: perf/peers/async_check.sh RRFP_BINARY OUT_DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RRFP=${1:?usage: async_check.sh RRFP_BINARY OUT_DIR}
OUT=${2:?usage: async_check.sh RRFP_BINARY OUT_DIR}
PY=""
for p in "${RRFP_TORCH_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$p" ] && "$p" -c "import torch" 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "SKIP: no python3 that imports torch (apt-get install python3-torch)"; exit 77; }
mkdir -p "$OUT"
export STARPU_SCHED=rrfp-fixed STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
# method stages layers A lr window [rrfp flags] [| flags of both]: PACI's
# drift up to 2 on the first stages, then up to 1 across windows' drains;
# PACI under a learning-rate schedule (each stage's k-th update at rate k,
# whenever it runs); AMDP across a window's boundary, 2 and 4 directions,
# and under a schedule; --clip-grad by the whole model's norm (sync: rrfp
# train's synchronous 1F1B, A microbatches a step) and by each stage's own
# norm (paci, amdp)
for cfg in "paci 8 8 4 1e-3 30" "paci 4 4 2 3e-3 3" "paci 8 8 4 2e-3 30 | --lr-warmup 3 --lr-decay cosine" \
           "amdp 4 4 4 1e-3 3 --directions 2 --deterministic" "amdp 4 4 4 1e-3 30 --directions 4 --deterministic" \
           "amdp 4 4 4 2e-3 3 --directions 2 --deterministic | --lr-warmup 3 --lr-decay linear" \
           "sync 4 4 4 1e-3 30 | --clip-grad 0.5" "paci 8 8 4 2e-3 30 | --clip-grad 0.5" \
           "amdp 4 4 4 1e-3 3 --directions 2 --deterministic | --clip-grad 0.5"; do
  both=""
  [[ $cfg == *"|"* ]] && both=${cfg#*|}
  read -r method P L A lr W extra <<<"${cfg%%|*}"
  read -r -a extra <<<"${extra:-}"
  read -r -a both <<<"$both"
  tag="$method.p$P.a$A.w$W${extra[1]:+.d${extra[1]}}${both[0]:+.${both[0]#--}}"
  mode=(--async "$method" --accumulate "$A" --window "$W")
  [ "$method" = sync ] && mode=(--hint 1f1b --microbatches "$A")
  "$RRFP" train --stages "$P" --layers "$L" --lr "$lr" --steps 8 "${mode[@]}" \
    ${extra[@]+"${extra[@]}"} ${both[@]+"${both[@]}"} --quiet --json "$OUT/rrfp.$tag.json"
  "$PY" "$HERE/async_reference.py" --method "$method" --stages "$P" --layers "$L" --microbatches "$A" --lr "$lr" \
    --window "$W" --steps 8 ${both[@]+"${both[@]}"} --json "$OUT/torch.$tag.json" >/dev/null
  "$PY" - "$OUT/rrfp.$tag.json" "$OUT/torch.$tag.json" "$tag" <<'PY'
import json, sys
rrfp = [s["loss"] for s in json.load(open(sys.argv[1]))["steps"]]
torch_run = json.load(open(sys.argv[2]))
ref = torch_run["losses"]
if "clip-grad" in sys.argv[3] and not torch_run["clipped"]:  # a clip that never bites checks nothing
    sys.exit(f"{sys.argv[3]}: no update was clipped; lower the configuration's --clip-grad")
worst = max(abs(a - b) for a, b in zip(rrfp, ref))
bad = [k + 1 for k, (a, b) in enumerate(zip(rrfp, ref)) if not abs(a - b) <= 1e-4]  # NaN is bad too
print(f"{sys.argv[3]}: rrfp  {' '.join(f'{x:.4f}' for x in rrfp)}")
print(f"{sys.argv[3]}: torch {' '.join(f'{x:.4f}' for x in ref)}  (largest difference {worst:.2e})")
if len(rrfp) != len(ref) or bad:
    sys.exit(f"{sys.argv[3]}: rrfp's losses differ from the PyTorch reference at steps {bad or 'count'}")
PY
done
