#!/bin/sh
# StarPU's own tools on our graphs: an FxT trace of `rrfp bench` converted
# by starpu_fxt_tool into a Paje trace that names our codelets and a
# tasks.rec that gives each pass its iteration and microbatch, and the
# model-driven policies (dmda, dmdas, heteroprio) running bench and train to the
# plain loop's losses. Usage: starpu_tools_check.sh RRFP STARPU_BIN_DIR
set -eu
rrfp=$1 bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export STARPU_HOME="$dir/home" STARPU_SILENT=1 STARPU_WORKERS_NOBIND=1
STARPU_FXT_TRACE=1 STARPU_FXT_PREFIX="$dir/" "$rrfp" bench --hint zb-h1 --stages 2 --microbatches 4 >/dev/null
trace=$(ls "$dir"/prof_file_* | head -1)
[ -s "$trace" ] || { echo "FAIL: no FxT trace written"; exit 1; }
(cd "$dir" && "$bin/starpu_fxt_tool" -i "$trace" >fxt_tool.log 2>&1) || { cat "$dir/fxt_tool.log"; exit 1; }
[ -s "$dir/paje.trace" ] || { echo "FAIL: starpu_fxt_tool wrote no paje.trace"; exit 1; }
grep -q rrfp_F "$dir/paje.trace" || { echo "FAIL: paje.trace does not name rrfp_F"; exit 1; }
# Each pass carries its iteration and microbatch (starpu_iteration_push).
grep -q "^Iteration: 0 3$" "$dir/tasks.rec" || { echo "FAIL: tasks.rec has no 'Iteration: 0 3'"; exit 1; }
echo "OK: FxT trace $(wc -c <"$trace") bytes -> paje.trace $(wc -c <"$dir/paje.trace") bytes"
want=$("$rrfp" train --stages 2 --microbatches 4 --hint zb-h1 --steps 3 --deterministic --executor plain | tail -1 | sed 's/.*final loss //')
for p in dmda dmdas heteroprio; do
  STARPU_SCHED=$p "$rrfp" bench --hint zb-h1 --stages 2 --microbatches 8 | grep -q "messages: 16 checked" ||
    { echo "FAIL: $p bench"; exit 1; }
  got=$(STARPU_SCHED=$p STARPU_CALIBRATE=1 "$rrfp" train --stages 2 --microbatches 4 --hint zb-h1 --steps 3 --deterministic | tail -1)
  echo "$got" | grep -q "policy $p, final loss $want" || { echo "FAIL: $p train: $got (plain loop: $want)"; exit 1; }
  echo "OK: $p bench and train (final loss $want, as the plain loop)"
done
ls "$STARPU_HOME/.starpu/sampling/codelets/"*/rrfp_F.* >/dev/null || { echo "FAIL: no rrfp_F performance model saved"; exit 1; }
"$bin/starpu_perfmodel_display" -s rrfp_F | grep -q "^# hash" || { echo "FAIL: starpu_perfmodel_display -s rrfp_F"; exit 1; }
echo "OK: performance models saved and displayed"
# Another workload with the same stages and message size keeps a history of
# its own (the footprint hashes the workload): 2 new entries, one per stage.
entries() { "$bin/starpu_perfmodel_display" -s rrfp_F | grep -c "^[0-9a-f]\{8\}[[:space:]]" || true; }
before=$(entries)
STARPU_SCHED=dmda STARPU_CALIBRATE=1 "$rrfp" bench --hint zb-h1 --stages 2 --microbatches 8 --unit-ms 3 >/dev/null
after=$(entries)
[ "$after" -eq $((before + 2)) ] || { echo "FAIL: rrfp_F entries $before -> $after, want 2 more for --unit-ms 3"; exit 1; }
echo "OK: a new workload got its own history entries ($before -> $after)"
