#include "train/memory.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <cstring>

#include <mutex>
#include <unordered_map>

// LibTorch 2.2 made Allocator::allocate non-const and added copy_data;
// Debian's LibTorch is 1.13, the CUDA build's PyPI torch 2.11.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
#define RRFP_ALLOCATE_CONST
#define RRFP_HAS_COPY_DATA 1
#else
#define RRFP_ALLOCATE_CONST const
#define RRFP_HAS_COPY_DATA 0
#endif

namespace rrfp::train {

namespace {

thread_local std::shared_ptr<MemCounter> t_charge;

struct Entry {
  std::shared_ptr<MemCounter> counter;
  std::int64_t bytes;
};

// Which counter each charged pointer was charged to.
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<const void*, Entry>& table() {
  static auto* t = new std::unordered_map<const void*, Entry>();  // outlives static tensors
  return *t;
}

// Keeps context == data so that raw_allocate() users still work; the side
// table remembers which counter a pointer was charged to.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) { base_deleter_ = base->raw_deleter(); }

  c10::DataPtr allocate(size_t n) RRFP_ALLOCATE_CONST override {
    c10::DataPtr dp = base_->allocate(n);
    if (!t_charge || dp.get() == nullptr || dp.get() != dp.get_context() ||
        dp.get_deleter() != base_deleter_)
      return dp;
    void* p = dp.release_context();
    charge_this_thread(p, static_cast<std::int64_t>(n));
    return c10::DataPtr(p, p, &CountingAllocator::free_charged, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return base_deleter_; }
#if RRFP_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif

  static void free_charged(void* p) {
    credit_charge(p);
    s_base_deleter(p);
  }

  static c10::DeleterFnPtr s_base_deleter;

 private:
  c10::Allocator* base_;
  c10::DeleterFnPtr base_deleter_;
};

c10::DeleterFnPtr CountingAllocator::s_base_deleter = nullptr;

}  // namespace

bool charge_this_thread(const void* key, std::int64_t bytes) {
  if (!t_charge) return false;
  {
    std::lock_guard<std::mutex> g(table_mutex());
    table()[key] = Entry{t_charge, bytes};
  }
  t_charge->live.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

void credit_charge(const void* key) {
  Entry e;
  {
    std::lock_guard<std::mutex> g(table_mutex());
    auto it = table().find(key);
    if (it == table().end()) return;
    e = std::move(it->second);
    table().erase(it);
  }
  e.counter->live.fetch_sub(e.bytes, std::memory_order_relaxed);
}

void install_memory_accounting() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    auto* a = new CountingAllocator(base);  // lives as long as the process
    CountingAllocator::s_base_deleter = base->raw_deleter();
    c10::SetCPUAllocator(a, /*priority=*/100);
  });
}

ChargeScope::ChargeScope(std::shared_ptr<MemCounter> c) : prev_(std::move(t_charge)) { t_charge = std::move(c); }
ChargeScope::~ChargeScope() { t_charge = std::move(prev_); }

}  // namespace rrfp::train
