# Sourced by perf/mpi_bench.sh and perf/tp_bench.sh (needs RRFP, REPS and
# COMMON set): the same `rrfp bench $COMMON` in one process and as NP ranks
# under mpirun, for rrfp and rrfp-fixed, seeds 1..REPS, interleaved so that
# machine load hits all four alike. JSON reports land in
# $OUT/{one,mpi}-POLICY-SEED.json.
export STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
# interleaved_mpi_runs NP [bench arguments for the MPI runs only]
interleaved_mpi_runs() {
  local np=$1; shift
  for r in $(seq 1 "$REPS"); do
    for p in rrfp rrfp-fixed; do
      STARPU_SCHED=$p "$RRFP" bench $COMMON --seed "$r" --json "$OUT/one-$p-$r.json" >/dev/null
      mpirun --oversubscribe -np "$np" -x STARPU_SCHED=$p \
        "$RRFP" bench $COMMON --seed "$r" "$@" --json "$OUT/mpi-$p-$r.json" >/dev/null
    done
  done
}
