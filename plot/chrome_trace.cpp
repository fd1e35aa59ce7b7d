#include <cmath>
#include <fstream>
#include <climits>
#include <cstdint>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/pipeline_spec.hpp"
#include "plot/timeline.hpp"
#include "sim/json_file.hpp"

namespace rrfp {

void write_chrome_trace(const Timeline& t, const std::string& path) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", t.title}}}});
  for (size_t i = 0; i < t.tracks.size(); ++i)
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", i}, {"args", {{"name", t.tracks[i]}}}});
  for (const Slice& s : t.slices)
    ev.push_back({{"name", s.name},
                  {"ph", "X"},
                  {"pid", 0},
                  {"tid", s.track},
                  {"ts", s.start_s * 1e6},
                  {"dur", (s.end_s - s.start_s) * 1e6}});
  std::ofstream out(path);
  if (!out) throw SpecError(fmt::format("cannot write trace file '{}'", path));
  out << nlohmann::json{{"traceEvents", ev}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!out.flush()) throw SpecError(fmt::format("cannot write trace file '{}'", path));
}

namespace {
constexpr double kMaxTraceMicros = 9.2e15;  // INT64_MAX ns, in microseconds
}  // namespace

Timeline read_chrome_trace(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "trace file");
  const nlohmann::json* events = &j;
  if (j.is_object()) {
    if (!j.contains("traceEvents")) throw SpecError(fmt::format("'{}' has no traceEvents", path));
    events = &j["traceEvents"];
  }
  if (!events->is_array()) throw SpecError(fmt::format("'{}': traceEvents is not a list", path));
  Timeline t;
  using Key = std::pair<long long, long long>;  // (pid, tid)
  std::map<Key, int> track_of;  // -> dense track index
  std::map<Key, std::string> names;
  auto id = [&path](const nlohmann::json& e, const char* field) -> long long {
    if (!e.contains(field)) return 0;
    const nlohmann::json& v = e[field];
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(LLONG_MAX))
      throw SpecError(fmt::format("'{}': an event's {} {} is out of range", path, field, v.dump()));
    if (!v.is_number_integer())
      throw SpecError(fmt::format("'{}': an event's {} {} is not an integer", path, field, v.dump()));
    return v.get<long long>();
  };
  auto key = [&](const nlohmann::json& e) { return Key{id(e, "pid"), id(e, "tid")}; };
  size_t index = 0;  // of the event being read, for messages
  try {
    for (const auto& e : *events) {
      ++index;
      if (!e.is_object()) continue;
      std::string ph = e.value("ph", "");
      // e["args"] on a const object without "args" is undefined behaviour.
      const nlohmann::json args = e.value("args", nlohmann::json::object());
      const std::string arg_name = args.is_object() ? args.value("name", "") : "";
      if (ph == "M" && e.value("name", "") == "thread_name") names[key(e)] = arg_name;
      if (ph == "M" && e.value("name", "") == "process_name") t.title = arg_name;
      if (ph != "X") continue;
      Slice s;
      const Key k = key(e);
      auto it = track_of.find(k);
      if (it == track_of.end()) it = track_of.emplace(k, static_cast<int>(track_of.size())).first;
      s.track = it->second;
      s.name = e.value("name", "");
      for (const char* field : {"ts", "dur"})
        if (!e.contains(field) || !e[field].is_number())
          throw SpecError(fmt::format("'{}': complete event {} ('{}') needs a number {}{}", path, index, s.name, field,
                                      e.contains(field) ? fmt::format(", not {}", e[field].dump()) : ""));
      const double ts = e.at("ts").get<double>();
      const double dur = e.at("dur").get<double>();
      if (!(dur >= 0) || !std::isfinite(dur) || !std::isfinite(ts))
        throw SpecError(fmt::format("'{}': event '{}' at ts {} has a negative duration or a time that is not finite "
                                    "(dur {})",
                                    path, s.name, e.at("ts").dump(), e.at("dur").dump()));
      // Perfetto holds times as int64 nanoseconds; beyond that a slice's
      // end minus its start rounds its duration away (ts 1e308 drew a line).
      if (std::fabs(ts) > kMaxTraceMicros || dur > kMaxTraceMicros || ts + dur > kMaxTraceMicros)
        throw SpecError(fmt::format("'{}': event '{}' at ts {} (dur {}) lies beyond a trace's range of +-{:.3g} us "
                                    "(int64 nanoseconds, as Perfetto)",
                                    path, s.name, e.at("ts").dump(), e.at("dur").dump(), kMaxTraceMicros));
      s.start_s = ts * 1e-6;
      s.end_s = s.start_s + dur * 1e-6;
      t.slices.push_back(s);
    }
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(fmt::format("'{}': trace event {} is malformed: {}", path, index, json_reason(e)));
  }
  if (t.slices.empty()) throw SpecError(fmt::format("'{}' holds no complete (\"ph\":\"X\") events", path));
  // Tracks sorted by their original key so device 0 is on top.
  std::vector<std::pair<Key, int>> order(track_of.begin(), track_of.end());
  std::vector<int> remap(order.size());
  for (size_t i = 0; i < order.size(); ++i) remap[order[i].second] = static_cast<int>(i);
  for (Slice& s : t.slices) s.track = remap[s.track];
  for (const auto& [k, idx] : order) {
    (void)idx;
    auto n = names.find(k);
    t.tracks.push_back(n != names.end() && !n->second.empty() ? n->second : fmt::format("track {}", t.tracks.size()));
  }
  return t;
}

}  // namespace rrfp
