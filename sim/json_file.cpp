#include "sim/json_file.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

nlohmann::json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw SpecError(fmt::format("cannot read {} '{}'", what, path));
  try {
    nlohmann::json j;
    in >> j;
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(fmt::format("'{}' is not valid JSON: {}", path, e.what()));
  }
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw SpecError(fmt::format("cannot write '{}'", path));
    out << j.dump(2) << "\n";
    if (!out.flush()) throw SpecError(fmt::format("cannot write '{}'", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw SpecError(fmt::format("cannot write '{}'", path));
}

}  // namespace rrfp
