#!/bin/sh
# A rank dies (kill: SIGKILL from inside a task) or a task throws (fail) in
# the middle of a 2-rank run. Passes when mpirun exits non-zero within 30 s
# and stderr says what happened. Usage: fault_check.sh kill|fail MPIRUN CHECK
kind=$1 mpirun=$2 check=$3
out=$(mktemp)
case $kind in
  kill) var=RRFP_MPI_KILL_TASK ;;
  fail) var=RRFP_MPI_FAIL_TASK ;;
  *) echo "unknown fault kind $kind"; exit 2 ;;
esac
# 1F5: the forward of microbatch 5 on stage 1 (rank 1), mid-run; unit 20 ms.
start=$(date +%s)
env $var=1F5 timeout 30 "$mpirun" --oversubscribe -np 2 -x $var "$check" 1f1b 2 12 1 20 0 none >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
[ $rc -ne 0 ] || { echo "FAIL: mpirun exited 0 after a $kind"; exit 1; }
[ $rc -ne 124 ] || { echo "FAIL: ranks still running after 30 s (hang)"; exit 1; }
case $kind in
  kill) grep -Eq "signal 9|Killed|terminated|exited on signal" "$out" ;;
  fail) grep -q "rank 1: error: task 1F5 failed: injected failure" "$out" ;;
esac || { echo "FAIL: no clear message for the $kind"; exit 1; }
echo "OK: $kind stopped every rank in ${elapsed} s (rc $rc)"
