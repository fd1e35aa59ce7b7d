// A picture is drawn into a temporary file next to its target and renamed
// over it once complete, so a failed write (a full disk, a directory that
// is not writable) leaves no empty or half picture behind. A target that
// exists and is not a regular file (/dev/stdout, a pipe) is written in place.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"  // SpecError

namespace rrfp {

// The format is the name's: .png or .svg.
inline bool picture_is_svg(const std::string& path) {
  auto ends_with = [&](const char* ext) { return path.size() >= 4 && path.compare(path.size() - 4, 4, ext) == 0; };
  if (!ends_with(".svg") && !ends_with(".png"))
    throw SpecError(fmt::format("'{}': picture format must be .png or .svg", path));
  return ends_with(".svg");
}

class PictureFile {
 public:
  explicit PictureFile(std::string path) : path_(std::move(path)) {
    svg_ = picture_is_svg(path_);
    struct stat st;
    in_place_ = stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    tmp_ = in_place_ ? path_ : path_ + ".tmp";
  }
  ~PictureFile() {
    if (!done_ && !in_place_) std::remove(tmp_.c_str());
  }
  PictureFile(const PictureFile&) = delete;
  PictureFile& operator=(const PictureFile&) = delete;

  bool svg() const { return svg_; }
  const std::string& path() const { return path_; }
  // Where cairo writes.
  const char* write_path() const { return tmp_.c_str(); }
  // The picture is complete: it replaces the target.
  void commit() {
    if (!in_place_ && std::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw SpecError(fmt::format("cannot write '{}'", path_));
    done_ = true;
  }

 private:
  std::string path_, tmp_;
  bool svg_ = false, in_place_ = false, done_ = false;
};

}  // namespace rrfp
