// scene.cpp: scene primitives, rank colours, pixel binning (see scene.h).
#include "scene.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cplab::viz {

namespace {
Rgba hsv(double h, double s, double v) {
  const double i = std::floor(h * 6), f = h * 6 - i, p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(i) % 6) {
    case 0: r = v, g = t, b = p; break;
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    default: r = v, g = p, b = q; break;
  }
  auto u8 = [](double x) { return static_cast<std::uint8_t>(std::lround(std::clamp(x, 0.0, 1.0) * 255)); };
  return {u8(r), u8(g), u8(b), 255};
}
}  // namespace

Rgba rank_color(int r, int P) {
  static const Rgba tab10[] = {{78, 121, 167, 255}, {242, 142, 43, 255}, {225, 87, 89, 255},  {118, 183, 178, 255},
                               {89, 161, 79, 255},  {237, 201, 72, 255}, {176, 122, 161, 255}, {255, 157, 167, 255},
                               {156, 117, 95, 255}, {186, 176, 172, 255}};
  if (P <= 10) return tab10[((r % 10) + 10) % 10];
  // alternate two brightness levels so that neighbouring ranks stay apart at large P
  return hsv(0.85 * r / P, 0.65, r % 2 == 0 ? 0.95 : 0.75);
}

float text_width(const std::string& s) { return kCharW * static_cast<float>(s.size()); }

Box text_box(float x, float y, const std::string& s) { return {x, y, x + text_width(s), y + kLineH}; }

bool Box::hits(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }

bool Box::hits_segment(float ax, float ay, float bx, float by) const {
  // Liang-Barsky: clip the segment to the box; it hits when a piece of positive length is left inside
  double t0 = 0, t1 = 1;
  const double dx = bx - ax, dy = by - ay;
  const double p[4] = {-dx, dx, -dy, dy}, q[4] = {ax - x0, x1 - ax, ay - y0, y1 - ay};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] <= 0) return false;  // parallel to this edge and outside (or on it)
      continue;
    }
    const double r = q[i] / p[i];
    if (p[i] < 0) t0 = std::max(t0, r);
    else t1 = std::min(t1, r);
  }
  return t1 - t0 > 1e-6;
}

Rgba with_alpha(Rgba c, std::uint8_t a) { return {c.r, c.g, c.b, a}; }

Rgba mix(Rgba a, Rgba b, double t) {
  auto m = [t](std::uint8_t x, std::uint8_t y) { return static_cast<std::uint8_t>(std::lround(x + (y - x) * t)); };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b), m(a.a, b.a)};
}

Prim& Scene::add(Prim::Kind kind, std::vector<float> pts, std::string tag, int rank) {
  Prim p;
  p.kind = kind;
  p.pts = std::move(pts);
  p.tag = std::move(tag);
  p.rank = rank;
  prims.push_back(std::move(p));
  return prims.back();
}

void Scene::rect(float x0, float y0, float x1, float y1, Rgba f, Rgba s, std::string tag, int rank) {
  Prim& p = add(Prim::Kind::rect, {x0, y0, x1, y1}, std::move(tag), rank);
  p.fill = f;
  p.stroke = s;
}

void Scene::poly(std::vector<float> xy, Rgba f, std::string tag, int rank) {
  add(Prim::Kind::poly, std::move(xy), std::move(tag), rank).fill = f;
}

void Scene::line(float x0, float y0, float x1, float y1, Rgba c, float thickness) {
  Prim& p = add(Prim::Kind::line, {x0, y0, x1, y1}, "line", -1);
  p.stroke = c;
  p.thickness = thickness;
}

void Scene::arrow(float x0, float y0, float x1, float y1, Rgba c, float thickness, int from, int to, std::string label) {
  Prim& p = add(Prim::Kind::arrow, {x0, y0, x1, y1}, "arrow", from);
  p.stroke = c;
  p.thickness = thickness;
  p.peer = to;
  p.text = std::move(label);
}

void Scene::text(float x, float y, std::string s, Rgba c, std::string tag) {
  Prim& p = add(Prim::Kind::text, {x, y}, std::move(tag), -1);
  p.fill = c;
  p.text = std::move(s);
}

void Scene::circle(float cx, float cy, float radius, Rgba f, Rgba s, int rank) {
  Prim& p = add(Prim::Kind::circle, {cx, cy, radius}, "node", rank);
  p.fill = f;
  p.stroke = s;
}

int Scene::panel(std::string name, float x0, float y0, float x1, float y1) {
  panels.push_back(PanelRec{std::move(name), x0, y0, x1, y1});
  return static_cast<int>(panels.size()) - 1;
}

void Scene::tile_drawn(TileRec rec, size_t first_prim) {
  tiles.push_back(std::move(rec));
  for (size_t i = first_prim; i < prims.size(); ++i) prims[i].tile = static_cast<int>(tiles.size()) - 1;
}

double Scene::drawn_cells(int t) const {
  const TileRec& r = tiles.at(static_cast<size_t>(t));
  double area = 0;
  for (const Prim& p : prims) {
    if (p.tile != t || p.fill.a == 0) continue;
    if (p.kind == Prim::Kind::rect) {
      area += static_cast<double>(p.pts[2] - p.pts[0]) * static_cast<double>(p.pts[3] - p.pts[1]);
    } else if (p.kind == Prim::Kind::poly) {  // shoelace
      double a2 = 0;
      for (size_t i = 0; i + 1 < p.pts.size(); i += 2) {
        const size_t j = (i + 2) % p.pts.size();
        a2 += static_cast<double>(p.pts[i]) * p.pts[j + 1] - static_cast<double>(p.pts[j]) * p.pts[i + 1];
      }
      area += std::fabs(a2) / 2;
    }
  }
  return r.cell_w > 0 && r.cell_h > 0 ? area / (r.cell_w * r.cell_h) : 0;
}

std::vector<const Prim*> Scene::find(const std::string& tag) const {
  std::vector<const Prim*> out;
  for (const Prim& p : prims)
    if (p.tag == tag) out.push_back(&p);
  return out;
}

void PixelBins::add(const Span& s, double weight) {
  if (s.count <= 0) return;
  const index_t last = s.begin + (s.count - 1) * s.stride;
  int px = pixel_of(s.begin);
  const int px_last = pixel_of(last);
  while (true) {
    // tokens of the span inside pixel px: positions begin + k*stride with first_token(px) <= . < first_token(px+1)
    const index_t lo = std::max(s.begin, first_token(px));
    const index_t hi = std::min(last + 1, first_token(px + 1));  // exclusive
    if (hi > lo) {
      const index_t k0 = (lo - s.begin + s.stride - 1) / s.stride, k1 = (hi - 1 - s.begin) / s.stride;
      if (k1 >= k0) w[static_cast<size_t>(px)] += weight * static_cast<double>(k1 - k0 + 1);
    }
    if (px >= px_last) break;
    ++px;
  }
}

std::string human_count(double x) {
  const char* unit[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (std::fabs(x) >= 1000 && u < 5) x /= 1000, ++u;
  char b[32];
  std::snprintf(b, sizeof b, u == 0 ? "%.0f%s" : "%.3g%s", x, unit[u]);
  return b;
}

std::string human_bytes(double bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char b[32];
  std::snprintf(b, sizeof b, u == 0 ? "%.0f %s" : "%.3g %s", bytes, unit[u]);
  return b;
}

std::string human_time_us(double us) {
  char b[32];
  if (us < 1) std::snprintf(b, sizeof b, "%.3g ns", us * 1e3);
  else if (us < 1e3) std::snprintf(b, sizeof b, "%.3g us", us);
  else if (us < 1e6) std::snprintf(b, sizeof b, "%.3g ms", us / 1e3);
  else std::snprintf(b, sizeof b, "%.3g s", us / 1e6);
  return b;
}

std::string human_time_axis(double us, double span_us) {
  const double unit = span_us < 1 ? 1e-3 : span_us < 1e3 ? 1.0 : span_us < 1e6 ? 1e3 : 1e6;
  const char* name = span_us < 1 ? "ns" : span_us < 1e3 ? "us" : span_us < 1e6 ? "ms" : "s";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g %s", us / unit, name);
  return b;
}

std::string fixed(double x, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

std::string count_list(const std::vector<double>& v, bool bytes) {
  const bool exact = std::all_of(v.begin(), v.end(), [](double x) { return std::fabs(x) < 1e7; });
  std::string t = "[";
  for (size_t i = 0; i < v.size(); ++i)
    t += (i ? ", " : "") + (exact ? fixed(v[i], 0) : bytes ? human_bytes(v[i]) : human_count(v[i]));
  return t + "]";
}

}  // namespace cplab::viz
