#!/bin/sh
# Pipeline x data parallelism on D devices, by simulation from one measured
# profile: every split S stages x D/S replicas with the same microbatches a
# step (32), at several link bandwidths (docs/data-parallel.md).
# Usage: perf/dp_pp_sim.sh [RRFP] [PROFILE]   (no PROFILE: profiles gpt-tiny --layers 8 here)
set -e
rrfp=${1:-build/rrfp}
prof=${2:-}
if [ -z "$prof" ]; then
  prof=$(mktemp --suffix=.json)
  STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1 "$rrfp" profile --layers 8 --repetitions 5 -o "$prof" >/dev/null
fi
printf '%-8s %-6s %-6s %-10s %12s %10s\n' devices stages DP Gbit/s step_ms bubble
for D in 4 8; do
  for S in 1 2 4 8; do
    [ "$S" -le "$D" ] || continue
    R=$((D / S))
    for bw in 0 10 1; do
      out=$("$rrfp" sim --profile "$prof" --hint 1f1b --stages "$S" --data-parallel "$R" \
        --microbatches $((32 / R)) --bandwidth-gbps "$bw" | grep '^makespan')
      ms=$(echo "$out" | awk '{printf "%.2f", $2 * 1000}')
      bub=$(echo "$out" | awk '{print $NF}')
      [ "$bw" = 0 ] && link=inf || link=$bw
      printf '%-8s %-6s %-6s %-10s %12s %10s\n' "$D" "$S" "$R" "$link" "$ms" "$bub"
    done
  done
done
