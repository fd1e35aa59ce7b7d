// Timelines: one row per device, time across, a slice per task. Read from and
// written to Chrome/Perfetto trace JSON (so real runs and simulated runs share
// one format); plot/render.hpp draws them to PNG or SVG (RRFP::plot, cairo).
#pragma once

#include <string>
#include <vector>

namespace rrfp {

struct Slice {
  int track = 0;        // device
  std::string name;     // "2F0" (PyTorch cell notation)
  double start_s = 0, end_s = 0;
};

struct Timeline {
  std::string title;
  std::vector<std::string> tracks;  // track names, index = Slice::track
  std::vector<Slice> slices;
};

// Chrome trace JSON: complete events ("ph":"X", microseconds), one tid per
// track, thread_name metadata naming the tracks.
void write_chrome_trace(const Timeline& t, const std::string& path);
// Reads complete events back; throws SpecError on malformed files.
Timeline read_chrome_trace(const std::string& path);

}  // namespace rrfp
