#!/bin/sh
# A tuned plan trained under mpirun, one device per rank, gives the losses
# of the same plan in one process, bit for bit. By default a bidirectional
# plan (rrfp tune --placements bidirectional: Chimera on an uneven
# partition); TUNE_FLAGS "--data-parallel 2": two replicas of one device.
# RUN_FLAGS go to both trainings (--tensor-parallel 2 with RANKS 4: a
# member per rank, each reducing with its own copies). PROFILE_FLAGS go to
# rrfp profile ("--tensor-parallel 2 --devices 1": a plan of groups of 2,
# which the trainings take from the plan).
# Usage: train_plan_check.sh MPIRUN RRFP POLICY [TUNE_FLAGS] [RANKS] [RUN_FLAGS] [PROFILE_FLAGS]
mpirun=$1 rrfp=$2 policy=$3 tune_flags=${4:---placements bidirectional} np=${5:-2} run_flags=${6:-}
profile_flags=${7:-}
dir=$(mktemp -d)
model="--layers 4 --d-model 16 --heads 2 --seq-len 16 --micro-batch-size 2 --mlp-widths 0,0,2048,2048"
"$rrfp" profile $model $profile_flags --repetitions 2 -o "$dir/profile.json" >/dev/null || exit 1
"$rrfp" tune --profile "$dir/profile.json" --devices 2 --microbatches 4 $tune_flags \
  -o "$dir/plan.json" >/dev/null || exit 1
args="train $model --plan $dir/plan.json --steps 5 --deterministic --quiet $run_flags"
STARPU_SCHED=$policy "$rrfp" $args --json "$dir/one.json" || exit 1
"$mpirun" --oversubscribe -np "$np" -x STARPU_SCHED="$policy" "$rrfp" $args --json "$dir/mpi.json" || exit 1
python3 - "$dir" "$tune_flags" "$run_flags" "$profile_flags" <<'PY' || exit 1
import json, sys
d, flags, run_flags, profile_flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
plan = json.load(open(f"{d}/plan.json"))
if "bidirectional" in flags:
    assert plan["placement"] == "bidirectional", plan["placement"]
if "--data-parallel 2" in flags:
    assert plan["data_parallel"] == 2 and plan["devices"] == 1, (plan["data_parallel"], plan["devices"])
    assert json.load(open(f"{d}/mpi.json"))["data_parallel"] == 2
if "--tensor-parallel 2" in profile_flags:
    assert plan["tensor_parallel"] == 2 and plan["devices"] == 1, (plan["tensor_parallel"], plan["devices"])
if "--tensor-parallel 2" in run_flags + profile_flags:
    assert json.load(open(f"{d}/mpi.json"))["tensor_parallel"] == 2
loss = lambda f: [s["loss"] for s in json.load(open(f"{d}/{f}"))["steps"]]
one, mpi = loss("one.json"), loss("mpi.json")
print("partition:", plan["partition"], "one process:", one, "multi-rank:", mpi)
assert one == mpi, "losses differ"
print("OK: bitwise equal over", len(one), "steps")
PY
rm -rf "$dir"
