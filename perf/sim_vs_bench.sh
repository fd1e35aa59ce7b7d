#!/usr/bin/env bash
# Prediction check (issue 6): simulated vs measured makespan, same seed, same
# cost model, for rrfp and rrfp-fixed, side by side in one run.
# Usage: perf/sim_vs_bench.sh [path/to/rrfp] [seeds]
set -euo pipefail
RRFP=${1:-build/rrfp}
SEEDS=${2:-5}
ARGS=${ARGS:---hint bfw --stages 4 --microbatches 16 --unit-ms 5 --variability lognormal:0.6}
OUT=$(mktemp -d)
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
for s in $(seq 1 "$SEEDS"); do
  for p in rrfp rrfp-fixed; do
    STARPU_SCHED=$p "$RRFP" bench $ARGS --seed "$s" --json "$OUT/b-$p-$s.json" > /dev/null
    "$RRFP" sim $ARGS --seed "$s" --policy "$p" --json "$OUT/s-$p-$s.json" > /dev/null
  done
done
python3 - "$OUT" "$SEEDS" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
print(f"{'policy':<11} {'seed':>4} {'measured s':>11} {'simulated s':>12} {'sim/measured':>13}")
worst = 0
for p in ("rrfp", "rrfp-fixed"):
    for s in range(1, n + 1):
        b = json.load(open(f"{d}/b-{p}-{s}.json"))["makespan_s"]
        m = json.load(open(f"{d}/s-{p}-{s}.json"))["makespan_s"]
        worst = max(worst, abs(m / b - 1))
        print(f"{p:<11} {s:>4} {b:>11.4f} {m:>12.4f} {m / b:>13.3f}")
print(f"largest deviation: {worst * 100:.1f}% (target <= 5%)")
PY
