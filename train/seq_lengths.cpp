#include "train/seq_lengths.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "codelets/cost_model.hpp"  // parse_number
#include "codelets/splitmix.hpp"
#include "graph/pipeline_spec.hpp"
#include "train/pipeline.hpp"  // make_microbatches

namespace rrfp::train {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

double number(const std::string& s, const std::string& spec) { return parse_number(s, "--seq-len-dist " + spec); }

double uniform01(std::uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace

SeqLenDist parse_seq_len_dist(const std::string& spec, int seq_len, const std::string& text) {
  SeqLenDist d;
  d.spec = spec.empty() ? "fixed" : spec;
  const auto parts = split(d.spec, ':');
  const std::string& kind = parts.empty() ? d.spec : parts[0];
  const char* forms = "fixed, uniform:MIN:MAX, lognormal[:MEDIAN[:SIGMA]] or docs";
  if (d.spec.back() == ':')  // split() drops the empty last field: "lognormal:" would read as "lognormal"
    throw SpecError(fmt::format("--seq-len-dist '{}' ends with ':' (known: {})", d.spec, forms));
  if (kind == "fixed" && parts.size() == 1) return d;
  if (kind == "uniform" && parts.size() == 3) {
    d.type = SeqLenDist::Type::Uniform;
    const double lo = number(parts[1], d.spec), hi = number(parts[2], d.spec);
    if (lo != std::floor(lo) || hi != std::floor(hi) || lo < 1 || hi < lo || hi > seq_len)
      throw SpecError(fmt::format("--seq-len-dist {}: need whole numbers 1 <= MIN <= MAX <= --seq-len {}", d.spec, seq_len));
    d.min = static_cast<int>(lo);
    d.max = static_cast<int>(hi);
    return d;
  }
  if (kind == "lognormal" && parts.size() <= 3) {
    d.type = SeqLenDist::Type::LogNormal;
    d.median = parts.size() > 1 ? number(parts[1], d.spec) : seq_len / 2.0;
    d.sigma = parts.size() > 2 ? number(parts[2], d.spec) : 0.5;
    if (!(d.median >= 1 && d.median <= seq_len) || !(d.sigma >= 0 && d.sigma <= 5))
      throw SpecError(fmt::format("--seq-len-dist {}: need 1 <= MEDIAN <= --seq-len {} and 0 <= SIGMA <= 5", d.spec, seq_len));
    return d;
  }
  if (kind == "docs" && parts.size() == 1) {
    d.type = SeqLenDist::Type::Docs;
    // Documents are separated by blank lines: lines of nothing but spaces,
    // tabs or a CR (files written on Windows); a run of them is one break.
    // A document's length is its characters, without its last line end.
    size_t begin = std::string::npos;
    auto close = [&](size_t end) {
      while (begin != std::string::npos && end > begin && (text[end - 1] == '\n' || text[end - 1] == '\r')) --end;
      if (begin != std::string::npos && end > begin)
        d.docs.push_back(static_cast<int>(std::min<size_t>(end - begin, static_cast<size_t>(seq_len))));
      begin = std::string::npos;
    };
    for (size_t pos = 0; pos < text.size();) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string::npos) eol = text.size();
      const size_t ink = text.find_first_not_of(" \t\r", pos);
      if (ink == std::string::npos || ink >= eol) close(pos);
      else if (begin == std::string::npos) begin = pos;
      pos = eol + 1;
    }
    close(text.size());
    if (d.docs.size() < 2)
      throw SpecError(fmt::format("--seq-len-dist docs: the data has {} document(s); it needs blank lines between "
                                  "documents (give --data FILE with them)",
                                  d.docs.size()));
    return d;
  }
  throw SpecError(fmt::format("--seq-len-dist '{}': expected {}", d.spec, forms));
}

int sequence_length(const SeqLenDist& d, int seq_len, std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t h = splitmix64(splitmix64(seed ^ 0x5e91e9ULL) ^ index);
  switch (d.type) {
    case SeqLenDist::Type::Fixed: return seq_len;
    case SeqLenDist::Type::Uniform: return d.min + static_cast<int>(h % static_cast<std::uint64_t>(d.max - d.min + 1));
    case SeqLenDist::Type::LogNormal: {
      const double u1 = uniform01(h), u2 = uniform01(splitmix64(h));
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      const double len = std::round(d.median * std::exp(d.sigma * z));
      return static_cast<int>(std::clamp(len, 1.0, static_cast<double>(seq_len)));
    }
    case SeqLenDist::Type::Docs: return d.docs[h % d.docs.size()];
  }
  return seq_len;
}

std::vector<Microbatch> make_variable_microbatches(const std::vector<std::uint8_t>& windows, int M, int b, int T,
                                                   const std::vector<int>& lengths) {
  const int64_t w = T + 1;
  if (static_cast<int64_t>(windows.size()) != int64_t{M} * b * w || static_cast<int64_t>(lengths.size()) != int64_t{M} * b)
    throw std::invalid_argument("make_variable_microbatches: windows or lengths do not match M * b sequences");
  auto all = torch::from_blob(const_cast<std::uint8_t*>(windows.data()), {int64_t{M} * b, w}, torch::kUInt8)
                 .to(torch::kInt64);
  std::vector<Microbatch> out;
  for (int m = 0; m < M; ++m) {
    int longest = 1;
    for (int r = 0; r < b; ++r) longest = std::max(longest, lengths[static_cast<size_t>(m) * b + r]);
    auto rows = all.slice(0, int64_t{m} * b, int64_t{m + 1} * b);
    torch::Tensor tokens = rows.slice(1, 0, longest).clone(), targets = rows.slice(1, 1, longest + 1).clone();
    for (int r = 0; r < b; ++r) {
      const int len = lengths[static_cast<size_t>(m) * b + r];
      if (len < 1 || len > T) throw std::invalid_argument("make_variable_microbatches: a length is outside [1, T]");
      tokens[r].slice(0, len).fill_(0);
      targets[r].slice(0, len).fill_(-1);
    }
    out.push_back({tokens, targets, {}, {}});
  }
  return out;
}

TextBatch draw_text_batch(Sampler& sampler, const SeqLenDist& d, int M, int b, int T, std::uint64_t seed) {
  const std::uint64_t first = sampler.state().sequences_drawn;  // lengths follow the data position
  const auto windows = sampler.next(M * b);
  if (d.fixed()) return {make_microbatches(windows, M, b, T), static_cast<double>(M) * b * T};
  TextBatch out;
  std::vector<int> len(static_cast<size_t>(M) * b);
  for (size_t i = 0; i < len.size(); ++i) out.tokens += len[i] = sequence_length(d, T, seed, first + i);
  out.microbatches = make_variable_microbatches(windows, M, b, T, len);
  return out;
}

}  // namespace rrfp::train
