#include "train/lr_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/pipeline_spec.hpp"

namespace rrfp::train {

double LrSchedule::at(std::int64_t t) const {
  // t / warmup first: exactly 1 at the warm-up's end, so exactly the peak.
  if (warmup > 0 && t <= warmup)
    return peak * (static_cast<double>(std::max<std::int64_t>(t, 1)) / static_cast<double>(warmup));
  if (decay == "constant") return peak;
  if (t >= decay_updates) return min_lr;
  // Progress through the decay, 0 just after the warm-up, 1 at decay_updates.
  const double x = static_cast<double>(t - warmup) / static_cast<double>(decay_updates - warmup);
  const double keep = decay == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * x)) : 1.0 - x;
  return min_lr + keep * (peak - min_lr);
}

void LrSchedule::check() const {
  if (!(peak > 0)) throw SpecError("--lr must be positive");
  if (warmup < 0) throw SpecError("--lr-warmup must not be negative");
  if (decay != "constant" && decay != "cosine" && decay != "linear")
    throw SpecError(fmt::format("unknown --lr-decay '{}' (known: constant, cosine, linear)", decay));
  if (!(min_lr >= 0 && min_lr <= peak))
    throw SpecError(fmt::format("--min-lr {} must lie in [0, --lr {}]", min_lr, peak));
  if (decay != "constant" && decay_updates <= warmup)
    throw SpecError(fmt::format("--lr-decay {} over {} steps leaves nothing after a warm-up of {} (--lr-decay-steps must "
                                "exceed --lr-warmup)",
                                decay, decay_updates, warmup));
}

}  // namespace rrfp::train
