#!/bin/bash
# Issue 14: PACI's time to target at several targets, learning rates and
# step sizes (perf/RESULTS.md). perf/async_depth.sh measures one target
# (2.4, early in training); this one asks how the answer moves as the
# target is set lower, i.e. as training runs longer.
#   1. Loss curves, measured: for each P, lr and M, one synchronous 1F1B run
#      (every synchronous schedule makes the same updates) and one PACI run
#      (--accumulate M, --window WINDOW) of gpt-tiny (--layers max(4, P)),
#      STEPS steps, validation every EVAL_EVERY steps; no --target-loss, so
#      both curves run to the end. The step at which each curve first reaches
#      each target is read off them (rounded up to EVAL_EVERY).
#   2. Step time, simulated by perf/async_sim_step.sh as in perf/async_depth.sh
#      (lognormal(0.3), 0.2 ms update per stage and step, mean over SEEDS
#      seeds) under POLICY: 1F1B, ZB-H1 and (even P) Chimera flushed every
#      step, PACI in WINDOW-step graphs.
#   3. Time to target = steps x simulated step; "sync / paci" is the fastest
#      synchronous schedule's time over PACI's (> 1: PACI is sooner).
# TRAIN_ARGS: more `rrfp train` flags for both runs, split at spaces (no
# spaces inside one), e.g. a learning-rate schedule ("--lr-warmup 20
# --lr-decay cosine": the rates above are then peaks) or "--data FILE"; the
# flags this script sets itself are refused there.
# PNG=PREFIX draws, per P and M, validation loss against simulated time
# (PREFIX.P<P>.M<M>.png: synchronous solid, PACI dashed, a colour per lr).
# Usage: [POLICY=rrfp-wait] [SEEDS=5] [WINDOW=30] [EVAL_EVERY=2] [TRAIN_ARGS=...] [PNG=PREFIX]
#        perf/async_targets.sh [build dir] [stage counts] [lrs] [Ms] [steps] [targets]
set -euo pipefail
BUILD=${1:-build}
DEPTHS=${2:-4,8}
LRS=${3:-1e-3,2.5e-4}
MS=${4:-4,8}
STEPS=${5:-400}
TARGETS=${6:-2.4,2.0,1.6,1.2}
POL=${POLICY:-rrfp-wait}
SEEDS=${SEEDS:-5}
W=${WINDOW:-30}
E=${EVAL_EVERY:-2}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
CHART=$BUILD/perf/loss_curves
if [ -n "${PNG:-}" ]; then  # checked now: a failed chart would come after the training, and lose it
  [ -x "$CHART" ] || { echo "error: PNG needs $CHART (cmake --build $BUILD)" >&2; exit 2; }
  [ -d "$(dirname "$PNG")" ] && [ -w "$(dirname "$PNG")" ] || { echo "error: PNG: cannot write into '$(dirname "$PNG")'" >&2; exit 2; }
fi
read -r -a EXTRA <<<"${TRAIN_ARGS:-}"
for a in ${EXTRA[@]+"${EXTRA[@]}"}; do
  case ${a%%=*} in
    --stages | --layers | --steps | --lr | --eval-every | --quiet | --hint | --microbatches | --async | --accumulate | \
      --window | --json | --fused | --split | --target-loss)
      echo "error: TRAIN_ARGS: $a is set by this script (the table would not say what ran)" >&2
      exit 2
      ;;
  esac
done
# Checked before hours of training, not by the table's reader after them.
python3 - "$TARGETS" "$SEEDS" "$E" "$STEPS" "$W" <<'PY' || exit 2
import sys
targets, counts = sys.argv[1], dict(zip(["SEEDS", "EVAL_EVERY", "steps", "WINDOW"], sys.argv[2:]))
try:
    assert all(float(t) > 0 for t in targets.split(","))
except (ValueError, AssertionError):
    sys.exit(f"error: targets must be positive losses separated by commas, not '{targets}'")
for name, v in counts.items():
    if not v.isdigit() or int(v) < 1:
        sys.exit(f"error: {name} must be a whole number >= 1, not '{v}'")
PY
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "targets $TARGETS within $STEPS steps, P in $DEPTHS, lr in $LRS, M in $MS, policy $POL, --window $W, --eval-every $E, $SEEDS simulated seeds${TRAIN_ARGS:+, train flags: $TRAIN_ARGS}"
IFS=, read -r -a PS <<<"$DEPTHS"
IFS=, read -r -a LS <<<"$LRS"
IFS=, read -r -a MM <<<"$MS"
STEP=$(dirname "$0")/async_sim_step.sh
for P in "${PS[@]}"; do
  L=$((P > 4 ? P : 4))
  for M in "${MM[@]}"; do
    for lr in "${LS[@]}"; do
      T=(train --stages "$P" --layers "$L" --steps "$STEPS" --lr "$lr" --eval-every "$E" --quiet ${EXTRA[@]+"${EXTRA[@]}"})
      STARPU_SCHED=$POL "$R" "${T[@]}" --hint 1f1b --fused --microbatches "$M" --json "$OUT/train.$P.$M.$lr.sync.json"
      STARPU_SCHED=$POL "$R" "${T[@]}" --async paci --accumulate "$M" --window "$W" --json "$OUT/train.$P.$M.$lr.paci.json"
    done
    sync=(1f1b zb-h1)
    ((P % 2 == 0)) && sync+=(chimera)
    for name in paci "${sync[@]}"; do
      bash "$STEP" "$R" "$P" "$M" "$W" "$POL" "$SEEDS" "$name" >"$OUT/sim.$P.$M.$name"
    done
    echo "P = $P, M = $M done" >&2
  done
done
python3 - "$OUT" "$DEPTHS" "$LRS" "$MS" "$TARGETS" "$STEPS" "$CHART" "${PNG:-}" <<'PY'
import json, os, subprocess, sys
out, steps = sys.argv[1], int(sys.argv[6])
depths, lrs, ms = sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4].split(",")
targets = [float(t) for t in sys.argv[5].split(",")]
load = lambda name: json.load(open(os.path.join(out, name)))
def step_ms(P, M, name):  # perf/async_sim_step.sh's mean over the seeds
    return 1e3 * float(open(os.path.join(out, f"sim.{P}.{M}.{name}")).read())
def best_sync(P, M):  # the fastest of the synchronous schedules simulated above
    names = [f[len(f"sim.{P}.{M}."):] for f in os.listdir(out) if f.startswith(f"sim.{P}.{M}.")]
    return min((n for n in names if n != "paci"), key=lambda h: step_ms(P, M, h))
def first_step(run, target):  # the first evaluated step at or below the target
    for i, s in enumerate(run["steps"]):
        if s.get("val_loss", -1) >= 0 and s["val_loss"] <= target:
            return s.get("step", i + 1)
    return None
print(f"{'P':>3} {'M':>2} {'lr':>7} {'target':>6} {'sync steps':>10} {'paci steps':>10} {'sync ms':>9} {'paci ms':>9} {'sync / paci':>11}")
for P in depths:
    for M in ms:
        best_name = best_sync(P, M)
        best, paci = step_ms(P, M, best_name), step_ms(P, M, "paci")
        print(f"# P = {P}, M = {M}: fastest synchronous step {best_name} {best:.2f} ms, PACI {paci:.2f} ms (step ratio {best / paci:.2f})")
        for lr in lrs:
            sync_run, paci_run = load(f"train.{P}.{M}.{lr}.sync.json"), load(f"train.{P}.{M}.{lr}.paci.json")
            for t in targets:
                a, b = first_step(sync_run, t), first_step(paci_run, t)
                ta, tb = (a * best if a else None), (b * paci if b else None)
                if ta and tb:
                    ratio = f"{ta / tb:.2f}"
                else:  # only PACI reached it: synchronous training needs more than the run's steps
                    ratio = f">{steps * best / tb:.2f}" if tb else "-"
                f = lambda x: str(x) if x else "never"
                g = lambda x: f"{x:.0f}" if x else "-"
                print(f"{P:>3} {M:>2} {lr:>7} {t:6.2f} {f(a):>10} {f(b):>10} {g(ta):>9} {g(tb):>9} {ratio:>11}")
print("(steps rounded up to the evaluation period; a curve that never reaches a target within the run shows 'never'; "
      "'>' where only PACI's does)")
chart, png = sys.argv[7], sys.argv[8]
for P in depths if png else []:
    for M in ms:
        best_name = best_sync(P, M)
        runs = []
        for lr in lrs:
            runs.append(f"sync ({best_name}) lr {lr}={step_ms(P, M, best_name)}={out}/train.{P}.{M}.{lr}.sync.json")
            runs.append(f"paci lr {lr}={step_ms(P, M, 'paci')}={out}/train.{P}.{M}.{lr}.paci.json:dashed")
        path = f"{png}.P{P}.M{M}.png"
        colors = ",".join(str(i // 2) for i in range(len(runs)))
        subprocess.run([chart, "--png", path, "--colors", colors, "--title",
                        f"gpt-tiny, P = {P}, M = {M}: validation loss against simulated time"] + runs, check=True)
        print(f"chart: {path}")
PY
