#!/bin/bash
# Training perf ratios side by side (issue 4): S=1 runtime vs plain LibTorch
# loop, S=2 vs S=1 tokens/s, 1F1B vs GPipe stage-0 activation peak.
# Usage: perf/train_perf.sh [path/to/rrfp] [steps]
set -euo pipefail
RRFP=${1:-build/rrfp}
STEPS=${2:-12}
OUT=$(mktemp -d)
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
COMMON="train --quiet --steps $STEPS --microbatches 8 --micro-batch-size 4 --deterministic"
run() { local name=$1; shift; "$RRFP" $COMMON --json "$OUT/$name.json" "$@" 2>/dev/null; }
run plain   --stages 1 --hint gpipe --executor plain
run s1      --stages 1 --hint gpipe
run s2      --stages 2 --hint 1f1b
run gpipe2  --stages 2 --hint gpipe
python3 - "$OUT" <<'PY'
import json, statistics, sys
d = sys.argv[1]
def load(n): return json.load(open(f"{d}/{n}.json"))
def med(n, key):  # median over steps after the first (warm-up)
    return statistics.median(s[key] for s in load(n)["steps"][1:])
plain, s1, s2 = med("plain", "step_s"), med("s1", "step_s"), med("s2", "step_s")
g0 = max(s["peak_activation_bytes_per_stage"][0] for s in load("gpipe2")["steps"])
f0 = max(s["peak_activation_bytes_per_stage"][0] for s in load("s2")["steps"])
same = [s["loss"] for s in load("plain")["steps"]] == [s["loss"] for s in load("s2")["steps"]]
print(f"step time  plain {plain*1e3:.1f} ms  S=1 {s1*1e3:.1f} ms  S=2 {s2*1e3:.1f} ms")
print(f"S=1 overhead (runtime / plain loop):   {s1/plain:.3f}  (target <= 1.05)")
print(f"S=2 / S=1 tokens/s:                    {s1/s2:.3f}  (target >= 1.6)")
print(f"stage-0 peak activation 1F1B / GPipe:  {f0}/{g0} = {f0/g0:.3f}  (S/M = {2/8:.3f})")
print(f"losses plain == S=2 1f1b (bitwise):    {same}")
PY
