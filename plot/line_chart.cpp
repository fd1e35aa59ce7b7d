#include "plot/line_chart.hpp"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"
#include "plot/picture_file.hpp"

namespace rrfp {

void render_line_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                       const std::vector<Series>& series, const std::string& path, const ChartOptions& opt) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i)
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]), y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
  if (x0 > x1) throw SpecError("nothing to plot");
  y0 = std::min(y0, 1.0);
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double legend_w = series.size() > 1 ? 210 : 0;
  const double W = 800 + legend_w, H = 500, L = 70, R = 20 + legend_w, T = 40, B = 50;
  if (opt.log_x && !(x0 > 0)) throw SpecError("a logarithmic x axis needs positive x values");
  auto fx = [&](double x) { return opt.log_x ? std::log(x) : x; };
  PictureFile file(path);
  const bool svg = file.svg();
  cairo_surface_t* surf = svg ? cairo_svg_surface_create(file.write_path(), W, H)
                              : cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(W), static_cast<int>(H));
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> guard(surf, cairo_surface_destroy);
  if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) throw SpecError(fmt::format("cannot create picture '{}'", path));
  cairo_t* cr = cairo_create(surf);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  auto X = [&](double x) { return L + (fx(x) - fx(x0)) / (fx(x1) - fx(x0)) * (W - L - R); };
  auto Y = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 14);
  cairo_move_to(cr, L, 24);
  cairo_show_text(cr, title.c_str());
  cairo_set_font_size(cr, 11);
  for (int i = 0; i <= 5; ++i) {
    double yv = y0 + (y1 - y0) * i / 5, xv = x0 + (x1 - x0) * i / 5;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, L, Y(yv));
    cairo_line_to(cr, W - R, Y(yv));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, 8, Y(yv) + 4);
    cairo_show_text(cr, fmt::format("{:.3g}", yv).c_str());
    if (!opt.log_x) {
      cairo_move_to(cr, X(xv) - 10, H - B + 16);
      cairo_show_text(cr, fmt::format("{:.3g}", xv).c_str());
    }
  }
  if (opt.log_x)
    for (double xv : series[0].x) {
      cairo_move_to(cr, X(xv) - 10, H - B + 16);
      cairo_show_text(cr, fmt::format("{:.3g}", xv).c_str());
    }
  cairo_move_to(cr, W / 2 - 40, H - 12);
  cairo_show_text(cr, xlabel.c_str());
  cairo_move_to(cr, 8, T - 8);
  cairo_show_text(cr, ylabel.c_str());
  const double colors[][3] = {{0.30, 0.47, 0.66}, {0.89, 0.34, 0.34}, {0.33, 0.64, 0.29}, {0.96, 0.52, 0.09},
                              {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29}, {0.09, 0.75, 0.81}, {0.50, 0.50, 0.50}};
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& c = colors[(series[k].color >= 0 ? static_cast<size_t>(series[k].color) : k) % 8];
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
    cairo_set_line_width(cr, 2);
    const double dash[] = {6, 4};
    cairo_set_dash(cr, dash, series[k].dashed ? 2 : 0, 0);
    for (size_t i = 0; i < series[k].x.size(); ++i) {
      double px = X(series[k].x[i]), py = Y(series[k].y[i]);
      i == 0 ? cairo_move_to(cr, px, py) : cairo_line_to(cr, px, py);
    }
    cairo_stroke(cr);
    for (size_t i = 0; series[k].markers && i < series[k].x.size(); ++i) {
      cairo_arc(cr, X(series[k].x[i]), Y(series[k].y[i]), 3.5, 0, 6.2832);
      cairo_fill(cr);
    }
    cairo_set_dash(cr, dash, 0, 0);
    const double ly = T + 14 + 16 * k;
    if (legend_w > 0) {
      cairo_set_dash(cr, dash, series[k].dashed ? 2 : 0, 0);
      cairo_move_to(cr, W - R + 12, ly - 4);
      cairo_line_to(cr, W - R + 36, ly - 4);
      cairo_stroke(cr);
      cairo_set_dash(cr, dash, 0, 0);
      cairo_move_to(cr, W - R + 42, ly);
      cairo_show_text(cr, series[k].name.c_str());
    }
  }
  cairo_destroy(cr);
  cairo_surface_flush(surf);
  if (!svg && cairo_surface_write_to_png(surf, file.write_path()) != CAIRO_STATUS_SUCCESS)
    throw SpecError(fmt::format("cannot write '{}'", path));
  cairo_surface_finish(surf);
  if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) throw SpecError(fmt::format("cannot write '{}'", path));
  file.commit();
}

}  // namespace rrfp
