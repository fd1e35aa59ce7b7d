#include "train/data.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "codelets/splitmix.hpp"
#include "graph/pipeline_spec.hpp"
#include "graph/input_file.hpp"

namespace rrfp::train {

namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

template <size_t N>
const char* pick(Rng& r, const char* const (&words)[N]) {
  return words[r.below(N)];
}

// One sentence of the grammar: subject verb object [adverbial].
void sentence(Rng& r, std::string& out) {
  static const char* const det[] = {"the", "a", "every", "one"};
  static const char* const adj[] = {"small", "red", "quiet", "old", "bright", "lazy"};
  static const char* const noun[] = {"cat", "dog", "bird", "robot", "child", "river", "tree"};
  static const char* const verb[] = {"sees", "likes", "follows", "finds", "draws", "hears"};
  static const char* const adv[] = {"today", "at night", "in the park", "again", "slowly"};
  out += pick(r, det);
  out += ' ';
  if (r.below(2)) {
    out += pick(r, adj);
    out += ' ';
  }
  out += pick(r, noun);
  out += ' ';
  out += pick(r, verb);
  out += " the ";
  out += pick(r, noun);
  if (r.below(3) == 0) {
    out += ' ';
    out += pick(r, adv);
  }
  out += ".\n";
}

// A correct sum or product of small numbers, e.g. "12+7=19\n".
void arithmetic(Rng& r, std::string& out) {
  const int a = static_cast<int>(r.below(50)), b = static_cast<int>(r.below(50));
  if (r.below(2))
    out += fmt::format("{}+{}={}\n", a, b, a + b);
  else
    out += fmt::format("{}*{}={}\n", a % 10, b % 10, (a % 10) * (b % 10));
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& w : s) w = splitmix64_next(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Rejection keeps the draw unbiased; n is tiny compared with 2^64.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

std::string generate_corpus(std::uint64_t seed, std::size_t bytes) {
  Rng r(seed ^ 0x5eedc0de5eedc0deULL);
  std::string out;
  out.reserve(bytes + 64);
  while (out.size() < bytes) {
    if (r.below(3) == 0)
      arithmetic(r, out);
    else
      sentence(r, out);
  }
  out.resize(bytes);
  return out;
}

std::string load_text(const std::string& path) {
  reject_directory(path, "data file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(fmt::format("cannot read data file '{}': {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw SpecError(fmt::format("error reading data file '{}'", path));
  std::string s = ss.str();
  if (s.empty()) throw SpecError(fmt::format("data file '{}' is empty", path));
  return s;
}

std::string text_fingerprint(const std::string& text) {
  return fmt::format("{} bytes, FNV-1a {:016x}", text.size(), fnv1a64(text.data(), text.size()));
}

Sampler::Sampler(std::shared_ptr<const std::string> text, int seq_len, std::uint64_t seed, const char* what)
    : text_(std::move(text)), seq_len_(seq_len), rng_(seed) {
  if (static_cast<long long>(text_->size()) < seq_len_ + 1LL)
    throw SpecError(fmt::format("{} has {} bytes, fewer than one window of {} (--seq-len + 1)", what,
                                text_->size(), seq_len_ + 1));
}

std::vector<std::uint8_t> Sampler::next(int n) {
  const std::size_t w = static_cast<std::size_t>(seq_len_) + 1;
  const std::uint64_t starts = text_->size() - w + 1;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n) * w);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t at = rng_.below(starts);
    std::memcpy(out.data() + i * w, text_->data() + at, w);
  }
  drawn_ += static_cast<std::uint64_t>(n);
  return out;
}

}  // namespace rrfp::train
