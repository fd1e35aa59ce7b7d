// A model's measured costs per layer (`rrfp profile -o FILE`): what the
// tuner searches over and what `--profile FILE` replays in `rrfp sim` and
// `rrfp bench`. Pure C++; the measuring side is train/profile_model.hpp.
//
// Layers are the units a partition can cut between: the first (gpt-tiny's
// embedding, mm-tiny's vision encoder), every block, and the last (final
// norm, head and loss). A partition into S model stages is given as blocks
// per stage (`counts`): stage 0 holds the first layer and counts[0] blocks,
// stage S-1 counts[S-1] blocks and the last layer.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "codelets/cost_model.hpp"

namespace rrfp {

// The most members of a tensor-parallel group a profile or plan may name.
inline constexpr int kMaxTensorParallel = 1024;

struct PassStats {
  double mean_s = 0, std_s = 0;
};

struct LayerProfile {
  std::string name;              // "embed", "vision", "block3", "head"
  PassStats f, b, w, bw;         // b: input backward, w: weight backward, bw: fused
  double activation_bytes = 0;   // held per microbatch from F to the end of its backward
  double weight_bytes = 0;       // parameters (fp32)
};

struct ModelProfile {
  std::string source;            // the file, for messages
  std::string model;             // gpt-tiny | mm-tiny
  nlohmann::json config;         // the model's sizes (rrfp train's identity "gpt", "enc_layers")
  int micro_batch_size = 1;
  // Members of a tensor-parallel group a device was measured as (`rrfp
  // profile --tensor-parallel T`): pass times, collectives included,
  // weight and activation bytes are a member's (docs/tuner.md).
  int tensor_parallel = 1;
  std::string executor;          // starpu | plain (empty: a profile written before it was recorded)
  // Workers busy while the passes were timed (devices x members; 1 for
  // plain; 0: a profile written before it was recorded). Degrees measured
  // among different numbers of busy workers do not compare (docs/tuner.md).
  int workers = 0;
  int repetitions = 0;
  std::string machine;           // BLAS and threads, as measured
  std::vector<LayerProfile> layers;  // first, blocks..., last
  std::vector<double> message_bytes; // per cut: after layers[i], i < layers.size() - 1
  int blocks() const { return static_cast<int>(layers.size()) - 2; }
};

// Throws SpecError naming the file and the problem (missing, not a
// profile, a negative or missing time, a layer count that does not match).
ModelProfile read_profile(const std::string& path);
ModelProfile parse_profile(const nlohmann::json& j, const std::string& source);
nlohmann::json profile_json(const ModelProfile& p);
void write_profile(const std::string& path, const ModelProfile& p);

// Drops an `mlp_widths` that lists only the default 4 x d_model, as
// rrfp train writes the default model, so that files written with the
// default widths spelled out (checkpoints, plans, profiles) still match.
void canonical_gpt_json(nlohmann::json& gpt);
// Whether two model configs (profiles', plans', a run's) are one model:
// equal once both are canonical.
bool same_model_config(nlohmann::json a, nlohmann::json b);

// The even split `rrfp train` uses without a plan (train/config.hpp's
// partition_blocks; mm-tiny's vision encoder alone on stage 0).
std::vector<int> even_counts(const std::string& model, int blocks, int stages);
// Throws SpecError unless `counts` is a partition of `blocks` blocks into
// stages (train's partition_from_counts, the same rule).
void check_counts(const std::vector<int>& counts, int blocks);

// What one partition costs, per model stage.
struct StageCosts {
  std::vector<BaseCost> cost;            // mean times, in milliseconds
  std::vector<double> activation_bytes;  // per microbatch
  std::vector<double> weight_bytes;
  // Per stage: the lognormal sigma matching the coefficient of variation of
  // its F + B + W (layers' spreads taken as independent).
  std::vector<double> sigma;
  double message_bytes = 0;              // the largest message at a cut
};
StageCosts stage_costs(const ModelProfile& p, const std::vector<int>& counts);

// Bytes a device holds for its stages' parameters under AdamW: weights,
// gradients and two moments.
inline constexpr double kStateCopies = 4;

}  // namespace rrfp
