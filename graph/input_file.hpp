// Files the user names on the command line (hints, traces, profiles, plans,
// data, checkpoints): a directory opens as an ifstream and then fails its
// first read with a message that names neither the file nor the cause; a
// device or a huge file would be read until memory runs out.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
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

// The whole of `path`, at most `max_bytes` of it: a wrong path (a device
// such as /dev/zero, a huge file) is refused by name instead of eating
// memory. Throws SpecError naming the file and `what` it should be.
inline std::string read_file_capped(const std::string& path, const char* what, std::size_t max_bytes) {
  reject_directory(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) {  // say why: a missing file and a forbidden one call for different fixes
    const int err = errno;
    throw SpecError(fmt::format("cannot read {} '{}'{}", what, path,
                                err ? ": " + std::system_category().message(err) : std::string()));
  }
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw SpecError(fmt::format("{} '{}' is larger than {} MiB, more than this reader takes", what, path,
                                  max_bytes >> 20));
  }
  if (in.bad()) throw SpecError(fmt::format("cannot read {} '{}'", what, path));
  return text;
}

}  // namespace rrfp
