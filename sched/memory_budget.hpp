// A per-device byte budget for activations, next to the arbiter's in-flight
// count: a forward holds its stage's activation bytes until the end of its
// microbatch's backward (or of its W, under release_at_w), and may start only
// while the device's held bytes, plus the bytes of the forwards the hint
// places before it that have not started yet, plus its own, stay within the
// budget. That reservation is the count cap's, weighted: taking a later
// forward early never leaves an earlier one without room, so the hint's own
// order, whose peak fits (checked on construction), can always go on.
// Pure C++, not thread-safe (the arbiter's caller holds the lock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

// A memory amount for messages: MiB to two decimals, or bytes when that
// would print 0.00 (a limit of a few bytes is still a limit): "12 B".
std::string mib_text(double bytes);

struct MemoryBudgetOptions {
  std::vector<double> stage_bytes;   // per model stage: a microbatch's activation
  std::vector<double> device_bytes;  // per device: the budget; empty = none
  bool release_at_w = false;         // split backward: held until W ends
};

class MemoryBudget {
 public:
  // Throws SpecError when the sizes do not match the hint or a device's
  // budget is below what the hint's own order holds at its peak.
  MemoryBudget(const Hint& hint, MemoryBudgetOptions opt);
  bool enabled() const { return !opt_.device_bytes.empty(); }
  // `fwd_index`: the forward's position among its device's forwards in hint order.
  bool allows(int device, int fwd_index, int task) const;
  void on_start(int device, int fwd_index, int task);
  void on_finish(int task);  // releases the bytes when `task` ends its microbatch's hold

  double held(int device) const { return static_cast<double>(dev_[device].held); }
  double peak(int device) const { return static_cast<double>(dev_[device].peak); }
  double budget(int device) const { return opt_.device_bytes[device]; }
  double hint_peak(int device) const { return static_cast<double>(dev_[device].hint_peak); }

 private:
  struct Device {
    std::vector<std::int64_t> prefix;   // bytes of the first i forwards in hint order
    std::vector<std::int64_t> fenwick;  // bytes of started forwards, by index
    std::int64_t held = 0, peak = 0, hint_peak = 0;
  };
  std::int64_t started_before(const Device& d, int fwd_index) const;

  const Hint& hint_;
  MemoryBudgetOptions opt_;
  std::vector<Device> dev_;
  // Per task, set once so the policy's hot path reads two arrays: its
  // stage's bytes, and whether it ends its microbatch's hold.
  std::vector<std::int64_t> bytes_;
  std::vector<unsigned char> releases_;
};

}  // namespace rrfp
