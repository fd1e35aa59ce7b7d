#!/bin/bash
# Two rrfp builds side by side on multi-rank training: the same
# `mpirun -np 2 rrfp train` with each binary, alternating run by run, and
# the per-round ratio of their median step times (first step left out).
# For changes to the multi-rank path (e.g. StarPU-MPI kept open between
# steps: A = the build before, B = after).
# Usage: perf/mpi_step_ab.sh RRFP_A RRFP_B [rounds] [train arguments...]
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-7}
shift 3 || shift $#
ARGS=${*:---stages 2 --hint 1f1b --microbatches 4 --steps 10}
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
echo "date: $(date -u '+%F %H:%M UTC'), $ROUNDS rounds, mpirun -np 2 rrfp train $ARGS"
for r in $(seq 1 "$ROUNDS"); do
  for v in A B; do
    bin=$A; [ $v = B ] && bin=$B
    mpirun --oversubscribe -np 2 "$bin" train --quiet $ARGS --seed "$r" --json "$OUT/$v-$r.json"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
med = lambda v, r: statistics.median(s["step_s"] for s in json.load(open(f"{out}/{v}-{r}.json"))["steps"][1:])
a = [med("A", r) for r in range(1, rounds + 1)]
b = [med("B", r) for r in range(1, rounds + 1)]
ratio = sorted(x / y for x, y in zip(a, b))
print(f"A median step {1e3 * statistics.median(a):.1f} ms, B {1e3 * statistics.median(b):.1f} ms")
print(f"A / B per round: median {statistics.median(ratio):.3f} [{ratio[0]:.3f}, {ratio[-1]:.3f}]")
PY
rm -rf "$OUT"
