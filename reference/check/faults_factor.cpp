// faults_factor.cpp: an output off by a factor (hypotheses.h, priorities 76-77): the claimed output
// is c times the reference's, c the least-squares factor <x, ref> / <ref, ref> over the finite values
// (LSE: real tokens), one per output, or one per head when one does not fit. A factor a known mistake
// gives is named with it: 1/group (a KV group's gradient reduced by mean over its query heads instead
// of sum), the group size, 1/cp (the ranks' parts averaged instead of summed), cp, 2, 1/2, -1; any
// other is printed. A factor of 1 within tolerance is no fault (evaluate() never reports it), and an
// LSE off by 1/ln 2 is left to "LSE in base 2" (faults_transform.cpp).
// What it is not: faults that change some tokens or rows only (faults_transform.cpp, faults_sinks.cpp).
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "check/hypotheses.h"
#include "core/util.h"

namespace cplab {

namespace {

// a factor a known mistake gives output t, and what it means ("" : the identity)
struct Special {
  double v;
  std::string label, meaning;
};

std::vector<Special> specials(const CpSpec& s, CheckTensor t) {
  const index_t G = s.h() / s.hk(), P = s.P();
  const bool kv = t == CheckTensor::dk || t == CheckTensor::dv, grad = kv || t == CheckTensor::dq;
  const double g = static_cast<double>(G), p = static_cast<double>(P);
  std::vector<Special> v = {{1.0, "", ""}};
  if (kv && G > 1) {
    v.push_back({1.0 / g, "1/" + num(G), "a KV group's gradient reduced by mean over its " + num(G) + " query heads instead of sum"});
    v.push_back({g, num(G) + ", the group size", "a KV group's gradient counted once per query head"});
  }
  v.push_back({2.0, "2", "counted twice"});
  v.push_back({0.5, "1/2", "halved"});
  v.push_back({-1.0, "-1", "the wrong sign"});
  if (P > 1) {
    v.push_back({1.0 / p, "1/cp = 1/" + num(P),
                 grad ? "the ranks' parts averaged over cp = " + num(P) + " instead of summed (a reduce with op AVG)" : "divided by cp"});
    v.push_back({p, "cp = " + num(P), grad ? "every rank's part counted as the whole (summed over cp = " + num(P) + " ranks once too often)"
                                           : "multiplied by cp"});
  }
  return v;
}

// the largest |x - f ref| over head i's finite claimed values (i < 0: every head), / scale; the scan
// stops once it is above stop (then the value returned is only known to be above it)
double head_err(const Tensor3<double>& x, const Tensor3<double>& ref, index_t i, double f, const Packing* real, double scale,
                double stop = std::numeric_limits<double>::infinity()) {
  const double limit = stop * scale;
  double m = 0;
  for (index_t g = 0; g < x.n; ++g) {
    if (real && !real->real(g)) continue;
    for (index_t k = i < 0 ? 0 : i; k < (i < 0 ? x.h : i + 1); ++k)
      for (index_t e = 0; e < x.d; ++e) {
        if (std::isnan(ref.at(g, k, e))) continue;  // a value the base does not know (a pair search, pairs.h)
        const double d = elem_diff(x.at(g, k, e), f * ref.at(g, k, e), true);
        if (!std::isnan(d)) m = std::max(m, d);
        if (m > limit) return m / scale;
      }
  }
  return m / scale;
}

// the least-squares factor of head i (i < 0: every head): <x, ref> / <ref, ref> over finite pairs
double fit(const Tensor3<double>& x, const Tensor3<double>& ref, index_t i, const Packing* real) {
  double xr = 0, rr = 0;
  for (index_t g = 0; g < x.n; ++g) {
    if (real && !real->real(g)) continue;
    for (index_t k = i < 0 ? 0 : i; k < (i < 0 ? x.h : i + 1); ++k)
      for (index_t e = 0; e < x.d; ++e) {
        const double a = x.at(g, k, e), b = ref.at(g, k, e);
        if (std::isfinite(a) && std::isfinite(b)) xr += a * b, rr += b * b;
      }
  }
  return rr > 0 ? xr / rr : 1.0;
}

// head i's factor (i < 0: every head's): at the tightest level where the special values or the fitted
// factor fit (within tolerance of the claimed values), the first special one that does, else the fitted
// one (also when none fits); *named: the special's index, or -1
double snapped(const CheckContext& c, CheckTensor t, index_t i, int* named) {
  const Tensor3<double>& x = c.data.out[idx(t)].x;
  const Tensor3<double>& r = c.ref[idx(t)];
  const Packing* real = t == CheckTensor::lse ? &c.spec.packing() : nullptr;
  const std::vector<Special> sp = specials(c.spec, t);
  const double fitted = fit(x, r, i, real), fitted_err = head_err(x, r, i, fitted, real, c.scale[idx(t)]);
  *named = -1;
  for (const CheckLevel& L : c.levels) {
    for (size_t k = 0; k < sp.size(); ++k)
      if (head_err(x, r, i, sp[k].v, real, c.scale[idx(t)], L.tol[idx(t)]) <= L.tol[idx(t)]) {
        *named = static_cast<int>(k);
        return sp[k].v;
      }
    if (fitted_err <= L.tol[idx(t)]) break;
  }
  return fitted;
}

}  // namespace

void factor_hypotheses(CheckContext& c) {
  if (!c.worth({CheckTensor::o, CheckTensor::lse, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}, "factor")) return;
  Hypothesis h;
  h.id = "factor", h.priority = 76;
  h.method = "the reference times the least-squares factor <x, ref> / <ref, ref> of each wrong output (per head where one does not fit)";
  std::map<std::string, std::vector<std::string>> groups;  // "0.25 (= 1/4: ...)" -> the outputs off by it
  std::vector<std::string> per_head;
  for (CheckTensor t : kAllCheckTensors) {
    if (!c.wrong(t)) continue;
    const int i = idx(t);
    const double tol = c.levels.back().tol[i];  // the loosest level decides the form (constant or per head)
    const Tensor3<double>& r = c.ref[i];
    const std::vector<Special> sp = specials(c.spec, t);
    const Packing* real = t == CheckTensor::lse ? &c.spec.packing() : nullptr;
    if (t == CheckTensor::lse && head_err(c.data.out[i].x, r, -1, 1.0 / std::log(2.0), real, c.scale[i], tol) <= tol)
      continue;  // LSE / ln 2: LSE in base 2, named by faults_transform.cpp
    int named = -1;
    const double f = snapped(c, t, -1, &named);
    std::vector<double> fh(sz(r.h), f);
    if (head_err(c.data.out[i].x, r, -1, f, real, c.scale[i], tol) <= tol) {
      if (f == 1.0) continue;  // no factor: this output is wrong some other way
      std::string key = approx4(f), means;  // every reading of a special value (1/4 may be 1/group and 1/cp)
      for (size_t k = 1; named > 0 && k < sp.size(); ++k)
        if (sp[k].v == f) means += (means.empty() ? " (= " : "; or ") + sp[k].label + ": " + sp[k].meaning;
      key += means.empty() ? "" : means + ")";
      groups[key].push_back(tensor_label(t));
    } else {  // one factor per head
      h.id = "factor_per_head", h.priority = 77;
      std::string text;
      for (index_t k = 0; k < r.h;) {
        int nk = -1;
        fh[sz(k)] = snapped(c, t, k, &nk);
        index_t e = k + 1;
        for (int ne = -1; e < r.h; ++e) {
          fh[sz(e)] = snapped(c, t, e, &ne);
          if (approx4(fh[sz(e)]) != approx4(fh[sz(k)])) break;
        }
        text += (text.empty() ? "" : ", ") + std::string(e - k > 1 ? "heads " + num(k) + "-" + num(e - 1) : "head " + num(k)) + ": " +
                approx4(fh[sz(k)]) + (nk > 0 ? " (= " + sp[sz(nk)].label + ")" : "");
        k = e;
      }
      per_head.push_back(std::string(tensor_label(t)) + " off by a factor per head (" + text + ")");
    }
    Tensor3<double> x = r;
    for (index_t g = 0; g < x.n; ++g)
      for (index_t k = 0; k < x.h; ++k)
        for (index_t e = 0; e < x.d; ++e) x.at(g, k, e) *= fh[sz(k)];
    h.pred[i] = faulted(std::move(x));
  }
  for (const auto& [key, outs] : groups) {
    std::string who;
    for (size_t k = 0; k < outs.size(); ++k) who += (k == 0 ? "" : k + 1 == outs.size() ? " and " : ", ") + outs[k];
    h.name += (h.name.empty() ? "" : "; ") + who + " off by a constant factor " + key;
  }
  for (const std::string& p : per_head) h.name += (h.name.empty() ? "" : "; ") + p;
  if (h.name.empty()) return;
  c.add(h);
}

}  // namespace cplab
