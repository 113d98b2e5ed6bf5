// view_ownership.cpp: who owns which tokens (see views.h).
//
// Rows, top to bottom: for every layout that fits the run, the whole sequence binned into pixels
// and coloured by owning rank (a pixel holding tokens of several ranks gets their mixed colour,
// which is what striped looks like from afar); packed runs add the sequences and their padding;
// a token-level zoom of the run's layout (rank and local index per token); for a2a+p2p, the rank
// grid of inner all-to-all groups and outer rings (hierarchical_cp.h).
#include <algorithm>
#include <cmath>

#include "modes/hierarchical_cp.h"
#include "layout/thd.h"
#include "views.h"
#include "views_infer.h"

namespace cplab::viz {

namespace {

constexpr float kLabelW = 150, kStripH = 26, kGap = 14;

// one strip: the spans of every rank binned into pixels of [x0, x0 + w)
void layout_strip(Scene& s, const RunModel::LayoutSpans& ls, index_t seq, int P, float x0, float y, float w) {
  for (int r = 0; r < P; ++r) s.tokens.push_back(TokenRec{r, to_string(ls.layout), ls.spans[static_cast<size_t>(r)]});
  // bins: one per pixel, or one per token when there are fewer tokens than pixels
  const int px = static_cast<int>(std::max<index_t>(1, std::min<index_t>(seq, static_cast<index_t>(w))));
  const float bw = w / static_cast<float>(px);
  std::vector<PixelBins> bins;
  bins.reserve(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    bins.emplace_back(seq, px);
    for (const Span& sp : ls.spans[static_cast<size_t>(r)]) bins.back().add(sp);
  }
  // mixed colour per pixel; runs of one colour become one rectangle
  Rgba run{};
  int run0 = 0, run_rank = -2;
  for (int p = 0; p <= px; ++p) {
    Rgba c = kBackground;
    int only = -1;
    if (p < px) {
      double tot = 0, R = 0, G = 0, B = 0;
      int n_ranks = 0;
      for (int r = 0; r < P; ++r) {
        const double wgt = bins[static_cast<size_t>(r)].w[static_cast<size_t>(p)];
        if (wgt <= 0) continue;
        const Rgba rc = rank_color(r, P);
        tot += wgt, R += wgt * rc.r, G += wgt * rc.g, B += wgt * rc.b, ++n_ranks, only = r;
      }
      if (tot > 0)
        c = {static_cast<std::uint8_t>(std::lround(R / tot)), static_cast<std::uint8_t>(std::lround(G / tot)),
             static_cast<std::uint8_t>(std::lround(B / tot)), 255};
      if (n_ranks != 1) only = -1;
    }
    // a new rectangle where the colour changes (mixed pixels within 3 per channel count as equal:
    // striped tokens of 64 ranks give every pixel nearly the same mix)
    auto near = [](Rgba a, Rgba b) { return std::abs(a.r - b.r) <= 3 && std::abs(a.g - b.g) <= 3 && std::abs(a.b - b.b) <= 3; };
    if (p == px || !(only >= 0 ? c == run : near(c, run)) || only != run_rank) {
      if (p > 0) s.rect(x0 + static_cast<float>(run0) * bw, y, x0 + static_cast<float>(p) * bw, y + kStripH, run, kNone, "strip", run_rank);
      if (p > 0) s.prims.back().info = to_string(ls.layout);
      run = c, run0 = p, run_rank = only;
    }
  }
  s.rect(x0, y, x0 + w, y + kStripH, kNone, kDim, "frame");
}

std::string token_facts(const RunModel& m, const Partition& part, index_t g) {
  const CpSpec& spec = m.cp();
  const RankLocal o = part.owner(g);
  std::string t = "token " + std::to_string(g) + ": rank " + std::to_string(o.rank) + ", local index " + std::to_string(o.local);
  if (spec.thd()) {
    const index_t q = spec.packing().seq_of(g);
    t += ", sequence " + std::to_string(q);
    if (!spec.packing().real(g)) return t + ", padding (sees nothing, seen by nothing)";
  }
  // the RoPE position: thd.h rope_positions (the position within its sequence)
  const std::vector<index_t> pos = rope_positions(part, spec.packing(), o.rank);
  return t + ", RoPE position " + std::to_string(pos[static_cast<size_t>(o.local)]);
}

}  // namespace

Scene ownership_view(const RunModel& m, const ViewState& v, float W, float H) {
  if (m.infer) return infer_ownership_view(*m.infer, v, W, H);  // an inference step (issue 37): views_infer.h
  Scene s;
  s.width = W, s.height = H;
  if (m.from_file()) {
    s.title = "ownership: needs a run's parameters, not a trace file";
    return s;
  }
  const CpSpec& spec = m.cp();
  const Partition& part = spec.partition();
  const int P = static_cast<int>(spec.P());
  const index_t S = part.seq();
  s.title = "Who owns which tokens: " + human_count(static_cast<double>(S)) + " tokens over cp = " + std::to_string(P) +
            " ranks (" + std::to_string(part.local_len()) + " per rank)";
  const float x0 = kLabelW, w = std::max(10.0f, W - kLabelW - 10);
  float y = 8;
  s.text(8, y, "token 0", kLight);
  s.text(x0 + w - 90, y, "token " + std::to_string(S - 1), kLight);
  y += 18;
  // packed sequences (cu_seqlens given, even one) and their padding
  if (spec.thd()) {
    const Packing& pk = spec.packing();
    s.text(8, y + 5, "sequences", kText);
    for (index_t q = 0; q < pk.num_seqs(); ++q) {
      const auto a = static_cast<double>(pk.cu_seqlens_padded[static_cast<size_t>(q)]);
      const auto e = a + static_cast<double>(pk.length(q));
      const auto b = static_cast<double>(pk.cu_seqlens_padded[static_cast<size_t>(q) + 1]);
      auto X = [&](double t) { return x0 + static_cast<float>(t / static_cast<double>(S) * w); };
      const Rgba c = q % 2 == 0 ? Rgba{150, 150, 160, 255} : Rgba{105, 105, 118, 255};
      s.rect(X(a), y, X(e), y + kStripH, c, kBackground, "sequence", static_cast<int>(q));
      s.prims.back().info = "sequence " + std::to_string(q) + ": " + std::to_string(pk.length(q)) + " tokens";
      if (b > e) {
        s.rect(X(e), y, X(b), y + kStripH, Rgba{45, 45, 50, 255}, Rgba{200, 80, 80, 255}, "padding", static_cast<int>(q));
        s.prims.back().info = "padding of sequence " + std::to_string(q) + ": " + fixed(b - e, 0) + " tokens";
      }
      if (X(e) - X(a) > 40) s.text(X(a) + 3, y + 5, "seq " + std::to_string(q), kBlack);
    }
    y += kStripH + kGap;
  }
  // one binned strip per layout
  const float strips_y = y;
  for (const RunModel::LayoutSpans& ls : m.layouts) {
    const bool mine = ls.layout == spec.layout();
    s.text(8, y + 5, to_string(ls.layout) + (mine ? " *" : ""), mine ? kWhite : kLight);
    if (ls.why_not.empty()) layout_strip(s, ls, S, P, x0, y, w);
    else s.text(x0 + 4, y + 5, "not possible: " + ls.why_not, Rgba{230, 120, 120, 255});
    y += kStripH + kGap;
  }
  // hover on the strips
  if (v.my >= strips_y && v.my < y && v.mx >= x0 && v.mx < x0 + w) {
    const index_t g = std::min<index_t>(S - 1, static_cast<index_t>((v.mx - x0) / w * static_cast<float>(S)));
    const auto row = static_cast<size_t>((v.my - strips_y) / (kStripH + kGap));
    if (row < m.layouts.size() && m.layouts[row].why_not.empty()) {
      const Layout l = m.layouts[row].layout;
      s.hover = to_string(l) + ": " + token_facts(m, l == spec.layout() ? part : Partition(l, spec.S(), spec.P()), g);
    }
  }
  // token-level zoom of the run's layout
  const index_t Z = std::min<index_t>(S, std::max<index_t>(8, static_cast<index_t>(w / 18)));
  const index_t z0 = std::clamp<index_t>(v.zoom0, 0, S - Z);
  const float cw = w / static_cast<float>(Z);
  s.text(8, y, "zoom: tokens", kText);
  s.text(8, y + 16, std::to_string(z0) + ".." + std::to_string(z0 + Z - 1), kLight);
  for (index_t i = 0; i < Z; ++i) {
    const index_t g = z0 + i;
    const RankLocal o = part.owner(g);
    const bool real = !spec.thd() || spec.packing().real(g);
    const float cx = x0 + static_cast<float>(i) * cw;
    const Rgba c = real ? rank_color(static_cast<int>(o.rank), P) : Rgba{45, 45, 50, 255};
    s.rect(cx, y, cx + cw - 1, y + 2 * kStripH, c, kNone, "token", static_cast<int>(o.rank));
    s.prims.back().id = static_cast<int>(g);
    s.prims.back().info = "local " + std::to_string(o.local);
    if (cw >= 14) {
      s.text(cx + 2, y + 3, "r" + std::to_string(o.rank), kBlack);
      if (cw >= 18 || o.local < 100) s.text(cx + 2, y + 3 + kStripH, std::to_string(o.local), Rgba{40, 40, 40, 255});
    }
    if (v.mx >= cx && v.mx < cx + cw && v.my >= y && v.my < y + 2 * kStripH) s.hover = token_facts(m, part, g);
  }
  s.text(x0, y + 2 * kStripH + 2, "top: owning rank, bottom: index in that rank's local buffer", kLight);
  y += 2 * kStripH + 24;
  // each rank's local buffer in local order: which global tokens it holds (Partition::indices)
  if (spec.mode() != Mode::a2a_p2p) {
    const index_t n = part.local_len(), shown = std::min<index_t>(n, Z);
    const int rows = std::min<int>(P, static_cast<int>((H - y - 44) / 20));
    if (rows >= 1) {
      s.text(8, y, "local buffers", kText);
      s.text(8, y + 16, "(global token", kLight);
      s.text(8, y + 32, " in each slot)", kLight);
    }
    for (int r = 0; r < rows; ++r) {
      const std::vector<index_t> g = part.indices(r, 0, shown);
      const float ry = y + static_cast<float>(r) * 20;
      for (index_t i = 0; i < shown; ++i) {
        const float cx = x0 + static_cast<float>(i) * cw;
        const bool real = !spec.thd() || spec.packing().real(g[static_cast<size_t>(i)]);
        s.rect(cx, ry, cx + cw - 1, ry + 18, real ? rank_color(r, P) : Rgba{45, 45, 50, 255}, kNone, "buffer", r);
        s.prims.back().id = static_cast<int>(g[static_cast<size_t>(i)]);
        if (cw >= 18 || g[static_cast<size_t>(i)] < 100) s.text(cx + 2, ry + 2, std::to_string(g[static_cast<size_t>(i)]), Rgba{30, 30, 30, 255});
      }
      s.text(x0 - 30, ry + 2, "r" + std::to_string(r), kLight);
      if (shown < n) s.text(x0 + static_cast<float>(shown) * cw + 2, ry + 2, "...", kLight);
    }
    if (rows < P && rows >= 1) s.text(x0, y + static_cast<float>(rows) * 20, "(ranks " + std::to_string(rows) + ".." + std::to_string(P - 1) + " below the canvas' edge)", kLight);
    y += static_cast<float>(rows) * 20 + 24;
  }
  // hierarchical: inner all-to-all groups (contiguous ranks) and outer rings (strided ranks)
  if (spec.mode() == Mode::a2a_p2p) {  // the spec has icp x ocp = cp
    const index_t icp = spec.icp(), ocp = spec.ocp();
    s.text(8, y, "a2a+p2p: " + std::to_string(icp) + " x " + std::to_string(ocp), kText);
    const float cell = std::min(36.0f, std::min(w / static_cast<float>(ocp) - 6, (H - y - 40) / static_cast<float>(icp) - 4));
    for (index_t a = 0; a < icp; ++a) {
      const std::vector<int> ring = hcp_ring_members(icp, ocp, a);
      for (index_t p = 0; p < ocp; ++p) {
        const int g = ring[static_cast<size_t>(p)];
        const float cx = x0 + static_cast<float>(p) * (cell + 6), cy = y + 18 + static_cast<float>(a) * (cell + 4);
        s.rect(cx, cy, cx + cell, cy + cell, rank_color(g, P), kNone, "hcp_rank", g);
        s.prims.back().info = "inner group " + std::to_string(p) + ", ring " + std::to_string(a);
        if (cell >= 16) s.text(cx + 3, cy + 3, std::to_string(g), kBlack);
      }
    }
    std::string rings;  // hcp_ring_members, as lesson 9 prints them: {0,2,4,6}
    for (index_t a = 0; a < icp && icp * ocp <= 64; ++a) {
      rings += a ? " " : ": ";
      for (int g : hcp_ring_members(icp, ocp, a)) rings += (rings.back() == ' ' ? "{" : ",") + std::to_string(g);
      rings += "}";
    }
    s.notes.push_back("a2a+p2p grid: column p = inner all-to-all group (ranks p*icp .. p*icp+icp-1, head groups), "
                      "row a = outer ring (ranks a, icp+a, ...), KV moves along rows" + (rings.empty() ? "" : "; the rings" + rings));
  }
  draw_rank_legend(s, 8, H - 16, W - 16, P);
  s.notes.push_back("* = the run's layout (--layout). Colours: one per rank; a pixel holding several ranks' tokens shows their mix.");
  return s;
}

}  // namespace cplab::viz
