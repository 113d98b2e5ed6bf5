// pairs.cpp: pair_hypotheses (see pairs.h).
#include "check/pairs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/interrupt.h"
#include "core/util.h"

namespace cplab {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// the outputs r explains at the tightest level (present, predicted, within its tolerance, moved
// beyond it) and whether it misses some there (present and wrong under it, or not checked)
int explained(const CheckContext& c, const HypothesisResult& r, bool& misses) {
  int n = 0;
  misses = false;
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (!c.present(t)) continue;
    const bool fits = r.kind[i] != PredKind::unchecked && r.err[i] <= c.levels[0].tol[i];
    if (fits && r.fault[i] > c.levels[0].tol[i]) ++n;
    if (!fits && c.wrong(t)) misses = true;
  }
  return n;
}

// the token maps a transform that could fix what A misses reads through (out[g] = in[src[g]]):
// other layouts' orders (every output), a rank either side (dK, dV mixed up), an LSE written
// [tokens, heads] and read (heads, tokens) (head i of token g reads token (i S + g) / h); for the
// query rows (O, LSE, dQ) or the keys (dK, dV)
std::vector<std::vector<index_t>> transform_maps(const CpSpec& s, bool layouts, bool shifts, bool lse) {
  std::vector<std::vector<index_t>> maps;
  const Layout all[] = {Layout::contiguous, Layout::zigzag, Layout::striped};
  for (Layout held : all)
    for (Layout placed : all)
      if (layouts && held != placed)
        if (auto m = layout_source(s, held, placed)) maps.push_back(std::move(*m));
  if (shifts && s.P() > 1) maps.push_back(rank_shift_source(s, 1));
  if (shifts && s.P() > 2) maps.push_back(rank_shift_source(s, -1));
  for (index_t i = 0; lse && i < s.h(); ++i) {
    std::vector<index_t> m(sz(s.S()));
    for (index_t g = 0; g < s.S(); ++g) m[sz(g)] = (i * s.S() + g) / s.h();
    maps.push_back(std::move(m));
  }
  return maps;
}

// output t is wrong under A's prediction at the tightest level (or A does not predict it)
bool missed(const CheckContext& c, const HypothesisResult& a, CheckTensor t) {
  return c.wrong(t) && !(a.kind[idx(t)] != PredKind::unchecked && a.err[idx(t)] <= c.levels[0].tol[idx(t)]);
}

std::vector<index_t> with_images(const std::vector<index_t>& tokens, const std::vector<std::vector<index_t>>& maps) {
  std::vector<index_t> out = tokens;
  for (const std::vector<index_t>& m : maps)
    for (index_t g : tokens) out.push_back(m[sz(g)]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A's prediction of every output as full tensors, NaN where A predicts nothing (unknown)
std::array<Tensor3<double>, kCheckTensors> base_of(const CheckContext& c, const Hypothesis& a) {
  std::array<Tensor3<double>, kCheckTensors> base;
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    const Tensor3<double>& r = c.ref[i];
    if (!c.present(t)) continue;
    const Prediction& p = a.pred[i];
    if (p.kind == PredKind::reference) {
      base[i] = r;
    } else if (p.kind == PredKind::faulted && p.tokens.empty()) {
      base[i] = p.x;
    } else {
      base[i] = Tensor3<double>(r.n, r.h, r.d);
      std::fill(base[i].data.begin(), base[i].data.end(), std::numeric_limits<double>::quiet_NaN());
      for (size_t b = 0; b < p.tokens.size() && p.kind == PredKind::faulted; ++b)
        std::copy(p.x.token(static_cast<index_t>(b)), p.x.token(static_cast<index_t>(b)) + r.h * r.d, base[i].token(p.tokens[b]));
    }
  }
  return base;
}

bool known_row(const Tensor3<double>& x, index_t g) {
  for (index_t e = 0; e < x.h * x.d; ++e)
    if (std::isnan(x.token(g)[e])) return false;
  return true;
}

// p's values at the tokens where they are known (no NaN); unchecked when none is
Prediction known_part(const Prediction& p, index_t n) {
  if (p.kind != PredKind::faulted) return p;
  std::vector<index_t> tokens, where;
  const index_t m = p.tokens.empty() ? n : static_cast<index_t>(p.tokens.size());
  for (index_t b = 0; b < m; ++b)
    if (known_row(p.x, b)) tokens.push_back(p.tokens.empty() ? b : p.tokens[sz(b)]), where.push_back(b);
  if (tokens.empty()) return unchecked();
  if (p.tokens.empty() && static_cast<index_t>(tokens.size()) == n) return p;
  return at(tokens, gather(p.x, where));
}

// max |pair - base| / scale over the pair's predicted tokens (how far B moves output t)
double moved(const Prediction& p, const Tensor3<double>& base, double scale) {
  if (p.kind != PredKind::faulted || base.n == 0) return 0;
  double m = 0;
  const index_t rows = p.tokens.empty() ? p.x.n : static_cast<index_t>(p.tokens.size());
  for (index_t b = 0; b < rows; ++b) {
    const index_t g = p.tokens.empty() ? b : p.tokens[sz(b)];
    for (index_t e = 0; e < p.x.h * p.x.d; ++e) {
      const double x = p.x.token(b)[e], y = base.token(g)[e];
      if (std::isfinite(x) && std::isfinite(y)) m = std::max(m, std::abs(x - y));
      else if (x != y) m = std::numeric_limits<double>::infinity();
    }
  }
  return m / (scale > 0 ? scale : 1);
}

}  // namespace

PairSearch pair_hypotheses(CheckContext& c, double budget_seconds) {
  PairSearch out;
  const auto t0 = Clock::now();
  for (const HypothesisResult& r : c.results) {  // a single fault explains them at the tightest level, none left unchecked
    bool open = false;
    for (CheckTensor t : kAllCheckTensors) open = open || (c.wrong(t) && r.kind[idx(t)] == PredKind::unchecked);
    if (r.level == 0 && r.family >= 0 && !open) return out;
  }
  out.ran = true;
  // the first faults: the suggested ones (most outputs explained first), then the rest by priority
  std::vector<std::pair<int, const HypothesisResult*>> firsts;
  for (const HypothesisResult& r : c.results) {
    if (r.family < 0) continue;
    bool misses = false;
    const int n = explained(c, r, misses);
    firsts.emplace_back(n > 0 && misses ? n : 0, &r);
  }
  std::stable_sort(firsts.begin(), firsts.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second->priority < b.second->priority;
  });
  const std::vector<FaultFamily>& families = fault_families();
  std::vector<HypothesisResult> pairs;
  for (const auto& [suggested, ar] : firsts) {
    interruption_point();  // and every pair (CheckContext::evaluate)
    if (suggested == 0) {  // the suggested pairs are done: the rest only if none explains, and while time lasts
      const bool found = std::any_of(pairs.begin(), pairs.end(), [](const HypothesisResult& r) { return r.level >= 0; });
      if (found) break;
      if (secs(t0) > budget_seconds) {
        out.budget_cut = true;
        break;
      }
    }
    out.suggested += suggested > 0 ? 1 : 0;
    out.firsts.push_back(ar->id);
    // A alone, again, keeping its prediction: at the samples and the tokens the transforms that could
    // fix what A misses read
    const bool m_rows = missed(c, *ar, CheckTensor::o) || missed(c, *ar, CheckTensor::lse) || missed(c, *ar, CheckTensor::dq);
    const bool m_keys = missed(c, *ar, CheckTensor::dk) || missed(c, *ar, CheckTensor::dv);
    const auto row_maps = transform_maps(c.spec, m_rows, m_rows, missed(c, *ar, CheckTensor::lse));
    const auto key_maps = transform_maps(c.spec, m_rows, m_keys, false);
    std::vector<Hypothesis> kept;
    CheckContext ca = c;
    ca.results.clear(), ca.skipped.clear();
    ca.only_id = ar->id, ca.capture = &kept, ca.family = ar->family, ca.token_maps = key_maps, ca.all_stages = true;
    ca.rows = with_images(c.rows, row_maps), ca.keys = with_images(c.keys, key_maps);
    families[sz(ar->family)].run(ca);
    if (kept.empty()) continue;
    const Hypothesis& a = kept.front();
    bool a_misses = false;
    explained(c, *ar, a_misses);
    // every transform applied to A's prediction
    std::vector<Hypothesis> bs;
    CheckContext cb = c;
    cb.ref = base_of(c, a);
    cb.results.clear(), cb.skipped.clear(), cb.capture = &bs;
    for (CheckTensor t : kAllCheckTensors)  // the transforms' families run for what A misses only (CheckContext::worth)
      if (!missed(c, *ar, t)) cb.base_err[idx(t)] = 0, cb.nonfinite[idx(t)] = 0, cb.frozen[idx(t)] = c.wrong(t);
    for (size_t f = 0; f < families.size(); ++f)
      if (families[f].transform) {
        cb.family = static_cast<int>(f);
        families[f].run(cb);
      }
    for (const Hypothesis& b : bs) {
      const bool seen = std::any_of(pairs.begin(), pairs.end(), [&](const HypothesisResult& x) {  // (B, A): two transforms commute
        return x.pair_a == b.id && x.pair_b == a.id;
      });
      if (b.id == a.id || seen) continue;
      Hypothesis p;
      p.id = a.id + " + " + b.id;
      p.name = "two faults: (1) " + a.name + "; then (2) " + b.name;
      p.priority = 120;
      p.method = "(1) " + a.method + "; (2) applied to (1)'s prediction: " + b.method;
      p.spec_hint = "";
      bool usable = true;
      for (CheckTensor t : kAllCheckTensors) {
        const int i = idx(t);
        // what A does not predict stays unchecked, whatever B does (B's copies of claimed values prove nothing)
        p.pred[i] = a.pred[i].kind == PredKind::unchecked ? unchecked()
                    : b.pred[i].kind == PredKind::reference ? known_part(a.pred[i], c.ref[i].n)
                                                            : known_part(b.pred[i], c.ref[i].n);
        // an output A gets wrong must be checked under the pair
        if (c.present(t) && c.wrong(t) && p.pred[i].kind == PredKind::unchecked && a_misses) usable = false;
      }
      if (!usable) continue;
      HypothesisResult r = c.evaluate(p);
      ++out.tried;
      bool b_visible = false;
      for (CheckTensor t : kAllCheckTensors) {
        const int i = idx(t);
        r.moved_a[i] = ar->fault[i];
        r.moved_b[i] = c.present(t) ? moved(p.pred[i], cb.ref[i], c.scale[i]) : std::numeric_limits<double>::quiet_NaN();
        b_visible = b_visible || (c.present(t) && r.moved_b[i] > c.levels[0].tol[i]);
      }
      if (!b_visible) continue;
      r.pair_a = a.id, r.pair_b = b.id, r.family = -1;
      pairs.push_back(std::move(r));
    }
  }
  for (HypothesisResult& r : pairs) c.results.push_back(std::move(r));
  out.seconds = secs(t0);
  return out;
}

}  // namespace cplab
