#!/usr/bin/env bash
# Simulator against StarPU (issue 16, docs/simulator.md): real rrfp bench
# runs, each iteration replayed in the simulator from what the policy's
# arbiter saw (rrfp bench --check-sim), over hints x policies x workloads
# (lognormal, straggler, link jitter, and the trace-driven mm-tiny and
# variable-length gpt-tiny durations). Per cell: iterations whose free
# replay (recorded durations and arrivals) decided every task as StarPU
# did, iterations whose pinned replay did, late workers held, bounded waits.
# The traces (perf/traces/, 2 stages) are resampled to 4 devices' stages.
# Usage: perf/sim_decisions.sh [path/to/rrfp] [iterations] [seed]
set -euo pipefail
RRFP=${1:-build/rrfp}
ITER=${2:-10}
SEED=${3:-31}
[ -x "$RRFP" ] || { echo "error: $RRFP not found (cmake --build build)" >&2; exit 2; }
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "4 devices, 8 microbatches, $ITER iterations from seed $SEED, unit 2 ms"
HINTS=("1f1b --fused" "zb-h1" "interleaved-1f1b --chunks 2" "zbv")
WORKLOADS=("lognormal:0.6|--unit-ms 2 --variability lognormal:0.6"
           "straggler|--unit-ms 2 --variability straggler:1:4:0.2"
           "link-jitter|--unit-ms 2 --variability lognormal:0.3 --link-ms 1 --link-jitter 0.5"
           "mm-tiny-trace|--durations perf/traces/mm-tiny_FORM.json"
           "gpt-varlen-trace|--durations perf/traces/gpt-tiny-varlen_FORM.json")
printf "%-28s %-18s %-11s %6s %6s %5s %5s\n" hint workload policy free pinned late waits
for h in "${HINTS[@]}"; do
  for w in "${WORKLOADS[@]}"; do
    name=${w%%|*} args=${w#*|}
    form=1f1b  # the traces' backward form: split (zb-h1) for the zero-bubble hints, else fused
    [[ $h == zb* ]] && form=zb-h1
    args=${args//FORM/$form}
    for p in rrfp rrfp-fixed rrfp-wait; do
      f="$OUT/r.json"
      "$RRFP" bench --hint $h --stages 4 --microbatches 8 $args --iterations "$ITER" --seed "$SEED" \
        --policy "$p" --check-sim --json "$f" > /dev/null
      python3 - "$f" "$h" "$name" "$p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["decision_checks"]
print("%-28s %-18s %-11s %3d/%-2d %3d/%-2d %5d %5d" % (sys.argv[2], sys.argv[3], sys.argv[4],
      sum(x["agrees"] for x in c), len(c), sum(x["pinned"] for x in c), len(c),
      sum(x["late_workers"] for x in c), r["waits"]))
PY
    done
  done
done
