#include "sim/sim_timeline.hpp"

#include <fmt/format.h>

namespace rrfp {

Timeline to_timeline(const Hint& hint, const SimResult& r, const std::string& title, double time_unit_s) {
  Timeline t;
  t.title = title;
  for (int d = 0; d < hint.devices(); ++d) t.tracks.push_back(fmt::format("device {}", d));
  for (int d = 0; d < hint.devices(); ++d)
    for (int id : r.executed[d])
      t.slices.push_back({d, hint.graph->label(id), r.start[id] * time_unit_s, r.end[id] * time_unit_s});
  return t;
}

}  // namespace rrfp
