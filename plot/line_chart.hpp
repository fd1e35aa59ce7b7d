// A small line chart (one or more series over a shared x axis), drawn with
// cairo to PNG or SVG; used by `rrfp sim sweep`.
#pragma once

#include <string>
#include <vector>

namespace rrfp {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

void render_line_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                       const std::vector<Series>& series, const std::string& path);

}  // namespace rrfp
