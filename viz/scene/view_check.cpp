// view_check.cpp: a `cplab check` report as an error heat map (see views.h).
//
// One band per output (O, LSE, dQ, dK, dV) that the report compared: columns = every rank's
// chunks (the claimed layout's), rows = heads; each cell's colour is its error over the output's
// tolerance on a log scale: green shades below the tolerance (darker = further below), yellow to
// red above it (red = 10^4 times the tolerance or more), magenta for an infinite error. The title is
// the verdict; the notes give the first fault that explains the numbers and where the error lives.
// Every value drawn is the report's (check_model.h); nothing is recomputed here.
#include <algorithm>
#include <cmath>

#include "views.h"

namespace cplab::viz {

namespace {

Rgba heat(double err, double tol) {
  if (!std::isfinite(err)) return {220, 60, 220, 255};
  const double r = std::log10(std::max(err, 1e-300) / std::max(tol, 1e-300));  // <= 0: within tolerance
  if (r <= 0) {
    const double t = std::clamp(-r / 8.0, 0.0, 1.0);  // 8 decades below: darkest
    return mix(Rgba{110, 200, 110, 255}, Rgba{30, 70, 35, 255}, t);
  }
  const double t = std::clamp(r / 4.0, 0.0, 1.0);
  return mix(Rgba{240, 220, 70, 255}, Rgba{220, 50, 40, 255}, t);
}

}  // namespace

Scene check_view(const CheckModel& m, const ViewState& v, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  s.title = m.verdict + "   (" + m.source + ")";
  const int n = static_cast<int>(m.outputs.size());
  const float x0 = 90, top = 8, gap = 26;
  const float band_h = std::max(12.0f, (H - top - 40 - gap * static_cast<float>(n)) / static_cast<float>(std::max(1, n)));
  const int cols = m.ranks * m.chunks;
  const float cw = std::max(1.0f, (W - x0 - 10) / static_cast<float>(cols));
  for (int k = 0; k < n; ++k) {
    const CheckModel::Output& o = m.outputs[static_cast<size_t>(k)];
    const float y0 = top + static_cast<float>(k) * (band_h + gap) + gap - 8;
    double worst = 0;
    for (double x : o.v) worst = std::max(worst, x);
    s.text(4, y0, o.name, kText);
    char b[160];
    std::snprintf(b, sizeof b, "%s: max error %.3g, tolerance %.3g (%s)", o.name.c_str(), worst, o.tolerance,
                  worst <= o.tolerance ? "within" : "ABOVE");
    s.text(x0, y0 - 14, b, worst <= o.tolerance ? kLight : Rgba{240, 140, 120, 255});
    const float ch = band_h / static_cast<float>(o.heads);
    for (int r = 0; r < m.ranks; ++r)
      for (int c = 0; c < m.chunks; ++c)
        for (int h = 0; h < o.heads; ++h) {
          const float x = x0 + static_cast<float>(r * m.chunks + c) * cw, y = y0 + static_cast<float>(h) * ch;
          const double e = o.at(r, c, h, m.chunks);
          s.rect(x, y, x + std::max(1.0f, cw - (cw > 4 ? 1.0f : 0.0f)), y + std::max(1.0f, ch - (ch > 4 ? 1.0f : 0.0f)), heat(e, o.tolerance),
                 kNone, "check_cell", r);
          Prim& p = s.prims.back();
          p.id = h;
          p.peer = c;
          std::snprintf(b, sizeof b, "%s, rank %d, %s, head %d: error %.3g (tolerance %.3g)", o.name.c_str(), r,
                        m.chunk_labels[static_cast<size_t>(r)][static_cast<size_t>(c)].c_str(), h, e, o.tolerance);
          p.info = b;
          if (v.mx >= x && v.mx < x + cw && v.my >= y && v.my < y + ch) s.hover = b;
        }
    // rank boundaries and labels
    for (int r = 0; r < m.ranks; ++r) {
      const float x = x0 + static_cast<float>(r * m.chunks) * cw;
      if (r > 0) s.line(x - 0.5f, y0 - 2, x - 0.5f, y0 + band_h + 2, kWhite);
      if (cw * static_cast<float>(m.chunks) >= 24 && k == n - 1) s.text(x + 2, y0 + band_h + 3, "r" + std::to_string(r), kLight, "tick");
    }
  }
  s.notes.push_back(m.explained_by.empty() ? "no known fault explains the numbers" : "explained by: " + m.explained_by);
  for (const std::string& w : m.where) s.notes.push_back(w);
  s.notes.push_back("columns: each rank's chunks (lines between ranks), rows: heads; colour: error / tolerance on a log scale, "
                    "green below (darker = further below), yellow to red above (red: 10^4 x), magenta: infinite");
  return s;
}

}  // namespace cplab::viz
