// dcp_execute.cpp: run a schedule sample by sample on its groups (see dcp_execute.h).
#include "dcp/dcp_execute.h"

#include <random>
#include <stdexcept>

#include "core/error.h"
#include "core/rel_error.h"

namespace cplab {

namespace {

// core/rel_error.h on two matrices of the same shape
double rel(const Mat<double>& a, const Mat<double>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) throw std::logic_error("dcp_execute: matrices of different shapes");
  return rel_error(a.data(), b.data(), static_cast<std::size_t>(a.size()));
}

void add(std::vector<LayerWeights>& acc, const std::vector<LayerWeights>& d, double f) {
  if (acc.empty()) {
    for (const LayerWeights& w : d) acc.push_back({w.wq * f, w.wk * f, w.wv * f, w.wo * f});
    return;
  }
  for (size_t l = 0; l < d.size(); ++l) {
    acc[l].wq += d[l].wq * f;
    acc[l].wk += d[l].wk * f;
    acc[l].wv += d[l].wv * f;
    acc[l].wo += d[l].wo * f;
  }
}

double rel_w(const std::vector<LayerWeights>& a, const std::vector<LayerWeights>& b) {
  double e = 0;
  for (size_t l = 0; l < a.size(); ++l)
    for (auto [x, y] : {std::pair{&a[l].wq, &b[l].wq}, {&a[l].wk, &b[l].wk}, {&a[l].wv, &b[l].wv}, {&a[l].wo, &b[l].wo}})
      e = std::max(e, rel(*x, *y));
  return e;
}

}  // namespace

DcpExecution execute_schedule(const DcpSchedule& s, const std::vector<std::int64_t>& lengths, Mode mode,
                              std::uint64_t seed) {
  require(mode == Mode::p2p || mode == Mode::allgather,
          "schedules are executed with p2p or allgather on each group (got " + to_string(mode) + ")");
  for (size_t i = 0; i < lengths.size(); ++i)
    require(lengths[i] % (2 * s.ranks) == 0, "sample " + std::to_string(i) + " has length " + std::to_string(lengths[i]) +
                                                 ", not a multiple of 2 x ranks = " + std::to_string(2 * s.ranks) +
                                                 " (any sequence may run on all ranks, zigzag over 2 x ranks chunks)");
  StackSpec spec;
  spec.modes = {LayerMode{mode}};
  spec.hidden = 8;
  spec.heads = 4;
  spec.kv_heads = 4;
  spec.head_dim = 4;
  const std::vector<LayerWeights> w = random_weights(spec, seed);
  DcpExecution ex;
  for (std::int64_t L : lengths) ex.tokens += L;
  std::vector<LayerWeights> single, dist, overcount;
  for (const DcpRound& round : s.rounds)
    for (const DcpGroup& g : round.groups)
      for (int i : g.samples) {
        const std::int64_t L = lengths[static_cast<size_t>(i)];
        std::mt19937_64 rng(seed * 1000003ULL + static_cast<std::uint64_t>(i));
        std::uniform_real_distribution<double> u(-1, 1);
        Mat<double> x(L, spec.hidden), gy(L, spec.hidden);
        for (std::int64_t e = 0; e < x.size(); ++e) x.data()[e] = u(rng), gy.data()[e] = u(rng);
        // single device: the sequence's loss sum_t <g_t, y_t>, its gradient, scaled by 1/total tokens
        const StackResult ref = dense_stack(spec, w, x, gy);
        add(single, ref.dw, 1.0 / static_cast<double>(ex.tokens));
        // on the group: CP = group size; every rank's partial is summed over DP x CP, then scaled
        StackSpec gs = spec;
        if (g.size == 1) gs.modes = {LayerMode{Mode::p2p}};
        SimComm comm(static_cast<int>(g.size), nullptr);
        const StackResult got = cp_stack(gs, Partition(Layout::zigzag, L, g.size), w, x, gy, comm);
        ex.output_error = std::max(ex.output_error, rel(got.y, ref.y));
        for (const auto& partial : got.dw_rank) add(dist, partial, 1.0 / static_cast<double>(ex.tokens));
        for (std::int64_t r = 0; r < g.size; ++r) add(overcount, got.dw, 1.0 / static_cast<double>(ex.tokens));
      }
  ex.gradient_error = rel_w(dist, single);
  ex.overcount_error = rel_w(overcount, single);
  return ex;
}

}  // namespace cplab
