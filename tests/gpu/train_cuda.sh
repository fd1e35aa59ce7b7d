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
python3 - "$dir" <<'PY' || exit 1
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
print("OK: GPU losses match the CPU reference; gpt-small trains at S = 1, 2, 4")
PY
rm -rf "$dir"
