// Reading and writing the JSON files the tools exchange (profiles, plans):
// errors name the file; writes go to a temporary and are renamed, so a
// reader never sees half a file. Reports (--json) are written in place, so
// that /dev/stdout or a pipe works too, and a failed write (a full disk) is
// an error, not a truncated file and exit 0.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rrfp {

// What a JSON library error says, without its "[json.exception.type_error.302] "
// tag: the reason a message shows after naming the file and the field.
std::string json_reason(const std::exception& e);

// `what` names the kind of file in messages ("profile", "plan"). Throws SpecError.
nlohmann::json read_json_file(const std::string& path, const char* what);
void write_json_atomically(const std::string& path, const nlohmann::json& j);
// `indent` < 0: one line. Throws SpecError naming the file.
void write_json_file(const std::string& path, const nlohmann::json& j, int indent = 2);

// An optional integer field of `j` within [lo, hi], `fallback` when
// absent: 2.5 or 2^32 + 1 would otherwise be read as 2 or 1. Throws
// SpecError naming `where`, the key and the value.
int json_int_in(const nlohmann::json& j, const char* key, int fallback, int lo, int hi, const std::string& where);
// An optional string field of `j`, `fallback` when absent. Throws
// SpecError naming `where` and the key when it is not a string.
std::string json_text_or(const nlohmann::json& j, const char* key, const std::string& fallback,
                         const std::string& where);

}  // namespace rrfp
