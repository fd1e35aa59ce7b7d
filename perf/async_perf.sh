#!/bin/bash
# Issue 14's measurement (perf/RESULTS.md): time and tokens to a target
# validation loss for synchronous 1F1B, ZB-H1 and Chimera (bidirectional),
# PACI (--async paci) and AMDP (--async amdp, two directions; amdp-det adds
# --deterministic: every forward on the older version, docs/async.md), each under
# rrfp-fixed and rrfp-wait (the rrfp default), on gpt-tiny,
# 2 stages on the 2 cores, M = 4 microbatches a step. The runs are
# interleaved: each round trains every configuration once, in a rotated
# order. Every run evaluates held-out data every EVAL steps (--eval-every),
# the asynchronous ones without a drain, in windows of WINDOW steps (EVAL
# by default, as before evaluation stopped draining). Reported per configuration
# (medians over rounds): tokens/s, the training seconds and tokens at which
# the validation loss first reached the target, and the final validation loss.
# With RANKS=2 every run is `mpirun -np 2` (one stage a rank, docs/async.md
# "AMDP under mpirun"; Chimera's and AMDP's mirror copies then span ranks).
# ONLY=chimera,amdp,... keeps those schedules' rows (the summary lines then
# compare with the fastest synchronous schedule among them).
# LONG_WINDOW=L adds PACI in windows of L steps (rows paci-wL).
# Usage: [RANKS=2] [ONLY=...] [WINDOW=W] [LONG_WINDOW=L] perf/async_perf.sh [build dir] [rounds] [steps] [target] [lr] [eval]
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
STEPS=${3:-120}
TARGET=${4:-2.4}
LR=${5:-1e-3}
EVAL=${6:-5}
W=${WINDOW:-$EVAL}
R=$BUILD/rrfp
[ -x "$R" ] || { echo "error: $R not found (cmake --build $BUILD)" >&2; exit 2; }
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
RANKS=${RANKS:-1}
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch() {  # POLICY ARGS...: one process, or RANKS ranks of one stage each
  local pol=$1
  shift
  if [ "$RANKS" -gt 1 ]; then
    mpirun --oversubscribe -np "$RANKS" -x STARPU_SCHED="$pol" "$R" "$@" --devices-per-rank 1
  else
    STARPU_SCHED=$pol "$R" "$@"
  fi
}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
date -u +"%Y-%m-%d %H:%M UTC"
echo "ranks: $RANKS, gpt-tiny, --stages 2, M = 4, --steps $STEPS, --lr $LR, --eval-every $EVAL, --window $W, target: validation loss <= $TARGET, $ROUNDS rounds"
CONFIGS=(
  "1f1b:rrfp-fixed:--hint 1f1b --fused --microbatches 4"
  "1f1b:rrfp-wait:--hint 1f1b --fused --microbatches 4"
  "zb-h1:rrfp-fixed:--hint zb-h1 --microbatches 4"
  "zb-h1:rrfp-wait:--hint zb-h1 --microbatches 4"
  "paci:rrfp-fixed:--async paci --accumulate 4 --window $W"
  "paci:rrfp-wait:--async paci --accumulate 4 --window $W"
  "chimera:rrfp-fixed:--hint chimera --microbatches 4"
  "chimera:rrfp-wait:--hint chimera --microbatches 4"
  "amdp:rrfp-fixed:--async amdp --accumulate 4 --window $W"
  "amdp:rrfp-wait:--async amdp --accumulate 4 --window $W"
  "amdp-det:rrfp-fixed:--async amdp --accumulate 4 --window $W --deterministic"
  "amdp-det:rrfp-wait:--async amdp --accumulate 4 --window $W --deterministic"
)
if [ -n "${LONG_WINDOW:-}" ]; then  # PACI in longer windows too, side by side (evaluation does not drain)
  CONFIGS+=("paci-w$LONG_WINDOW:rrfp-fixed:--async paci --accumulate 4 --window $LONG_WINDOW"
            "paci-w$LONG_WINDOW:rrfp-wait:--async paci --accumulate 4 --window $LONG_WINDOW")
fi
if [ -n "${ONLY:-}" ]; then  # ONLY=chimera,amdp: those schedules' rows alone
  kept=()
  for c in "${CONFIGS[@]}"; do [[ ",$ONLY," == *",${c%%:*},"* ]] && kept+=("$c"); done
  [ ${#kept[@]} -gt 0 ] || { echo "error: ONLY=$ONLY names no schedule of this script" >&2; exit 2; }
  CONFIGS=("${kept[@]}")
fi
N=${#CONFIGS[@]}
for ((r = 0; r < ROUNDS; ++r)); do
  for ((i = 0; i < N; ++i)); do
    c=${CONFIGS[$(((i + r) % N))]}
    IFS=: read -r name pol flags <<<"$c"
    # shellcheck disable=SC2086
    launch "$pol" train --stages 2 --steps "$STEPS" --lr "$LR" --eval-every "$EVAL" $flags --quiet \
      --json "$OUT/$name.$pol.$r.json"
  done
done
python3 - "$OUT" "$TARGET" <<'PY'
import glob, json, statistics as st, sys
out, target = sys.argv[1], float(sys.argv[2])
rows = {}
for f in sorted(glob.glob(out + "/*.json")):
    name, pol, _ = f.split("/")[-1].rsplit(".", 3)[:3]
    j = json.load(open(f))
    s = j["steps"]
    secs = toks = 0.0
    hit = None
    val = []
    for x in s:
        secs += x["step_s"]
        toks += x["tokens"]
        if "val_loss" in x:
            val.append(x["val_loss"])
            if hit is None and x["val_loss"] <= target:
                hit = (secs, toks, x["step"])
    tps = st.median(x["tokens_per_s"] for x in s[2:])
    drift = max((max(x.get("version_drift_max", [0])) for x in s), default=0)
    peak = max(x["peak_activation_bytes"] for x in s)
    rows.setdefault((name, pol), []).append((tps, hit, val[-1], drift, peak))
base = None
print(f"{'schedule':8} {'policy':10} {'tok/s':>8} {'s to target':>11} {'tokens':>9} {'step':>5} "
      f"{'final val':>10} {'drift':>5} {'peak act MiB':>12}")
res = {}
for (name, pol), v in sorted(rows.items()):
    tps = st.median(x[0] for x in v)
    hits = [x[1] for x in v if x[1]]
    t = st.median(h[0] for h in hits) if len(hits) == len(v) else float("nan")
    k = st.median(h[1] for h in hits) if len(hits) == len(v) else float("nan")
    stp = st.median(h[2] for h in hits) if len(hits) == len(v) else -1
    fin = st.median(x[2] for x in v)
    res[(name, pol)] = (t, fin)
    print(f"{name:8} {pol:10} {tps:8.0f} {t:11.2f} {k:9.0f} {stp:5.0f} {fin:10.4f} {max(x[3] for x in v):5d} "
          f"{max(x[4] for x in v) / 2**20:12.2f}")
asyncs = sorted({k[0] for k in res if k[0].startswith(("paci", "amdp"))})
sync = [res[k][0] for k in res if k[0] not in asyncs]
fastest = min(sync) if sync else float("nan")
refk = ("1f1b", "rrfp-fixed") if ("1f1b", "rrfp-fixed") in res else min((k for k in res if k[0] not in asyncs), default=None)
ref = res[refk][1] if refk else float("nan")
for name in asyncs:
    for pol in ("rrfp-fixed", "rrfp-wait"):
        if (name, pol) not in res:
            continue
        t, fin = res[(name, pol)]
        print(f"{name} {pol}: fastest synchronous / {name} time to target = {fastest / t:.3f}; "
              f"final validation loss vs {' '.join(refk) if refk else 'none'}: {100 * (fin / ref - 1):+.2f}%")
PY
