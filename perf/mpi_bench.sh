#!/bin/bash
# Multi-rank bench side by side (issue 5): the same 4 devices as 2 ranks x 2
# devices under mpirun (StarPU-MPI) and in one process, under rrfp and
# rrfp-fixed, with link delays and jitter. Runs are interleaved so machine
# load hits all four alike; medians over REPS.
# Prints rrfp-fixed/rrfp makespan ratio per setting and the StarPU-MPI
# overhead (2x2 ranks / one process, target <= 1.1) per policy.
# Usage: perf/mpi_bench.sh [path/to/rrfp] [reps]
set -euo pipefail
RRFP=${1:-build/rrfp}
REPS=${2:-5}
COMMON=${RRFP_MPI_BENCH_ARGS:-"--hint bfw --stages 4 --microbatches 16 --unit-ms 10 --variability lognormal:0.6 --link-ms 2 --link-jitter 0.5"}
source "$(dirname "$0")/interleaved_mpi_runs.sh"
interleaved_mpi_runs 2 --devices-per-rank 2
python3 - "$OUT" "$REPS" "$COMMON" <<'PY'
import json, statistics, sys
d, reps, common = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def ms(kind, p):
    return [json.load(open(f"{d}/{kind}-{p}-{r}.json"))["makespan_s"] for r in range(1, reps + 1)]
med = {(k, p): statistics.median(ms(k, p)) for k in ("one", "mpi") for p in ("rrfp", "rrfp-fixed")}
print(f"rrfp bench {common}, seeds 1..{reps}, median makespan (s)")
print(f"{'':28}{'rrfp':>10}{'rrfp-fixed':>12}{'fixed/rrfp':>12}")
for k, name in (("one", "1 process x 4 devices"), ("mpi", "2 ranks x 2 devices (MPI)")):
    a, b = med[(k, "rrfp")], med[(k, "rrfp-fixed")]
    print(f"{name:28}{a:10.4f}{b:12.4f}{b / a:12.3f}")
for p in ("rrfp", "rrfp-fixed"):
    print(f"StarPU-MPI overhead {p:>10}: {med[('mpi', p)] / med[('one', p)]:.3f}  (target <= 1.1)")
PY
