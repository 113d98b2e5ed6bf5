// view_common.cpp: the matrix frame and block drawing shared by the ring and masks views.
#include <array>
#include <algorithm>
#include <cmath>

#include "views.h"

namespace cplab::viz {

const std::vector<std::string>& view_names() {
  static const std::vector<std::string> names = {"ownership", "ring", "masks", "scheduler", "timeline"};
  return names;
}

index_t MatrixFrame::token_at(float p) const {
  if (p < 0 || p >= side) return -1;
  return std::min<index_t>(seq - 1, static_cast<index_t>(static_cast<double>(p) * static_cast<double>(seq) / side));
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

// the visible cells of the block of rows [q0, q1) x keys [k0, k1) (whole tokens) under k <= q + off,
// as rectangles {k0, q, right, q + 1} of the rows the diagonal cuts and one {k0, q, k1, q1} of the
// rows it does not: exactly the cells the mask rule shows (a cell just above the diagonal has no
// visible pair and gets nothing, not half a triangle). Empty when more than kMaxStairs rows are cut
// (then a cell is a pixel or less and the caller draws the clipped polygon).
constexpr double kMaxStairs = 512;
std::vector<std::array<double, 4>> staircase(double k0, double q0, double k1, double q1, double off, bool& exact) {
  std::vector<std::array<double, 4>> out;
  const double first = std::max(q0, k0 - off);      // rows before it see no key of the block
  const double full = std::min(q1, std::max(first, k1 - off - 1));  // rows from it on see all of [k0, k1)
  exact = full - first <= kMaxStairs;
  if (!exact) return out;
  for (double q = first; q < full; ++q) out.push_back({k0, q, q + off + 1, q + 1});
  if (full < q1) out.push_back({k0, full, k1, q1});
  return out;
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
  bool exact = false;
  for (const auto& r : staircase(k0, q0, k1, q1, 0, exact)) {
    s.rect(X(r[0]), Y(r[1]), X(r[2]), Y(r[3]), fill, kNone, tag, rank);
    s.prims.back().info = info;
  }
  if (exact) return;
  const std::vector<double> p = clip_causal(k0, q0, k1, q1);
  if (p.size() < 6) return;
  std::vector<float> xy;
  for (size_t i = 0; i < p.size(); i += 2) xy.insert(xy.end(), {X(p[i]), Y(p[i + 1])});
  s.poly(std::move(xy), fill, tag, rank);
  s.prims.back().info = info;
}

}  // namespace

void draw_tile_mask(Scene& s, float x0, float y0, float x1, float y1, index_t nq, index_t nk, const std::string& mask,
                    Rgba fill, const std::string& tag, int rank, const std::string& info, const Mask* ranges) {
  if (mask == "ranges" && ranges != nullptr && nq > 0 && nk > 0 && static_cast<double>(nq) <= kMaxStairs) {
    // each row's visible run, consecutive rows with the same run merged into one rect
    const double sx = (x1 - x0) / static_cast<double>(nk), sy = (y1 - y0) / static_cast<double>(nq);
    bool any = false;
    for (index_t a = 0; a < nq;) {
      const KeyRange kr = ranges->keys(a, nk);
      index_t b = a + 1;
      while (b < nq && ranges->keys(b, nk).lo == kr.lo && ranges->keys(b, nk).hi == kr.hi) ++b;
      if (kr.hi > kr.lo) {
        s.rect(x0 + static_cast<float>(static_cast<double>(kr.lo) * sx), y0 + static_cast<float>(static_cast<double>(a) * sy),
               x0 + static_cast<float>(static_cast<double>(kr.hi) * sx), y0 + static_cast<float>(static_cast<double>(b) * sy), fill,
               kNone, tag, rank);
        s.prims.back().info = info;
        any = true;
      }
      a = b;
    }
    if (any) return;
  }
  if (mask == "skipped" || (mask == "ranges" && ranges != nullptr && static_cast<double>(nq) <= kMaxStairs)) {  // a cross in an outline (the outline is the tile's primitive, drawn last)
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
  const double sx = (x1 - x0) / static_cast<double>(nk), sy = (y1 - y0) / static_cast<double>(nq);
  bool exact = false;  // the visible cells themselves (staircase above), while there are few enough
  for (const auto& r : staircase(0, 0, static_cast<double>(nk), static_cast<double>(nq), off, exact)) {
    s.rect(x0 + static_cast<float>(r[0] * sx), y0 + static_cast<float>(r[1] * sy), x0 + static_cast<float>(r[2] * sx),
           y0 + static_cast<float>(r[3] * sy), fill, kNone, tag, rank);
    s.prims.back().info = info;
  }
  if (exact) return;
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

}  // namespace cplab::viz
