#!/bin/sh
# StarPU's FxT traces of a multi-rank run: `rrfp train` under mpirun with
# STARPU_FXT_TRACE=1 writes one trace per rank, and starpu_fxt_tool merges
# them into one Paje trace, a tasks.rec with every rank's passes, and a
# comms.rec with StarPU-MPI's messages between the stages' ranks.
# Usage: fxt_check.sh MPIRUN RRFP STARPU_BIN_DIR
set -eu
mpirun=$1 rrfp=$2 bin=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
steps=2 mb=4
"$mpirun" --oversubscribe -np 2 -x STARPU_FXT_TRACE=1 -x STARPU_FXT_PREFIX="$dir/" -x STARPU_HOME="$dir/home" \
  "$rrfp" train --quiet --stages 2 --microbatches $mb --steps $steps
set -- "$dir"/prof_file_*
[ $# -eq 2 ] || { echo "FAIL: want one FxT trace per rank, got: $*"; exit 1; }
(cd "$dir" && "$bin/starpu_fxt_tool" -i "$@" >fxt_tool.log 2>&1) || { cat "$dir/fxt_tool.log"; exit 1; }
grep -q rrfp_F "$dir/paje.trace" || { echo "FAIL: paje.trace does not name rrfp_F"; exit 1; }
# Every forward, on the rank of its stage: steps x microbatches on each.
for r in 0 1; do
  n=$(awk -v r="$r" '/^Name: /{name=$2} /^MPIRank: /{if (name == "rrfp_F" && $2 == r) n++} END{print n+0}' "$dir/tasks.rec")
  [ "$n" -eq $((steps * mb)) ] || { echo "FAIL: rank $r ran $n rrfp_F tasks in tasks.rec, want $((steps * mb))"; exit 1; }
done
grep -q "^Iteration: $steps $((mb - 1))$" "$dir/tasks.rec" || { echo "FAIL: tasks.rec has no 'Iteration: $steps $((mb - 1))'"; exit 1; }
# Each microbatch's activation down and its gradient back, one
# activation-sized message each.
down=$(awk '/^Src: 0/{s=1} /^Src: 1/{s=0} /^Dst: 1/{if (s) n++} END{print n+0}' "$dir/comms.rec")
up=$(awk '/^Src: 1/{s=1} /^Src: 0/{s=0} /^Dst: 0/{if (s) n++} END{print n+0}' "$dir/comms.rec")
[ "$down" -eq $((steps * mb)) ] && [ "$up" -eq $((steps * mb)) ] ||
  { echo "FAIL: comms.rec has $down messages 0 -> 1 and $up 1 -> 0, want $((steps * mb)) each"; exit 1; }
echo "OK: 2 FxT traces -> paje.trace $(wc -c <"$dir/paje.trace") bytes; rrfp_F $((steps * mb)) per rank; $down + $up messages in comms.rec"
