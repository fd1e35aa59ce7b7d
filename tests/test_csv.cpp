// PyTorch CSV import/export: round trips, the reference files, and
// malformed input that must be rejected by a SpecError naming the place.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "hints/csv.hpp"
#include "hints/generators.hpp"
#include "hints/validate.hpp"

using namespace rrfp;

namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& text) {
  try {
    import_csv(text, "t.csv");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kDualPipeV = std::string(RRFP_REFERENCE_DIR) + "/dualpipev_4rank_10mb.csv";
const std::string kZb1p = std::string(RRFP_REFERENCE_DIR) + "/zb1p_2rank_2stagep_compute.csv";
}  // namespace

TEST(Csv, RoundTripEveryGenerator) {
  for (const HintInfo& info : hint_registry())
    for (int split : {-1, 0, 1})
      for (int S : {1, 3, 4})
        for (int M : {4, 8}) {
          HintParams p;
          p.stages = S;
          p.microbatches = M;
          p.split = split;
          p.chunks = info.name == "interleaved-1f1b" ? 2 : 0;
          Hint h;
          try {
            h = info.make(p);
          } catch (const SpecError&) {
            continue;  // zb-* refuse --fused, interleaved needs M % S == 0
          }
          if (h.spec().pipelines() > 1) {
            // Chimera: two copies of each stage; the CSV cannot name them.
            EXPECT_THROW(export_csv(h), SpecError);
            continue;
          }
          SCOPED_TRACE(info.name + " S=" + std::to_string(S) + " M=" + std::to_string(M) +
                       " split=" + std::to_string(split));
          std::string a = export_csv(h);
          Hint back = import_csv(a, "rt.csv");
          std::string b = export_csv(back);
          ASSERT_EQ(a, b) << info.name << " S=" << S << " M=" << M << " split=" << split;
          EXPECT_EQ(back.spec().placement[0], h.spec().placement[0]) << info.name;
          // One device holding two stages is both "interleaved" and "vshape";
          // other names (hanayo) are the generator's own and read back as explicit.
          const std::string& pn = h.spec().placement_name;
          if (S > 1 && (pn == "linear" || pn == "interleaved" || pn == "vshape")) {
            EXPECT_EQ(back.spec().placement_name, pn) << info.name;
          }
          EXPECT_EQ(back.spec().split_backward, h.spec().split_backward) << info.name;
          EXPECT_EQ(back.order.size(), h.order.size());
          // Same tasks in the same order, by label.
          for (size_t d = 0; d < h.order.size(); ++d)
            for (size_t i = 0; i < h.order[d].size(); ++i)
              ASSERT_EQ(back.graph->label(back.order[d][i]), h.graph->label(h.order[d][i]));
        }
}

TEST(Csv, ExportFormat) {
  HintParams p;
  p.stages = 2;
  p.microbatches = 2;
  EXPECT_EQ(export_csv(make_hint("1f1b", p)), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  p.split = 1;
  EXPECT_EQ(export_csv(make_hint("gpipe", p)), "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1F1,1I0,1W0,1I1,1W1\n");
}

TEST(Csv, DualPipeVReference) {
  Hint h = make_hint("csv:" + kDualPipeV);
  const PipelineSpec& sp = h.spec();
  EXPECT_EQ(sp.devices, 4);
  EXPECT_EQ(sp.stages, 8);
  EXPECT_EQ(sp.microbatches, 10);
  EXPECT_EQ(sp.placement_name, "vshape");
  EXPECT_EQ(sp.placement[0], (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_TRUE(sp.mixed_backward());
  EXPECT_TRUE(sp.is_split(7, 0));   // 7I0 ... 7W0
  EXPECT_FALSE(sp.is_split(7, 3));  // 7B3 inside an overlap group
  EXPECT_EQ(h.graph->task(h.order[0][8]).kind, Kind::B);
  // "(0F7;7B3)OVERLAP_F_B" is row 0, cell 18: two tasks, the first marked.
  ASSERT_FALSE(h.overlap_next.empty());
  EXPECT_EQ(h.graph->label(h.order[0][17]), "0F7");
  EXPECT_EQ(h.graph->label(h.order[0][18]), "7B3");
  EXPECT_EQ(h.overlap_next[0][17], 1);
  EXPECT_EQ(h.overlap_next[0][18], 0);
  // Nothing idle and the new notation: export reproduces the file exactly.
  EXPECT_EQ(export_csv(h), read_text(kDualPipeV));
  ValidationReport v = validate_hint(h);
  EXPECT_EQ(v.backward, "mixed");
  EXPECT_TRUE(v.replay.complete);
}

TEST(Csv, Zb1pReferenceOldNotation) {
  Hint h = import_csv_file(kZb1p);
  const PipelineSpec& sp = h.spec();
  EXPECT_EQ(sp.devices, 2);
  EXPECT_EQ(sp.stages, 4);
  EXPECT_EQ(sp.microbatches, 8);
  EXPECT_EQ(sp.placement_name, "interleaved");
  EXPECT_EQ(sp.placement[0], (std::vector<int>{0, 1, 0, 1}));
  // Old files: "2B0" followed by "2W0" is the input backward.
  EXPECT_TRUE(sp.split_backward);
  EXPECT_FALSE(sp.mixed_backward());
  EXPECT_EQ(h.graph->find(Kind::BW, 2, 0), -1);
  // Idle cells are skipped: row 1 starts with an empty cell.
  EXPECT_EQ(h.graph->label(h.order[1][0]), "1F0");
  EXPECT_EQ(h.graph->label(h.order[0][3]), "2F1");
  std::string out = export_csv(h);
  EXPECT_EQ(out.rfind("0F0,0F1,2F0,2F1,2I0,2W0,", 0), 0u) << out;
  EXPECT_EQ(export_csv(import_csv(out)), out);
  EXPECT_TRUE(validate_hint(h).replay.complete);
}

TEST(Csv, LenientWhitespaceLineEndsAndRaggedRows) {
  Hint h = import_csv(" 0F0 , 0F1,0B0,0B1 ,,\r\n1F0,1B0,1F1,1B1\r\n\r\n\n");
  EXPECT_EQ(h.spec().devices, 2);
  EXPECT_EQ(export_csv(h), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  // No final newline is fine too.
  EXPECT_EQ(import_csv("0F0,0B0").spec().stages, 1);
}

TEST(Csv, MalformedInputNamesLineColumnAndProblem) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"\n\n  \n", "empty"},
      {",,,\n", "empty"},
      {"0X0", "t.csv:1:1: bad cell '0X0': unknown kind 'X'"},
      {"0F0,0Q0", "t.csv:1:5:"},
      {"0F0,0B0\n1F0,1Z0", "t.csv:2:5:"},
      {"-1F0", "negative stage"},
      {"0F-1", "negative microbatch"},
      {"99999999999999999999999999F0", "stage number too large"},
      {"4096F0", "stage number too large"},
      {"0F99999999999999999999999", "microbatch number too large"},
      {"0F", "expected a microbatch number"},
      {"F0", "expected a stage number"},
      {"0F0x", "unexpected 'x'"},
      {"0FF0", "unknown kind 'FF'"},
      {"0SEND_F0", "not a computation"},
      {std::string("0F0,\x01\xff\x00junk", 11), "bad cell '\\x01\\xff\\x00junk'"},
      {"(0F0)OVERLAP_F_B", "at least two"},
      {"(0F0;0B0", "without ')'"},
      {"(0F0;0B0)FOO", "OVERLAP_F_B"},
      {"(0F0;;0B0)OVERLAP_F_B", "empty action"},
      {"0F0,0B0\n0F1,0B1", "t.csv:2:1: stage 0 appears on two rows: rank 0 (0F0) and rank 1 (0F1)"},
      {"0F0,0F0,0B0", "t.csv:1:5: duplicate task 0F0 (first at line 1, column 1)"},
      {"0F0,0B0,0F1", "stage 0 microbatch 1 has no backward"},
      {"0F0,0B0,0B1", "stage 0 microbatch 1 has no forward"},
      {"0F0,0I0", "no weight backward 0W0"},
      {"0F0,0W0", "no backward"},
      {"0F0,0I0,0B0,0W0", "both an input backward"},
      {"0F0,0B0\n\n1F0,1B0", "t.csv:2: rank 1 has no tasks"},
      {"0F0,0B0,2F0,2B0", "stage 1 appears on no row"},
      // A tiny file naming a huge microbatch: a missing task, found quickly.
      {"0F1000000,0B0", "stage 0 microbatch 0 has no forward"},
      {"0F0,0B0,4095F1048575", "has no"},
  };
  for (const Case& c : cases) {
    std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "input: " << c.text << "\nerror: " << e;
  }
}

TEST(Csv, RandomJunkNeverCrashes) {
  std::mt19937 rng(12345);
  std::string alphabet = "0123456789FIBW,;()\n -_OVERLAP\r";
  alphabet += '\0';
  alphabet += '\xff';
  const std::string seed = "0F0,1F0,0F1,(1F1;1B0)OVERLAP_F_B,0B0,1B1,0B1\n2F0,2B0,2F1,2B1\n";
  int ok = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    if (i % 2) {
      std::uniform_int_distribution<int> len(0, 80), ch(0, static_cast<int>(alphabet.size()) - 1);
      for (int n = len(rng); n > 0; --n) t += alphabet[ch(rng)];
    } else {
      t = seed;  // small mutations of a valid file
      std::uniform_int_distribution<int> pos(0, static_cast<int>(t.size()) - 1), ch(0, 255);
      for (int k = 0; k < 1 + i % 3; ++k) t[pos(rng)] = static_cast<char>(ch(rng));
    }
    try {
      Hint h = import_csv(t, "fuzz");
      EXPECT_EQ(export_csv(import_csv(export_csv(h))), export_csv(h));
      ++ok;
    } catch (const SpecError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(ok, 0);
}

TEST(Csv, MissingFileIsSpecError) {
  EXPECT_THROW(import_csv_file("/nonexistent/dir/x.csv"), SpecError);
  EXPECT_THROW(make_hint("csv:/nonexistent/x.csv"), SpecError);
}

// Found by comparing with PyTorch's reader (2026-12-05): it strips each
// action of an overlap group, spreadsheet exports start with a byte order
// mark, and --chunks must hold on every device, not on average.
TEST(Csv, PyTorchSpacingByteOrderMarkAndUnevenChunks) {
  Hint h = import_csv("0F0,(0F1; 0B0)OVERLAP_F_B,0B1\n1F0,1B0,1F1,1B1", "space.csv");
  ASSERT_FALSE(h.overlap_next.empty());
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream(dir + "rrfp_bom.csv", std::ios::binary) << "\xEF\xBB\xBF" << "0F0,0B0\n1F0,1B0\n";
  }
  EXPECT_EQ(import_csv_file(dir + "rrfp_bom.csv").spec().stages, 2);
  {  // device 0 holds stages 0, 1, 2; device 1 holds stage 3: 2 per device on average only
    std::ofstream(dir + "rrfp_uneven.csv") << "0F0,1F0,2F0,2B0,1B0,0B0\n3F0,3B0\n";
  }
  HintParams p;
  p.stages = p.microbatches = 0;  // the file's own
  p.chunks = 2;
  try {
    make_hint("csv:" + dir + "rrfp_uneven.csv", p);
    ADD_FAILURE() << "uneven --chunks accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("device 0 holds 3"), std::string::npos) << e.what();
  }
}
