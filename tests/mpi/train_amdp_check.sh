#!/bin/sh
# `mpirun rrfp train --async amdp` (docs/async.md, "AMDP under mpirun"): a
# stage's mirror copies on several ranks. Every stage's drift stays within
# one update and reaches it, validation runs where asked (inside a window
# too: every 2 steps of 3), rank 0's trace holds every pass. With windows of one step (each drains: no update
# inside) the losses equal one process's up to the order of the mirror
# sums, with three-step windows under --deterministic two runs repeat bit
# for bit, and a run stopped at step 3 and resumed continues bit for bit.
# Usage: train_amdp_check.sh MPIRUN RRFP RANKS STAGES DIRECTIONS POLICY
mpirun=$1 rrfp=$2 np=$3 stages=$4 dirs=$5 policy=$6
dir=$(mktemp -d)
k=$((stages / np))
args="train --quiet --stages $stages --async amdp --directions $dirs --accumulate 4 --deterministic"
run_mpi() { "$mpirun" --oversubscribe -np "$np" -x STARPU_SCHED="$policy" "$rrfp" $args --devices-per-rank "$k" "$@"; }
run_mpi --window 3 --eval-every 2 --steps 6 --json "$dir/async.json" --trace "$dir/trace.json" || exit 1
run_mpi --window 3 --eval-every 2 --steps 6 --json "$dir/again.json" || exit 1
run_mpi --window 1 --steps 6 --json "$dir/w1.json" || exit 1
run_mpi --window 1 --steps 3 --checkpoint "$dir/ck" || exit 1
run_mpi --window 1 --steps 6 --checkpoint "$dir/ck" --resume --json "$dir/resumed.json" || exit 1
STARPU_SCHED=$policy "$rrfp" $args --window 1 --steps 6 --json "$dir/one.json" || exit 1
STARPU_SCHED=$policy "$rrfp" $args --window 3 --eval-every 2 --steps 6 --json "$dir/one3.json" || exit 1
python3 - "$dir" "$stages" <<'PY' || exit 1
import json, math, sys
d, S = sys.argv[1], int(sys.argv[2])
steps = lambda f: json.load(open(f"{d}/{f}"))["steps"]
reached = 0
for st in steps("async.json"):
    assert math.isfinite(st["loss"]), st
    for s in range(S):
        assert st["version_drift_max"][s] <= st["version_drift_bound"][s] == 1, (st["step"], s, st["version_drift_max"])
        reached = max(reached, st["version_drift_max"][s])
    assert ("val_loss" in st) == (st["step"] % 2 == 0), st["step"]
assert reached == 1, "no backward crossed an update: the run was not asynchronous"
loss = lambda f: [st["loss"] for st in steps(f)]
one, w1 = loss("one.json"), loss("w1.json")
print("one process:", one); print("multi-rank: ", w1)
assert all(abs(a - b) <= 1e-4 * abs(a) for a, b in zip(one, w1)) and len(one) == len(w1) == 6, \
    "multi-rank AMDP differs from one process beyond the order of the mirror sums"
assert loss("resumed.json") == w1[3:], "the resumed multi-rank run differs"
# Three-step windows hold updates: with --deterministic every pass's weight
# version is fixed, away copies' backwards included, so two runs repeat bit
# for bit, losses and validation losses, and equal one process's up to the
# order of the mirror sums.
val = lambda f: [st.get("val_loss") for st in steps(f)]
assert loss("async.json") == loss("again.json") and val("async.json") == val("again.json"), \
    f"--deterministic multi-rank AMDP does not repeat: {loss('async.json')} vs {loss('again.json')}"
near = lambda a, b: len(a) == len(b) and all((x is None) == (y is None) and (x is None or abs(x - y) <= 1e-5 * abs(x))
                                             for x, y in zip(a, b))
assert near(loss("async.json"), loss("one3.json")) and near(val("async.json"), val("one3.json")), \
    f"--deterministic multi-rank AMDP differs from one process: {loss('async.json')} vs {loss('one3.json')}"
ev = [e for e in json.load(open(f"{d}/trace.json"))["traceEvents"] if e.get("ph") == "X"]
assert len(ev) == 6 * S * 4 * 2, f"trace has {len(ev)} slices, want {6 * S * 4 * 2}"  # F and BW
print("OK: drift within one update and reached, losses as one process, 3-step windows repeat bitwise, resume exact, every pass traced")
PY
rc=$?
rm -rf "$dir"
exit $rc
