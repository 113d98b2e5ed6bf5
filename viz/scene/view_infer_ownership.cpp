// view_infer_ownership.cpp: who holds which cached and new tokens of an inference step (see
// views_infer.h).
//
// Rows, top to bottom, over the KV space (per request: its P_b cached tokens, then its T_b new ones):
// every token coloured by the rank holding it (cached darker, new tokens full colour; a pixel holding
// several tokens gets their mixed colour), then one row per rank (up to 16) with its tokens alone.
// Who holds what is the spec's (infer_spec.h cache_rows, q_kv_rows): recorded as TokenRec "cache"
// and "new" per rank, the scene test compares them with the spec.
#include <algorithm>
#include <cmath>

#include "views_infer.h"

namespace cplab::viz {

namespace {

constexpr float kLabelW = 150, kStripH = 24, kGap = 10;

// a strip of the KV axis [x0, x0 + w): pixel p holds tokens [first(p), first(p+1)), coloured by the
// mix of `colour(k)` over them (kNone: not drawn), runs of one colour merged into one rectangle
template <class F>
void kv_strip(Scene& s, index_t KV, float x0, float y, float w, int rank, const F& colour) {
  const int px = static_cast<int>(std::max<index_t>(1, std::min<index_t>(KV, static_cast<index_t>(w))));
  const float bw = w / static_cast<float>(px);
  Rgba run = kNone;
  int run0 = 0;
  for (int p = 0; p <= px; ++p) {
    Rgba c = kNone;
    if (p < px) {
      const index_t a = static_cast<index_t>(p) * KV / px, b = static_cast<index_t>(p + 1) * KV / px;
      double R = 0, G = 0, B = 0, n = 0;
      for (index_t k = a; k < b; ++k) {
        const Rgba x = colour(k);
        if (x.a == 0) continue;
        R += x.r, G += x.g, B += x.b, n += 1;
      }
      // a pixel holding any drawn token: their mean colour, fainter where they are a small part of its
      // tokens (an interleaved shard seen from afar), never fainter than 40%
      if (n > 0)
        c = mix(kBackground,
                Rgba{static_cast<std::uint8_t>(std::lround(R / n)), static_cast<std::uint8_t>(std::lround(G / n)),
                     static_cast<std::uint8_t>(std::lround(B / n)), 255},
                0.4 + 0.6 * n / static_cast<double>(b - a));
    }
    if (p == px || !(c == run)) {
      if (p > 0 && run.a > 0) s.rect(x0 + static_cast<float>(run0) * bw, y, x0 + static_cast<float>(p) * bw, y + kStripH, run, kNone, "strip", rank);
      run = c, run0 = p;
    }
  }
  s.rect(x0, y, x0 + w, y + kStripH, kNone, kDim, "frame");
}

}  // namespace

Scene infer_ownership_view(const InferModel& m, const ViewState&, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  const InferSpec& sp = m.spec();
  const int N = static_cast<int>(sp.N());
  const index_t KV = sp.KV();
  const bool decode = sp.info().decode_layout;
  s.title = "Who holds which tokens: " + std::to_string(sp.P_total()) + " cached + " + std::to_string(sp.T()) + " new over " +
            std::to_string(N) + " ranks (cache " + to_string(sp.fields().cache_layout) + ", new tokens " +
            (decode ? std::string("round-robin by position") : to_string(sp.fields().layout)) + "; " + infer_variant_label(sp.mode()) + ")";
  std::vector<std::uint8_t> cached(static_cast<size_t>(KV), 0);
  std::vector<double> n_cache(static_cast<size_t>(N)), n_new(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) {
    const std::vector<index_t> c = sp.cache_rows(r);
    for (index_t k : c) cached[static_cast<size_t>(k)] = 1;
    s.tokens.push_back(TokenRec{r, "cache", to_spans(c)});
    s.tokens.push_back(TokenRec{r, "new", to_spans(sp.q_kv_rows(r))});
    n_cache[static_cast<size_t>(r)] = static_cast<double>(c.size());
    n_new[static_cast<size_t>(r)] = static_cast<double>(sp.q_kv_rows(r).size());
  }
  const auto tone = [&](index_t k, int r) {  // rank r's colour, darker for a cached token
    const Rgba c = rank_color(r, N);
    return cached[static_cast<size_t>(k)] ? mix(c, kBackground, 0.55) : c;
  };
  const float x0 = kLabelW, w = std::max(10.0f, W - kLabelW - 10);
  float y = 8;
  // the requests: cache and new tokens, labelled above the strips
  for (index_t b = 0; b < sp.B(); ++b) {
    const index_t k0 = sp.koff()[static_cast<size_t>(b)], k1 = sp.koff()[static_cast<size_t>(b) + 1];
    const index_t P = sp.fields().cached[static_cast<size_t>(b)];
    const auto X = [&](index_t k) { return x0 + static_cast<float>(static_cast<double>(k) / static_cast<double>(KV) * w); };
    s.rect(X(k0), y, X(k0 + P), y + 14, Rgba{70, 70, 80, 255}, kNone, "cache_band", static_cast<int>(b));
    s.rect(X(k0 + P), y, X(k1), y + 14, Rgba{150, 150, 165, 255}, kNone, "new_band", static_cast<int>(b));
    if (X(k0 + P) - X(k0) > 80) s.text(X(k0) + 3, y, "cache " + std::to_string(P), kText);
    if (X(k1) - X(k0 + P) > 60) s.text(X(k0 + P) + 3, y, "new " + std::to_string(k1 - k0 - P), kBlack);
    if (b > 0) s.line(X(k0), y, X(k0), y + 14, kWhite, 2.0f);
  }
  s.text(8, y, sp.B() == 1 ? "request" : std::to_string(sp.B()) + " requests", kText);
  y += 14 + kGap;
  s.text(8, y + 4, "all ranks", kText);
  kv_strip(s, KV, x0, y, w, -1, [&](index_t k) { return tone(k, m.kv_owner[static_cast<size_t>(k)]); });
  y += kStripH + kGap;
  if (N <= 16) {
    for (int r = 0; r < N && y + kStripH < H - 40; ++r) {
      s.text(8, y + 4, "rank " + std::to_string(r), rank_color(r, N));
      kv_strip(s, KV, x0, y, w, r, [&](index_t k) { return m.kv_owner[static_cast<size_t>(k)] == r ? tone(k, r) : kNone; });
      y += kStripH + 4;
    }
  }
  draw_rank_legend(s, x0, std::min(H - 16, y + 8), w, N);
  s.notes.push_back("cached tokens per rank " + count_list(n_cache) + ", new tokens per rank " + count_list(n_new) +
                    "; the most new tokens on a rank Mq = " + std::to_string(sp.Mq()) + ", the most KV rows Mkv = " + std::to_string(sp.Mkv()));
  s.notes.push_back("colour = the rank holding the token (darker: in its cache; full: a new token, whose Q, K and V it holds); "
                    "KV space: per request its cache, then its new tokens");
  return s;
}

}  // namespace cplab::viz
