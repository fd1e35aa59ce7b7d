#!/bin/sh
# An error that only some ranks see (rank 0 alone checks the output files
# and writes checkpoints) stops the whole job with the error's exit code
# and message, instead of leaving the other ranks waiting for it.
# Usage: stops_every_rank_check.sh MPIRUN RANKS EXIT_CODE MESSAGE RRFP ARGS...
mpirun=$1 np=$2 want=$3 message=$4
shift 4
start=$(date +%s)
out=$("$mpirun" --oversubscribe -np "$np" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq "$want" ] || { echo "FAIL: exit code $rc, want $want"; exit 1; }
printf '%s\n' "$out" | grep -qF -- "$message" || { echo "FAIL: no '$message'"; exit 1; }
echo "OK: every rank stopped in $(( $(date +%s) - start )) s (rc $rc)"
