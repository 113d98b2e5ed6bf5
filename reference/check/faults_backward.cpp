// faults_backward.cpp: the hypotheses of a ring backward (p2p) that reads the wrong softmax
// statistics or a stale KV buffer (hypotheses.h), with the forward right (O and LSE the reference's).
// A ring backward at step i recomputes P = exp(S - LSE) for its queries against the KV block it
// holds (rank r holds rank r - i's, ring_kv_block), with D = rowsum(dO * O), adds dQ locally, and
// adds dK, dV into buffers that travel with the KV. The faults:
//   each step's partial LSE: the LSE_j the forward's step got for block j (its own normalisation)
//     instead of the final merged LSE: dQ at the sampled rows, dK, dV at the sampled tail keys (every
//     query's contribution with its LSE_j for the key's block)
//   each step's partial D: D_j = rowsum(dO * O_j) of the step's partial output instead of the final O
//   a stale KV buffer: at step i the mask of block r - i's positions (the step index decides the
//     mask, as in TransformerEngine's and ring-flash-attention's ring backward) applied to the K and V
//     of step 0's block (the rank's own) or of the previous step's, token by token in local order
//     (NeMo Automodel #3157); dQ at the sampled rows; dK, dV not checked (where a stale buffer's
//     gradients land depends on which buffer travelled)
// Exact arithmetic gives finite values for all of them (a step's P is at most 1 under its own LSE).
// What it is not: the forward merge's faults (faults_merge.cpp); modes without a ring are not tested.
#include <algorithm>
#include <numeric>

#include "check/hypotheses.h"
#include "core/util.h"

namespace cplab {

namespace {

// the sorted positions of rank j's KV block, and the tokens of block b at the same local indices
// (b = j: the block's own)
std::pair<std::vector<index_t>, std::vector<index_t>> block_keys(const CpSpec& s, index_t j, index_t b) {
  const std::vector<index_t> pos = s.partition().indices(j), from = s.partition().indices(b);
  std::vector<size_t> order(pos.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return pos[x] < pos[y]; });
  std::pair<std::vector<index_t>, std::vector<index_t>> kv;
  for (size_t x : order) kv.first.push_back(pos[x]), kv.second.push_back(from[x]);
  return kv;
}

// a backward fault with dQ, dK, dV not yet predicted (unchecked): when O or LSE, which it leaves as
// the reference's, already differ beyond the loosest level, it is kept so and true returned (nothing
// recomputed; a pair's re-run computes every stage)
bool kept_without_backward(CheckContext& c, Hypothesis& h) {
  h.pred[idx(CheckTensor::dq)] = h.pred[idx(CheckTensor::dk)] = h.pred[idx(CheckTensor::dv)] = unchecked();
  const HypothesisResult r = c.evaluate(h);
  if (c.next_stage(c.fits_so_far(r))) return false;
  h.method = "not recomputed: O or LSE, which this fault leaves as the reference's, differ from it";
  c.keep(h, r);
  return true;
}

void add_to(Tensor3<double>& acc, const Tensor3<double>& x) {
  for (size_t e = 0; e < acc.data.size(); ++e) acc.data[e] += x.data[e];
}

// the partial-LSE (partial_d false) or partial-D (true) backward: dQ at the sampled rows; when that
// fits, dK and dV at the sampled tail keys
void per_step_statistics(CheckContext& c, const std::vector<RowsOut>& parts, bool partial_d) {
  const CpSpec& s = c.spec;
  const AttnRule truth = true_rule(s);
  Hypothesis h;
  h.id = partial_d ? "bwd_partial_d" : "bwd_partial_lse", h.priority = partial_d ? 87 : 86;
  if (!c.wants(h.id)) return;
  h.name = partial_d ? "ring backward with each step's partial D = rowsum(dO * O_i) (the step's partial output) instead of the final O's"
                     : "ring backward with each step's partial LSE (the block's own, from that forward step) instead of the final merged LSE";
  if (kept_without_backward(c, h)) return;
  h.method = "per-step backward recomputed at " + count(c.rows, "rows") + " with the steps' partial results";
  const RowsOut fin{gather(c.ref[idx(CheckTensor::o)], c.rows), gather(c.ref[idx(CheckTensor::lse)], c.rows)};
  Tensor3<double> dq(static_cast<index_t>(c.rows.size()), s.h(), s.d());
  for (index_t j = 0; j < s.P(); ++j) {
    const std::vector<index_t> keys = block_keys(s, j, j).first;
    const RowsOut fwd = partial_d ? RowsOut{parts[sz(j)].o, fin.lse} : RowsOut{fin.o, parts[sz(j)].lse};
    add_to(dq, dq_at(s, c.data.in, truth, c.rows, fwd, &keys));
  }
  h.pred[idx(CheckTensor::dq)] = at(c.rows, std::move(dq));
  HypothesisResult r = c.evaluate(h);
  if (c.next_stage(r.level >= 0)) {  // it fits dQ: dK and dV at the sampled tail keys, block by block
    const auto [keys, queries] = tail_keys(c, truth);
    const RowsOut qfin{gather(c.ref[idx(CheckTensor::o)], queries), gather(c.ref[idx(CheckTensor::lse)], queries)};
    const index_t nk = static_cast<index_t>(keys.size());
    Tensor3<double> dk(nk, s.hk(), s.d()), dv(nk, s.hk(), s.dv());
    for (index_t j = 0; j < s.P(); ++j) {
      std::vector<index_t> kj, where;
      for (index_t a = 0; a < nk; ++a)
        if (c.chunks.rank_of[sz(keys[sz(a)])] == j) kj.push_back(keys[sz(a)]), where.push_back(a);
      if (kj.empty()) continue;
      const std::vector<index_t> block = block_keys(s, j, j).first;
      const RowsOut part = forward_at(s, c.data.in, truth, queries, &block);
      const RowsOut fwd = partial_d ? RowsOut{part.o, qfin.lse} : RowsOut{qfin.o, part.lse};
      const KeyGrads g = dkv_at(s, c.data.in, truth, queries, fwd, kj);
      for (size_t b = 0; b < kj.size(); ++b) {
        std::copy(g.dk.token(static_cast<index_t>(b)), g.dk.token(static_cast<index_t>(b)) + s.hk() * s.d(), dk.token(where[b]));
        std::copy(g.dv.token(static_cast<index_t>(b)), g.dv.token(static_cast<index_t>(b)) + s.hk() * s.dv(), dv.token(where[b]));
      }
    }
    h.method += "; dK, dV at " + count(keys, "keys") + " (from the " + std::to_string(queries.size()) + " queries that see them)";
    h.pred[idx(CheckTensor::dk)] = at(keys, std::move(dk));
    h.pred[idx(CheckTensor::dv)] = at(keys, std::move(dv));
    r = c.evaluate(h);
  }
  c.keep(h, r);
}

// the stale-KV backward: at step i rank r reads the K, V of step 0's block (previous false) or of
// step i - 1's (true) under the mask of step i's block; dQ at the sampled rows
void stale_kv(CheckContext& c, bool previous) {
  const CpSpec& s = c.spec;
  const index_t P = s.P();
  const AttnRule truth = true_rule(s);
  Hypothesis h;
  h.id = previous ? "bwd_stale_kv:previous" : "bwd_stale_kv:step0", h.priority = previous ? 89 : 88;
  if (!c.wants(h.id)) return;
  h.name = previous ? "ring backward reads the previous step's K/V: at step i >= 1 the mask of rank r-i's KV block on the K, V of rank r-i+1's"
                    : "ring backward reads step 0's K/V (the rank's own) at every step: at step i the mask of rank r-i's KV block on rank r's K, V";
  h.name += " (dK, dV not checked)";
  if (kept_without_backward(c, h)) return;
  Tensor3<double> dq(static_cast<index_t>(c.rows.size()), s.h(), s.d());
  for (index_t r = 0; r < P; ++r) {
    std::vector<index_t> rows, where;  // rank r's sampled rows, and their places in c.rows
    for (size_t a = 0; a < c.rows.size(); ++a)
      if (c.chunks.rank_of[sz(c.rows[a])] == r) rows.push_back(c.rows[a]), where.push_back(static_cast<index_t>(a));
    if (rows.empty()) continue;
    const RowsOut fin{gather(c.ref[idx(CheckTensor::o)], rows), gather(c.ref[idx(CheckTensor::lse)], rows)};
    Tensor3<double> dqr(static_cast<index_t>(rows.size()), s.h(), s.d());
    for (index_t i = 0; i < P; ++i) {
      const index_t j = ring_kv_block(r, i, P), b = previous ? ring_kv_block(r, std::max<index_t>(i - 1, 0), P) : r;
      const auto [keys, from] = block_keys(s, j, b);
      add_to(dqr, dq_at(s, c.data.in, truth, rows, fin, &keys, &from));
    }
    for (size_t a = 0; a < rows.size(); ++a)
      std::copy(dqr.token(static_cast<index_t>(a)), dqr.token(static_cast<index_t>(a)) + s.h() * s.d(), dq.token(where[a]));
  }
  h.method = "per-step dQ recomputed at " + count(c.rows, "rows") + " with the stale blocks' K, V at the steps' positions";
  h.pred[idx(CheckTensor::dq)] = at(c.rows, std::move(dq));
  c.add(h);
}

}  // namespace

void backward_hypotheses(CheckContext& c) {
  const CpSpec& s = c.spec;
  if (s.mode() != Mode::p2p || s.P() < 2 || !c.present(CheckTensor::dq) ||
      !c.worth({CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}, "ring backward"))
    return;
  const std::vector<RowsOut> parts = block_partials(s, c.data.in, c.rows);
  per_step_statistics(c, parts, false);
  per_step_statistics(c, parts, true);
  stale_kv(c, false);
  if (s.P() > 2) stale_kv(c, true);  // cp 2: the previous step's block is step 0's
}

}  // namespace cplab
