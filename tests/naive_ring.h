// naive_ring.h: a small ring attention (p2p) in plain loops, with switches for the bugs of the
// online-softmax merge and the ring backward, and a faulted attention rule, for
// tests/test_check_merge.cpp and tests/test_check_rules.cpp.
//
// What it is: naive_ring(spec, in, bugs), the outputs (o, lse (S, h, 1), dq, dk, dv in global order)
// of a ring run step by step: rank r holds the queries spec.partition() gives it and, at step t, the
// KV block of rank r - t (the KV travels one rank per step); each (query, key) pair is masked by
// check_faults.h's naive_visible; GQA maps query head i to KV head i / (h / hk). The forward merges
// the steps with a running max m, sum l and unnormalised accumulator acc (the max of the scores, or
// of the steps' LSEs), or sums / averages the steps' partial outputs. The backward runs the same
// steps: P = exp(s - LSE), D = rowsum(dO * O), dQ added on the query's rank, dK and dV added into the
// travelling block's buffers (here straight into the block's keys: the same sums). With every switch
// off it is exact attention (tested against the reference to 1e-12).
// What it is not: cplab's ring (modes/ring_p2p.h), or anything from reference/check/ (the faults are
// written here from their definitions); no attention sinks.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "check_faults.h"

namespace cplab::test {

struct RingBugs {
  enum class Merge { online_scores, online_lse, sum, mean };
  Merge merge = Merge::online_scores;  // online_*: the running max of the scores / of the steps' LSEs
  bool no_rescale = false;             // online: acc not multiplied by exp(m_old - m_new) when the max grows
  bool partial_lse = false;            // backward: P = exp(s - LSE_j) with the step's block LSE
  bool partial_d = false;              // backward: D = rowsum(dO * O_j) with the step's partial O
  int stale_kv = 0;                    // backward: 1: step 0's K, V at every step; 2: the previous step's
  // the attention rule of every tile (check_faults.h NaiveRule: a mask dropped or added, the own
  // block unmasked, THD bounds, a scale, a head map); unset: the spec's own
  std::optional<NaiveRule> rule = std::nullopt;
  bool local_only = false;             // every rank attends to its own KV block only (steps t >= 1 skipped)
};

inline Outs naive_ring(const CpSpec& s, const Inputs& in, const RingBugs& bugs) {
  const Partition& part = s.partition();
  const index_t P = s.P(), S = s.S(), h = s.h(), d = s.d(), dv = s.dv();
  const NaiveRule rule = bugs.rule ? *bugs.rule : NaiveRule{s.scale(), 0, false};
  const double scale = rule.scale;
  const double inf = std::numeric_limits<double>::infinity();
  auto block = [&](index_t r, index_t t) { return ((r - t) % P + P) % P; };  // the KV rank r holds at step t
  auto dot_qk = [&](index_t q, index_t i, index_t kd) {
    double x = 0;
    for (index_t e = 0; e < d; ++e) x += in.q.at(q, i, e) * in.k.at(kd, naive_kv_head(s, rule, i), e);
    return scale * x;
  };
  Outs out{Tensor3<double>(S, h, dv), Tensor3<double>(S, h, 1), Tensor3<double>(S, h, d), Tensor3<double>(S, s.hk(), d),
           Tensor3<double>(S, s.hk(), dv)};
  // the steps' partial results: block j's normalised O_j and LSE_j of every query
  std::vector<Tensor3<double>> po(static_cast<size_t>(P), Tensor3<double>(S, h, dv)), pl(static_cast<size_t>(P), Tensor3<double>(S, h, 1));

  // ---- forward ----
  for (index_t r = 0; r < P; ++r)
    for (index_t q : part.indices(r))
      for (index_t i = 0; i < h; ++i) {
        const index_t g = naive_kv_head(s, rule, i);
        double m = -inf, l = 0;    // the true running max of the scores and sum (the LSE)
        double mm = -inf, lf = 0;  // the merge's running max and sum
        std::vector<double> acc(static_cast<size_t>(dv), 0.0);
        int seen = 0;
        for (index_t t = 0; t < (bugs.local_only ? 1 : P); ++t) {
          const index_t j = block(r, t);
          const std::vector<index_t> keys = part.indices(j);
          double mb = -inf;
          for (index_t k : keys)
            if (naive_visible(s, rule, q, k)) mb = std::max(mb, dot_qk(q, i, k));
          if (mb == -inf) {
            pl[static_cast<size_t>(j)].at(q, i, 0) = -inf;
            continue;
          }
          double lb = 0;
          std::vector<double> ob(static_cast<size_t>(dv), 0.0);
          for (index_t k : keys)
            if (naive_visible(s, rule, q, k)) {
              const double p = std::exp(dot_qk(q, i, k) - mb);
              lb += p;
              for (index_t e = 0; e < dv; ++e) ob[static_cast<size_t>(e)] += p * in.v.at(k, g, e);
            }
          for (double& x : ob) x /= lb;
          const double Lb = mb + std::log(lb);
          for (index_t e = 0; e < dv; ++e) po[static_cast<size_t>(j)].at(q, i, e) = ob[static_cast<size_t>(e)];
          pl[static_cast<size_t>(j)].at(q, i, 0) = Lb;
          const double m_new = std::max(m, mb);
          l = l * std::exp(m - m_new) + lb * std::exp(mb - m_new);
          m = m_new;
          ++seen;
          if (bugs.merge == RingBugs::Merge::sum || bugs.merge == RingBugs::Merge::mean) {
            for (index_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += ob[static_cast<size_t>(e)];
            continue;
          }
          const bool by_scores = bugs.merge == RingBugs::Merge::online_scores;
          const double mm_new = std::max(mm, by_scores ? mb : Lb);
          const double rescale = std::exp(mm - mm_new);
          if (!bugs.no_rescale)
            for (double& x : acc) x *= rescale;
          lf *= rescale;
          if (by_scores) {  // acc += sum_k exp(s_k - m_new) v_k
            for (index_t k : keys)
              if (naive_visible(s, rule, q, k)) {
                const double p = std::exp(dot_qk(q, i, k) - mm_new);
                lf += p;
                for (index_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += p * in.v.at(k, g, e);
              }
          } else {  // acc += exp(LSE_j - m_new) O_j
            lf += std::exp(Lb - mm_new);
            for (index_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += std::exp(Lb - mm_new) * ob[static_cast<size_t>(e)];
          }
          mm = mm_new;
        }
        out[1].at(q, i, 0) = seen > 0 ? m + std::log(l) : -inf;
        if (seen == 0) continue;
        const double norm = bugs.merge == RingBugs::Merge::sum ? 1.0 : bugs.merge == RingBugs::Merge::mean ? 1.0 / seen : 1.0 / lf;
        for (index_t e = 0; e < dv; ++e) out[0].at(q, i, e) = acc[static_cast<size_t>(e)] * norm;
      }

  // ---- backward ----
  for (index_t r = 0; r < P; ++r)
    for (index_t t = 0; t < (bugs.local_only ? 1 : P); ++t) {
      const index_t j = block(r, t);
      const index_t b = bugs.stale_kv == 1 ? r : bugs.stale_kv == 2 ? block(r, t > 0 ? t - 1 : 0) : j;  // the K, V read
      const std::vector<index_t> pos = part.indices(j), dat = part.indices(b);
      for (index_t q : part.indices(r))
        for (index_t i = 0; i < h; ++i) {
          const index_t g = naive_kv_head(s, rule, i);
          const double L = bugs.partial_lse ? pl[static_cast<size_t>(j)].at(q, i, 0) : out[1].at(q, i, 0);
          if (!std::isfinite(L)) continue;
          const Tensor3<double>& o = bugs.partial_d ? po[static_cast<size_t>(j)] : out[0];
          double D = 0;
          for (index_t e = 0; e < dv; ++e) D += in.dout.at(q, i, e) * o.at(q, i, e);
          for (size_t a = 0; a < pos.size(); ++a) {
            const index_t k = pos[a], kd = dat[a];  // the mask of position k, the values of token kd
            if (!naive_visible(s, rule, q, k)) continue;
            double dp = 0;
            for (index_t e = 0; e < dv; ++e) dp += in.dout.at(q, i, e) * in.v.at(kd, g, e);
            const double p = std::exp(dot_qk(q, i, kd) - L), ds = p * (dp - D);
            for (index_t e = 0; e < d; ++e) {
              out[2].at(q, i, e) += scale * ds * in.k.at(kd, g, e);
              out[3].at(k, g, e) += scale * ds * in.q.at(q, i, e);
            }
            for (index_t e = 0; e < dv; ++e) out[4].at(k, g, e) += p * in.dout.at(q, i, e);
          }
        }
    }
  return out;
}

}  // namespace cplab::test
