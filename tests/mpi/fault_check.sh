#!/bin/sh
# Faults in the middle of a 2-rank run. Passes when mpirun exits non-zero
# within 30 s and the output says what happened.
#   kill: rank 1 dies (SIGKILL from inside a task); the launcher stops rank 0.
#   fail: a task throws on rank 1; rank 1 reports it and MPI_Abort()s.
#   hang: a task on rank 1 never returns; rank 0's watchdog sees no progress
#         for RRFP_MPI_TIMEOUT_S and MPI_Abort()s (no launcher help).
# Usage: fault_check.sh kill|fail|hang MPIRUN CHECK [TRANSPORT]
kind=$1 mpirun=$2 check=$3 transport=${4:-starpu-mpi}
out=$(mktemp)
case $kind in
  kill) var=RRFP_MPI_KILL_TASK ;;
  fail) var=RRFP_MPI_FAIL_TASK ;;
  hang) var=RRFP_MPI_HANG_TASK ;;
  *) echo "unknown fault kind $kind"; exit 2 ;;
esac
# 1F5: the forward of microbatch 5 on stage 1 (rank 1), mid-run; unit 20 ms.
start=$(date +%s)
env $var=1F5 RRFP_MPI_TIMEOUT_S=3 timeout 30 "$mpirun" --oversubscribe -np 2 -x $var -x RRFP_MPI_TIMEOUT_S \
  "$check" 1f1b 2 12 1 20 0 none "$transport" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
rm -f "$out.keep"
[ $rc -ne 0 ] || { echo "FAIL: mpirun exited 0 after a $kind"; exit 1; }
[ $rc -ne 124 ] || { echo "FAIL: ranks still running after 30 s (hang)"; exit 1; }
case $kind in
  kill) grep -Eq "exited on signal 9" "$out" ;;
  fail) grep -q "rank 1: error: task 1F5 failed: injected failure" "$out" ;;
  hang) grep -q "rank 0: error: rrfp: no progress for 3.0 s" "$out" ;;
esac || { echo "FAIL: no clear message for the $kind"; exit 1; }
rm -f "$out"
echo "OK: $kind stopped every rank in ${elapsed} s (rc $rc)"
