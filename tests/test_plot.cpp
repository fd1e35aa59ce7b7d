#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "plot/render.hpp"
#include "plot/timeline.hpp"
#include "sim/sim_timeline.hpp"

using namespace rrfp;

namespace {
std::string tmp(const std::string& name) { return ::testing::TempDir() + name; }
}  // namespace

TEST(Plot, TraceRoundTripAndPictures) {
  Hint h = make_hint("1f1b", {3, 4, 0, -1, 0});
  SimOptions o;
  o.mode = Mode::ReadinessFirst;
  o.duration = [&](int id) { return unit_cost(h.graph->task(id).kind); };
  SimResult r = simulate(h, o);
  Timeline t = to_timeline(h, r, "1f1b sim");
  write_chrome_trace(t, tmp("t.json"));
  Timeline back = read_chrome_trace(tmp("t.json"));
  ASSERT_EQ(back.slices.size(), t.slices.size());
  EXPECT_EQ(back.tracks, t.tracks);
  EXPECT_EQ(back.title, "1f1b sim");
  EXPECT_EQ(back.slices[0].name, t.slices[0].name);
  EXPECT_NEAR(back.slices.back().end_s, t.slices.back().end_s, 1e-9);

  render_timeline(back, tmp("t.png"));
  std::ifstream png(tmp("t.png"), std::ios::binary);
  char sig[8] = {};
  png.read(sig, 8);
  EXPECT_EQ(std::string(sig + 1, 3), "PNG");
  render_timeline(back, tmp("t.svg"));
  std::ifstream svg(tmp("t.svg"));
  std::string all((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(all.find("<svg"), std::string::npos);
  EXPECT_THROW(render_timeline(back, tmp("t.bmp")), SpecError);
}

TEST(Plot, MalformedTracesAreRejected) {
  std::ofstream(tmp("bad.json")) << "{not json";
  EXPECT_THROW(read_chrome_trace(tmp("bad.json")), SpecError);
  std::ofstream(tmp("empty.json")) << R"({"traceEvents": []})";
  EXPECT_THROW(read_chrome_trace(tmp("empty.json")), SpecError);
  std::ofstream(tmp("nots.json")) << R"({"traceEvents": [{"ph":"X","name":"0F0"}]})";
  EXPECT_THROW(read_chrome_trace(tmp("nots.json")), SpecError);
  EXPECT_THROW(read_chrome_trace(tmp("missing.json")), SpecError);
  // Times past int64 nanoseconds would round every duration to 0.
  std::ofstream(tmp("far.json")) << R"({"traceEvents": [{"ph":"X","name":"0F0","ts":1e308,"dur":5}]})";
  EXPECT_THROW(read_chrome_trace(tmp("far.json")), SpecError);
  std::ofstream(tmp("long.json")) << R"({"traceEvents": [{"ph":"X","name":"0F0","ts":0,"dur":1e300}]})";
  EXPECT_THROW(read_chrome_trace(tmp("long.json")), SpecError);
  auto one_event = [](const std::string& name, double ts, double dur) {
    std::ofstream(tmp(name)) << fmt::format(R"({{"traceEvents": [{{"ph":"X","name":"0F0","ts":{},"dur":{}}}]}})", ts,
                                            dur);
    return read_chrome_trace(tmp(name));
  };
  EXPECT_NEAR(one_event("near.json", 9.19e15, 5).slices.at(0).start_s, 9.19e9, 1e-3);  // inside int64 ns
  EXPECT_NEAR(one_event("neg.json", -9.19e15, 0).slices.at(0).start_s, -9.19e9, 1e-3);
  EXPECT_THROW(one_event("past.json", 9.21e15, 0), SpecError);
  EXPECT_THROW(one_event("ends_past.json", 9.1e15, 2e14), SpecError);       // its end is past the limit
  EXPECT_THROW(one_event("too_long.json", -9e15, 1.8e16), SpecError);       // a duration past it
  // A field missing, or of the wrong type, is named with its event.
  std::ofstream(tmp("nodur.json")) << R"({"traceEvents": [{"ph":"X","name":"0F0","ts":1,"dur":"NaN"}]})";
  try {
    read_chrome_trace(tmp("nodur.json"));
    ADD_FAILURE() << "a string dur was taken";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("complete event 1 ('0F0') needs a number dur, not \"NaN\""),
              std::string::npos)
        << e.what();
  }
}

// A PNG too tall for cairo says why, and that an .svg would do.
TEST(Plot, APictureTooTallSaysWhy) {
  rrfp::Timeline t;
  for (int i = 0; i < 5000; ++i) {
    t.tracks.push_back("track " + std::to_string(i));
    t.slices.push_back({i, "0F0", 0, 1});
  }
  try {
    rrfp::render_timeline(t, ::testing::TempDir() + "/rrfp_tall.png");
    ADD_FAILURE() << "a 5000-track PNG was drawn";
  } catch (const rrfp::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("5000 tracks make it 1400 x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("an .svg has no such limit"), std::string::npos) << e.what();
  }
}
