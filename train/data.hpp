// Byte-level training data: a text file or a corpus generated
// deterministically from a seed, and a sampler whose whole state (RNG and
// position) fits in a checkpoint.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rrfp::train {

// A small probabilistic grammar interleaved with arithmetic facts, so a tiny
// model's loss falls visibly within a few dozen steps. Same seed, same bytes.
std::string generate_corpus(std::uint64_t seed, std::size_t bytes);

// Whole file as bytes. Throws SpecError when it cannot be read or is empty.
std::string load_text(const std::string& path);

// Its size and FNV-1a hash, which a checkpoint keeps so that a resume on
// another data file is refused.
std::string text_fingerprint(const std::string& text);

// xoshiro256**: small, fast, and its state is four words we can save.
struct Rng {
  std::array<std::uint64_t, 4> s{};
  explicit Rng(std::uint64_t seed = 0);
  std::uint64_t next();
  // Uniform in [0, n).
  std::uint64_t below(std::uint64_t n);
};

struct SamplerState {
  std::array<std::uint64_t, 4> rng{};
  std::uint64_t sequences_drawn = 0;  // data position
};

// Draws windows of seq_len + 1 bytes at random offsets (input = first
// seq_len, target = last seq_len).
class Sampler {
 public:
  // Throws SpecError when the text (named `what` there) is shorter than one window.
  Sampler(std::shared_ptr<const std::string> text, int seq_len, std::uint64_t seed,
          const char* what = "training text");
  // n windows, row-major, n * (seq_len + 1) bytes.
  std::vector<std::uint8_t> next(int n);
  SamplerState state() const { return {rng_.s, drawn_}; }
  void set_state(const SamplerState& st) {
    rng_.s = st.rng;
    drawn_ = st.sequences_drawn;
  }
  int seq_len() const { return seq_len_; }

 private:
  std::shared_ptr<const std::string> text_;
  int seq_len_;
  Rng rng_;
  std::uint64_t drawn_ = 0;
};

}  // namespace rrfp::train
