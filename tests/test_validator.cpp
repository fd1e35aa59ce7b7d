// The validator: structural errors, and strict orders that deadlock, with
// every stuck device, its task and what it waits for named.
#include <gtest/gtest.h>

#include "hints/csv.hpp"
#include "hints/generators.hpp"
#include "hints/validate.hpp"

using namespace rrfp;

namespace {
std::string error_of(const Hint& h) {
  try {
    validate_hint(h);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Validator, ReportOfAGeneratedHint) {
  HintParams p;
  p.stages = 4;
  p.microbatches = 8;
  ValidationReport v = validate_hint(make_hint("zb-h1", p));
  EXPECT_EQ(v.ranks, 4);
  EXPECT_EQ(v.stages, 4);
  EXPECT_EQ(v.microbatches, 8);
  EXPECT_EQ(v.backward, "split");
  EXPECT_EQ(v.placement_name, "linear");
  EXPECT_EQ(v.replay.makespan, 27);
  EXPECT_EQ(validate_hint(make_hint("1f1b", p)).backward, "fused");
}

TEST(Validator, CrossDeviceDeadlockNamesEveryStuckDevice) {
  // Rank 0 runs 0B0 before 0F1; rank 1 starts with 1F1, which needs 0F1,
  // and 0B0 needs 1B0, which rank 1 only reaches after 1F1: a cycle.
  Hint h = import_csv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", "deadlock.csv");
  std::string e = error_of(h);
  EXPECT_NE(e.find("deadlocks"), std::string::npos) << e;
  EXPECT_NE(e.find("device 0 stuck at 0B0 (position 1), waiting for 1B0 (device 1)"), std::string::npos) << e;
  EXPECT_NE(e.find("device 1 stuck at 1F1 (position 0), waiting for 0F1 (device 0)"), std::string::npos) << e;
  EXPECT_NE(e.find("<-- ERROR HERE: stuck at 0B0"), std::string::npos) << e;
  EXPECT_NE(e.find("<-- ERROR HERE: stuck at 1F1"), std::string::npos) << e;
  // Devices stuck behind the cycle are named with what they wait for too.
  Hint h3 = import_csv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n2F0,2B0,2F1,2B1\n", "d3.csv");
  std::string e3 = error_of(h3);
  EXPECT_NE(e3.find("device 0 stuck at 0B0"), std::string::npos) << e3;
  EXPECT_NE(e3.find("device 2 stuck at 2F0 (position 0), waiting for 1F0 (device 1)"), std::string::npos) << e3;
}

TEST(Validator, ReferenceFilesValidate) {
  for (const char* f : {"dualpipev_4rank_10mb.csv", "zb1p_2rank_2stagep_compute.csv"}) {
    Hint h = import_csv_file(std::string(RRFP_REFERENCE_DIR) + "/" + f);
    ValidationReport v = validate_hint(h);
    EXPECT_TRUE(v.replay.complete) << f;
    EXPECT_GT(v.replay.makespan, 0) << f;
  }
}

TEST(Validator, PassOrderOnOneDevice) {
  EXPECT_NE(error_of(import_csv("0F0,0W0,0I0\n")).find("runs 0W0 (position 1) before 0I0 (position 2)"),
            std::string::npos);
  EXPECT_NE(error_of(import_csv("0B0,0F0\n")).find("runs 0B0 (position 0) before 0F0 (position 1)"),
            std::string::npos);
}

TEST(Validator, MissingDuplicatedOrMisplacedTasks) {
  HintParams p;
  p.stages = 2;
  p.microbatches = 2;
  Hint h = make_hint("1f1b", p);
  Hint missing = h;
  missing.order[1].pop_back();
  EXPECT_NE(error_of(missing).find("missing"), std::string::npos);
  Hint dup = h;
  dup.order[1].back() = dup.order[1].front();
  EXPECT_NE(error_of(dup).find("twice"), std::string::npos);
  Hint moved = h;
  moved.order[0].push_back(moved.order[1].back());
  moved.order[1].pop_back();
  EXPECT_NE(error_of(moved).find("placed on device 1"), std::string::npos);
}

TEST(Validator, DeadlockFoundInLargeGeneratedOrder) {
  HintParams p;
  p.stages = 4;
  p.microbatches = 8;
  Hint h = make_hint("1f1b", p);
  ASSERT_EQ(error_of(h), "(no error)");
  // Device 3 takes microbatch 1 first (3F1 3B1 3F0 3B0 ...): still runs.
  std::swap(h.order[3][0], h.order[3][2]);
  std::swap(h.order[3][1], h.order[3][3]);
  ASSERT_EQ(error_of(h), "(no error)");
  // Device 2 now drops its warm-up (2F0 2B0 2F1 ...): 2B0 waits for 3B0,
  // which device 3 runs after 3F1, which waits for 2F1. A cycle.
  std::swap(h.order[2][1], h.order[2][2]);
  std::string e = error_of(h);
  EXPECT_NE(e.find("device 2 stuck at 2B0 (position 1), waiting for 3B0 (device 3)"), std::string::npos) << e;
  EXPECT_NE(e.find("device 3 stuck at 3F1 (position 0), waiting for 2F1 (device 2)"), std::string::npos) << e;
  EXPECT_NE(e.find("device 0 stuck at 0B0"), std::string::npos) << e;
}
