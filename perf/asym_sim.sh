#!/usr/bin/env bash
# Chimera's bidirectional placement against its asymmetric variant
# (chimera-asym: the two directions cut the layers at different points),
# each tuned by `rrfp tune` on the same profile, in simulation
# (perf/RESULTS.md, issue 15). Usage: perf/asym_sim.sh BUILD PROFILE [DEVICES...]
set -euo pipefail
build=${1:?usage: perf/asym_sim.sh BUILD PROFILE [DEVICES...]}
profile=${2:?usage: perf/asym_sim.sh BUILD PROFILE [DEVICES...]}
shift 2
[ $# -gt 0 ] && devices=("$@") || devices=(2 4 8 16)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%7s %14s %14s %10s  %s\n' devices "chimera ms" "asym ms" "asym/chim" "asym partition"
for D in "${devices[@]}"; do
  for pl in bidirectional bidirectional-asym; do
    "$build/rrfp" tune --profile "$profile" --devices "$D" --microbatches $((2 * D)) --placements "$pl" --quiet \
      -o "$out/$pl.json" > /dev/null
  done
  python3 - "$out" "$D" <<'PY'
import json, sys
d, D = sys.argv[1], sys.argv[2]
c = json.load(open(f"{d}/bidirectional.json"))
a = json.load(open(f"{d}/bidirectional-asym.json"))
print(f"{D:>7} {c['predicted_step_s']*1e3:14.3f} {a['predicted_step_s']*1e3:14.3f} "
      f"{a['predicted_step_s']/c['predicted_step_s']:10.3f}  {','.join(map(str, a['partition']))}")
PY
done
