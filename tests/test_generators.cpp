// Closed-form makespans and in-flight peaks of every generator, under the
// issue's unit costs (F=1, BW=2 fused; F=B=W=1 split; strict order).
#include <gtest/gtest.h>

#include <algorithm>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "hints/validate.hpp"

using namespace rrfp;

namespace {
HintParams params(int S, int M, int chunks = 0, int split = -1) {
  HintParams p;
  p.stages = S;
  p.microbatches = M;
  p.chunks = chunks;
  p.split = split;
  return p;
}

// Forwards device d runs before its first backward.
int warmup(const Hint& h, int d) {
  int n = 0;
  for (int id : h.order[d]) {
    if (is_backward(h.graph->task(id).kind)) break;
    ++n;
  }
  return n;
}
}  // namespace

TEST(Generators, GpipeAnd1f1bFused) {
  for (int S : {1, 2, 3, 4, 6, 8})
    for (int M : {1, 2, 3, 4, 8, 12}) {
      Hint g = make_hint("gpipe", params(S, M));
      Hint f = make_hint("1f1b", params(S, M));
      ReplayResult rg = replay_unit(g), rf = replay_unit(f);
      ASSERT_TRUE(rg.complete && rf.complete);
      EXPECT_EQ(rg.makespan, 3 * (M + S - 1)) << "gpipe S=" << S << " M=" << M;
      EXPECT_EQ(rf.makespan, 3 * (M + S - 1)) << "1f1b S=" << S << " M=" << M;
      EXPECT_EQ(rg.peak_inflight[0], M);
      EXPECT_EQ(rf.peak_inflight[0], std::min(S, M));
      EXPECT_NEAR(rf.bubble_ratio, (S - 1.0) / (M + S - 1.0), 1e-12);
      EXPECT_FALSE(f.spec().split_backward);
    }
  EXPECT_EQ(make_hint("bf", params(4, 8)).order, make_hint("1f1b", params(4, 8)).order);
}

TEST(Generators, ClassicHintsAcceptSplit) {
  for (const char* name : {"gpipe", "1f1b"}) {
    Hint h = make_hint(name, params(4, 8, 0, 1));
    EXPECT_TRUE(h.spec().split_backward);
    EXPECT_GE(h.graph->find(Kind::W, 2, 3), 0);
    ReplayResult r = replay_unit(h);
    ASSERT_TRUE(r.complete);
    // B and W back to back cost what BW costs, but B releases upstream sooner.
    EXPECT_LE(r.makespan, 3 * (8 + 4 - 1));
  }
}

TEST(Generators, ZbH1ClosedForm) {
  for (int S : {1, 2, 3, 4, 5, 6, 8})
    for (int M : {1, 2, 3, 4, 6, 8, 12, 16}) {
      Hint h = make_hint("zb-h1", params(S, M));
      ASSERT_TRUE(h.spec().split_backward);
      ReplayResult r = replay_unit(h);
      ASSERT_TRUE(r.complete);
      // 1F1B's activation memory, and its warm-up: S-d forwards before the first B.
      EXPECT_EQ(r.peak_inflight[0], std::min(S, M)) << "S=" << S << " M=" << M;
      for (int d = 0; d < S; ++d) EXPECT_EQ(warmup(h, d), std::min(S - d, M)) << "S=" << S << " M=" << M;
      if (M >= S) {
        // A third of 1F1B's bubble: 3(S-1) -> S-1.
        EXPECT_EQ(r.makespan, 3 * M + S - 1) << "S=" << S << " M=" << M;
        EXPECT_NEAR(r.bubble_ratio, (S - 1.0) / (3 * M + S - 1.0), 1e-12);
      } else {
        // Lower bounds: last device's 3M tasks after step S-1; the critical path M+2S.
        EXPECT_GE(r.makespan, std::max(3 * M + S - 1, M + 2 * S));
        EXPECT_LE(r.makespan, 3 * (M + S - 1));
      }
    }
  EXPECT_EQ(make_hint("bfw", params(4, 8)).order, make_hint("zb-h1", params(4, 8)).order);
}

TEST(Generators, ZbH1DefersWeightGradients) {
  Hint h = make_hint("zb-h1", params(4, 8));
  const TaskGraph& g = *h.graph;
  // Device d defers its W by d microbatches: W of m right after B of m + d.
  for (int d = 0; d < 4; ++d)
    for (int m = 0; m + d < 8; ++m)
      EXPECT_EQ(h.rank[g.find(Kind::W, d, m)], h.rank[g.find(Kind::B, d, m + d)] + 1) << "d=" << d << " m=" << m;
  // Every W after its own B.
  for (int s = 0; s < 4; ++s)
    for (int m = 0; m < 8; ++m) EXPECT_LT(h.rank[g.find(Kind::B, s, m)], h.rank[g.find(Kind::W, s, m)]);
}

// W still reads what F saved, so a zero-bubble order's memory lasts until W:
// deferring every W to the end of the step would hold M microbatches, as
// GPipe does. ZB-H1 holds 1F1B's peak (S), ZB-H2 2S-1, ZB-V 2S chunks.
TEST(Generators, ZeroBubbleHintsHoldBoundedMemoryUntilW) {
  for (int S : {1, 2, 3, 4, 6, 8})
    for (int M : {1, 2, 4, 8, 16, 32}) {
      const auto why = ::testing::Message() << "S=" << S << " M=" << M;
      Hint h1 = make_hint("zb-h1", params(S, M)), h2 = make_hint("zb-h2", params(S, M));
      Hint v = make_hint("zbv", params(S, M));
      for (int d = 0; d < S; ++d) {
        EXPECT_LE(h1.peak_held()[d], std::min(S, M)) << why << " zb-h1 d=" << d;
        EXPECT_LE(h2.peak_held()[d], std::min(2 * S - 1, M)) << why << " zb-h2 d=" << d;
        EXPECT_LE(v.peak_held()[d], std::min(2 * S, 2 * M)) << why << " zbv d=" << d;
      }
    }
  // The fused 1F1B's held memory is its in-flight memory.
  Hint f = make_hint("1f1b", params(4, 8));
  EXPECT_EQ(f.peak_held(), f.peak_inflight());
}

TEST(Generators, ZbH2NoWorseThanZbH1WithMoreWarmup) {
  for (int S : {1, 2, 3, 4, 6, 8})
    for (int M : {1, 2, 4, 6, 8, 12, 16}) {
      ReplayResult r1 = replay_unit(make_hint("zb-h1", params(S, M)));
      Hint h2 = make_hint("zb-h2", params(S, M));
      ReplayResult r2 = replay_unit(h2);
      ASSERT_TRUE(r2.complete);
      EXPECT_LE(r2.makespan, r1.makespan) << "S=" << S << " M=" << M;
      EXPECT_LE(r2.peak_inflight[0], std::min(2 * S - 1, M));
      if (M >= S) {
        EXPECT_EQ(r2.makespan, 3 * M + S - 1);
      }
    }
  // More warm-up forwards than ZB-H1 fill device 0's start-up bubble.
  Hint h2 = make_hint("zb-h2", params(4, 16));
  EXPECT_EQ(replay_unit(h2).peak_inflight[0], 7);
  EXPECT_GT(warmup(h2, 0), 4);
}

TEST(Generators, InterleavedMegatronClosedForm) {
  for (int p : {1, 2, 3, 4})
    for (int v : {2, 3, 4})
      for (int k : {1, 2, 3}) {
        const int M = k * p;
        Hint h = make_hint("interleaved-1f1b", params(p, M, v));
        EXPECT_EQ(h.spec().stages, p * v);
        EXPECT_EQ(h.spec().devices, p);
        EXPECT_EQ(h.spec().placement_name, "interleaved");
        ReplayResult r = replay_unit(h);
        ASSERT_TRUE(r.complete);
        EXPECT_EQ(r.makespan, 3 * (v * M + p - 1)) << "p=" << p << " v=" << v << " M=" << M;
        Hint hs = make_hint("interleaved", params(p, M, v, 1));
        EXPECT_TRUE(hs.spec().split_backward);
        EXPECT_LE(replay_unit(hs).makespan, r.makespan);
      }
  // Megatron's warm-up on device d: 2(p-1-d) + (v-1)p forwards (p=4, v=2, M=8).
  Hint h = make_hint("interleaved-1f1b", params(4, 8, 2));
  for (int d = 0; d < 4; ++d) EXPECT_EQ(warmup(h, d), 2 * (3 - d) + 4 + 1) << d;  // +1: the steady F first
  EXPECT_EQ(h.graph->label(h.order[1][0]), "1F0");
  EXPECT_EQ(h.graph->label(h.order[1][4]), "5F0");  // chunk 1 after p microbatches of chunk 0
}

TEST(Generators, ZbvVShape) {
  // (S, M): every M from S+2 to 2S+2 (where the list scheduler's range and
  // the phases' meet, at 2S-1), and 16.
  std::vector<std::pair<int, int>> sizes;
  for (int S : {1, 2, 3, 4, 6, 7, 8}) {
    for (int M = S + 2; M <= 2 * S + 2; ++M) sizes.push_back({S, M});
    if (S + 2 <= 16) sizes.push_back({S, 16});
  }
  for (auto [S, M] : sizes) {
      Hint h = make_hint("zbv", params(S, M));
      EXPECT_EQ(h.spec().placement_name, "vshape");
      EXPECT_EQ(h.spec().stages, 2 * S);
      EXPECT_EQ(h.spec().device_of(2 * S - 1, 0), 0);
      ReplayResult r = replay_unit(h);
      ASSERT_TRUE(r.complete);
      // 6M unit tasks per device; the last device cannot start before S-1.
      EXPECT_EQ(r.makespan, 6 * M + S - 1) << "S=" << S << " M=" << M;
      EXPECT_LE(r.peak_inflight[0], 2 * S);
    }
  for (int M : {1, 2, 3, 5}) EXPECT_TRUE(replay_unit(make_hint("zbv", params(4, M))).complete);
}

TEST(Generators, EveryGeneratorValidates) {
  for (const HintInfo& info : hint_registry())
    for (int S : {1, 2, 3, 4})
      for (int M : {4, 8}) {
        HintParams p = params(S, M, info.name == "interleaved-1f1b" ? 2 : 0);
        if (info.name == "interleaved-1f1b" && M % S != 0) continue;
        Hint h;
        try {
          h = info.make(p);
        } catch (const SpecError&) {
          // Only zoo hints with their own constraints (chimera: even S) may refuse.
          bool mine = info.name == "gpipe" || info.name == "1f1b" || info.name == "zb-h1" || info.name == "zb-h2" ||
                      info.name == "interleaved-1f1b" || info.name == "zbv";
          EXPECT_FALSE(mine) << info.name << " S=" << S << " M=" << M;
          continue;
        }
        ValidationReport v = validate_hint(h);
        EXPECT_EQ(v.ranks, S) << info.name;
        EXPECT_EQ(v.microbatches, M) << info.name;
      }
}

TEST(Generators, BadParametersAreSpecErrors) {
  auto msg = [](const char* name, HintParams p) -> std::string {
    try {
      make_hint(name, p);
    } catch (const SpecError& e) {
      return e.what();
    }
    return "";
  };
  for (const HintInfo& info : hint_registry()) {
    int c = info.name == "interleaved-1f1b" ? 2 : 0;
    EXPECT_NE(msg(info.name.c_str(), params(0, 8, c)).find("--stages"), std::string::npos) << info.name;
    EXPECT_NE(msg(info.name.c_str(), params(-3, 8, c)).find("--stages"), std::string::npos) << info.name;
    EXPECT_NE(msg(info.name.c_str(), params(2, 0, c)).find("--microbatches"), std::string::npos) << info.name;
    EXPECT_NE(msg(info.name.c_str(), params(2, -1, c)).find("--microbatches"), std::string::npos) << info.name;
    EXPECT_NE(msg(info.name.c_str(), params(2, 4, -2)).find("--chunks"), std::string::npos) << info.name;
  }
  EXPECT_NE(msg("interleaved-1f1b", params(4, 8)).find("--chunks"), std::string::npos);
  EXPECT_NE(msg("interleaved-1f1b", params(4, 8, 1)).find("--chunks"), std::string::npos);
  EXPECT_NE(msg("interleaved-1f1b", params(4, 6, 2)).find("multiple"), std::string::npos);
  EXPECT_NE(msg("zb-h1", params(4, 8, 0, 0)).find("split"), std::string::npos);
  EXPECT_NE(msg("zb-h2", params(4, 8, 0, 0)).find("split"), std::string::npos);
  EXPECT_NE(msg("zbv", params(4, 8, 0, 0)).find("split"), std::string::npos);
  EXPECT_NE(msg("zbv", params(4, 8, 3)).find("2 chunks"), std::string::npos);
  EXPECT_NE(msg("gpipe", params(4, 8, 2)).find("--chunks"), std::string::npos);
  EXPECT_NE(msg("no-such-hint", params(4, 8)).find("unknown hint"), std::string::npos);
  EXPECT_NE(msg("csv:", params(4, 8)).find("path"), std::string::npos);
}
