#include "train/batch_source.hpp"

#include "train/mm_model.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

BatchSource::BatchSource(const TrainOptions& o, int M, int b) : o_(o), M_(M), b_(b), mm_(o.model == "mm-tiny") {
  if (mm_) {
    images_ = std::make_unique<ImageSampler>(o.seed ^ 0x1a6eULL);
    if (o.eval_every > 0) {  // images and captions of a seed of their own
      ImageSampler v(o.seed ^ 0x7a11da7eULL);
      val_ = make_image_microbatches(v.next(o.eval_microbatches * b), o.eval_microbatches, b);
    }
    tokens_ = static_cast<double>(M) * b * kCaption;
    return;
  }
  auto text = std::make_shared<const std::string>(o.data_path.empty() ? generate_corpus(o.seed, 1 << 19)
                                                                       : load_text(o.data_path));
  fingerprint_ = o.data_path.empty() ? "generated" : text_fingerprint(*text);
  if (o.eval_every > 0) {  // the last tenth is held out for validation
    const size_t cut = text->size() * 9 / 10;
    auto held = std::make_shared<const std::string>(text->substr(cut));
    text = std::make_shared<const std::string>(text->substr(0, cut));
    Sampler v(held, o.gpt.seq_len, o.seed ^ 0x7a11da7eULL, "the held-out validation text (the last tenth)");
    val_ = make_microbatches(v.next(o.eval_microbatches * b), o.eval_microbatches, b, o.gpt.seq_len);
  }
  text_ = std::make_unique<Sampler>(text, o.gpt.seq_len, o.seed ^ 0xda7aULL);
  lengths_ = parse_seq_len_dist(o.seq_len_dist, o.gpt.seq_len, *text);
  tokens_ = static_cast<double>(M) * b * o.gpt.seq_len;
}

std::vector<Microbatch> BatchSource::next() {
  if (mm_) return make_image_microbatches(images_->next(M_ * b_), M_, b_);
  TextBatch batch = draw_text_batch(*text_, lengths_, M_, b_, o_.gpt.seq_len, o_.seed);
  tokens_ = batch.tokens;  // this step's real tokens
  return std::move(batch.microbatches);
}

SamplerState BatchSource::state() const { return mm_ ? images_->state() : text_->state(); }

void BatchSource::set_state(const SamplerState& st) {
  if (mm_)
    images_->set_state(st);
  else
    text_->set_state(st);
}

}  // namespace rrfp::train
