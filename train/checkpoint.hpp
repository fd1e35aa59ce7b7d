// Checkpoint files: a JSON header (model sizes, stage count, step, data
// position, RNG state) and named float32 tensors (parameters, optimizer
// moments), closed by a 64-bit FNV-1a checksum of everything before it.
// Torch-free so a forked child in the kill test can write them safely.
//
// Writing is atomic: the bytes go to a temporary file in the same
// directory, which is fsync'ed, renamed over the checkpoint, and the
// directory fsync'ed. A crash at any point leaves either the old or the new
// checkpoint, never a torn one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/pipeline_spec.hpp"

namespace rrfp::train {

// A checkpoint that is unreadable, corrupt or does not fit this run.
struct CheckpointError : SpecError {
  using SpecError::SpecError;
};

struct CkptTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

struct Checkpoint {
  nlohmann::json meta;
  std::vector<CkptTensor> tensors;
  const CkptTensor* find(const std::string& name) const;
};

// The file inside a checkpoint directory.
std::string checkpoint_path(const std::string& dir);

std::vector<char> encode_checkpoint(const Checkpoint& c);
// Throws CheckpointError naming what is wrong (`where` names the source).
Checkpoint decode_checkpoint(const std::vector<char>& bytes, const std::string& where);

// Creates `dir` if needed, then replaces checkpoint_path(dir) atomically.
// Throws SpecError on I/O failure (the previous checkpoint stays).
void write_file_atomic(const std::string& path, const std::vector<char>& bytes);
void save_checkpoint(const std::string& dir, const Checkpoint& c);
Checkpoint load_checkpoint(const std::string& dir);

}  // namespace rrfp::train
