// Validation loss against (simulated) training time, the time-to-accuracy
// picture of the asynchronous-training papers: one line per `rrfp train
// --json` run with --eval-every, its steps priced at a step time in ms.
//   loss_curves --png out.png --title T "sync lr 1e-3=25.69=sync.json" "paci lr 1e-3=15.97=paci.json:dashed"
// perf/async_targets.sh draws one chart per stage count and M with it.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plot/line_chart.hpp"

using namespace rrfp;

namespace {

// "LABEL=STEP_MS=FILE[:dashed]"; runs sharing a colour index share a colour.
Series read_series(const std::string& spec, int color) {
  const auto a = spec.find('='), b = spec.find('=', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos)
    throw std::runtime_error(fmt::format("'{}': expected LABEL=STEP_MS=FILE[:dashed]", spec));
  Series s;
  s.name = spec.substr(0, a);
  double step_ms = 0;
  const std::string ms = spec.substr(a + 1, b - a - 1);
  if (!CLI::detail::lexical_cast(ms, step_ms) || !(step_ms > 0) || !std::isfinite(step_ms))
    throw std::runtime_error(fmt::format("'{}': the step time '{}' is not a positive number of ms", spec, ms));
  std::string path = spec.substr(b + 1);
  if (path.size() > 7 && path.compare(path.size() - 7, 7, ":dashed") == 0) {
    s.dashed = true;
    path.resize(path.size() - 7);
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read '{}'", path));
  const nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& st : j.at("steps"))
    if (st.contains("val_loss")) {
      s.x.push_back(st.at("step").get<double>() * step_ms / 1e3);
      s.y.push_back(st.at("val_loss").get<double>());
    }
  if (s.x.empty()) throw std::runtime_error(fmt::format("'{}' has no validation loss (train with --eval-every)", path));
  s.color = color;
  s.markers = s.x.size() <= 40;  // an evaluation every step or two: the line alone
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string png, title = "validation loss against training time";
  std::vector<std::string> specs;
  std::vector<int> colors;
  CLI::App app{"validation loss against simulated training time, one line per rrfp train --json run"};
  app.add_option("--png", png, "the chart (PNG; .svg for SVG)")->required();
  app.add_option("--title", title, "chart title")->capture_default_str();
  app.add_option("--colors", colors, "palette index of each run (default: its position)")->delimiter(',');
  app.add_option("runs", specs, "LABEL=STEP_MS=FILE[:dashed], one per run")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (!colors.empty() && colors.size() != specs.size())
      throw std::runtime_error(fmt::format("--colors has {} entries for {} runs", colors.size(), specs.size()));
    std::vector<Series> series;
    for (size_t i = 0; i < specs.size(); ++i)
      series.push_back(read_series(specs[i], colors.empty() ? static_cast<int>(i) : colors[i]));
    render_line_chart(title, "training time (s, steps x simulated step)", "validation loss", series, png);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loss_curves: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
