// Variable-length sequences for gpt-tiny (`--seq-len-dist`): each sequence
// of a step gets a length in [1, --seq-len] drawn from a distribution; a
// microbatch is padded to its longest sequence (targets -1 after each
// sequence's end), so attention's cost follows the lengths as in real
// language data. A length depends only on (seed, sequence index), so a
// resumed run draws the same lengths as an uninterrupted one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/pipeline_spec.hpp"  // SpecError
#include "train/data.hpp"
#include "train/model.hpp"

namespace rrfp::train {

struct SeqLenDist {
  enum class Type { Fixed, Uniform, LogNormal, Docs };
  Type type = Type::Fixed;
  int min = 0, max = 0;         // uniform
  double median = 0, sigma = 0; // lognormal
  std::vector<int> docs;        // document lengths (Docs), capped at seq_len
  std::string spec = "fixed";
  bool fixed() const { return type == Type::Fixed; }
};

// "fixed" | "uniform:MIN:MAX" | "lognormal[:MEDIAN[:SIGMA]]" (defaults
// seq_len/2 and 0.5) | "docs" (the document lengths of `text`, split at blank
// lines). Throws SpecError naming the problem.
SeqLenDist parse_seq_len_dist(const std::string& spec, int seq_len, const std::string& text);

// Length of sequence number `index` of the run, in [1, seq_len].
int sequence_length(const SeqLenDist& d, int seq_len, std::uint64_t seed, std::uint64_t index);

// Like make_microbatches, with row r of the windows `lengths[r]` tokens
// long: microbatch m is [b, max length of its rows], shorter rows padded
// with byte 0 and target -1 (no loss).
std::vector<Microbatch> make_variable_microbatches(const std::vector<std::uint8_t>& windows, int microbatches, int b,
                                                   int seq_len, const std::vector<int>& lengths);

// One step of gpt-tiny data: M x b windows from `sampler`, cut to their
// lengths under `d` (make_microbatches when fixed); `tokens` counts the
// real ones.
struct TextBatch {
  std::vector<Microbatch> microbatches;
  double tokens = 0;
};
TextBatch draw_text_batch(Sampler& sampler, const SeqLenDist& d, int microbatches, int b, int seq_len,
                          std::uint64_t seed);

}  // namespace rrfp::train
