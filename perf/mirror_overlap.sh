#!/bin/bash
# The mirror reduction beside the graph against after it (docs/mpi.md,
# "Bidirectional hints: the mirror reduction"): the same `mpirun -np 2 rrfp train` with
# --mirror-reduce after-graph and overlap, alternating run by run, for
# Chimera on 2 ranks and for 2 data-parallel replicas of 2 stages on 2
# ranks x 2 devices; per round the ratio of median step times (first step
# left out), after-graph / overlap (> 1: overlapping is faster).
# Usage: [MODEL_ARGS="--d-model 128"] perf/mirror_overlap.sh [build dir] [rounds] [steps]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
STEPS=${3:-10}
RRFP=$BUILD/rrfp
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
MODEL_ARGS=${MODEL_ARGS:-}
declare -A CONFIG=(
  [chimera]="--stages 2 --hint chimera --microbatches 4"
  [dp2xpp2]="--stages 2 --hint 1f1b --microbatches 4 --data-parallel 2 --devices-per-rank 2"
)
echo "date: $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), $STEPS steps, $ROUNDS rounds, gpt-tiny $MODEL_ARGS"
for r in $(seq 1 "$ROUNDS"); do
  for c in chimera dp2xpp2; do
    for m in after-graph overlap; do
      mpirun --oversubscribe -np 2 "$RRFP" train --quiet ${CONFIG[$c]} --steps "$STEPS" --seed "$r" $MODEL_ARGS \
        --mirror-reduce $m --json "$OUT/$c-$m-$r.json"
    done
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def run(c, m, r):
    return json.load(open(f"{out}/{c}-{m}-{r}.json"))["steps"]
med = lambda c, m, r: statistics.median(s["step_s"] for s in run(c, m, r)[1:])
print(f"{'config':9} {'after-graph ms':>15} {'overlap ms':>11} {'after / overlap':>16}")
for c in ("chimera", "dp2xpp2"):
    a = [med(c, "after-graph", r) for r in range(1, rounds + 1)]
    b = [med(c, "overlap", r) for r in range(1, rounds + 1)]
    ratio = sorted(x / y for x, y in zip(a, b))
    print(f"{c:9} {1e3 * statistics.median(a):15.2f} {1e3 * statistics.median(b):11.2f} "
          f"{statistics.median(ratio):8.3f} [{ratio[0]:.3f}, {ratio[-1]:.3f}]")
PY
rm -rf "$OUT"
