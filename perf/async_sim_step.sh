#!/bin/bash
# The simulated step of one schedule, in seconds, for perf/async_depth.sh and
# perf/async_targets.sh (one cost model for both): the mean over SEEDS cost
# seeds of `rrfp sim` for a synchronous hint (flushed every step) or of
# `rrfp sim async` for paci, amdp-2 and amdp-4 (W-step windows), at P stages
# and M microbatches a step, rrfp sim's default costs with lognormal(0.3)
# variability, every stage paying a 0.2 ms update a step.
# Usage: perf/async_sim_step.sh RRFP P M W POLICY SEEDS NAME
set -euo pipefail
[ $# -eq 7 ] || { echo "usage: $0 RRFP P M W POLICY SEEDS NAME" >&2; exit 2; }
R=$1 P=$2 M=$3 W=$4 POL=$5 SEEDS=$6 NAME=$7
case $NAME in
  paci) cmd=(sim async --method paci --accumulate "$M" --window "$W") ;;
  amdp-*) cmd=(sim async --method amdp --directions "${NAME#amdp-}" --accumulate "$M" --window "$W") ;;
  *) cmd=(sim --hint "$NAME" --microbatches "$M") ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for ((seed = 1; seed <= SEEDS; ++seed)); do
  "$R" "${cmd[@]}" --stages "$P" --update-ms 0.2 --variability lognormal:0.3 --policy "$POL" --seed "$seed" \
    --json "$TMP/$seed.json" >/dev/null
done
python3 - "$TMP" "$SEEDS" <<'PY'
import json, os, sys
runs = [json.load(open(os.path.join(sys.argv[1], f"{s}.json"))) for s in range(1, int(sys.argv[2]) + 1)]
print(repr(sum(r.get("async_step_s", r.get("makespan_s")) for r in runs) / len(runs)))
PY
