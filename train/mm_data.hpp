// Synthetic image-caption data for mm-tiny: images drawn procedurally (one to
// three squares, crosses or bars at random places), cut into 4x4-pixel
// patches, with a caption such as "2 crosses.". The image side is drawn from
// a Pareto law, so the patch count per sample (4 to 64) is heavy-tailed, and
// the vision encoder's cost varies from microbatch to microbatch like real
// image-text data. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/data.hpp"

namespace rrfp::train {

inline constexpr int kPatchPixels = 4;                         // patch side in pixels
inline constexpr int kPatchDim = kPatchPixels * kPatchPixels;  // values per patch
inline constexpr int kMaxSide = 8;                             // patches per image side
inline constexpr int kMaxPatches = kMaxSide * kMaxSide;

struct ImageSample {
  int side = 0;                // patches per side; side * side patches
  std::vector<float> patches;  // side*side * kPatchDim, patch-major, row-major
  std::string caption;         // ends with '.'
};

ImageSample draw_image(Rng& r);

// Same interface as Sampler: state() is the data position for checkpoints.
class ImageSampler {
 public:
  explicit ImageSampler(std::uint64_t seed) : rng_(seed) {}
  std::vector<ImageSample> next(int n);
  SamplerState state() const { return {rng_.s, drawn_}; }
  void set_state(const SamplerState& st) {
    rng_.s = st.rng;
    drawn_ = st.sequences_drawn;
  }

 private:
  Rng rng_;
  std::uint64_t drawn_ = 0;
};

}  // namespace rrfp::train
