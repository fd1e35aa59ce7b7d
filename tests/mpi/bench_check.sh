#!/bin/sh
# `mpirun -np R rrfp bench` end to end: exits 0, exactly one summary (rank
# 0's), and the JSON describes the whole graph on every device.
# Usage: bench_check.sh MPIRUN RRFP RANKS DEVICES_PER_RANK HINT [ARGS]
mpirun=$1 rrfp=$2 np=$3 k=$4 hint=$5 args=${6:-}
dir=$(mktemp -d)
stages=$((np * k))
"$mpirun" --oversubscribe -np "$np" "$rrfp" bench --hint "$hint" --stages "$stages" --microbatches 8 \
  --devices-per-rank "$k" --link-ms 1 --link-jitter 0.5 --variability lognormal:0.3 --iterations 2 \
  --json "$dir/out.json" $args >"$dir/stdout" 2>"$dir/stderr" || { cat "$dir/stdout" "$dir/stderr"; exit 1; }
cat "$dir/stdout"
n=$(grep -c "^policy " "$dir/stdout")
[ "$n" -eq 1 ] || { echo "FAIL: $n summaries printed, want 1 (rank 0 only)"; exit 1; }
python3 - "$dir/out.json" "$stages" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1])); S = int(sys.argv[2])
assert r["devices"] == S and len(r["busy_s"]) == S, r
assert all(b > 0 for b in r["busy_s"]), "a device ran nothing"
assert len(r["makespans_s"]) == 2 and all(m > 0 for m in r["makespans_s"]), r["makespans_s"]
assert all(p <= c for p, c in zip(r["peak_inflight"], r["inflight_cap"])), "over the in-flight cap"
print("OK", r["policy"], r["hint"], "makespan", r["makespan_s"])
PY
rm -rf "$dir"
