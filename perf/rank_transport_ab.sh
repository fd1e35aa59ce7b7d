#!/bin/bash
# The two rank transports side by side (docs/mpi.md, "Rank transports"):
# the same `mpirun -np R rrfp train|bench` with --rank-transport starpu-mpi
# (A) and ordered (B), alternating run by run; per round the ratio A / B of
# the median step time (train, first step left out) or of the median
# makespan (bench). Above 1: the ordered channels are faster.
# Usage: perf/rank_transport_ab.sh train|bench RANKS ROUNDS [arguments...]
set -euo pipefail
CMD=$1 NP=$2 ROUNDS=$3
shift 3
ARGS=$*
RRFP=${RRFP:-$(dirname "$0")/../build/rrfp}
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
echo "date: $(date -u '+%F %H:%M UTC'), $ROUNDS rounds, mpirun -np $NP rrfp $CMD $ARGS"
for r in $(seq 1 "$ROUNDS"); do
  for v in A B; do
    t=starpu-mpi; [ $v = B ] && t=ordered
    quiet=--quiet; [ "$CMD" = bench ] && quiet="--seed $r"
    mpirun --oversubscribe -np "$NP" "$RRFP" "$CMD" $quiet $ARGS --rank-transport $t --json "$OUT/$v-$r.json" >/dev/null
  done
done
python3 - "$OUT" "$ROUNDS" "$CMD" <<'PY'
import json, statistics, sys
out, rounds, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def med(v, r):
    j = json.load(open(f"{out}/{v}-{r}.json"))
    return statistics.median(s["step_s"] for s in j["steps"][1:]) if cmd == "train" else statistics.median(j["makespans_s"])
a = [med("A", r) for r in range(1, rounds + 1)]
b = [med("B", r) for r in range(1, rounds + 1)]
ratio = sorted(x / y for x, y in zip(a, b))
what = "step" if cmd == "train" else "makespan"
print(f"starpu-mpi median {what} {1e3 * statistics.median(a):.1f} ms, ordered {1e3 * statistics.median(b):.1f} ms")
print(f"starpu-mpi / ordered per round: median {statistics.median(ratio):.3f} [{ratio[0]:.3f}, {ratio[-1]:.3f}]")
PY
rm -rf "$OUT"
