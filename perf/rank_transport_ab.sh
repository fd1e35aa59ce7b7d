#!/bin/bash
# The rank transports side by side (docs/mpi.md, "Rank transports" and
# "StarPU-MPI's progress thread"): the same `mpirun -np R rrfp train|bench`
# with StarPU-MPI as the rrfp session sets it up ("paused": its progress
# thread pauses between polls on ranks without a spare core), with that
# thread spinning as StarPU's own (STARPU_MPI_POLL_BACKOFF_MAX_US=0), and
# with --rank-transport ordered, alternating run by run. Per round the
# ratios spin / paused and ordered / paused of the median step time (train,
# first step left out) or of the median makespan (bench, seed = round).
# Above 1: StarPU-MPI with the paused thread is faster.
# Usage: perf/rank_transport_ab.sh train|bench RANKS ROUNDS [arguments...]
set -euo pipefail
CMD=$1 NP=$2 ROUNDS=$3
shift 3
ARGS=$*
RRFP=${RRFP:-$(dirname "$0")/../build/rrfp}
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset STARPU_MPI_POLL_BACKOFF_MAX_US
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "date: $(date -u '+%F %H:%M UTC'), $ROUNDS rounds, mpirun -np $NP rrfp $CMD $ARGS"
for r in $(seq 1 "$ROUNDS"); do
  for v in spin paused ordered; do
    extra=() env=()
    [ $v = spin ] && env=(-x STARPU_MPI_POLL_BACKOFF_MAX_US=0)
    [ $v = ordered ] && extra=(--rank-transport ordered)
    quiet=--quiet; [ "$CMD" = bench ] && quiet="--seed $r"
    mpirun --oversubscribe -np "$NP" "${env[@]}" "$RRFP" "$CMD" $quiet $ARGS "${extra[@]}" --json "$OUT/$v-$r.json" >/dev/null
  done
done
python3 - "$OUT" "$ROUNDS" "$CMD" <<'PY'
import json, statistics, sys
out, rounds, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def med(v, r):
    j = json.load(open(f"{out}/{v}-{r}.json"))
    return statistics.median(s["step_s"] for s in j["steps"][1:]) if cmd == "train" else statistics.median(j["makespans_s"])
t = {v: [med(v, r) for r in range(1, rounds + 1)] for v in ("spin", "paused", "ordered")}
what = "step" if cmd == "train" else "makespan"
print("median " + what + ": " + ", ".join(f"{v} {1e3 * statistics.median(x):.1f} ms" for v, x in t.items()))
for v in ("spin", "ordered"):
    ratio = sorted(a / b for a, b in zip(t[v], t["paused"]))
    print(f"{v} / paused per round: median {statistics.median(ratio):.3f} [{ratio[0]:.3f}, {ratio[-1]:.3f}]")
PY
