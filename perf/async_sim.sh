#!/bin/bash
# Issue 14's simulator table (perf/RESULTS.md): step time per schedule at 4,
# 8 and 16 stages, M microbatches a step, lognormal(0.3) pass times, a
# 0.2 ms update per stage: synchronous 1F1B, ZB-H1 and Chimera (flushed
# every step, `rrfp sim`), PACI and AMDP with 2 and 4 directions (a window
# of 8 steps, `rrfp sim async`), each under rrfp-fixed and rrfp-wait.
# Usage: perf/async_sim.sh [build dir] [microbatches]
set -euo pipefail
BUILD=${1:-build}
M=${2:-8}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "synthetic costs (F = 1 ms, BW = 2 ms), lognormal:0.3, M = $M a step, update 0.2 ms, async window 8 steps"
V=(--variability lognormal:0.3)
for P in 4 8 16; do
  for pol in rrfp-fixed rrfp-wait; do
    for h in 1f1b zb-h1 chimera; do
      "$R" sim --hint "$h" --stages "$P" --microbatches "$M" "${V[@]}" --policy "$pol" --json "$OUT/$P.$pol.$h.json" >/dev/null
    done
    "$R" sim async --method paci --stages "$P" --accumulate "$M" --window 8 --update-ms 0.2 "${V[@]}" --policy "$pol" \
      --json "$OUT/$P.$pol.paci.json" >/dev/null
    "$R" sim async --method amdp --directions 2 --stages "$P" --accumulate "$M" --window 8 --update-ms 0.2 "${V[@]}" \
      --policy "$pol" --json "$OUT/$P.$pol.amdp-2.json" >/dev/null
    if ((P % 4 == 0 && M % 4 == 0)); then
      "$R" sim async --method amdp --directions 4 --stages "$P" --accumulate "$M" --window 8 --update-ms 0.2 "${V[@]}" \
        --policy "$pol" --json "$OUT/$P.$pol.amdp-4.json" >/dev/null
    fi
  done
done
python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
step = {}
for f in glob.glob(out + "/*.json"):
    P, pol, name = f.split("/")[-1][:-5].split(".", 2)
    j = json.load(open(f))
    step[(int(P), pol, name)] = j.get("async_step_s", j.get("makespan_s"))
names = ["1f1b", "zb-h1", "chimera", "paci", "amdp-2", "amdp-4"]
print(f"{'P':>3} {'policy':10} " + " ".join(f"{n:>8}" for n in names) + "   fastest sync / paci, amdp-2, amdp-4")
for P in (4, 8, 16):
    for pol in ("rrfp-fixed", "rrfp-wait"):
        row = [step.get((P, pol, n)) for n in names]
        best = min(x for x in row[:3])
        cells = " ".join(f"{x * 1e3:8.2f}" if x else f"{'-':>8}" for x in row)
        gains = ", ".join(f"{best / x:.2f}" if x else "-" for x in row[3:])
        print(f"{P:3d} {pol:10} {cells}   {gains}")
print("(step time in ms)")
PY
