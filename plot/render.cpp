// Cairo rendering of a Timeline to PNG or SVG.
#include "plot/render.hpp"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"
#include "plot/picture_file.hpp"

namespace rrfp {

namespace {

struct Rgb {
  double r, g, b;
};

// Kind letter of a cell like "12I3": the first non-digit character.
char kind_letter(const std::string& name) {
  for (char c : name)
    if (c < '0' || c > '9') return c;
  return '?';
}

Rgb color_of(char kind) {
  switch (kind) {
    case 'F': return {0.30, 0.47, 0.66};  // forward: blue
    case 'I': return {0.33, 0.64, 0.29};  // input backward: green
    case 'W': return {0.96, 0.52, 0.09};  // weight backward: orange
    case 'B': return {0.89, 0.34, 0.34};  // fused backward: red
    default: return {0.6, 0.6, 0.6};
  }
}

std::string mb_of(const std::string& name) {
  size_t i = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  return i + 1 < name.size() ? name.substr(i + 1) : name;
}

double nice_step(double span) {
  double raw = span / 8, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

void draw(cairo_t* cr, const Timeline& t, double W, double H, double left, double top, double row) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  double t0 = 1e300, t1 = -1e300;
  for (const Slice& s : t.slices) t0 = std::min(t0, s.start_s), t1 = std::max(t1, s.end_s);
  double span = std::max(t1 - t0, 1e-9), plot_w = W - left - 20;
  auto x_of = [&](double ts) { return left + (ts - t0) / span * plot_w; };
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 14);
  cairo_move_to(cr, left, 20);
  cairo_show_text(cr, t.title.c_str());
  // Time axis in milliseconds.
  double step = nice_step(span * 1e3);
  cairo_set_font_size(cr, 10);
  for (double ms = 0; ms <= span * 1e3 + 1e-9; ms += step) {
    double x = x_of(t0 + ms * 1e-3);
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_move_to(cr, x, top - 4);
    cairo_line_to(cr, x, H - 20);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, x + 2, top - 6);
    cairo_show_text(cr, fmt::format("{:g} ms", ms).c_str());
  }
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 12);
    cairo_move_to(cr, 8, top + i * row + row * 0.6);
    cairo_show_text(cr, t.tracks[i].c_str());
  }
  for (const Slice& s : t.slices) {
    double x = x_of(s.start_s), w = std::max(x_of(s.end_s) - x, 0.5), y = top + s.track * row + 3;
    Rgb c = color_of(kind_letter(s.name));
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_rectangle(cr, x, y, w, row - 6);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
    std::string label = mb_of(s.name);
    cairo_set_font_size(cr, std::min(11.0, row * 0.4));
    cairo_text_extents_t ext;
    cairo_text_extents(cr, label.c_str(), &ext);
    if (ext.width + 4 < w) {
      cairo_move_to(cr, x + (w - ext.width) / 2, y + (row - 6) / 2 + ext.height / 2);
      cairo_show_text(cr, label.c_str());
    }
  }
  // Legend.
  double lx = left;
  for (auto [k, name] : {std::pair{'F', "forward"}, {'I', "backward (input)"}, {'W', "backward (weights)"},
                         {'B', "backward (fused)"}}) {
    Rgb c = color_of(k);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_rectangle(cr, lx, H - 16, 12, 12);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 11);
    cairo_move_to(cr, lx + 16, H - 6);
    cairo_show_text(cr, name);
    lx += 150;
  }
}

}  // namespace

void render_timeline(const Timeline& t, const std::string& path) {
  if (t.slices.empty()) throw SpecError("nothing to draw: the timeline has no slices");
  const double W = 1400, left = 140, top = 50, row = std::clamp(400.0 / std::max<size_t>(t.tracks.size(), 1), 14.0, 44.0);
  const double H = top + row * t.tracks.size() + 30;
  PictureFile file(path);
  const bool svg = file.svg();
  cairo_surface_t* surface = svg ? cairo_svg_surface_create(file.write_path(), W, H)
                                 : cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(W), static_cast<int>(H));
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> guard(surface, cairo_surface_destroy);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS)  // a PNG is at most 32767 pixels high in cairo
    throw SpecError(fmt::format("cannot create picture '{}': {} tracks make it {:.0f} x {:.0f} pixels ({}){}", path,
                                t.tracks.size(), W, H, cairo_status_to_string(cairo_surface_status(surface)),
                                svg ? "" : "; an .svg has no such limit"));
  cairo_t* cr = cairo_create(surface);
  draw(cr, t, W, H, left, top, row);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  if (!svg && cairo_surface_write_to_png(surface, file.write_path()) != CAIRO_STATUS_SUCCESS)
    throw SpecError(fmt::format("cannot write '{}'", path));
  cairo_surface_finish(surface);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) throw SpecError(fmt::format("cannot write '{}'", path));
  file.commit();
}

}  // namespace rrfp
