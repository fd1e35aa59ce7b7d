#!/bin/bash
# Issue 14's time to a target loss at 4 to 16 stages (perf/RESULTS.md).
# The simulator predicts step time, not loss; how many steps a method needs
# to reach the target depends on its staleness, which grows with depth. So:
#   1. steps to target, measured: real gpt-tiny training with P stages
#      (--layers max(4, P): one block a stage from 4 on) on this machine's
#      cores, M a step (4 by default), validation every 5 steps: synchronous
#      1F1B (every synchronous schedule makes the same updates, under any
#      policy), and under each policy PACI (--accumulate M) and AMDP (2
#      directions; 4 where P and M allow). Only the step count is used, not
#      this machine's time. EVAL_EVERY=1 finds the step exactly (evaluation
#      does not drain an --async window, so it changes no update); the
#      default, 5, rounds every method's step up to a multiple of 5.
#   2. step time, simulated at the same P, M and policy (synthetic costs,
#      F = 1 ms, BW = 2 ms, lognormal(0.3), mean over SEEDS cost seeds):
#      1F1B, ZB-H1 and Chimera flushed every step, PACI
#      and AMDP with the training's window (WINDOW steps, 5 by default;
#      evaluation does not drain); every schedule pays a 0.2 ms update
#      per stage and step (`rrfp sim --update-ms`, `sim async --update-ms`);
#      perf/async_sim_step.sh, which perf/async_targets.sh shares.
#   3. time to target = measured steps x simulated step time; tokens = steps
#      x the tokens of a step (the same for every schedule).
# Usage: [POLICIES="rrfp-fixed rrfp-wait"] [SEEDS=5] [WINDOW=5] [EVAL_EVERY=5] perf/async_depth.sh [build dir]
#        [target] [steps] [stage counts] [M]
set -euo pipefail
BUILD=${1:-build}
TARGET=${2:-2.4}
STEPS=${3:-150}
DEPTHS=${4:-2,4,8,16}
M=${5:-4}
read -r -a POLS <<<"${POLICIES:-rrfp-fixed rrfp-wait}"
SEEDS=${SEEDS:-5}
W=${WINDOW:-5}
E=${EVAL_EVERY:-5}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "target: validation loss <= $TARGET within $STEPS steps, M = $M a step, --lr 1e-3, policies: ${POLS[*]}, --window $W, --eval-every $E, $SEEDS simulated seeds"
IFS=, read -r -a PS <<<"$DEPTHS"
STEP=$(dirname "$0")/async_sim_step.sh
for P in "${PS[@]}"; do
  L=$((P > 4 ? P : 4))
  T=(train --stages "$P" --layers "$L" --steps "$STEPS" --lr 1e-3 --eval-every "$E" --target-loss "$TARGET" --quiet)
  methods=(paci)
  ((P % 2 == 0 && M % 2 == 0)) && methods+=(amdp-2)
  ((P % 4 == 0 && M % 4 == 0)) && methods+=(amdp-4)
  STARPU_SCHED=${POLS[0]} "$R" "${T[@]}" --hint 1f1b --fused --microbatches "$M" --json "$OUT/train.$P.sync.json"
  for pol in "${POLS[@]}"; do
    for m in "${methods[@]}"; do
      case $m in
        paci) a=(--async paci) ;;
        amdp-*) a=(--async amdp --directions "${m#amdp-}") ;;
      esac
      STARPU_SCHED=$pol "$R" "${T[@]}" "${a[@]}" --accumulate "$M" --window "$W" --json "$OUT/train.$P.$pol.$m.json"
    done
    sync=(1f1b zb-h1)
    ((P % 2 == 0)) && sync+=(chimera)
    for name in "${methods[@]}" "${sync[@]}"; do
      bash "$STEP" "$R" "$P" "$M" "$W" "$pol" "$SEEDS" "$name" >"$OUT/sim.$P.$pol.$name"
    done
  done
  echo "P = $P done" >&2
done
python3 - "$OUT" "$DEPTHS" "${POLS[@]}" <<'PY'
import json, os, sys
out, depths, pols = sys.argv[1], [int(p) for p in sys.argv[2].split(",")], sys.argv[3:]
def load(name):
    f = os.path.join(out, name)
    return json.load(open(f)) if os.path.exists(f) else None
def step_time(P, pol, name):  # perf/async_sim_step.sh's mean over the seeds, or None
    f = os.path.join(out, f"sim.{P}.{pol}.{name}")
    return float(open(f).read()) if os.path.exists(f) else None
print(f"{'P':>3} {'policy':10} {'method':8} {'steps':>5} {'tokens':>8} {'val at end':>10} {'drift':>5} "
      f"{'sim step ms':>11} {'ms to target':>12} {'fastest sync / it':>17}")
for P in depths:
    sync = load(f"train.{P}.sync.json")
    for pol in pols:
        rows = []
        for name in ("1f1b", "zb-h1", "chimera", "paci", "amdp-2", "amdp-4"):
            step_s = step_time(P, pol, name)
            run = sync if name in ("1f1b", "zb-h1", "chimera") else load(f"train.{P}.{pol}.{name}.json")
            if step_s is None or run is None:
                continue
            t = run["target"]
            steps, tokens = (t["step"], t["tokens"]) if t["reached"] else (None, None)
            end = ([s["val_loss"] for s in run["steps"] if s.get("val_loss", -1) >= 0] or [float("nan")])[-1]
            drift = max((max(s.get("version_drift_max") or [0]) for s in run["steps"]), default=0)
            rows.append((name, steps, tokens, end, drift, step_s, steps * step_s if steps else None))
        best = min((r[6] for r in rows[:3] if r[6]), default=None)
        for name, steps, tokens, end, drift, step_s, tt in rows:
            gain = f"{best / tt:.2f}" if best and tt else "-"
            print(f"{P:3d} {pol:10} {name:8} {steps if steps else 'never':>5} {int(tokens) if tokens else '-':>8} "
                  f"{end:10.4f} {drift:5d} {step_s * 1e3:11.2f} {('%.1f' % (tt * 1e3)) if tt else '-':>12} {gain:>17}")
print("(synchronous rows: the steps and losses of one 1F1B run; time to target = steps x simulated step time)")
PY
