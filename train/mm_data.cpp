#include "train/mm_data.hpp"

#include <algorithm>
#include <cmath>

namespace rrfp::train {

ImageSample draw_image(Rng& r) {
  ImageSample s;
  // Pareto(alpha = 1.2) side: about half the images have 2x2 patches, one in
  // ten the full 8x8.
  const double u = (static_cast<double>(r.next() >> 11) + 1.0) / 9007199254740993.0;
  s.side = std::min(kMaxSide, 1 + static_cast<int>(std::pow(u, -1.0 / 1.2)));
  const int px = s.side * kPatchPixels;
  std::vector<float> img(static_cast<size_t>(px) * px, 0.0f);
  static const char* const kinds[] = {"square", "cross", "bar"};
  const int kind = static_cast<int>(r.below(3));
  const int count = 1 + static_cast<int>(r.below(3));
  auto set = [&](int y, int x) {
    if (y >= 0 && y < px && x >= 0 && x < px) img[static_cast<size_t>(y) * px + x] = 1.0f;
  };
  for (int c = 0; c < count; ++c) {
    const int y = static_cast<int>(r.below(px)), x = static_cast<int>(r.below(px));
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if (kind == 0) set(y + dy, x + dx);                       // 3x3 square
        if (kind == 1 && (dy == 0 || dx == 0)) set(y + dy, x + dx);  // plus
        if (kind == 2 && dy == 0) set(y, x + dx), set(y, x + 2 * dx);  // 1x5 bar
      }
  }
  s.patches.reserve(img.size());
  for (int py = 0; py < s.side; ++py)
    for (int pxi = 0; pxi < s.side; ++pxi)
      for (int y = 0; y < kPatchPixels; ++y)
        for (int x = 0; x < kPatchPixels; ++x)
          s.patches.push_back(img[static_cast<size_t>(py * kPatchPixels + y) * px + pxi * kPatchPixels + x]);
  s.caption = std::to_string(count) + " " + kinds[kind];
  if (count > 1) s.caption += kind == 1 ? "es" : "s";
  s.caption += ".";
  return s;
}

std::vector<ImageSample> ImageSampler::next(int n) {
  std::vector<ImageSample> out;
  for (int i = 0; i < n; ++i) out.push_back(draw_image(rng_));
  drawn_ += static_cast<std::uint64_t>(n);
  return out;
}

}  // namespace rrfp::train
