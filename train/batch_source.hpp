// Where a run's microbatches come from: text windows of the corpus
// (gpt-tiny, generated or --data, lengths from --seq-len-dist) or drawn
// images and captions (mm-tiny), and, with --eval-every, the held-out
// validation microbatches. The sampler's state is the data position a
// checkpoint stores.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/data.hpp"
#include "train/mm_data.hpp"
#include "train/seq_lengths.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

class BatchSource {
 public:
  // M microbatches of b sequences (or images) per step.
  BatchSource(const TrainOptions& o, int M, int b);
  // The next step's microbatches; tokens() is then their real token count.
  std::vector<Microbatch> next();
  double tokens() const { return tokens_; }
  SamplerState state() const;
  void set_state(const SamplerState& st);
  // --eval-every: gpt-tiny's last tenth of the corpus (which training then
  // leaves out), mm-tiny's images of a seed of their own. Empty otherwise.
  const std::vector<Microbatch>& validation() const { return val_; }
  // gpt-tiny's text: the --data file's size and hash (text_fingerprint),
  // or "generated"; "" for mm-tiny.
  const std::string& data_fingerprint() const { return fingerprint_; }

 private:
  const TrainOptions& o_;
  const int M_, b_;
  const bool mm_;
  std::unique_ptr<Sampler> text_;
  SeqLenDist lengths_;
  std::unique_ptr<ImageSampler> images_;
  std::vector<Microbatch> val_;
  double tokens_ = 0;
  std::string fingerprint_;
};

}  // namespace rrfp::train
