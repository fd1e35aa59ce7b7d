#include "sim/json_file.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "graph/pipeline_spec.hpp"
#include "graph/input_file.hpp"

namespace rrfp {

std::string json_reason(const std::exception& e) {
  const std::string w = e.what();
  if (w.rfind("[json.exception.", 0) != 0) return w;
  const size_t end = w.find("] ");
  return end == std::string::npos ? w : w.substr(end + 2);
}

nlohmann::json read_json_file(const std::string& path, const char* what) {
  // Profiles and plans are kilobytes, a long run's trace up to hundreds of
  // megabytes: 4 GiB bounds a wrong path (a device), not a real file.
  const std::string text = read_file_capped(path, what, std::size_t{4} << 30);
  // The parser ends its input at a NUL byte, so a value followed by one
  // and anything after it would pass: no JSON text contains one.
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw SpecError(fmt::format("'{}' is not valid JSON: a NUL byte at offset {}", path, nul));
  try {
    // parse() of the whole file refuses anything after the value (two
    // files concatenated, a truncated second object), where >> stops early.
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(fmt::format("'{}' is not valid JSON: {}", path, json_reason(e)));
  }
}

int json_int_in(const nlohmann::json& j, const char* key, int fallback, int lo, int hi, const std::string& where) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<double>() < lo || v.get<double>() > hi)
    throw SpecError(fmt::format("{}: {} {} must be an integer from {} to {}", where, key, v.dump(), lo, hi));
  return v.get<int>();
}

std::string json_text_or(const nlohmann::json& j, const char* key, const std::string& fallback,
                         const std::string& where) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_string()) throw SpecError(fmt::format("{}: '{}' = {} must be a string", where, key, j[key].dump()));
  return j[key].get<std::string>();
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  // Not a regular file (/dev/stdout, a pipe): nothing to replace, write to it.
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return write_json_file(path, j);
  // One temporary per process: two processes writing the same file (tests
  // sharing a profile) would otherwise rename each other's half-written one.
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  try {
    write_json_file(tmp, j);
  } catch (const SpecError&) {
    std::remove(tmp.c_str());
    throw SpecError(fmt::format("cannot write '{}'", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw SpecError(fmt::format("cannot write '{}'", path));
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j, int indent) {
  std::ofstream out(path);
  if (!out) throw SpecError(fmt::format("cannot write '{}'", path));
  out << j.dump(indent) << "\n";
  out.close();  // the last bytes reach the file here: a full disk shows now
  if (out.fail()) throw SpecError(fmt::format("cannot write '{}' (disk full?)", path));
}

}  // namespace rrfp
