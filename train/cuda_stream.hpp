// LibTorch on a StarPU CUDA worker (docs/gpu.md, "Training on a GPU"):
// inside a pass or an optimizer step that StarPU runs on a CUDA worker,
// torch's current stream must be the worker's StarPU stream, so that the
// task's kernels run there and StarPU ends the task when they are done
// (STARPU_CUDA_ASYNC). Only this file's .cpp sees c10_cuda, and only in
// builds against a CUDA LibTorch (RRFP_CUDA).
#pragma once

#include <torch/torch.h>

#include <memory>

namespace rrfp::train {

// True when this rrfp was built against a CUDA LibTorch.
bool torch_built_with_cuda();

// For its scope: torch's current CUDA stream is `stream` (a cudaStream_t)
// on GPU `device`. Does nothing when device < 0 (a CPU worker); throws
// std::runtime_error on a GPU worker in a build without CUDA LibTorch.
class WorkerStream {
 public:
  WorkerStream(int device, void* stream);
  ~WorkerStream();
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

 private:
  struct Guard;
  std::unique_ptr<Guard> guard_;
};

// Waits until the work queued so far on this thread's current stream of
// GPU `device` has run (inside a WorkerStream: the worker's stream). A
// no-op when device < 0 (a CPU worker, a CPU model). For tensors another
// stream uses next: StarPU's streams do not wait for torch's default one,
// nor for each other.
void wait_for_current_stream(int device);

// Charges the CUDA caching allocator's allocations to the activation
// counters of train/memory.hpp, as the CPU allocator's are, through its
// trace hook (called on the allocating thread). Call once CUDA is in use
// (the hook reaches only the device allocators that exist then); a no-op
// without a CUDA LibTorch. WorkerStream creates cuBLAS's workspaces for
// its stream before a pass runs, so no stage is charged for them.
void install_cuda_memory_accounting();

// Every microbatch tensor on `device` (a no-op for CPU).
struct Microbatch;
void to_device(Microbatch& mb, const torch::Device& device);

}  // namespace rrfp::train
