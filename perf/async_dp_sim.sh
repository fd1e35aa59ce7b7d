#!/bin/bash
# PACI with data-parallel replicas in the simulator (docs/async.md, "In the
# simulator"; perf/RESULTS.md): `rrfp sim async --data-parallel D` at P
# stages, A microbatches a replica and step, lognormal pass times, a 0.2 ms
# update per stage on every holder, a window of 8 steps, under rrfp-fixed
# and rrfp-wait. Each step's update waits for every replica's backwards, so
# more replicas wait for a slower slowest: the table shows what that does to
# the flushed step, PACI's step and their ratio (means over SEEDS seeds).
# Usage: [SEEDS=5] [SIGMA=0.3] perf/async_dp_sim.sh [build dir] [A] [stage counts] [replica counts]
set -euo pipefail
BUILD=${1:-build}
A=${2:-8}
DEPTHS=${3:-4,8,16}
REPLICAS=${4:-1,2,4,8}
SEEDS=${SEEDS:-5}
SIGMA=${SIGMA:-0.3}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "synthetic costs (F = 1 ms, BW = 2 ms), lognormal:$SIGMA, A = $A a replica, update 0.2 ms, window 8, seeds 1-$SEEDS"
for P in ${DEPTHS//,/ }; do
  for D in ${REPLICAS//,/ }; do
    for pol in rrfp-fixed rrfp-wait; do
      for s in $(seq 1 "$SEEDS"); do
        "$R" sim async --stages "$P" --data-parallel "$D" --accumulate "$A" --window 8 --update-ms 0.2 \
          --cost F=1,BW=2 --variability "lognormal:$SIGMA" --seed "$s" --policy "$pol" \
          --json "$OUT/$P.$D.$pol.$s.json" >/dev/null
      done
    done
  done
done
python3 - "$OUT" <<'PY'
import collections, glob, json, sys
acc = collections.defaultdict(lambda: [0.0, 0.0, 0])
for f in glob.glob(sys.argv[1] + "/*.json"):
    P, D, pol, _ = f.split("/")[-1][:-5].split(".")
    j = json.load(open(f))
    a = acc[(int(P), int(D), pol)]
    a[0] += j["sync_step_s"]; a[1] += j["async_step_s"]; a[2] += 1
print(f"{'P':>3} {'D':>3} {'devices':>7} {'policy':10} {'flushed ms':>10} {'paci ms':>8} {'flushed/paci':>12}")
for (P, D, pol), (s, a, n) in sorted(acc.items()):
    print(f"{P:3d} {D:3d} {P * D:7d} {pol:10} {s / n * 1e3:10.2f} {a / n * 1e3:8.2f} {s / a:12.3f}")
PY
