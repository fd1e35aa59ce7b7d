#!/bin/bash
# Issue 14's time to a target loss at 4 to 16 stages (perf/RESULTS.md).
# The simulator predicts step time, not loss; how many steps a method needs
# to reach the target depends on its staleness, which grows with depth. So:
#   1. steps to target, measured: real gpt-tiny training with P stages
#      (--layers max(4, P): one block a stage from 4 on) on this machine's
#      cores, M a step (4 by default), validation every 5 steps: synchronous 1F1B
#      (every synchronous schedule computes the same updates), PACI
#      (--accumulate M) and AMDP (2 directions; 4 where P % 4 == 0), under
#      rrfp-wait. Only the step count is used, not this machine's time.
#   2. step time, simulated at the same P and M (synthetic costs, F = 1 ms,
#      BW = 2 ms, lognormal(0.3), 0.2 ms update, rrfp-wait): 1F1B, ZB-H1
#      and Chimera flushed every step, PACI and AMDP without a flush.
#   3. time to target = measured steps x simulated step time; tokens = steps
#      x the tokens of a step (the same for every schedule).
# Usage: perf/async_depth.sh [build dir] [target] [steps] [stage counts] [M]
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-2.4}
STEPS=${3:-150}
DEPTHS=${4:-2,4,8,16}
M=${5:-4}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 STARPU_SCHED=rrfp-wait
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "target: validation loss <= $TARGET within $STEPS steps, M = $M a step, --lr 1e-3, rrfp-wait"
IFS=, read -r -a PS <<<"$DEPTHS"
V=(--variability lognormal:0.3)
for P in "${PS[@]}"; do
  L=$((P > 4 ? P : 4))
  T=(train --stages "$P" --layers "$L" --steps "$STEPS" --lr 1e-3 --eval-every 5 --target-loss "$TARGET" --quiet)
  "$R" "${T[@]}" --hint 1f1b --fused --microbatches "$M" --json "$OUT/train.$P.sync.json"
  "$R" "${T[@]}" --async paci --accumulate "$M" --window 5 --json "$OUT/train.$P.paci.json"
  "$R" "${T[@]}" --async amdp --directions 2 --accumulate "$M" --window 5 --json "$OUT/train.$P.amdp-2.json"
  if ((P % 4 == 0 && M % 4 == 0)); then
    "$R" "${T[@]}" --async amdp --directions 4 --accumulate "$M" --window 5 --json "$OUT/train.$P.amdp-4.json"
  fi
  for h in 1f1b zb-h1 chimera; do
    "$R" sim --hint "$h" --stages "$P" --microbatches "$M" "${V[@]}" --json "$OUT/sim.$P.$h.json" >/dev/null
  done
  A=(sim async --stages "$P" --accumulate "$M" --window 8 --update-ms 0.2 "${V[@]}")
  "$R" "${A[@]}" --method paci --json "$OUT/sim.$P.paci.json" >/dev/null
  "$R" "${A[@]}" --method amdp --directions 2 --json "$OUT/sim.$P.amdp-2.json" >/dev/null
  if ((P % 4 == 0 && M % 4 == 0)); then
    "$R" "${A[@]}" --method amdp --directions 4 --json "$OUT/sim.$P.amdp-4.json" >/dev/null
  fi
  echo "P = $P done" >&2
done
python3 - "$OUT" "$DEPTHS" <<'PY'
import json, os, sys
out, depths = sys.argv[1], [int(p) for p in sys.argv[2].split(",")]
def load(name):
    f = os.path.join(out, name)
    return json.load(open(f)) if os.path.exists(f) else None
print(f"{'P':>3} {'method':8} {'steps':>5} {'tokens':>8} {'val at end':>11} {'drift':>5} {'sim step ms':>11} {'ms to target':>12} {'fastest sync / it':>17}")
for P in depths:
    sync = load(f"train.{P}.sync.json")
    rows = []
    for name in ("1f1b", "zb-h1", "chimera", "paci", "amdp-2", "amdp-4"):
        sim = load(f"sim.{P}.{name}.json")
        run = sync if name in ("1f1b", "zb-h1", "chimera") else load(f"train.{P}.{name}.json")
        if sim is None or run is None:
            continue
        step_s = sim.get("async_step_s", sim.get("makespan_s"))
        t = run["target"]
        steps = t["step"] if t["reached"] else None
        tokens = t["tokens"] if t["reached"] else None
        final = [s["val_loss"] for s in run["steps"] if s.get("val_loss", -1) >= 0][-1]
        drift = max((max(s.get("version_drift_max") or [0]) for s in run["steps"]), default=0)
        rows.append((name, steps, tokens, final, drift, step_s, steps * step_s if steps else None))
    best = min((r[6] for r in rows[:3] if r[6]), default=None)
    for name, steps, tokens, final, drift, step_s, tt in rows:
        gain = f"{best / tt:.2f}" if best and tt else "-"
        print(f"{P:3d} {name:8} {steps if steps else 'never':>5} {int(tokens) if tokens else '-':>8} {final:11.4f} {drift:5d} "
              f"{step_s * 1e3:11.2f} {('%.1f' % (tt * 1e3)) if tt else '-':>12} {gain:>17}")
print("(synchronous schedules: the steps and losses of the 1F1B run; time to target = steps x simulated step time)")
PY
