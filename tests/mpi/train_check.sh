#!/bin/sh
# `mpirun -np R rrfp train --deterministic` gives the same losses, bit for
# bit, as the same configuration in one process.
# MPI_ARGS, when given, go to the multi-rank run only (e.g. link delays
# that reorder the messages: the losses must not change); ARGS go to both
# (e.g. --eval-every: the validation losses must be equal too).
# Usage: train_check.sh MPIRUN RRFP RANKS STAGES HINT POLICY [STEPS] [TENSOR_PARALLEL] [MODEL] [MPI_ARGS] [ARGS]
mpirun=$1 rrfp=$2 np=$3 stages=$4 hint=$5 policy=$6 steps=${7:-10} tp=${8:-1} model=${9:-gpt-tiny} mpi_args=${10:-}
both_args=${11:-}
dir=$(mktemp -d)
dp=$(printf '%s\n' "$both_args" | sed -n 's/.*--data-parallel \([0-9]*\).*/\1/p')
k=$((stages * tp * ${dp:-1} / np))  # every replica's devices
args="train --quiet --stages $stages --hint $hint --steps $steps --microbatches 4 --deterministic --tensor-parallel $tp --model $model $both_args"
STARPU_SCHED=$policy "$rrfp" $args --json "$dir/one.json" || exit 1
"$mpirun" --oversubscribe -np "$np" -x STARPU_SCHED="$policy" "$rrfp" $args $mpi_args --devices-per-rank "$k" \
  --json "$dir/mpi.json" || exit 1
python3 - "$dir" "$both_args" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
loss = lambda f: [(s["loss"], s.get("val_loss"), s.get("grad_norm"), s.get("stage_grad_norm"))
                  for s in json.load(open(f"{d}/{f}"))["steps"]]
one, mpi = loss("one.json"), loss("mpi.json")
print("one process:", one)
print("multi-rank: ", mpi)
assert len(one) == len(mpi) and one == mpi, "losses differ"
args = sys.argv[2].split()
if "--clip-grad" in args:  # a clip that never bites checks nothing
    limit = float(args[args.index("--clip-grad") + 1])
    norms = [n if n is not None else max(sn) for _, _, n, sn in one]  # --async: each stage's own
    assert max(norms) > limit, f"no step's norm is above --clip-grad {limit}"
print("OK: bitwise equal over", len(one), "steps")
PY
rm -rf "$dir"
