// view_ring.cpp: one step of a CP run (see views.h).
//
// Left: the S x S attention matrix (queries down, keys across) with the tiles every rank computes
// at this step, from the trace's tile events (rows and columns as global spans), drawn where the
// run's mask leaves pairs visible. Top right: the ranks on a circle and this step's messages
// (p2p as arrows; collectives among more than 8 ranks through a hub) with their sizes. Bottom right:
// FLOPs per rank, this step and summed up to it. For all-to-all steps, the sequence <-> head
// transpose: which rank holds which (token, head) before and after, from the layout and the next
// compute step's tiles. Notes: up to 16 ranks, each rank's FLOPs (this step, so far) and the whole
// phase's FLOPs and bytes sent, summed from the trace, exactly as the lessons print them.
// Words: the title counts the step within its phase (step_label); a tile is labelled with whose KV
// block it is (section_label: j=r, j<r, j>r), and the notes define j and r; each "KV of rJ" label
// sits where it meets no other text, node or arrow; a legend keys the matrix (blank cells included).
#include <algorithm>
#include <cmath>
#include <map>

#include "modes/hierarchical_cp.h"
#include "views.h"
#include "views_infer.h"

namespace cplab::viz {

namespace {

// "heads 4..7" -> {4, 7}; {-1, -1} when the section names no heads
std::pair<int, int> heads_of(const std::string& section) {
  if (section.rfind("heads ", 0) != 0) return {-1, -1};
  const size_t dots = section.find("..");
  if (dots == std::string::npos) return {-1, -1};
  return {std::stoi(section.substr(6, dots - 6)), std::stoi(section.substr(dots + 2))};
}

// the transpose of an all-to-all: (token bins x heads) coloured by holder, before and after
// (output: the all-to-all after the compute step, from the head split back to the sequence split)
void transpose_panel(Scene& s, const RunModel& m, const std::vector<const Event*>& after_tiles, float x, float y,
                     float w, float h, bool output) {
  const CpSpec& spec = m.cp();
  const Partition& part = spec.partition();
  const int P = static_cast<int>(spec.P());
  const int heads = static_cast<int>(spec.h());
  const int bins = std::max(1, std::min<int>(static_cast<int>(part.seq()), static_cast<int>(h - 30)));
  const float gw = (w - 30) / 2, cw = gw / static_cast<float>(heads), ch = (h - 30) / static_cast<float>(bins);
  // the sequence split (the layout) and the head split (the compute tiles): input a2a left to right,
  // output a2a right to left
  const float xs = output ? x + gw + 30 : x, xh = output ? x : x + gw + 30;
  const char* tag_s = output ? "a2a_after" : "a2a_before";
  const char* tag_h = output ? "a2a_before" : "a2a_after";
  s.text(x, y, output ? "before: heads split" : "before: tokens split", kText);
  s.text(x + gw + 30, y, output ? "after: tokens split again" : "after: heads split", kText);
  s.notes.push_back(std::string("all-to-all: colour = the rank holding each (token, head), tokens down, heads across; ") +
                    (output ? "the output all-to-all returns O from the head split to the token split"
                            : "the input all-to-all moves Q, K, V from the token split to the head split"));
  for (int b = 0; b < bins; ++b) {
    const index_t g = static_cast<index_t>(b) * part.seq() / bins;
    const int r = static_cast<int>(part.owner(g).rank);
    s.rect(xs, y + 20 + static_cast<float>(b) * ch, xs + gw, y + 20 + static_cast<float>(b + 1) * ch, rank_color(r, P), kNone, tag_s, r);
  }
  // the head split: from the compute tiles, rows (tokens) x the head group the rank holds
  for (const Event* e : after_tiles) {
    auto [h0, h1] = heads_of(e->section);
    if (h0 < 0 && spec.mode() == Mode::a2a_p2p) {  // ring a of hierarchical CP holds head group a
      for (index_t a = 0; a < spec.icp(); ++a) {
        const auto ring = hcp_ring_members(spec.icp(), spec.ocp(), a);
        if (std::find(ring.begin(), ring.end(), e->rank) != ring.end()) {
          const int hg = static_cast<int>(spec.h() / spec.icp());
          h0 = static_cast<int>(a) * hg, h1 = h0 + hg - 1;
        }
      }
    }
    if (h0 < 0) continue;
    for (const Span& sp : e->rows) {
      const float y0 =
          y + 20 + static_cast<float>(static_cast<double>(sp.begin) / static_cast<double>(part.seq()) * (h - 30));
      const float y1 = y + 20 + static_cast<float>(static_cast<double>(sp.begin + (sp.count - 1) * sp.stride + 1) /
                                                   static_cast<double>(part.seq()) * (h - 30));
      s.rect(xh + static_cast<float>(h0) * cw, y0, xh + static_cast<float>(h1 + 1) * cw, std::max(y1, y0 + 1),
             rank_color(e->rank, P), kNone, tag_h, e->rank);
    }
  }
  s.panel(output ? "tokens split (after)" : "tokens split (before)", xs, y + 20, xs + gw, y + h - 10);
  s.panel(output ? "heads split (before)" : "heads split (after)", xh, y + 20, xh + gw, y + h - 10);
  s.text(x + gw + 2, y + 20 + (h - 30) / 2, "->", kWhite);
  s.rect(x, y + 20, x + gw, y + h - 10, kNone, kDim, "frame");
  s.rect(x + gw + 30, y + 20, x + 2 * gw + 30, y + h - 10, kNone, kDim, "frame");
}

// ring modes: "KV of rJ" beside each node r that holds rank J's block, at the first place around the
// node (outward first) where its box meets no text, node or arrow drawn so far and stays in [xmin, xmax)
template <class Pos>
void place_kv_labels(Scene& s, const std::vector<int>& holds, Pos pos, float cx, float cy, float node, float xmin, float xmax) {
  for (int r = 0; r < static_cast<int>(holds.size()); ++r) {
    if (holds[static_cast<size_t>(r)] < 0) continue;
    const std::string label = "KV of r" + std::to_string(holds[static_cast<size_t>(r)]);
    const auto [x, y] = pos(r);
    const float w = text_width(label), d = node + 3;
    const bool right = x >= cx, below = y >= cy, side = std::fabs(x - cx) >= std::fabs(y - cy);
    // candidates: beside (outward), above/below (outward), then the other ways, then further out
    std::vector<std::pair<float, float>> at;
    for (float extra : {0.0f, 8.0f, 16.0f, 28.0f}) {
      const float sx = right ? x + d + extra : x - d - extra - w, vy = below ? y + d + extra : y - d - extra - kLineH;
      const float ox = right ? x - d - extra - w : x + d + extra, oy = below ? y - d - extra - kLineH : y + d + extra;
      if (side) at.insert(at.end(), {{sx, y - kLineH / 2}, {sx, vy}, {x - w / 2, vy}, {sx, below ? y + 2 : y - kLineH - 2}});
      else at.insert(at.end(), {{x - w / 2, vy}, {sx, vy}, {sx, y - kLineH / 2}, {ox, vy}});
      at.insert(at.end(), {{ox, y - kLineH / 2}, {x - w / 2, oy}});
    }
    auto free = [&](float tx, float ty) {
      const Box b = text_box(tx, ty, label);
      if (b.x0 < xmin || b.x1 > xmax || b.y0 < 0) return false;
      for (const Prim& p : s.prims) {
        const auto& q = p.pts;
        if (p.kind == Prim::Kind::text && b.hits(text_box(q[0], q[1], p.text))) return false;
        if (p.kind == Prim::Kind::arrow && b.hits_segment(q[0], q[1], q[2], q[3])) return false;
        if (p.kind == Prim::Kind::circle && b.hits(Box{q[0] - q[2], q[1] - q[2], q[0] + q[2], q[1] + q[2]})) return false;
      }
      return true;
    };
    auto best = at.front();
    for (const auto& c : at)
      if (free(c.first, c.second)) {
        best = c;
        break;
      }
    s.text(best.first, best.second, label, kLight, "holds_kv");
    s.prims.back().rank = r, s.prims.back().peer = holds[static_cast<size_t>(r)];
  }
}

}  // namespace

Scene ring_view(const RunModel& m, const ViewState& v, float W, float H) {
  if (m.infer) return infer_ring_view(*m.infer, v, W, H);  // an inference step (issue 37): views_infer.h
  Scene s;
  s.width = W, s.height = H;
  if (m.steps.empty()) {
    s.title = "ring: the trace has no events";
    return s;
  }
  const int P = m.trace.cp();
  const size_t si = static_cast<size_t>(std::clamp<int>(v.step, 0, static_cast<int>(m.steps.size()) - 1));
  const auto [phase, step] = m.steps[si];
  std::vector<const Event*> tiles, sends;
  for (const Event& e : m.trace.events())
    if (e.phase == phase && e.step == step) (e.kind == EventKind::tile ? tiles : sends).push_back(&e);
  sends.erase(std::remove_if(sends.begin(), sends.end(), [](const Event* e) { return e->kind != EventKind::send; }), sends.end());
  s.title = m.trace.meta().count("mode") ? m.trace.meta().at("mode") : std::string("trace");
  s.title += " " + step_label(m, static_cast<int>(si));  // counted within the phase shown
  if (!m.from_file()) s.title += ", " + std::to_string(m.cp().n()) + " tokens per rank";

  // left: the attention matrix, one square per head group where heads are split (a2a, a2a+p2p)
  const index_t S = m.from_file() ? 0 : m.cp().S();
  const float side = std::max(40.0f, std::min(H - 60, W * 0.52f - 40));
  MatrixFrame f{40, 36, side, std::max<index_t>(1, S)};
  // heads split over groups (a2a, a2a+p2p): their squares may use a wider region
  const float region_w = !m.from_file() && head_groups(m.cp()) > 1 ? std::max(side, W * 0.62f - 40) : side;
  const bool a2a_step = std::any_of(sends.begin(), sends.end(), [](const Event* e) { return e->op == "all_to_all"; });
  if (S > 0 && !a2a_step) {
    const CpSpec& spec = m.cp();
    const Packing* pk = spec.thd() ? &spec.packing() : nullptr;
    const AxisOrder global{};
    const int G = head_groups(spec);
    const std::vector<GroupSquare> boxes = head_group_squares(s, spec, f.x, f.y, G > 1 ? region_w : side, side, "matrix", global, run_spans(m), pk);
    s.text(f.x, 2, G > 1 ? "queries down, keys across (global positions), per head group" : "queries down, keys across (global positions)",
           kLight);
    if (G == 1) draw_token_ticks(s, f.x, f.y, side, S, global);
    // one tile: its visible cells (exact when small), else the block drawing of its spans
    auto draw_tile = [&](const Event& e, Rgba c, const std::string& tag) {
      const auto [bx, by, bs, bpanel] = boxes[static_cast<size_t>(head_group_of(spec, e.rank))];
      const double cell = static_cast<double>(bs) / static_cast<double>(S);
      const std::string info = section_label(e.section) + ", mask " + e.mask + ", " + human_count(static_cast<double>(e.flops)) + " FLOP";
      if (e.mask == "skipped") {  // where the tile would be: an outline, nothing computed
        const MatrixFrame fb{bx, by, bs, S};
        for (const Span& r : e.rows)
          for (const Span& k : e.cols)
            s.rect(fb.x + fb.px(k.begin), fb.y + fb.px(r.begin), fb.x + fb.px(k.begin + (k.count - 1) * k.stride + 1),
                   fb.y + fb.px(r.begin + (r.count - 1) * r.stride + 1), kNone, with_alpha(c, 160), tag == "tile" ? "skipped" : tag, e.rank);
        return;
      }
      if (draw_tile_cells(s, bx, by, cell, cell, global, global, e, spec, c, tag, info)) return;
      if ((!spec.rule().plain() || spec.packed()) && draw_tile_rule(s, bx, by, cell, cell, global, global, e, spec, c, tag, info)) return;
      const MatrixFrame fb{bx, by, bs, S};
      for (const Span& r : e.rows)
        for (const Span& k : e.cols) draw_block(s, fb, r, k, spec.causal(), pk, c, tag, e.rank, info);
    };
    // the phase's earlier steps, faint: what each rank has already computed (up to a budget of
    // primitives, which only a large run under a window or striped rows reaches: the frame stays fast)
    constexpr size_t kEarlierBudget = 20000;
    for (size_t i = 0; i < m.trace.events().size(); ++i) {
      const Event& e = m.trace.events()[i];
      if (e.kind != EventKind::tile || e.phase != phase || static_cast<size_t>(m.step_of[i]) >= si) continue;
      if (s.prims.size() > kEarlierBudget) {
        s.notes.push_back("earlier steps: only the first ones are drawn faintly at this size");
        break;
      }
      draw_tile(e, with_alpha(rank_color(e.rank, P), 45), "earlier_tile");
    }
    for (const Event* e : tiles) {
      const size_t first = s.prims.size();
      draw_tile(*e, rank_color(e->rank, P), "tile");
      for (size_t k = first; k < s.prims.size(); ++k) s.prims[k].peer = e->peer;
      const auto [bx, by, bs, bpanel] = boxes[static_cast<size_t>(head_group_of(spec, e->rank))];
      const double cell = static_cast<double>(bs) / static_cast<double>(S);
      record_tile(s, *e, bpanel, cell, cell, first);
      // whose KV block the tile is (section_label: j=r, j<r, j>r), on each contiguous block large
      // enough to hold it: the words when they fit, else the brief form
      for (const Span& r : e->rows)
        for (const Span& k : e->cols) {
          const float w = static_cast<float>(static_cast<double>(k.count) * cell), h = static_cast<float>(static_cast<double>(r.count) * cell);
          std::string label = section_label(e->section);
          if (text_width(label) + 8 > w) label = section_label(e->section, true);
          if (r.stride != 1 || k.stride != 1 || text_width(label) + 8 > w || h < kLineH + 2) continue;
          s.text(bx + static_cast<float>(static_cast<double>(k.begin) * cell) + (w - text_width(label)) / 2,
                 by + static_cast<float>(static_cast<double>(r.begin) * cell) + (h - kLineH) / 2, label, kWhite, "tile_label");
          s.prims.back().info = e->section;
        }
    }
    // hover: which rank computes (query, key) at this step
    for (int h = 0; h < G; ++h) {
      const auto [bx, by, bs, bpanel] = boxes[static_cast<size_t>(h)];
      const MatrixFrame fb{bx, by, bs, S};
      const index_t q = fb.token_at(v.my - by), k = fb.token_at(v.mx - bx);
      if (q < 0 || k < 0) continue;
      s.hover = "query " + std::to_string(q) + ", key " + std::to_string(k) + ": ";
      std::string who;
      auto in = [](const std::vector<Span>& sp, index_t t) {
        for (const Span& x : sp)
          if (t >= x.begin && t < x.begin + x.count * x.stride && (t - x.begin) % x.stride == 0) return true;
        return false;
      };
      for (const Event* e : tiles)
        if (head_group_of(spec, e->rank) == h && in(e->rows, q) && in(e->cols, k))
          who += (who.empty() ? "" : "; ") + std::string("rank ") + std::to_string(e->rank) + " (" + section_label(e->section) + ", " + e->mask + ")";
      s.hover += who.empty() ? "no tile at this step" : who;
    }
  }
  if (a2a_step && !m.from_file()) {
    // the all-to-all's transpose; the head split = the tiles of the phase's compute step. A step
    // after that compute step is the output all-to-all (heads split -> tokens split)
    std::vector<const Event*> after;
    int compute_step = -1;
    for (const auto& st : m.steps) {
      if (st.first != phase) continue;
      for (const Event& e : m.trace.events())
        if (e.phase == st.first && e.step == st.second && e.kind == EventKind::tile) after.push_back(&e);
      if (!after.empty()) {
        compute_step = st.second;
        break;
      }
    }
    transpose_panel(s, m, after, f.x, f.y, side, side, compute_step >= 0 && step > compute_step);
  }

  // top right: ranks on a circle and the step's messages
  const float rx = f.x + region_w + 20, rw = W - rx - 10;
  const float R = std::max(20.0f, std::min(rw, H * 0.5f) * 0.38f), cx = rx + rw / 2, cy = 20 + R + 14;
  const float node = std::clamp(R * 3.0f / static_cast<float>(P), 3.0f, 14.0f);
  auto pos = [&](int r) {
    const double a = 2 * M_PI * r / P - M_PI / 2;
    return std::pair<float, float>{cx + R * static_cast<float>(std::cos(a)), cy + R * static_cast<float>(std::sin(a))};
  };
  struct Msgs {
    std::int64_t count = 0, bytes = 0, first = -1;
    bool same = true;  // every message the same size
  };
  std::map<std::string, Msgs> by_tensor;
  bool hub = false;
  for (const Event* e : sends) {
    s.messages.push_back(MessageRec{e->rank, e->peer, to_string(e->phase), e->op, e->tensor, e->step, e->bytes, -1, -1});
    Msgs& mt = by_tensor[e->op + " '" + e->tensor + "'"];
    mt.same = mt.same && (mt.first < 0 || mt.first == e->bytes);
    mt.first = mt.first < 0 ? e->bytes : mt.first, mt.count += 1, mt.bytes += e->bytes;
    const bool collective = e->op != "p2p";
    if (collective && P > 8) {
      hub = true;
      continue;
    }
    auto [x0, y0] = pos(e->rank);
    auto [x1, y1] = pos(e->peer);
    if (P > 16) {  // neighbours sit close: draw the arrow just outside the circle, node centre to node centre
      const float k = (R + 2 * node + 4) / R;
      x0 = cx + (x0 - cx) * k, y0 = cy + (y0 - cy) * k, x1 = cx + (x1 - cx) * k, y1 = cy + (y1 - cy) * k;
      s.arrow(x0, y0, x1, y1, with_alpha(rank_color(e->rank, P), 230), 1.5f, e->rank, e->peer, e->tensor);
      continue;
    }
    const float dx = x1 - x0, dy = y1 - y0, len = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
    s.arrow(x0 + dx / len * node, y0 + dy / len * node, x1 - dx / len * node, y1 - dy / len * node,
            with_alpha(rank_color(e->rank, P), 220), collective ? 1.0f : 2.0f, e->rank, e->peer, e->tensor);
  }
  if (hub) {
    s.circle(cx, cy, node * 1.5f, kDim, kLight, -1);
    for (int r = 0; r < P; ++r) {
      auto [x0, y0] = pos(r);
      s.line(x0, y0, cx, cy, with_alpha(rank_color(r, P), 150), 1.0f);
    }
    s.text(cx - 30, cy + node * 1.5f + 2, "collective", kLight);
  }
  // ring modes: the KV block each rank holds at this step (its tiles' peer: the block's owner)
  const bool kv_ring = !m.from_file() && (m.cp().mode() == Mode::p2p || m.cp().mode() == Mode::a2a_p2p);
  std::vector<int> holds(static_cast<size_t>(P), -1);
  for (const Event* e : tiles) holds[static_cast<size_t>(e->rank)] = e->peer;
  for (int r = 0; r < P; ++r) {
    auto [x, y] = pos(r);
    s.circle(x, y, node, rank_color(r, P), kBackground, r);
    if (P <= 16) s.text(x - text_width(std::to_string(r)) / 2, y - kLineH / 2, std::to_string(r), kBlack, "node_label");
  }
  // the captions below the circle start under its lowest node and its label
  float ny = cy + R + node + kLineH + 8;
  if (sends.empty()) s.text(rx, ny, "no messages at this step", kLight), ny += 16;
  for (const auto& [what, mt] : by_tensor) {  // the trace's message sizes, exact (the lessons quote them)
    const auto each = static_cast<double>(mt.first);
    const std::string size = mt.first < 1000000 ? std::to_string(mt.first) + " B" : human_bytes(each);
    s.text(rx, ny, what + ": " + std::to_string(mt.count) + (mt.same ? " x " + size + ", " : std::string(" messages, ")) +
                       human_bytes(static_cast<double>(mt.bytes)) + " in all", kLight);
    ny += 16;
  }
  // the key to the matrix's tiles, blank cells included (no rank computes them at this step or before)
  if (S > 0 && !a2a_step) {
    const Rgba c0 = rank_color(0, P);
    ny += 4 + draw_key_legend(s, rx, ny + 4, rw, {{c0, kNone, "computed at this step (colour = rank)"},
                                                  {with_alpha(c0, 45), kNone, "an earlier step"},
                                                  {kNone, with_alpha(c0, 160), "skipped"},
                                                  {kMatrix, kDim, "blank: computed by no rank so far"}});
  }
  if (kv_ring && P <= 16) place_kv_labels(s, holds, pos, cx, cy, node, rx - 10, W);

  // bottom right: FLOPs per rank, this step and summed over the phase up to it
  std::vector<double> now(static_cast<size_t>(P), 0), sum(static_cast<size_t>(P), 0);
  for (size_t i = 0; i < m.trace.events().size(); ++i) {
    const Event& e = m.trace.events()[i];
    if (e.kind != EventKind::tile || e.phase != phase || static_cast<size_t>(m.step_of[i]) > si) continue;
    sum[static_cast<size_t>(e.rank)] += static_cast<double>(e.flops);
    if (e.step == step) now[static_cast<size_t>(e.rank)] += static_cast<double>(e.flops);
  }
  const double top = std::max(1.0, *std::max_element(sum.begin(), sum.end()));
  const float by = std::max(ny + 10, H * 0.62f), bh = H - by - 28, bw = rw / static_cast<float>(P);
  s.text(rx, by - 2, "FLOPs per rank: this step (solid), " + to_string(phase) + " so far (outline)", kText);
  for (int r = 0; r < P; ++r) {
    const float x = rx + static_cast<float>(r) * bw;
    const float hs = static_cast<float>(sum[static_cast<size_t>(r)] / top) * (bh - 18);
    const float hn = static_cast<float>(now[static_cast<size_t>(r)] / top) * (bh - 18);
    s.rect(x + 1, by + bh - hs, x + std::max(2.0f, bw - 1), by + bh, kNone, rank_color(r, P), "bar_sum", r);
    s.prims.back().info = human_count(sum[static_cast<size_t>(r)]);
    s.rect(x + 1, by + bh - hn, x + std::max(2.0f, bw - 1), by + bh, rank_color(r, P), kNone, "bar_step", r);
    s.prims.back().info = human_count(now[static_cast<size_t>(r)]);
  }
  const auto [mn, mx] = std::minmax_element(sum.begin(), sum.end());
  const std::string ratio = *mn > 0 ? ", max/min " + fixed(*mx / *mn, 3) : std::string(", a rank has none");
  if (P <= 16) s.notes.push_back(to_string(phase) + " FLOPs per rank: this step " + count_list(now) + ", so far " + count_list(sum) + ratio);
  else s.notes.push_back(to_string(phase) + " FLOPs so far per rank: max " + human_count(*mx) + ", min " + human_count(*mn) + ratio);
  if (P <= 16) {  // the whole phase per rank, exact, as the lessons print them (summed from the trace)
    std::vector<double> flops(static_cast<size_t>(P), 0), sent(static_cast<size_t>(P), 0);
    for (const Event& e : m.trace.events()) {
      if (e.phase != phase || e.rank < 0 || e.rank >= P) continue;
      if (e.kind == EventKind::tile) flops[static_cast<size_t>(e.rank)] += static_cast<double>(e.flops);
      if (e.kind == EventKind::send) sent[static_cast<size_t>(e.rank)] += static_cast<double>(e.bytes);
    }
    s.notes.push_back("whole " + to_string(phase) + " per rank: FLOPs " + count_list(flops) + ", bytes sent " + count_list(sent, true));
  }
  s.notes.push_back("tiles: colour = rank computing it; the filled cells = the (query, key) pairs the mask leaves; outline = "
                    "skipped tile; faint = the phase's earlier steps; blank = computed by no rank at this step or before; lines: "
                    "chunk (dim) and sequence (bright) boundaries");
  if (!s.find("tile_label").empty()) s.notes.push_back(section_legend());
  draw_rank_legend(s, rx, H - 14, rw, P);
  return s;
}

}  // namespace cplab::viz
