// A small line chart (one or more series over a shared x axis), drawn with
// cairo to PNG or SVG; used by `rrfp sim sweep`.
#pragma once

#include <string>
#include <vector>

namespace rrfp {

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
  bool markers = true;  // a dot at each point; off for dense series (hundreds of points)
  int color = -1;  // palette index; -1 = the series' position
};

struct ChartOptions {
  bool log_x = false;  // logarithmic x axis, ticks at the data's x values (e.g. 8, 16, ..., 128 stages)
};

// Up to 8 series get distinct colours; the legend sits right of the plot.
void render_line_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                       const std::vector<Series>& series, const std::string& path, const ChartOptions& opt = {});

}  // namespace rrfp
