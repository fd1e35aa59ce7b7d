#include "sim/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/pipeline_spec.hpp"
#include "sim/json_file.hpp"

namespace rrfp {

namespace {

nlohmann::json stats_json(const PassStats& s) { return {{"mean_s", s.mean_s}, {"std_s", s.std_s}}; }

// Far beyond any layer; keeps sums over 64 layers and the plans written
// from them finite (a plan's reader refuses more than 1e18).
constexpr double kMaxBytes = 1e15;

// A field that must be a number in [0, most].
double non_negative(const nlohmann::json& j, const char* key, const std::string& where, double most) {
  if (!j.contains(key) || !j[key].is_number())
    throw SpecError(fmt::format("{}: '{}' is missing or not a number", where, key));
  const double v = j[key].get<double>();
  if (!(v >= 0 && v <= most)) throw SpecError(fmt::format("{}: '{}' is {:g} (must be in [0, {:g}])", where, key, v, most));
  return v;
}

PassStats parse_stats(const nlohmann::json& layer, const char* key, const std::string& where) {
  if (!layer.contains(key) || !layer[key].is_object())
    throw SpecError(fmt::format("{}: pass '{}' is missing", where, key));
  const std::string w = fmt::format("{} pass {}", where, key);
  return {non_negative(layer[key], "mean_s", w, kMaxTaskSeconds),
          non_negative(layer[key], "std_s", w, kMaxTaskSeconds)};
}

// A profile of tensor-parallel groups must be of a model that splits into
// them (train/tp_model.hpp): heads, width and MLP widths
// divisible by T. Checked here so that a hand-edited file fails when read,
// not at train time with a flag the user never gave.
void check_splits(const ModelProfile& p) {
  const int T = p.tensor_parallel;
  if (T == 1) return;
  for (const char* key : {"heads", "d_model"})
    if (p.config.contains(key) && p.config[key].is_number_integer() && p.config[key].get<int>() % T != 0)
      throw SpecError(fmt::format("{}: tensor_parallel {} does not divide the model's {} ({})", p.source, T, key,
                                  p.config[key].get<int>()));
  if (p.config.contains("mlp_widths") && p.config["mlp_widths"].is_array())
    for (const auto& w : p.config["mlp_widths"])
      if (w.is_number_integer() && w.get<int>() % T != 0)
        throw SpecError(fmt::format("{}: tensor_parallel {} does not divide an MLP width ({})", p.source, T,
                                    w.get<int>()));
}

ModelProfile parse_profile_fields(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("format") || j["format"] != "rrfp-profile")
    throw SpecError(fmt::format("'{}' is not an rrfp profile (write one with rrfp profile -o FILE)", source));
  // Absent: version 1, as every profile rrfp has written says.
  const int version = json_int_in(j, "version", 1, 0, 1000000, source);
  if (version != 1)
    throw SpecError(fmt::format("{}: profile format version {}; this rrfp reads version 1", source, version));
  ModelProfile p;
  p.source = source;
  if (!j.contains("model")) throw SpecError(fmt::format("{}: 'model' is missing (gpt-tiny or mm-tiny)", source));
  p.model = json_text_or(j, "model", "", source);
  if (p.model != "gpt-tiny" && p.model != "mm-tiny")
    throw SpecError(fmt::format("{}: unknown model '{}' (gpt-tiny or mm-tiny)", source, p.model));
  if (!j.contains("config") || !j["config"].is_object())
    throw SpecError(fmt::format("{}: no 'config' object (the model's sizes, which a plan must match)", source));
  p.config = j["config"];
  // mm-tiny's first layer is its vision encoder, sized by enc_layers; a
  // gpt-tiny profile relabelled mm-tiny has none.
  if (p.model == "mm-tiny" && !p.config.contains("enc_layers"))
    throw SpecError(fmt::format("{}: an mm-tiny profile's config needs 'enc_layers' (its vision encoder's blocks)",
                                source));
  // The sizes a run's config is compared with, where given: each a positive integer.
  for (const char* key : {"vocab", "d_model", "heads", "layers", "seq_len", "enc_layers"}) {
    const auto v = p.config.find(key);
    if (v != p.config.end() && (!v->is_number_integer() || v->get<double>() < 1 || v->get<double>() > 1e9))
      throw SpecError(fmt::format("{}: config '{}' = {} must be a positive integer", source, key, v->dump()));
  }
  if (!j.contains("micro_batch_size")) throw SpecError(fmt::format("{}: 'micro_batch_size' is missing", source));
  p.micro_batch_size = json_int_in(j, "micro_batch_size", 0, 1, 1000000, source);
  p.tensor_parallel = json_int_in(j, "tensor_parallel", 1, 1, kMaxTensorParallel, source);  // absent: profiles before it
  p.executor = json_text_or(j, "executor", "", source);
  if (!p.executor.empty() && p.executor != "starpu" && p.executor != "plain")
    throw SpecError(fmt::format("{}: executor '{}' (starpu or plain)", source, p.executor));
  p.workers = json_int_in(j, "workers", 0, 0, 1000000, source);  // 0 or absent: profiles before it
  p.repetitions = json_int_in(j, "repetitions", 0, 0, 1000000000, source);
  p.machine = json_text_or(j, "machine", "", source);
  if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].size() < 3)
    throw SpecError(fmt::format("{}: 'layers' must list the first layer, at least one block and the last", source));
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    const auto& l = j["layers"][i];
    const std::string where = fmt::format("{}: layer {}", source, i);
    if (!l.is_object()) throw SpecError(where + " is not an object");
    LayerProfile lp;
    lp.name = json_text_or(l, "name", fmt::format("layer{}", i), where);
    lp.f = parse_stats(l, "F", where);
    lp.b = parse_stats(l, "B", where);
    lp.w = parse_stats(l, "W", where);
    lp.bw = parse_stats(l, "BW", where);
    lp.activation_bytes = non_negative(l, "activation_bytes", where, kMaxBytes);
    lp.weight_bytes = non_negative(l, "weight_bytes", where, kMaxBytes);
    p.layers.push_back(std::move(lp));
  }
  double total = 0;
  for (const LayerProfile& l : p.layers) total += l.f.mean_s + l.b.mean_s + l.w.mean_s + l.bw.mean_s;
  if (!(total > 0)) throw SpecError(fmt::format("{}: every layer's every pass takes 0 s: nothing to tune", source));
  const auto& mb = j.value("message_bytes", nlohmann::json::array());
  if (!mb.is_array())
    throw SpecError(fmt::format("{}: 'message_bytes' = {} must be a list of one size per cut", source,
                                mb.dump().substr(0, 40)));
  if (mb.size() + 1 != p.layers.size())
    throw SpecError(fmt::format("{}: 'message_bytes' needs one entry per cut ({}), has {}", source,
                                p.layers.size() - 1, mb.size()));
  for (const auto& v : mb) {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxBytes))
      throw SpecError(fmt::format("{}: a message size is not a number in [0, {:g}]", source, kMaxBytes));
    p.message_bytes.push_back(v.get<double>());
  }
  if (p.config.contains("layers") && p.config["layers"] != p.blocks())
    throw SpecError(fmt::format("{}: {} blocks listed, the model config says {}", source, p.blocks(),
                                p.config["layers"].dump()));
  check_splits(p);
  return p;
}

}  // namespace

void canonical_gpt_json(nlohmann::json& gpt) {
  if (!gpt.is_object() || !gpt.contains("mlp_widths") || !gpt["mlp_widths"].is_array() || !gpt.contains("d_model") ||
      !gpt["d_model"].is_number_integer())
    return;
  for (const auto& w : gpt["mlp_widths"])
    if (w != 4 * gpt["d_model"].get<int>()) return;
  gpt.erase("mlp_widths");
}

bool same_model_config(nlohmann::json a, nlohmann::json b) {
  canonical_gpt_json(a);
  canonical_gpt_json(b);
  return a == b;
}

ModelProfile parse_profile(const nlohmann::json& j, const std::string& source) {
  try {
    return parse_profile_fields(j, source);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type that no check names
    throw SpecError(fmt::format("{}: a field has the wrong type: {}", source, json_reason(e)));
  }
}

ModelProfile read_profile(const std::string& path) { return parse_profile(read_json_file(path, "profile"), path); }

nlohmann::json profile_json(const ModelProfile& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerProfile& l : p.layers)
    layers.push_back({{"name", l.name},
                      {"F", stats_json(l.f)},
                      {"B", stats_json(l.b)},
                      {"W", stats_json(l.w)},
                      {"BW", stats_json(l.bw)},
                      {"activation_bytes", l.activation_bytes},
                      {"weight_bytes", l.weight_bytes}});
  return {{"format", "rrfp-profile"},
          {"version", 1},
          {"model", p.model},
          {"config", p.config},
          {"micro_batch_size", p.micro_batch_size},
          {"tensor_parallel", p.tensor_parallel},
          {"executor", p.executor},
          {"workers", p.workers},
          {"repetitions", p.repetitions},
          {"machine", p.machine},
          {"layers", layers},
          {"message_bytes", p.message_bytes}};
}

void write_profile(const std::string& path, const ModelProfile& p) { write_json_atomically(path, profile_json(p)); }

std::vector<int> even_counts(const std::string& model, int blocks, int stages) {
  if (stages < 1) throw SpecError("need at least one stage");
  const bool mm = model == "mm-tiny" && stages > 1;
  const int split = mm ? stages - 1 : stages;
  if (split > blocks)
    throw SpecError(fmt::format("{} model stages but the model has only {} blocks to split", stages, blocks));
  std::vector<int> c;
  if (mm) c.push_back(0);
  for (int s = 0; s < split; ++s) c.push_back(blocks / split + (s < blocks % split ? 1 : 0));
  return c;
}

void check_counts(const std::vector<int>& counts, int blocks) {
  const int S = static_cast<int>(counts.size());
  if (S < 1) throw SpecError("a partition needs at least one stage");
  long long sum = 0;  // counts near INT_MAX must not wrap around to the right total
  for (int s = 0; s < S; ++s) {
    if (counts[s] < 0 || counts[s] > blocks)
      throw SpecError(fmt::format("partition: stage {} has {} blocks, the model has {}", s, counts[s], blocks));
    if (counts[s] == 0 && s > 0 && s + 1 < S)
      throw SpecError(fmt::format("partition: stage {} holds no block (only the first and last stages may)", s));
    sum += counts[s];
  }
  if (sum != blocks) throw SpecError(fmt::format("partition covers {} blocks, the model has {}", sum, blocks));
}

StageCosts stage_costs(const ModelProfile& p, const std::vector<int>& counts) {
  check_counts(counts, p.blocks());
  const int S = static_cast<int>(counts.size());
  StageCosts c;
  c.cost.assign(S, BaseCost{0, 0, 0, 0});
  c.activation_bytes.assign(S, 0);
  c.weight_bytes.assign(S, 0);
  c.sigma.assign(S, 0);
  int layer = 0;
  for (int s = 0; s < S; ++s) {
    const int last = layer + counts[s] + (s == 0 ? 1 : 0) + (s + 1 == S ? 1 : 0);  // exclusive
    double var = 0;  // of the stage's F + B + W, its layers taken as independent
    for (int i = layer; i < last; ++i) {
      const LayerProfile& l = p.layers[i];
      c.cost[s].f += l.f.mean_s * 1e3;
      c.cost[s].b += l.b.mean_s * 1e3;
      c.cost[s].w += l.w.mean_s * 1e3;
      c.cost[s].bw += l.bw.mean_s * 1e3;
      c.activation_bytes[s] += l.activation_bytes;
      c.weight_bytes[s] += l.weight_bytes;
      var += l.f.std_s * l.f.std_s + l.b.std_s * l.b.std_s + l.w.std_s * l.w.std_s;
    }
    const double mean = (c.cost[s].f + c.cost[s].b + c.cost[s].w) * 1e-3;
    const double cv = mean > 0 ? std::sqrt(var) / mean : 0;
    c.sigma[s] = std::sqrt(std::log1p(cv * cv));
    if (s + 1 < S) c.message_bytes = std::max(c.message_bytes, p.message_bytes[last - 1]);
    layer = last;
  }
  return c;
}

}  // namespace rrfp
