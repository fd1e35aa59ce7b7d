#!/bin/sh
# `mpirun rrfp train --async paci` (docs/async.md, "Under mpirun"): every
# stage's drift stays within PACI's bound on every step, the validation
# loss is evaluated where asked (inside a window too: every 2 steps of 3), rank 0's trace holds every pass of every
# rank, and a run stopped at step 3 and resumed continues exactly. With
# --deterministic every forward runs on its version of 1F1B's order, so
# under every policy the losses and validation losses equal the
# one-process run's bit for bit.
# Usage: train_async_check.sh MPIRUN RRFP RANKS STAGES POLICY
mpirun=$1 rrfp=$2 np=$3 stages=$4 policy=$5
dir=$(mktemp -d)
k=$((stages / np))
args="train --quiet --stages $stages --async paci --accumulate 4 --window 3 --eval-every 2 --deterministic"
run_mpi() { "$mpirun" --oversubscribe -np "$np" -x STARPU_SCHED="$policy" "$rrfp" $args --devices-per-rank "$k" "$@"; }
run_mpi --steps 6 --json "$dir/mpi.json" --trace "$dir/trace.json" || exit 1
run_mpi --steps 3 --checkpoint "$dir/ck" || exit 1
run_mpi --steps 6 --checkpoint "$dir/ck" --resume --json "$dir/resumed.json" || exit 1
STARPU_SCHED=$policy "$rrfp" $args --steps 6 --json "$dir/one.json" || exit 1
python3 - "$dir" "$stages" "$policy" <<'PY' || exit 1
import json, math, os, sys
d, S, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
steps = lambda f: json.load(open(f"{d}/{f}"))["steps"]
mpi = steps("mpi.json")
reached = 0
for st in mpi:
    assert math.isfinite(st["loss"]), st
    for s in range(S):
        assert st["version_drift_max"][s] <= st["version_drift_bound"][s], (st["step"], s, st["version_drift_max"])
        reached = max(reached, st["version_drift_max"][s])
    assert ("val_loss" in st) == (st["step"] % 2 == 0), st["step"]
assert reached >= 1, "no backward crossed an update: the run was not asynchronous"
loss = lambda f: [(st["loss"], st.get("val_loss")) for st in steps(f)]
one = loss("one.json")
print("one process:", one); print("multi-rank: ", loss("mpi.json"))
assert loss("mpi.json") == one, "multi-rank losses differ from one process"
assert loss("resumed.json") == one[3:], "the resumed multi-rank run differs"
ev = [e for e in json.load(open(f"{d}/trace.json"))["traceEvents"] if e.get("ph") == "X"]
assert len(ev) == 6 * S * 4 * 2, f"trace has {len(ev)} slices, want {6 * S * 4 * 2}"  # F and BW
print("OK: drift within the bound (reached", reached, "), validation every 2 steps (step 2 inside a window), every pass traced")
PY
rm -rf "$dir"
