#!/bin/sh
# Checkpoints and traces of multi-rank training: `mpirun rrfp train` stopped
# after step 3 and resumed (under mpirun, and in one process from a copy of
# the same checkpoint) gives, bit for bit, the losses of an uninterrupted
# one-process run; rank 0's trace holds every task of every step.
# Usage: train_ckpt_check.sh MPIRUN RRFP RANKS STAGES TENSOR_PARALLEL [HINT]
mpirun=$1 rrfp=$2 np=$3 stages=$4 tp=$5 hint=${6:-1f1b}
dir=$(mktemp -d)
k=$((stages * tp / np))
args="train --quiet --stages $stages --hint $hint --microbatches 4 --deterministic --tensor-parallel $tp"
run_mpi() { "$mpirun" --oversubscribe -np "$np" "$rrfp" $args --devices-per-rank "$k" "$@"; }
"$rrfp" $args --steps 6 --json "$dir/one.json" || exit 1
run_mpi --steps 3 --checkpoint "$dir/ck" --trace "$dir/trace.json" || exit 1
cp -r "$dir/ck" "$dir/ck1"
run_mpi --steps 6 --checkpoint "$dir/ck" --resume --json "$dir/mpi.json" || exit 1
"$rrfp" $args --steps 6 --checkpoint "$dir/ck1" --resume --json "$dir/one_resumed.json" || exit 1
python3 - "$dir" "$stages" <<'PY' || exit 1
import json, sys
d, S = sys.argv[1], int(sys.argv[2])
loss = lambda f: [s["loss"] for s in json.load(open(f"{d}/{f}"))["steps"]]
one, mpi, one_r = loss("one.json"), loss("mpi.json"), loss("one_resumed.json")
print("uninterrupted:", one[3:]); print("mpirun resumed:", mpi); print("one process from the MPI checkpoint:", one_r)
assert mpi == one[3:], "resumed multi-rank run differs"
assert one_r == one[3:], "one-process resume of the multi-rank checkpoint differs"
ev = [e for e in json.load(open(f"{d}/trace.json"))["traceEvents"] if e.get("ph") == "X"]
tasks = S * 4 * 2  # F and BW per stage and microbatch
assert len(ev) == 3 * tasks, f"trace has {len(ev)} slices, want {3 * tasks}"
assert all(e["dur"] >= 0 for e in ev)
print("OK")
PY
# A pass that throws on the last stage's rank at step 3: the job stops
# non-zero and the step-2 checkpoint stays whole and loadable.
rm -rf "$dir/ck"
if RRFP_FAIL_TASK=1F1 RRFP_FAIL_STEP=3 run_mpi --steps 5 --checkpoint "$dir/ck" --checkpoint-every 1 \
    2>"$dir/err"; then
  echo "FAIL: the failing job exited 0"; exit 1
fi
grep -q "injected failure in task 1F1 at step 3" "$dir/err" || { cat "$dir/err"; exit 1; }
"$rrfp" $args --steps 3 --checkpoint "$dir/ck" --resume --json "$dir/after.json" || exit 1
python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['steps']; assert [x['step'] for x in s]==[3], s; print('OK: step-2 checkpoint intact')" "$dir/after.json" || exit 1
rm -rf "$dir"
