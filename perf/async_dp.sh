#!/bin/bash
# PACI with data-parallel replicas against synchronous data parallelism
# (docs/async.md, "PACI with data-parallel replicas"), really trained in one
# process: D replicas of a P-stage gpt-tiny pipeline, A microbatches per
# replica and step. Rounds interleave the configurations (these VMs change
# speed within seconds); each run trains to a validation loss (--target-loss,
# --eval-every) and reports its time and steps to it, its throughput, its
# largest drift and its activation peak.
#   sync 1f1b:  --data-parallel D --hint 1f1b --fused (PACI's schedule, flushed)
#   sync zb-h1: --data-parallel D --hint zb-h1 --split
#   paci:       --async paci --accumulate A --window WINDOW --data-parallel D
# Usage: [WINDOW=10] [EVAL_EVERY=5] [LR=1e-3] perf/async_dp.sh [build dir] [rounds] [P] [D] [A] [target] [max steps]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
P=${3:-2}
D=${4:-2}
A=${5:-4}
TARGET=${6:-2.0}
STEPS=${7:-400}
W=${WINDOW:-10}
E=${EVAL_EVERY:-5}
LR=${LR:-1e-3}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
common=(--stages "$P" --data-parallel "$D" --steps "$STEPS" --eval-every "$E" --target-loss "$TARGET" --lr "$LR" --quiet)
echo "# P=$P stages x D=$D replicas ($((P * D)) workers on $(nproc) cores), A=$A microbatches per replica and step,"
echo "# target validation loss $TARGET (evaluated every $E steps), lr $LR, PACI window $W steps, $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
  "$R" train "${common[@]}" --hint 1f1b --fused --microbatches "$A" --json "$OUT/sync1f1b.$r.json" >/dev/null
  "$R" train "${common[@]}" --hint zb-h1 --split --microbatches "$A" --json "$OUT/synczbh1.$r.json" >/dev/null
  "$R" train "${common[@]}" --async paci --accumulate "$A" --window "$W" --json "$OUT/paci.$r.json" >/dev/null
  echo "round $r done" >&2
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = {"sync1f1b": "sync 1f1b", "synczbh1": "sync zb-h1", "paci": "paci"}
rows = {k: [] for k in names}
for k in names:
    for r in range(1, rounds + 1):
        j = json.load(open(f"{out}/{k}.{r}.json"))
        t = j["target"]
        steps = j["steps"]
        secs = sum(s["step_s"] for s in steps)
        toks = sum(s["tokens"] for s in steps)
        drift = max((max(s.get("version_drift_max", [0]) or [0]) for s in steps), default=0)
        peak = max(s["peak_activation_bytes"] for s in steps) / 2**20
        rows[k].append((t["seconds"] if t["reached"] else None, t["step"], toks / secs, drift, peak))
print(f"{'config':<11} {'round':>5} {'to target s':>11} {'steps':>5} {'tok/s':>8} {'drift':>5} {'peak MiB':>8}")
for k, name in names.items():
    for r, (s, st, tps, dr, pk) in enumerate(rows[k], 1):
        print(f"{name:<11} {r:>5} {('%.3f' % s) if s is not None else 'never':>11} {st if st is not None else '-':>5} "
              f"{tps:>8.0f} {dr:>5} {pk:>8.2f}")
def med(k, i):
    v = [x[i] for x in rows[k] if x[i] is not None]
    return statistics.median(v) if v else None
print("per round, fastest synchronous time to target / PACI's (> 1: PACI sooner):",
      " ".join("%.2f" % (min(rows['sync1f1b'][r][0], rows['synczbh1'][r][0]) / rows['paci'][r][0])
               if None not in (rows['sync1f1b'][r][0], rows['synczbh1'][r][0], rows['paci'][r][0]) else "n/a"
               for r in range(rounds)))
print("per round, PACI tok/s / sync 1f1b tok/s:",
      " ".join("%.2f" % (rows['paci'][r][2] / rows['sync1f1b'][r][2]) for r in range(rounds)))
for k, name in names.items():
    s = med(k, 0)
    print(f"median {name}: {('%.3f s' % s) if s is not None else 'never'} to target, "
          f"{med(k, 1)} steps, {med(k, 2):.0f} tok/s")
PY
