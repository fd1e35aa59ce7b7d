// Variable-length sequences (--seq-len-dist): lengths, padding and masks,
// and pipelines that train on them with the plain loop's losses.
#include <gtest/gtest.h>

#include <set>

#include "train/seq_lengths.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

TrainOptions tiny(const std::string& hint, const std::string& dist) {
  TrainOptions o;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = 4;
  o.gpt.seq_len = 16;
  o.stages = 2;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 8;
  o.hint = hint;
  o.lr = 1e-2;
  o.deterministic = true;
  o.seq_len_dist = dist;
  return o;
}

std::vector<double> losses(const TrainResult& r) {
  std::vector<double> l;
  for (const auto& s : r.steps) l.push_back(s.loss);
  return l;
}

}  // namespace

TEST(TrainSeqLen, DistributionsStayInRangeAndVary) {
  const std::string text = "first doc\n\nsecond, longer document\n\n\nthird";
  for (const char* spec : {"uniform:3:9", "lognormal", "lognormal:4:1.0", "docs"}) {
    SeqLenDist d = parse_seq_len_dist(spec, 16, text);
    std::set<int> seen;
    for (std::uint64_t i = 0; i < 500; ++i) {
      const int len = sequence_length(d, 16, 7, i);
      ASSERT_GE(len, 1) << spec;
      ASSERT_LE(len, 16) << spec;
      if (std::string(spec) == "uniform:3:9") {
        ASSERT_TRUE(len >= 3 && len <= 9) << len;
      }
      EXPECT_EQ(len, sequence_length(d, 16, 7, i)) << spec << ": a function of (seed, index)";
      seen.insert(len);
    }
    EXPECT_GE(seen.size(), 3u) << spec;
  }
  SeqLenDist docs = parse_seq_len_dist("docs", 16, text);
  EXPECT_EQ(docs.docs, (std::vector<int>{9, 16, 5}));  // capped at --seq-len
  EXPECT_TRUE(parse_seq_len_dist("fixed", 16, text).fixed());
  // Blank lines written on Windows (CRLF) or holding spaces break documents too.
  EXPECT_EQ(parse_seq_len_dist("docs", 16, "ab\r\n\r\ncde\r\n").docs, (std::vector<int>{2, 3}));
  EXPECT_EQ(parse_seq_len_dist("docs", 16, "ab\n  \t\ncd\nef\n\n\n").docs, (std::vector<int>{2, 5}));
}

TEST(TrainSeqLen, BadSpecsAreRefused) {
  for (const char* spec : {"uniform:0:4", "uniform:5:4", "uniform:2:17", "uniform:2", "lognormal:0", "lognormal:4:9",
                           "gamma:2", "uniform:a:4", "docs:3"})
    EXPECT_THROW(parse_seq_len_dist(spec, 16, "a\n\nb"), SpecError) << spec;
  EXPECT_THROW(parse_seq_len_dist("docs", 16, "one document without blank lines"), SpecError);
  TrainOptions o = tiny("1f1b", "uniform:2:8");
  o.model = "mm-tiny";
  EXPECT_THROW(train(o), SpecError);
}

TEST(TrainSeqLen, MicrobatchesArePaddedToTheirLongestSequence) {
  const int M = 2, b = 2, T = 6;
  std::vector<std::uint8_t> w(M * b * (T + 1));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::uint8_t>(10 + i);
  const std::vector<int> len = {3, 5, 2, 2};
  auto mbs = make_variable_microbatches(w, M, b, T, len);
  ASSERT_EQ(mbs.size(), 2u);
  EXPECT_EQ(mbs[0].tokens.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(mbs[1].tokens.sizes(), (std::vector<int64_t>{2, 2}));
  // Row 0 of microbatch 0: 3 real tokens, then padding without loss.
  EXPECT_EQ(mbs[0].tokens[0][2].item<int64_t>(), 12);
  EXPECT_EQ(mbs[0].tokens[0][3].item<int64_t>(), 0);
  EXPECT_EQ(mbs[0].targets[0][2].item<int64_t>(), 13);
  EXPECT_EQ(mbs[0].targets[0][3].item<int64_t>(), -1);
  EXPECT_EQ(mbs[0].targets[1][4].item<int64_t>(), 10 + 7 + 5);  // row 1 is full length
}

#if __has_include("runtime/executor.hpp")
// The pipelines train on padded microbatches of different lengths with the
// plain loop's losses, bitwise (deterministic mode), under both policies and
// a split-backward hint; and the loss falls.
TEST(TrainSeqLen, PipelinesMatchThePlainLoopBitwise) {
  TrainOptions plain = tiny("1f1b", "uniform:4:16");
  plain.executor = "plain";
  const auto ref = losses(train(plain));
  EXPECT_LT(ref.back(), ref.front());
  for (const char* hint : {"1f1b", "zb-h1"})
    for (const char* policy : {"rrfp-wait", "rrfp-fixed"}) {
      TrainOptions o = tiny(hint, "uniform:4:16");
      o.executor = "starpu";
      o.policy = policy;
      SCOPED_TRACE(std::string(hint) + " " + policy);
      EXPECT_EQ(losses(train(o)), ref);
    }
  TrainOptions fixed = tiny("1f1b", "fixed");
  fixed.executor = "plain";
  EXPECT_NE(losses(train(fixed)), ref);  // the lengths did change the data
}
#endif

}  // namespace rrfp::train
