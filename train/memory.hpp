// Activation memory accounting. A wrapper around LibTorch's CPU allocator
// charges every allocation made while a thread carries a "charge" tag to that
// tag's counter, and credits it back when the storage is freed, whichever
// thread frees it. The pipeline tags its forward passes with the stage's
// counter, so the counter, read when a forward ends, is the bytes of tensors
// that stage's forwards created and that are still alive: the tensors the
// autograd graph saved for backward plus the stage output, for every
// microbatch in flight. Temporaries freed inside the forward do not count.
// On a GPU the CUDA caching allocator's allocations are charged the same
// way (install_cuda_memory_accounting, train/cuda_stream.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace rrfp::train {

struct MemCounter {
  std::atomic<std::int64_t> live{0};
};

// Installs the wrapper once per process (idempotent, thread-safe). Tensors
// allocated before it keep their own deleters and are simply not counted.
void install_memory_accounting();

// For allocators outside LibTorch's CPU one (the CUDA caching allocator,
// train/cuda_stream.cpp): charge `bytes` at `key` to this thread's tag, if
// it has one (returns whether it did), and credit it back when freed, from
// any thread (a key never charged is ignored).
bool charge_this_thread(const void* key, std::int64_t bytes);
void credit_charge(const void* key);

// While alive, allocations on this thread are charged to `c` (nullptr: none).
class ChargeScope {
 public:
  explicit ChargeScope(std::shared_ptr<MemCounter> c);
  ~ChargeScope();
  ChargeScope(const ChargeScope&) = delete;
  ChargeScope& operator=(const ChargeScope&) = delete;

 private:
  std::shared_ptr<MemCounter> prev_;
};

}  // namespace rrfp::train
