// Synthetic profiles for the tuner's tests: pure C++, no training.
#pragma once

#include <string>
#include <vector>

#include "sim/profile.hpp"

namespace rrfp {

// A gpt-tiny-like profile: light first and last layers, `blocks` blocks of
// `ms` milliseconds of F (B the same, W half), one per entry.
inline ModelProfile synthetic(const std::vector<double>& block_ms, double act = 1e6, double weight = 1e5) {
  ModelProfile p;
  p.source = "synthetic";
  p.model = "gpt-tiny";
  p.config = {{"layers", static_cast<int>(block_ms.size())}};
  p.micro_batch_size = 4;
  auto layer = [&](const std::string& name, double ms) {
    LayerProfile l;
    l.name = name;
    l.f = {ms * 1e-3, 0};
    l.b = {ms * 1e-3, 0};
    l.w = {ms * 0.5e-3, 0};
    l.bw = {ms * 1.5e-3, 0};
    l.activation_bytes = act * ms;
    l.weight_bytes = weight * ms;
    return l;
  };
  p.layers.push_back(layer("embed", 0.05));
  for (size_t i = 0; i < block_ms.size(); ++i) p.layers.push_back(layer("block" + std::to_string(i), block_ms[i]));
  p.layers.push_back(layer("head", 0.3));
  p.message_bytes.assign(p.layers.size() - 1, 4096);
  return p;
}

}  // namespace rrfp
