#!/bin/bash
# Issue 15's measurements (perf/RESULTS.md): profile -> tune -> run.
#  1. Real training, 2 stages on the 2 cores: the tuned plan against the best
#     zoo hint on rrfp train's even partition (perf/bench_train_ab --plan,
#     one step of each a round, ratios within a round), and the plan's
#     predicted step against its measured one, on a heterogeneous gpt-tiny
#     (6 attention-only blocks, then 2 with a 1024-wide MLP) and on mm-tiny
#     with 8 language blocks.
#  2. Simulation at 4, 8 and 16 devices from a 64-block profile of the same
#     shape (48 attention-only blocks, 16 wide ones): tuned vs best even hint,
#     and how long each search took (perf/tune_at_scale).
#  3. With --data-parallel: 1 and 2 again with the pipeline x data-parallel
#     split searched too (rrfp tune --data-parallel auto), at 2 devices
#     really trained and, in simulation, on an infinite and a 10 Gbit/s link.
#  4. With the tensor-parallel degree searched too: gpt-tiny profiled on
#     2 devices and on 1 group of 2 workers (rrfp profile --tensor-parallel
#     2), tuned on both with --data-parallel auto and trained; then the
#     group's plan alone, to check the prediction of a plan of groups.
# Usage: perf/tune_perf.sh [build dir] [rounds] [--data-parallel-only | --tensor-parallel-only]
# (--data-parallel-only skips section 1; --tensor-parallel-only runs section 4 alone)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-12}
R=$BUILD/rrfp
AB=$BUILD/perf/bench_train_ab
SCALE=$BUILD/perf/tune_at_scale
for x in "$R" "$AB" "$SCALE"; do
  [ -x "$x" ] || { echo "error: $x not found (cmake --build $BUILD)" >&2; exit 2; }
done
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"

DP_ONLY=${3:-}
TUNE_EXTRA=()  # section 3: --data-parallel auto

run_case() {  # name, model flags...
  local name=$1
  shift
  echo "== $name: $* ${TUNE_EXTRA[*]}"
  "$R" profile "$@" --devices 2 --microbatches 8 -o "$OUT/$name.profile.json" | tail -n +2 | grep -v '^profile '
  "$R" tune --profile "$OUT/$name.profile.json" --devices 2 --microbatches 8 "${TUNE_EXTRA[@]}" --quiet \
    -o "$OUT/$name.plan.json"
  "$AB" --plan "$OUT/$name.plan.json" "$@" --rounds "$ROUNDS" --quiet
}

if [ "$DP_ONLY" = --tensor-parallel-only ]; then
  GPT=(--model gpt-tiny --layers 8 --mlp-widths 0,0,0,0,0,0,1024,1024)
  echo "== 4. the tensor-parallel degree searched too: ${GPT[*]}"
  "$R" profile "${GPT[@]}" --devices 2 --microbatches 8 -o "$OUT/tp1.json" | tail -n +2 | grep -v '^profile '
  "$R" profile "${GPT[@]}" --devices 1 --tensor-parallel 2 --microbatches 8 -o "$OUT/tp2.json" | tail -n +2 |
    grep -v '^profile '
  for profiles in "$OUT/tp1.json,$OUT/tp2.json" "$OUT/tp2.json"; do
    echo "-- rrfp tune --profile $(echo "$profiles" | sed "s|$OUT/||g") --data-parallel auto"
    "$R" tune --profile "$profiles" --devices 2 --microbatches 8 --data-parallel auto -o "$OUT/tp.plan.json" |
      grep -E '^(tensor parallel|plan:|predicted)'
    "$AB" --plan "$OUT/tp.plan.json" --even-profile "$OUT/tp1.json" "${GPT[@]}" --rounds "$ROUNDS" --quiet
  done
  exit 0
fi

if [ "$DP_ONLY" != --data-parallel-only ]; then
run_case gpt-hetero --model gpt-tiny --layers 8 --mlp-widths 0,0,0,0,0,0,1024,1024
run_case mm-tiny --model mm-tiny --layers 8
fi

echo "== simulation at scale: gpt-tiny, 64 blocks (48 attention-only, 16 with a 1024-wide MLP)"
W=$(printf '0,%.0s' $(seq 48))$(printf '1024,%.0s' $(seq 15))1024
"$R" profile --layers 64 --mlp-widths "$W" --devices 2 --microbatches 8 --repetitions 5 -o "$OUT/gpt64.profile.json" \
  > /dev/null
"$SCALE" --profile "$OUT/gpt64.profile.json" --devices 4,8,16  # section 3 compares with it

echo "== 3. the data-parallel split searched too"
TUNE_EXTRA=(--data-parallel auto)
run_case gpt-hetero --model gpt-tiny --layers 8 --mlp-widths 0,0,0,0,0,0,1024,1024
run_case mm-tiny --model mm-tiny --layers 8
for gbps in 0 10; do  # one pipeline on the infinite link: section 2
  [ "$gbps" = 0 ] || "$SCALE" --profile "$OUT/gpt64.profile.json" --devices 4,8,16 --bandwidth-gbps "$gbps"
  "$SCALE" --profile "$OUT/gpt64.profile.json" --devices 4,8,16 --data-parallel --bandwidth-gbps "$gbps"
done
