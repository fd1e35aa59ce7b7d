// Reading and writing the JSON files the tools exchange (profiles, plans):
// errors name the file; writes go to a temporary and are renamed, so a
// reader never sees half a file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rrfp {

// `what` names the kind of file in messages ("profile", "plan"). Throws SpecError.
nlohmann::json read_json_file(const std::string& path, const char* what);
void write_json_atomically(const std::string& path, const nlohmann::json& j);

}  // namespace rrfp
