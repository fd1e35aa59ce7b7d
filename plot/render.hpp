// Pictures with cairo (library RRFP::plot): timelines and line charts.
#pragma once

#include <string>

#include "plot/line_chart.hpp"
#include "plot/timeline.hpp"

namespace rrfp {

// Draws the timeline; the format follows the extension (.png or .svg).
void render_timeline(const Timeline& t, const std::string& path);

}  // namespace rrfp
