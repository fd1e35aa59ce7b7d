#!/bin/sh
# `rrfp train --cuda` on a GPU (label gpu; exit 77, SKIPPED, without one).
#  1. gpt-tiny, 2 stages as CUDA workers, deterministic, 4 steps: the losses
#     equal the CPU run's within rtol 1e-4 (TF32 is off in LibTorch's
#     matmuls by default), and under rrfp-fixed and rrfp-wait they agree
#     within 1e-5 (CUDA's embedding backward adds with atomics).
#     Their activation peaks are measured on the GPU (the CUDA caching
#     allocator's allocations during each stage's forwards): above zero and
#     within 0.2-2x of the CPU run's (the GPU rounds blocks up to 512 bytes,
#     and its attention kernels may save other tensors).
#  2. The plain LibTorch loop on the GPU (--executor plain) gives the same
#     losses within rtol 1e-4.
#  3. gpt-small trains with S = 1, 2 and 4 stages as CUDA workers of the
#     one GPU: finite losses that fall; prints step times and S=1 runtime /
#     plain loop (goal <= 1.05, docs/gpu.md).
#  4. PACI and AMDP without a flush (--async, rrfp-fixed, deterministic)
#     on CUDA workers: PACI's passes and updates of a stage on one stream,
#     AMDP's on the streams of both directions (each waits for its kernels
#     before it releases the stage); the losses equal the CPU runs' within
#     rtol 1e-4 and the recorded weight drift stays within each bound.
#  5. Where mpirun is on the PATH: the gpt-tiny run of 1 on 2 ranks (each
#     rank's stage a CUDA worker of its share of the GPUs, StarPU-MPI moving
#     the messages), Chimera on 2 ranks (its mirrored stages' gradient
#     sums and checkpoints cross through host copies), PACI of 4 on 2
#     ranks and AMDP of 4 on 2 ranks x 2 devices (its gradient sums and
#     weights packed on each rank's GPU, moved by StarPU-MPI): losses
#     equal the one-process GPU runs' within 1e-5; and
#     tensor parallelism 2 with one member per rank (host-staged
#     all-reduces, one of them on LibTorch's autograd thread) equals the
#     CPU run within rtol 1e-4. With two GPUs or more, the run of 1 on 2
#     ranks with --rank-transport ordered (NCCL between the ranks' GPUs)
#     gives the StarPU-MPI run's losses within 1e-5; with one, it is
#     refused with an error naming the shared GPU.
# Usage: train_cuda.sh RRFP
rrfp=$1
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU (nvidia-smi -L failed): skipped"; exit 77; }
dir=$(mktemp -d)
tiny="train --quiet --model gpt-tiny --stages 2 --hint 1f1b --steps 4 --deterministic"
"$rrfp" $tiny --json "$dir/cpu.json" || exit 1
STARPU_SCHED=rrfp-fixed "$rrfp" $tiny --cuda --json "$dir/fixed.json" || exit 1
STARPU_SCHED=rrfp-wait "$rrfp" $tiny --cuda --json "$dir/wait.json" || exit 1
"$rrfp" $tiny --cuda --executor plain --json "$dir/plain.json" || exit 1
small="train --quiet --model gpt-small --steps 12 --cuda"
for s in 1 2 4; do
  "$rrfp" $small --stages "$s" --hint 1f1b --json "$dir/small$s.json" || exit 1
done
"$rrfp" $small --stages 1 --executor plain --json "$dir/small_plain.json" || exit 1
paci="train --quiet --model gpt-tiny --stages 2 --steps 4 --deterministic --async paci --accumulate 4 --window 2"
STARPU_SCHED=rrfp-fixed "$rrfp" $paci --json "$dir/paci_cpu.json" || exit 1
STARPU_SCHED=rrfp-fixed "$rrfp" $paci --cuda --json "$dir/paci_gpu.json" || exit 1
amdp="train --quiet --model gpt-tiny --stages 4 --steps 4 --deterministic --async amdp --accumulate 4 --window 2"
STARPU_SCHED=rrfp-fixed "$rrfp" $amdp --json "$dir/amdp_cpu.json" || exit 1
STARPU_SCHED=rrfp-fixed "$rrfp" $amdp --cuda --json "$dir/amdp_gpu.json" || exit 1
ranks=0
# rrfp links Open MPI 4 (Debian's): another launcher would start unrelated singletons.
if mpirun --version 2>/dev/null | grep -q "Open MPI) 4"; then
  ranks=2
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_WORKERS_NOBIND=1
  chimera="train --quiet --model gpt-tiny --stages 2 --hint chimera --microbatches 4 --steps 4 --deterministic --cuda"
  STARPU_SCHED=rrfp-fixed "$rrfp" $chimera --json "$dir/chimera1.json" || exit 1
  mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-fixed "$rrfp" $tiny --cuda --json "$dir/mpi.json" || exit 1
  mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-fixed "$rrfp" $chimera --checkpoint "$dir/ckpt" \
    --json "$dir/chimera2.json" || exit 1
  mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-fixed "$rrfp" $paci --cuda --json "$dir/paci_mpi.json" || exit 1
  mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-fixed "$rrfp" $amdp --cuda --devices-per-rank 2 \
    --json "$dir/amdp_mpi.json" || exit 1
  tp="train --quiet --model gpt-tiny --stages 1 --tensor-parallel 2 --steps 4 --deterministic"
  "$rrfp" $tp --json "$dir/tp_cpu.json" || exit 1
  mpirun --oversubscribe -np 2 "$rrfp" $tp --cuda --devices-per-rank 1 --json "$dir/tp_gpu.json" || exit 1
  # NCCL as the ordered channels' wire: a GPU per rank, else a clear refusal.
  ordered="$tiny --cuda --rank-transport ordered"
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    mpirun --oversubscribe -np 2 -x STARPU_SCHED=rrfp-fixed -x CUDA_VISIBLE_DEVICES=0,1 "$rrfp" $ordered \
      --json "$dir/nccl.json" || exit 1
    ranks=nccl
  else
    out=$(mpirun --oversubscribe -np 2 "$rrfp" $ordered 2>&1) && { echo "two ranks on one GPU over NCCL did not fail"; exit 1; }
    echo "$out" | grep -q "NCCL puts a GPU in a communicator once" || { echo "$out"; echo "no clear error for two ranks on one GPU"; exit 1; }
    echo "OK: two ranks on one GPU with --rank-transport ordered are refused, by name"
  fi
else
  echo "no Open MPI 4 mpirun here: the two-rank --cuda runs are skipped"
fi
python3 - "$dir" "$ranks" <<'PY' || exit 1
import json, math, statistics, sys
d = sys.argv[1]
steps = lambda f: json.load(open(f"{d}/{f}.json"))["steps"]
loss = lambda f: [s["loss"] for s in steps(f)]
def close(a, b, rtol, what):
    assert len(a) == len(b), what
    for x, y in zip(a, b):
        assert abs(x - y) <= rtol * abs(y), f"{what}: {a} vs {b}"
cpu = loss("cpu")
close(loss("fixed"), cpu, 1e-4, "GPU rrfp-fixed vs CPU")
close(loss("wait"), cpu, 1e-4, "GPU rrfp-wait vs CPU")
close(loss("wait"), loss("fixed"), 1e-5, "GPU rrfp-wait vs rrfp-fixed")
close(loss("plain"), cpu, 1e-4, "GPU plain loop vs CPU")
peak = lambda f: max(s["peak_activation_bytes"] for s in steps(f))
for f in ("fixed", "wait"):
    r = peak(f) / peak("cpu")
    print(f"activation peak, GPU {f} / CPU: {peak(f)} / {peak('cpu')} bytes = {r:.3f}")
    assert 0.2 <= r <= 2, f"GPU activation peak of the {f} run is {r:.3f}x the CPU run's"
med = lambda f: statistics.median(s["step_s"] for s in steps(f)[2:])
for s in (1, 2, 4):
    l = loss(f"small{s}")
    assert all(math.isfinite(x) for x in l) and l[-1] < l[0], (s, l)
    print(f"gpt-small S={s}: step {med(f'small{s}') * 1e3:.1f} ms, loss {l[0]:.4f} -> {l[-1]:.4f}")
print(f"gpt-small S=1 runtime / plain loop: {med('small1') / med('small_plain'):.3f} (goal <= 1.05)")
for m in ("paci", "amdp"):
    close(loss(f"{m}_gpu"), loss(f"{m}_cpu"), 1e-4, f"GPU {m} vs CPU {m}")
    for st in steps(f"{m}_gpu"):
        assert all(x <= b for x, b in zip(st["version_drift_max"], st["version_drift_bound"])), (m, st)
print("OK: PACI and AMDP on CUDA workers match the CPU runs, drift within their bounds")
if sys.argv[2] == "nccl":
    close(loss("nccl"), loss("mpi"), 1e-5, "GPU 2 ranks: ordered channels over NCCL vs StarPU-MPI")
    print("OK: on 2 GPUs the ordered channels over NCCL give StarPU-MPI's losses")
if sys.argv[2] in ("2", "nccl"):
    close(loss("mpi"), loss("fixed"), 1e-5, "GPU 2 ranks vs one process")
    close(loss("chimera2"), loss("chimera1"), 1e-5, "GPU Chimera 2 ranks vs one process")
    close(loss("paci_mpi"), loss("paci_gpu"), 1e-5, "GPU PACI 2 ranks vs one process")
    close(loss("amdp_mpi"), loss("amdp_gpu"), 1e-5, "GPU AMDP 2 ranks vs one process")
    for st in steps("amdp_mpi"):
        assert all(x <= b for x, b in zip(st["version_drift_max"], st["version_drift_bound"])), ("amdp_mpi", st)
    close(loss("tp_gpu"), loss("tp_cpu"), 1e-4, "GPU tensor parallel on 2 ranks vs CPU")
    print("OK: on 2 ranks the GPU losses match one process's (1F1B, Chimera, PACI, AMDP) and tensor parallelism the CPU's")
print("OK: GPU losses match the CPU reference; gpt-small trains at S = 1, 2, 4")
PY
rm -rf "$dir"
