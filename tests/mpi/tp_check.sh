#!/bin/sh
# `mpirun rrfp bench --tensor-parallel 2` under lognormal:0.6 variability:
# every run completes and, in every one of ITER seeded runs, every member of
# every tensor-parallel group entered the same collectives in the same order
# (compared here from the recorded logs, not from rrfp's own verdict).
# Usage: tp_check.sh MPIRUN RRFP RANKS DEVICES_PER_RANK STAGES HINT ITER
mpirun=$1 rrfp=$2 np=$3 k=$4 stages=$5 hint=$6 iter=$7
dir=$(mktemp -d)
"$mpirun" --oversubscribe -np "$np" "$rrfp" bench --hint "$hint" --stages "$stages" --microbatches 8 \
  --tensor-parallel 2 --devices-per-rank "$k" --variability lognormal:0.6 --unit-ms 0.3 --inflight-slack 1 \
  --iterations "$iter" --json "$dir/out.json" --collective-log "$dir/log.json" >"$dir/stdout" 2>"$dir/stderr" \
  || { cat "$dir/stdout" "$dir/stderr"; exit 1; }
cat "$dir/stdout"
python3 - "$dir/out.json" "$dir/log.json" "$iter" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1])); logs = json.load(open(sys.argv[2])); n = int(sys.argv[3])
assert r["tensor_parallel"] == 2 and len(logs) == n, (r["tensor_parallel"], len(logs))
same = 0
for it, groups in enumerate(logs):
    ok = True
    for g, members in enumerate(groups):
        assert len(members) == 2 and members[0], f"run {it}: group {g} logged nothing"
        # complete: the same collectives in every run (two per F, B, BW)
        assert sorted(members[0]) == sorted(logs[0][g][0]), f"run {it}: group {g} ran other collectives"
        assert all(c.endswith(("#0", "#1")) for c in members[0])
        ok = ok and members[0] == members[1]
        if members[0] != members[1]:
            i = next(i for i, (a, b) in enumerate(zip(*members)) if a != b)
            print(f"run {it} group {g}: members diverge at {i}: {members[0][i]} vs {members[1][i]}")
    same += ok
print(f"collective orders identical in {same} of {n} runs")
assert same == n
assert r["collective_orders_identical"] == n
PY
rm -rf "$dir"
