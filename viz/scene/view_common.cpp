// view_common.cpp: the matrix frame and block drawing shared by the ring and masks views.
#include <algorithm>
#include <cmath>

#include "layout/thd.h"
#include "modes/hierarchical_cp.h"
#include "views.h"

namespace cplab::viz {

const std::vector<std::string>& view_names() {
  static const std::vector<std::string> names = {"ownership", "ring", "masks", "scheduler", "timeline", "check"};
  return names;
}

index_t MatrixFrame::token_at(float p) const {
  if (p < 0 || p >= side) return -1;
  return std::min<index_t>(seq - 1, static_cast<index_t>(static_cast<double>(p) * static_cast<double>(seq) / side));
}

index_t AxisOrder::index(index_t g) const {
  if (!units) return g;
  const RankLocal o = units->owner(g);
  return o.rank * units->local_len() + o.local;
}

AxisOrder row_order(const CpSpec& spec) {
  if (spec.mode() == Mode::a2a) return {};
  if (spec.mode() == Mode::a2a_p2p) return {hcp_outer_partition(spec.partition(), spec.ocp())};
  return {spec.partition()};
}

AxisOrder col_order(const CpSpec& spec) {
  if (spec.mode() == Mode::p2p) return {spec.partition()};
  if (spec.mode() == Mode::a2a_p2p) return {hcp_outer_partition(spec.partition(), spec.ocp())};
  return {};
}

int head_groups(const CpSpec& spec) { return static_cast<int>(spec.a2a_group()); }

int head_group_of(const CpSpec& spec, int rank) {
  if (spec.mode() == Mode::a2a) return rank;
  if (spec.mode() == Mode::a2a_p2p) return static_cast<int>(rank % spec.icp());  // hcp_rank(I, p, a) = p * I + a
  return 0;
}

std::vector<std::array<float, 3>> grid_boxes(int n, float x, float y, float w, float h, float gap) {
  // the column count that gives the largest squares
  int best_c = 1;
  float best = 0;
  for (int c = 1; c <= n; ++c) {
    const int r = (n + c - 1) / c;
    const float side = std::min((w - gap * static_cast<float>(c - 1)) / static_cast<float>(c),
                                (h - gap * static_cast<float>(r - 1)) / static_cast<float>(r));
    if (side > best) best = side, best_c = c;
  }
  std::vector<std::array<float, 3>> out;
  for (int i = 0; i < n; ++i)
    out.push_back({x + static_cast<float>(i % best_c) * (best + gap), y + static_cast<float>(i / best_c) * (best + gap),
                   std::max(1.0f, best)});
  return out;
}

bool draw_tile_cells(Scene& s, float x0, float y0, double cw, double ch, const AxisOrder& ro, const AxisOrder& co,
                     const Event& e, const CpSpec& spec, Rgba fill, const std::string& tag, const std::string& info) {
  const index_t nq = span_count(e.rows), nk = span_count(e.cols);
  if (nq * nk > kExactCells) return false;
  if (e.mask == "skipped" || nq == 0 || nk == 0) return true;
  const std::vector<index_t> q = positions(e.rows);
  std::vector<index_t> k = positions(e.cols);
  std::sort(k.begin(), k.end());
  const Mask m = token_mask(spec.packing(), q, k, spec.rule());  // the run's rule: causal, window, chunk
  std::vector<index_t> qi(q.size()), ki(k.size());
  for (size_t a = 0; a < q.size(); ++a) qi[a] = ro.index(q[a]);
  for (size_t b = 0; b < k.size(); ++b) ki[b] = co.index(k[b]);
  // per query row: its visible keys as runs of adjacent columns [c0, c1)
  std::vector<std::vector<std::pair<index_t, index_t>>> runs(q.size());
  for (size_t a = 0; a < q.size(); ++a) {
    const KeyRange kr = m.keys(static_cast<std::int64_t>(a), nk);
    std::vector<index_t> cols(ki.begin() + kr.lo, ki.begin() + std::max(kr.lo, kr.hi));
    std::sort(cols.begin(), cols.end());
    for (size_t b = 0; b < cols.size();) {
      size_t c = b + 1;
      while (c < cols.size() && cols[c] == cols[c - 1] + 1) ++c;
      runs[a].push_back({cols[b], cols[c - 1] + 1});
      b = c;
    }
  }
  // rows in panel order; adjacent rows with the same runs become one rectangle per run
  std::vector<size_t> order(q.size());
  for (size_t a = 0; a < order.size(); ++a) order[a] = a;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return qi[a] < qi[b]; });
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && qi[order[j]] == qi[order[j - 1]] + 1 && runs[order[j]] == runs[order[i]]) ++j;
    const double ya = y0 + static_cast<double>(qi[order[i]]) * ch, yb = y0 + static_cast<double>(qi[order[j - 1]] + 1) * ch;
    for (const auto& [c0, c1] : runs[order[i]]) {
      s.rect(static_cast<float>(x0 + static_cast<double>(c0) * cw), static_cast<float>(ya),
             static_cast<float>(x0 + static_cast<double>(c1) * cw), static_cast<float>(yb), fill, kNone, tag, e.rank);
      s.prims.back().info = info;
      s.prims.back().peer = e.peer;
    }
    i = j;
  }
  return true;
}

const std::vector<std::vector<Span>>* run_spans(const RunModel& m) {
  if (m.from_file()) return nullptr;
  for (const auto& ls : m.layouts)
    if (ls.layout == m.cp().layout() && ls.why_not.empty()) return &ls.spans;
  return nullptr;
}

void draw_boundaries(Scene& s, float x, float y, float side, index_t S, const AxisOrder& o,
                     const std::vector<std::vector<Span>>* spans, const Packing* pk) {
  const double px = static_cast<double>(side) / static_cast<double>(S);
  std::vector<index_t> cuts;
  if (o.units) {
    for (index_t u = 1; u < o.units->cp(); ++u) cuts.push_back(u * o.unit_len());
  } else if (spans != nullptr) {
    for (const auto& rank : *spans)
      for (const Span& sp : rank)
        if (sp.stride == 1) cuts.insert(cuts.end(), {sp.begin, sp.begin + sp.count});
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto draw = [&](index_t t, Rgba c, const char* tag) {
    if (t <= 0 || t >= S) return;
    const float p = static_cast<float>(static_cast<double>(t) * px);
    s.line(x + p, y, x + p, y + side, c);
    s.prims.back().tag = tag;
    s.line(x, y + p, x + side, y + p, c);
    s.prims.back().tag = tag;
  };
  if (static_cast<double>(cuts.size()) * 3 <= side)
    for (index_t t : cuts) draw(t, Rgba{90, 90, 100, 160}, "chunk_boundary");
  if (pk != nullptr && !o.units && static_cast<double>(pk->num_seqs()) * 3 <= side)
    for (index_t t : pk->cu_seqlens_padded) draw(t, Rgba{235, 235, 240, 200}, "sequence_boundary");
}

void draw_token_ticks(Scene& s, float x, float y, float side, index_t S, const AxisOrder& o) {
  // a step of 1, 2 or 5 x 10^k giving at most 6 ticks
  index_t step = 1;
  for (index_t p10 = 1; step * 6 < S; p10 *= 10)
    for (index_t m : {1, 2, 5})
      if (step * 6 < S) step = m * p10;
  const double px = static_cast<double>(side) / static_cast<double>(S);
  for (index_t t = 0; t <= S; t += step) {
    const float p = static_cast<float>(static_cast<double>(t) * px);
    const std::string label = std::to_string(t);
    s.line(x + p, y - 4, x + p, y, kLight);
    s.text(std::min(x + p, x + side - text_width(label)), y - 17, label, kLight, "tick");
    s.line(x - 4, y + p, x, y + p, kLight);
    s.text(x - 6 - text_width(label), std::min(y + p - 6, y + side - 12), label, kLight, "tick");
  }
  (void)o;
}

void draw_rank_legend(Scene& s, float x, float y, float w, int P) {
  if (P <= 16) {
    const float step = std::min(60.0f, w / static_cast<float>(P));
    for (int r = 0; r < P; ++r) {
      const float xr = x + static_cast<float>(r) * step;
      s.rect(xr, y + 2, xr + 10, y + 12, rank_color(r, P), kNone, "legend", r);
      s.text(xr + 13, y, "r" + std::to_string(r), kLight, "legend_text");
    }
    return;
  }
  const float sw = std::min(w - 120, 400.0f) / static_cast<float>(P);
  s.text(x, y, "rank 0", kLight, "legend_text");
  for (int r = 0; r < P; ++r)
    s.rect(x + 50 + static_cast<float>(r) * sw, y + 2, x + 50 + static_cast<float>(r + 1) * sw, y + 12, rank_color(r, P), kNone, "legend", r);
  s.text(x + 56 + static_cast<float>(P) * sw, y, "rank " + std::to_string(P - 1), kLight, "legend_text");
}

std::vector<GroupSquare> head_group_squares(Scene& s, const CpSpec& spec, float x, float y, float w, float h, const std::string& name,
                                            const AxisOrder& o, const std::vector<std::vector<Span>>* spans, const Packing* pk) {
  const int G = head_groups(spec);
  std::vector<GroupSquare> out;
  for (int g = 0; const auto& [bx, by, bs] : grid_boxes(G, x, y, w, h, G > 1 ? 14.0f : 0.0f)) {
    out.push_back({bx, by, bs, s.panel(G > 1 ? name + ", head group " + std::to_string(g) : name, bx, by, bx + bs, by + bs)});
    s.rect(bx, by, bx + bs, by + bs, kMatrix, kDim, "matrix");
    if (G > 1) s.text(bx, by - 12, "heads " + std::to_string(g * spec.h() / G) + ".." + std::to_string((g + 1) * spec.h() / G - 1), kLight);
    draw_boundaries(s, bx, by, bs, spec.S(), o, spans, pk);
    ++g;
  }
  return out;
}

void record_tile(Scene& s, const Event& e, int panel, double cw, double ch, size_t first_prim) {
  TileRec r;
  r.panel = panel;
  r.rank = e.rank, r.peer = e.peer;
  r.phase = to_string(e.phase);
  r.step = e.step;
  r.rows = e.rows, r.cols = e.cols;
  r.section = e.section, r.mask = e.mask;
  r.pairs = e.pairs;
  r.cell_w = cw, r.cell_h = ch;
  s.tile_drawn(std::move(r), first_prim);
}

namespace {

// rect [x0, x1] x [y0, y1] (x: key, y: query, in tokens) clipped to the causal half plane
// x <= y + off + 1 (cell (q, k) is the unit square at (k, q); keys k <= q + off are visible)
std::vector<double> clip_causal(double x0, double y0, double x1, double y1, double off = 0) {
  const double in[4][2] = {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}};
  std::vector<double> out;
  auto f = [off](const double* p) { return p[0] - p[1] - off - 1; };  // <= 0 inside
  for (int i = 0; i < 4; ++i) {
    const double* a = in[i];
    const double* b = in[(i + 1) % 4];
    const double fa = f(a), fb = f(b);
    if (fa <= 0) out.insert(out.end(), {a[0], a[1]});
    if ((fa < 0 && fb > 0) || (fa > 0 && fb < 0)) {
      const double t = fa / (fa - fb);
      out.insert(out.end(), {a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])});
    }
  }
  return out;
}

// the visible cells of an nq x nk tile whose cell (a, b) is the pixel box [x0 + b sx, x0 + (b+1) sx)
// x [y0 + a sy, y0 + (a+1) sy), as the reference's mask rule gives them (Mask::keys: each row's one
// visible run), consecutive rows with the same run merged into one rect. So a cell with no visible
// pair gets nothing (no half triangle above the diagonal). Draws nothing and returns false when the
// tile has more than kMaxRows rows (a cell is then a pixel or less: the caller draws an outline of
// the region instead); true when it drew (even if no cell is visible).
constexpr index_t kMaxRows = 512;
bool draw_mask_rows(Scene& s, double x0, double y0, double sx, double sy, index_t nq, index_t nk, const Mask& m, Rgba fill,
                    const std::string& tag, int rank, const std::string& info, bool& any) {
  any = false;
  if (nq > kMaxRows) return false;
  for (index_t a = 0; a < nq;) {
    const KeyRange kr = m.keys(a, nk);
    index_t b = a + 1;
    while (b < nq && m.keys(b, nk).lo == kr.lo && m.keys(b, nk).hi == kr.hi) ++b;
    if (kr.hi > kr.lo) {
      s.rect(static_cast<float>(x0 + static_cast<double>(kr.lo) * sx), static_cast<float>(y0 + static_cast<double>(a) * sy),
             static_cast<float>(x0 + static_cast<double>(kr.hi) * sx), static_cast<float>(y0 + static_cast<double>(b) * sy), fill,
             kNone, tag, rank);
      s.prims.back().info = info;
      any = true;
    }
    a = b;
  }
  return true;
}

void emit(Scene& s, const MatrixFrame& f, double k0, double q0, double k1, double q1, bool causal, Rgba fill,
          const std::string& tag, int rank, const std::string& info) {
  if (k1 <= k0 || q1 <= q0) return;
  auto X = [&](double k) { return f.x + static_cast<float>(k * f.side / static_cast<double>(f.seq)); };
  auto Y = [&](double q) { return f.y + static_cast<float>(q * f.side / static_cast<double>(f.seq)); };
  if (!causal || k1 <= q0 + 1) {  // entirely visible
    s.rect(X(k0), Y(q0), X(k1), Y(q1), fill, kNone, tag, rank);
    s.prims.back().info = info;
    return;
  }
  // causal: key k visible to query q iff k <= q, i.e. local key b to local row a iff b <= a + (q0 - k0)
  bool any = false;
  const double cell = f.side / static_cast<double>(f.seq);
  if (draw_mask_rows(s, X(k0), Y(q0), cell, cell, static_cast<index_t>(q1 - q0), static_cast<index_t>(k1 - k0),
                     Mask::causal(static_cast<std::int64_t>(q0 - k0)), fill, tag, rank, info, any))
    return;
  const std::vector<double> p = clip_causal(k0, q0, k1, q1);
  if (p.size() < 6) return;
  std::vector<float> xy;
  for (size_t i = 0; i < p.size(); i += 2) xy.insert(xy.end(), {X(p[i]), Y(p[i + 1])});
  s.poly(std::move(xy), fill, tag, rank);
  s.prims.back().info = info;
}

}  // namespace

void draw_tile_mask(Scene& s, float x0, float y0, float x1, float y1, index_t nq, index_t nk, const std::string& mask,
                    Rgba fill, const std::string& tag, int rank, const std::string& info) {
  const double sx = nk > 0 ? (x1 - x0) / static_cast<double>(nk) : 0, sy = nq > 0 ? (y1 - y0) / static_cast<double>(nq) : 0;
  bool any = false;
  if (mask == "skipped") {
    // a cross in an outline (the outline is the tile's primitive, drawn last). Under 6 pixels a side: nothing (thousands of tiny
    // outlines would only grey the panel and cost the frame its budget)
    if (x1 - x0 < 6 || y1 - y0 < 6) return;
    s.line(x0, y0, x1, y1, with_alpha(fill, 90));
    s.rect(x0, y0, x1, y1, kNone, with_alpha(fill, 140), tag, rank);
    s.prims.back().info = info;
    return;
  }
  if (mask == "none" || mask == "ranges" || mask.rfind("causal", 0) != 0 || nq <= 0 || nk <= 0) {
    s.rect(x0, y0, x1, y1, fill, mask == "ranges" ? kWhite : kNone, tag, rank);
    s.prims.back().info = info;
    return;
  }
  const double off = mask == "causal" ? 0.0 : std::stod(mask.substr(7));
  if (draw_mask_rows(s, x0, y0, sx, sy, nq, nk, Mask::causal(static_cast<std::int64_t>(off)), fill, tag, rank, info, any)) return;
  const std::vector<double> p = clip_causal(0, 0, static_cast<double>(nk), static_cast<double>(nq), off);
  if (p.size() < 6) return;
  std::vector<float> xy;
  for (size_t i = 0; i < p.size(); i += 2)
    xy.insert(xy.end(), {x0 + static_cast<float>(p[i] * sx), y0 + static_cast<float>(p[i + 1] * sy)});
  s.poly(std::move(xy), fill, tag, rank);
  s.prims.back().info = info;
}

void draw_block(Scene& s, const MatrixFrame& f, const Span& rows, const Span& cols, bool causal,
                const Packing* packing, Rgba fill, const std::string& tag, int rank, const std::string& info) {
  if (rows.count <= 0 || cols.count <= 0) return;
  // strided spans (striped layout): every stride-th token. Drawn cell by cell when there are few;
  // otherwise as their bounding block, fainter by the fraction of cells they hold.
  if (rows.stride > 1 || cols.stride > 1) {
    if (rows.count * cols.count <= 4096 && (rows.stride > 1 ? rows.count : 1) * (cols.stride > 1 ? cols.count : 1) <= 4096) {
      const index_t nr = rows.stride > 1 ? rows.count : 1, nc = cols.stride > 1 ? cols.count : 1;
      for (index_t a = 0; a < nr; ++a)
        for (index_t b = 0; b < nc; ++b) {
          const Span r1 = rows.stride > 1 ? Span{rows.begin + a * rows.stride, 1, 1} : rows;
          const Span c1 = cols.stride > 1 ? Span{cols.begin + b * cols.stride, 1, 1} : cols;
          draw_block(s, f, r1, c1, causal, packing, fill, tag, rank, info);
        }
      return;
    }
    const double dens = (rows.stride > 1 ? 1.0 / static_cast<double>(rows.stride) : 1.0) *
                        (cols.stride > 1 ? 1.0 / static_cast<double>(cols.stride) : 1.0);
    const Span rb{rows.begin, (rows.count - 1) * rows.stride + 1, 1}, cb{cols.begin, (cols.count - 1) * cols.stride + 1, 1};
    Rgba faint = with_alpha(fill, static_cast<std::uint8_t>(std::clamp(255.0 * std::sqrt(dens) * 2, 40.0, 255.0)));
    draw_block(s, f, rb, cb, causal, packing, faint, tag, rank, info + " (every " + std::to_string(std::max(rows.stride, cols.stride)) + "th token)");
    return;
  }
  const double r0 = static_cast<double>(rows.begin), r1 = r0 + static_cast<double>(rows.count);
  const double c0 = static_cast<double>(cols.begin), c1 = c0 + static_cast<double>(cols.count);
  if (packing == nullptr || (packing->num_seqs() <= 1 && !packing->has_padding())) {
    emit(s, f, c0, r0, c1, r1, causal, fill, tag, rank, info);
    return;
  }
  // packed: only query and key of the same sequence, real keys (thd.h token_mask)
  for (index_t q = 0; q < packing->num_seqs(); ++q) {
    const double s0 = static_cast<double>(packing->cu_seqlens_padded[static_cast<size_t>(q)]);
    const double real_end = s0 + static_cast<double>(packing->length(q));
    const double pad_end = static_cast<double>(packing->cu_seqlens_padded[static_cast<size_t>(q) + 1]);
    const double qa = std::max(r0, s0), qb = std::min(r1, pad_end);
    const double ka = std::max(c0, s0), kb = std::min(c1, real_end);
    if (qb <= qa || kb <= ka) continue;
    emit(s, f, ka, std::min(qa, real_end), kb, std::min(qb, real_end), causal, fill, tag, rank, info);
  }
}

bool draw_tile_rule(Scene& s, float x0, float y0, double cw, double ch, const AxisOrder& ro, const AxisOrder& co, const Event& e,
                    const CpSpec& spec, Rgba fill, const std::string& tag, const std::string& info) {
  if (e.rows.empty() || e.cols.empty() || e.mask == "skipped") return true;
  const PositionRule rule = spec.rule();
  const Packing& pk = spec.packing();
  auto faint = [&](index_t stride) {
    return with_alpha(fill, static_cast<std::uint8_t>(std::clamp(510.0 / std::sqrt(static_cast<double>(stride)), 40.0, 255.0)));
  };
  // one query row (position q) drawn over the pixel rows [ya, yb)
  auto row = [&](index_t q, float ya, float yb, bool rows_faint, index_t row_stride) {
    const index_t sq = pk.seq_of(q), start = pk.cu_seqlens_padded[static_cast<size_t>(sq)], len = pk.length(sq);
    if (q - start >= len) return;  // a padding query sees nothing
    const KeyRange kr = rule.keys(q - start, len);
    const index_t lo = start + kr.lo, hi = start + kr.hi;  // visible key positions [lo, hi)
    for (const Span& c : e.cols) {
      // the span's keys in [lo, hi): indices a..b-1 of the span's lattice
      const index_t a = lo <= c.begin ? 0 : (lo - c.begin + c.stride - 1) / c.stride;
      const index_t b = std::min(c.count, hi <= c.begin ? 0 : (hi - c.begin + c.stride - 1) / c.stride);
      if (b <= a) continue;
      const index_t ca = co.index(c.begin + a * c.stride), cb = co.index(c.begin + (b - 1) * c.stride);
      const bool side_by_side = std::max(ca, cb) - std::min(ca, cb) == b - 1 - a;  // keys adjacent in this order
      const Rgba f = !side_by_side ? faint(c.stride) : rows_faint ? faint(row_stride) : fill;
      const float xa = x0 + static_cast<float>(static_cast<double>(std::min(ca, cb)) * cw);
      s.rect(xa, ya, std::max(xa + 1.0f, x0 + static_cast<float>(static_cast<double>(std::max(ca, cb) + 1) * cw)), yb, f, kNone, tag, e.rank);
      s.prims.back().info = info;
    }
  };
  for (const Span& r : e.rows) {
    const index_t first = ro.index(r.begin), last = ro.index(r.begin + (r.count - 1) * r.stride);
    if (last - first == r.count - 1) {  // the span's rows are side by side: one pixel row at a time
      const int p0 = static_cast<int>(std::floor(static_cast<double>(first) * ch)), p1 = static_cast<int>(std::ceil(static_cast<double>(last + 1) * ch));
      for (int py = p0; py < p1; ++py) {
        const index_t i = std::max(first, static_cast<index_t>(std::ceil(py / ch)));
        if (i > last) break;
        const float ya = y0 + static_cast<float>(static_cast<double>(i) * ch);
        row(r.begin + (i - first) * r.stride, ya, std::max(ya + 1.0f, y0 + static_cast<float>(py + 1)), false, 1);
      }
    } else {  // strided rows in an order that spreads them (striped in global order)
      if (last < first) return false;
      const int p0 = static_cast<int>(std::floor(static_cast<double>(first) * ch)), p1 = static_cast<int>(std::ceil(static_cast<double>(last + 1) * ch));
      const bool dense = ch * static_cast<double>(r.stride) < 1;  // several of the span's rows share a pixel row
      for (int py = p0; py < p1; ++py) {
        const index_t t = std::max(first, static_cast<index_t>(std::ceil(py / ch)));  // first position of the pixel row
        const index_t k = (t - r.begin + r.stride - 1) / r.stride;
        if (k >= r.count) break;
        // many spans share each pixel row: the span holding its first position draws it (one
        // rectangle per pixel row in all, not one per span), at full strength
        if (dense && r.begin + k * r.stride != t) continue;
        const float ya = y0 + static_cast<float>(py);
        row(r.begin + k * r.stride, ya, ya + 1.0f, !dense, r.stride);
      }
    }
  }
  return true;
}

}  // namespace cplab::viz
