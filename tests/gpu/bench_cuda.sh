#!/bin/sh
# `rrfp bench --cuda` on a GPU (label gpu; exit 77, SKIPPED, without one):
# ZB-H1 on 4 devices as CUDA workers of the GPU(s), each pass a kernel on
# its worker's stream that checks every byte of its input message, under
# rrfp-fixed and the default rrfp-wait with lognormal(0.6) pass times;
# every message must be checked and correct, and the makespan must stay
# above the lower bound. Prints rrfp-fixed / rrfp-wait. Then, where
# mpirun is on the PATH, the same bench on 2 ranks x 2 devices, each rank's
# devices CUDA workers of its share of the GPUs (one GPU: both ranks on
# it), StarPU-MPI moving the messages between them (docs/gpu.md); with
# two GPUs or more, again with --rank-transport ordered (NCCL between them).
# Usage: bench_cuda.sh RRFP
rrfp=$1
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU (nvidia-smi -L failed): skipped"; exit 77; }
dir=$(mktemp -d)
args="bench --cuda --hint zb-h1 --stages 4 --microbatches 16 --unit-ms 2 --variability lognormal:0.6 --seed 5 --iterations 5"
for p in rrfp-fixed rrfp-wait; do
  STARPU_SCHED=$p "$rrfp" $args --json "$dir/$p.json" || exit 1
done
python3 - "$dir" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
r = {p: json.load(open(f"{d}/{p}.json")) for p in ("rrfp-fixed", "rrfp-wait")}
for p, j in r.items():
    assert j["messages_checked"] > 0, (p, j["messages_checked"])
    assert j["makespan_over_lb"] >= 0.99, (p, j["makespan_over_lb"])
print(f"GPU bench: rrfp-fixed / rrfp-wait makespan {r['rrfp-fixed']['makespan_s'] / r['rrfp-wait']['makespan_s']:.3f}; "
      f"over the lower bound {r['rrfp-fixed']['makespan_over_lb']:.3f} and {r['rrfp-wait']['makespan_over_lb']:.3f}")
PY
# rrfp links Open MPI 4 (Debian's): another launcher would start unrelated singletons.
if mpirun --version 2>/dev/null | grep -q "Open MPI) 4"; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_WORKERS_NOBIND=1
  mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-wait "$rrfp" $args --devices-per-rank 2 \
    --json "$dir/mpi.json" || exit 1
  python3 - "$dir/mpi.json" <<'PY' || exit 1
import json, sys
j = json.load(open(sys.argv[1]))
assert j["devices"] == 4 and all(b > 0 for b in j["busy_s"]), j["busy_s"]
assert j["messages_checked"] > 0, j["messages_checked"]  # rank 0's, on its GPU
print(f"GPU bench, 2 ranks x 2 CUDA workers: makespan {j['makespan_s']:.4f} s, over the lower bound "
      f"{j['makespan_over_lb']:.3f}, {j['messages_checked']} messages checked on rank 0")
PY
  # Ordered channels over NCCL, with a GPU per rank: every message's bytes
  # checked on its consumer's GPU after crossing through NCCL.
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-wait -x CUDA_VISIBLE_DEVICES=0,1 "$rrfp" $args \
      --devices-per-rank 2 --rank-transport ordered --json "$dir/nccl.json" || exit 1
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['messages_checked'] > 0; \
print(f\"GPU bench over NCCL, 2 ranks: makespan {j['makespan_s']:.4f} s, {j['messages_checked']} messages checked\")" \
      "$dir/nccl.json" || exit 1
  fi
else
  echo "no Open MPI 4 mpirun here: the two-rank --cuda run is skipped"
fi
rm -rf "$dir"
