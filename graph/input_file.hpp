// Files the user names on the command line (hints, traces, profiles, plans,
// data, checkpoints): a directory opens as an ifstream and then fails its
// first read with a message that names neither the file nor the cause.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

// Throws SpecError when `path` is a directory; `what` names the kind of file.
inline void reject_directory(const std::string& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw SpecError(fmt::format("{} '{}' is a directory, not a file", what, path));
}

}  // namespace rrfp
