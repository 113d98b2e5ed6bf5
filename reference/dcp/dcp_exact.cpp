// dcp_exact.cpp: branch and bound over list schedules of a small batch (see dcp_exact.h).
#include "dcp/dcp_exact.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

#include "dcp/dcp_list.h"

namespace cplab {

namespace {

struct Search {
  const std::vector<std::int64_t>& L;
  std::int64_t N, M;
  const CostModel& cost;
  std::vector<double> min_work;  // [samples] least c * t over the sizes it may use
  std::vector<double> fr;        // [N] when each rank is free
  std::vector<Placed> placed, best;
  double best_len;
  std::int64_t nodes = 0, limit;
  bool aborted = false;
  std::set<std::pair<unsigned, std::vector<double>>> seen;  // (placed mask, canonical free times)

  void dfs(unsigned mask, double left_work) {
    if (aborted) return;
    if (++nodes > limit) {
      aborted = true;
      return;
    }
    const double now = *std::max_element(fr.begin(), fr.end());
    if (now >= best_len - 1e-12) return;
    if (mask + 1 == (1u << L.size())) {
      best = placed;
      best_len = now;
      return;
    }
    double busy = 0;
    for (double f : fr) busy += f;
    if ((busy + left_work) / static_cast<double>(N) >= best_len - 1e-12) return;
    if (seen.size() < 400000) {
      std::vector<double> key;
      canonical_order(fr, 0, N, key);  // free times up to the buddy tree's symmetries (dcp_list.h)
      if (!seen.insert({mask, std::move(key)}).second) return;
    }
    for (size_t i = 0; i < L.size(); ++i) {
      if (mask & (1u << i)) continue;
      bool twin = false;  // an unplaced sample of the same length with a lower index goes first
      for (size_t j = 0; j < i && !twin; ++j) twin = !(mask & (1u << j)) && L[j] == L[i];
      if (twin) continue;
      for (std::int64_t c = cp_min(L[i], M); c <= N; c *= 2) {
        const double t = cost.time(L[i], c);
        for (std::int64_t s = 0; s < N; s += c) {
          double ready = 0;
          for (std::int64_t r = s; r < s + c; ++r) ready = std::max(ready, fr[static_cast<size_t>(r)]);
          if (ready + t >= best_len - 1e-12) continue;
          const std::vector<double> saved(fr.begin() + s, fr.begin() + s + c);
          std::fill(fr.begin() + s, fr.begin() + s + c, ready + t);
          placed.push_back(Placed{static_cast<int>(i), s, c, ready, ready + t});
          dfs(mask | (1u << i), left_work - min_work[i]);
          placed.pop_back();
          std::copy(saved.begin(), saved.end(), fr.begin() + s);
        }
      }
    }
  }
};

}  // namespace

DcpSchedule schedule_exact(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete) {
  check_batch(lengths, N, M);
  if (lengths.size() > 16) throw std::logic_error("dcp: exhaustive search is for at most 16 samples");
  Search s{lengths, N, M, cost, {}, std::vector<double>(static_cast<size_t>(N), 0.0), {}, {},
           upper_bound * (1 + 1e-12) + 1e-12, 0, node_limit, false, {}};
  double left = 0;
  for (std::int64_t Li : lengths) {
    double w = std::numeric_limits<double>::infinity();
    for (std::int64_t c = cp_min(Li, M); c <= N; c *= 2) w = std::min(w, static_cast<double>(c) * cost.time(Li, c));
    s.min_work.push_back(w);
    left += w;
  }
  s.dfs(0, left);
  complete = !s.aborted;
  if (s.best.empty()) return DcpSchedule{};
  return to_schedule(ListProblem{lengths, N, M, cost}, s.best);
}

}  // namespace cplab
