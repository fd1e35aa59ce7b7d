// Hint generators (the schedule zoo) and the registry that names them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

// --stages is the pipeline depth in devices (PyTorch's "ranks", the p of the
// bubble formulas). Chunked hints put `chunks` model stages on each device.
// A CSV hint (csv:PATH) fixes its own dimensions: there stages, microbatches
// and chunks of 0 (and split -1) mean "take the file's"; any other value must
// agree with the file or make_hint throws. The drivers pass 0 for a flag the
// user did not give (docs/hints.md).
struct HintParams {
  int stages = 4;        // devices in the pipeline
  int microbatches = 8;
  int chunks = 0;        // model stages per device; 0 = the hint's default
  int split = -1;        // -1: the hint's default, 0: fused BW, 1: split B+W
  int waves = 0;         // hanayo; 0 = default
};

struct HintInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  std::function<Hint(const HintParams&)> make;
};

const std::vector<HintInfo>& hint_registry();
// Looks a name or alias up; `csv:PATH` imports a PyTorch CSV file instead.
// Throws SpecError naming the problem (unknown hint, bad parameters).
Hint make_hint(const std::string& name, const HintParams& p);
// The hint at its own dimensions: a CSV file's, or a generator's defaults.
Hint make_hint(const std::string& name);
// The registry's name of an alias ("interleaved" -> "interleaved-1f1b");
// any other name as it is.
std::string canonical_hint_name(const std::string& name);
// True for "csv:PATH", a hint that brings its own dimensions.
inline bool is_csv_hint(const std::string& name) { return name.rfind("csv:", 0) == 0; }

// Individual generators.
Hint gen_gpipe(const HintParams& p);
Hint gen_1f1b(const HintParams& p);
Hint gen_zb_h1(const HintParams& p);
Hint gen_zb_h2(const HintParams& p);
Hint gen_interleaved_1f1b(const HintParams& p);
Hint gen_zbv(const HintParams& p);

// Helpers for generators.
// Resolve the split flag against a default.
bool resolve_split(const HintParams& p, bool default_split);
// Throws SpecError naming the hint for zero/negative/out-of-range values.
void check_params(const HintParams& p, const char* hint);
// For hints with one model stage per device: --chunks must be 0 or 1.
void check_no_chunks(const HintParams& p, const char* hint);
// For hints defined only for the split backward: --fused is an error.
void require_split(const HintParams& p, const char* hint);

}  // namespace rrfp
