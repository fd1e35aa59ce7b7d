#!/bin/bash
# Tensor parallelism side by side: 2 devices x 2 members (4 workers), in
# one process and as 4 ranks (decisions and all-reduces by StarPU-MPI
# message), under rrfp and rrfp-fixed, interleaved; medians over REPS
# seeds. Prints rrfp-fixed/rrfp per setting: does readiness-first keep its
# gain when every member must follow one leader's decisions?
# Usage: perf/tp_bench.sh [path/to/rrfp] [reps]
set -euo pipefail
RRFP=${1:-build/rrfp}
REPS=${2:-5}
COMMON=${RRFP_TP_BENCH_ARGS:-"--hint bfw --stages 2 --microbatches 16 --unit-ms 10 --variability lognormal:0.6 --tensor-parallel 2"}
source "$(dirname "$0")/interleaved_mpi_runs.sh"
interleaved_mpi_runs 4
python3 - "$OUT" "$REPS" "$COMMON" <<'PY'
import json, statistics, sys
d, reps, common = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def get(kind, p, key):
    return [json.load(open(f"{d}/{kind}-{p}-{r}.json"))[key] for r in range(1, reps + 1)]
print(f"rrfp bench {common}, seeds 1..{reps}, median makespan (s)")
print(f"{'':34}{'rrfp':>10}{'rrfp-fixed':>12}{'fixed/rrfp':>12}{'lower bound':>13}")
for k, name in (("one", "1 process, 2 x 2 workers"), ("mpi", "4 ranks, a member per rank")):
    a, b = statistics.median(get(k, "rrfp", "makespan_s")), statistics.median(get(k, "rrfp-fixed", "makespan_s"))
    lb = statistics.median(get(k, "rrfp", "lower_bound_s"))
    same = all(x == 1 for x in get(k, "rrfp", "collective_orders_identical") + get(k, "rrfp-fixed", "collective_orders_identical"))
    print(f"{name:34}{a:10.4f}{b:12.4f}{b / a:12.3f}{lb:13.4f}   collective orders identical: {same}")
PY
