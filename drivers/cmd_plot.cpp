// rrfp plot TRACE.json -o timeline.png|svg
#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "drivers/flags.hpp"
#include "plot/render.hpp"
#include "plot/timeline.hpp"

namespace rrfp::cli {

void add_plot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot", "Draw a Chrome/Perfetto trace (rrfp bench/train/sim --trace) as a timeline picture");
  auto trace = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("timeline.png");
  auto title = std::make_shared<std::string>();
  cmd->add_option("trace", *trace, "trace JSON file")->required();
  cmd->add_option("-o,--output", *out, "picture to write (.png or .svg)")->check(picture_name());
  cmd->add_option("--title", *title, "title (default: the trace's process name)");
  cmd->callback([trace, out, title] {
    Timeline t = read_chrome_trace(*trace);
    if (!title->empty()) t.title = *title;
    render_timeline(t, *out);
    fmt::print("wrote {} ({} tasks on {} tracks)\n", *out, t.slices.size(), t.tracks.size());
  });
}

}  // namespace rrfp::cli
