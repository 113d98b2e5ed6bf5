// faults_infer.cpp: the named faults of an inference CP step (issue 37 item 5), each turned into a
// prediction of O and LSE from the inputs (infer_check.h's InferCheckContext, hypotheses.h's forms).
//
// What it is: every prediction is built from infer_partials.h's pieces (attention of the new tokens
// over a subset of the KV rows at given positions, and merges), with the spec's ownership
// (infer_spec.h: kv_rows, cache_rows, q_rows of each rank) deciding the pieces:
//   10 positions from 0   every new token masked at position t instead of P_b + t (the cache's offset
//                         forgotten: FlashAttention's top-left causal alignment instead of bottom-right)
//   11, 12 off by one     positions P_b + t - 1 / P_b + t + 1
//   20 plain sum          the ranks' partials (each rank's KV shard, kv_rows(r)) added without their
//                         LSE weights: O = sum_r O_r; LSE as the reference (the fault is O's)
//   21 mean               O = (1/N) sum_r O_r over the N ranks' partials
//   30 cache shard lost   rank r's cached tokens (cache_rows(r)) never attended; one per rank
//   40 KV not appended    the new tokens attend to the cache only, not to themselves and each other
//   50 wrong owner        pass-q, decode-pass-q, decode-ag: the closing all-to-all's permutation
//                         shifted by s (1 .. N-1): owner j receives the partials meant for owner
//                         j+s mod N, so its i-th new token gets the merged result of owner j+s's
//                         i-th (past owner j+s's last: a padding row, O = 0 and LSE = -inf)
// Sinks, when the spec has them, are applied once per row to the faulted result (core/sinks.h), as
// the variants do: every fault but its own keeps them right.
// What it is not: the training faults (faults_*.cpp) or a way to inject a fault (tests do that).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "check/infer_check.h"
#include "check/infer_partials.h"
#include "core/util.h"

namespace cplab {

namespace {

// a hypothesis predicting O and LSE from one (O, LSE)
Hypothesis both(std::string id, std::string name, int priority, std::string method, const AttnOut<double>& x) {
  Hypothesis h{std::move(id), std::move(name), priority, std::move(method), {}};
  h.pred[idx(CheckTensor::o)] = faulted(x.o);
  h.pred[idx(CheckTensor::lse)] = faulted(lse_tensor(x.lse));
  return h;
}

// rows of `rows` not in `drop` (both sorted)
std::vector<index_t> without(const std::vector<index_t>& rows, const std::vector<index_t>& drop) {
  std::vector<index_t> out;
  std::set_difference(rows.begin(), rows.end(), drop.begin(), drop.end(), std::back_inserter(out));
  return out;
}

}  // namespace

void infer_hypotheses(InferCheckContext& c) {
  const InferSpec& s = c.spec;
  const Tensor3<double>&q = c.data.in.q, &k = c.data.in.k, &v = c.data.in.v;
  const std::vector<double>& sinks = c.data.in.sinks;
  const index_t N = s.N();
  const std::vector<index_t> all = all_kv_rows(s), pos = infer_query_positions(s, 0, false);

  // 10-12: the new tokens' positions
  struct Shift {
    index_t delta;
    bool from_zero;
    const char *id, *name;
    int priority;
  };
  const Shift shifts[] = {
      {0, true, "positions_from_zero",
       "the new tokens' positions taken from 0 instead of P (the cache's offset forgotten: "
       "new token t masked as position t, top-left instead of bottom-right alignment)",
       10},
      {-1, false, "positions_minus_one", "the new tokens' positions off by one: P + t - 1 instead of P + t", 11},
      {1, false, "positions_plus_one", "the new tokens' positions off by one: P + t + 1 instead of P + t", 12}};
  for (const Shift& sh : shifts)
    c.add(both(sh.id, sh.name, sh.priority, "attention recomputed with every new token at the shifted position",
               sinks_applied(infer_partial(s, q, k, v, all, infer_query_positions(s, sh.delta, sh.from_zero)), sinks)));

  // each rank's partial over its KV shard (cache + new tokens), as every variant computes it
  std::vector<AttnOut<double>> parts;
  for (index_t r = 0; r < N; ++r) parts.push_back(infer_partial(s, q, k, v, s.kv_rows(r), pos));
  const AttnOut<double> merged = merge_partials(parts);  // the exact merge: the reference without sinks

  // 20, 21: partials combined without their LSE weights
  if (N > 1)
    for (bool mean : {false, true}) {
      AttnOut<double> x{sum_partials(parts, mean), merged.lse};
      x = sinks_applied(std::move(x), sinks);
      Hypothesis h{mean ? "partials_mean" : "partials_sum",
                   mean ? "partial outputs averaged without their LSE weights: O = (1/N) sum_r O_r"
                        : "partial outputs added without their LSE weights: O = sum_r O_r",
                   mean ? 21 : 20,
                   "each rank's partial over its KV shard (kv_rows), then O summed; LSE as the reference",
                   {}};
      h.pred[idx(CheckTensor::o)] = faulted(std::move(x.o));
      h.pred[idx(CheckTensor::lse)].kind = PredKind::reference;
      c.add(h);
    }

  // 30: one rank's cache shard missing
  for (index_t r = 0; r < N; ++r) {
    const std::vector<index_t> cache = s.cache_rows(r);
    if (cache.empty()) continue;
    std::vector<AttnOut<double>> lost = parts;
    lost[sz(r)] = infer_partial(s, q, k, v, without(s.kv_rows(r), cache), pos);
    c.add(both("cache_shard_missing_" + num(r),
               "rank " + num(r) + "'s cache shard missing (its " + num(static_cast<index_t>(cache.size())) +
                   " cached tokens never attended)",
               30, "the ranks' partials merged, rank " + num(r) + "'s over its new tokens only",
               sinks_applied(merge_partials(lost), sinks)));
  }

  // 40: the new tokens' own KV not appended
  c.add(both("new_kv_not_appended", "the new tokens' own KV not appended to the cache (they attend to the cache only)",
             40, "attention recomputed over the cached tokens only",
             sinks_applied(infer_partial(s, q, k, v, cache_kv_rows(s), pos), sinks)));

  // 50: the closing all-to-all's permutation shifted (the variants that have one)
  if (s.mode() != InferMode::pass_kv && N > 1) {
    const Tensor3<double>& ro = c.ref[idx(CheckTensor::o)];
    const Tensor3<double>& rl = c.ref[idx(CheckTensor::lse)];
    for (index_t sh = 1; sh < N; ++sh) {
      AttnOut<double> x{Tensor3<double>(s.T(), s.h(), s.dv()), Rows<double>(s.h(), s.T())};
      for (index_t j = 0; j < N; ++j) {
        const std::vector<index_t>&mine = s.q_rows(j), &theirs = s.q_rows((j + sh) % N);
        for (size_t i = 0; i < mine.size(); ++i) {
          const index_t g = mine[i];
          for (index_t a = 0; a < s.h(); ++a) {
            if (i < theirs.size()) {
              std::copy(ro.token(theirs[i]) + a * s.dv(), ro.token(theirs[i]) + (a + 1) * s.dv(),
                        x.o.token(g) + a * s.dv());
              x.lse(a, g) = rl.at(theirs[i], a, 0);
            } else {  // a padding row's merged partials: no key, O = 0 and LSE = -inf (sinks leave such a row alone)
              x.lse(a, g) = -std::numeric_limits<double>::infinity();
            }
          }
        }
      }
      c.add(both("wrong_owner_" + num(sh),
                 "partials returned to the wrong owner: owner j received those meant for owner j+" + num(sh) +
                     " mod N (the closing all-to-all's permutation shifted by " + num(sh) + ")",
                 50, "the reference's rows of owner j+" + num(sh) + "'s new tokens placed on owner j's", x));
    }
  }
}

}  // namespace cplab
