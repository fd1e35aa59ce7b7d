#!/bin/bash
# Chimera across ranks (docs/mpi.md, "the mirror reduction") against the
# one-directional hints, real gpt-tiny training, 2 stages on 2 ranks (one
# core each): median step time of each (hint, policy), runs interleaved
# round by round so that this VM's speed changes hit all alike, and each
# ratio taken against 1F1B under rrfp-fixed within its round.
# Usage: [MODEL_ARGS="--d-model 128"] perf/chimera_mpi.sh [build dir] [rounds] [microbatches] [steps]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
M=${3:-4}
STEPS=${4:-8}
RRFP=$BUILD/rrfp
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
MODEL_ARGS=${MODEL_ARGS:-}
echo "date: $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), M=$M, $STEPS steps, $ROUNDS rounds, model: gpt-tiny $MODEL_ARGS"
for r in $(seq 1 "$ROUNDS"); do
  for hint in 1f1b zb-h1 chimera; do
    for p in rrfp-fixed rrfp; do
      mpirun --oversubscribe -np 2 -x STARPU_SCHED=$p "$RRFP" train --quiet --stages 2 --hint $hint \
        --microbatches "$M" --steps "$STEPS" --seed "$r" $MODEL_ARGS --json "$OUT/$hint-$p-$r.json"
    done
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def step(h, p, r):  # median step time, the first step (StarPU start-up) left out
    s = json.load(open(f"{out}/{h}-{p}-{r}.json"))["steps"][1:]
    return statistics.median(x["step_s"] for x in s)
print(f"{'hint':8} {'policy':11} {'step ms':>8} {'1f1b-fixed / this':>18}")
for h in ("1f1b", "zb-h1", "chimera"):
    for p in ("rrfp-fixed", "rrfp"):
        t = [step(h, p, r) for r in range(1, rounds + 1)]
        ratio = [step("1f1b", "rrfp-fixed", r) / step(h, p, r) for r in range(1, rounds + 1)]
        print(f"{h:8} {p:11} {1e3 * statistics.median(t):8.2f} {statistics.median(ratio):10.3f} "
              f"[{min(ratio):.3f}, {max(ratio):.3f}]")
PY
rm -rf "$OUT"
