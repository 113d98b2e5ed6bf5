// error_map.cpp: tolerances, chunks and the error map of cplab check (error_map.h).
#include "check/error_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/util.h"

namespace cplab {

namespace {

// {O, LSE, gradients} of a computation in each dtype (docs/check.md, cuda/README.md)
std::array<double, 3> computed_tol(NpyDtype t) {
  switch (t) {
    case NpyDtype::f8: return {1e-10, 1e-10, 1e-10};
    case NpyDtype::f4: return {1e-5, 1e-5, 1e-4};
    case NpyDtype::f2: return {4e-3, 1e-4, 1e-2};
    case NpyDtype::bf16: return {2e-2, 1e-4, 5e-2};
  }
  return {1e-10, 1e-10, 1e-10};
}

double pick(const std::array<double, 3>& tol, CheckTensor t) {
  return t == CheckTensor::o ? tol[0] : t == CheckTensor::lse ? tol[1] : tol[2];
}

std::string sci(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1e", x);
  return b;
}

// "0-7", "1,3,5", "0-2,6"
std::string ranges(const std::set<index_t>& s) {
  std::string out;
  for (auto it = s.begin(); it != s.end();) {
    index_t a = *it, b = a;
    for (++it; it != s.end() && *it == b + 1; ++it) b = *it;
    out += (out.empty() ? "" : ",") + num(a) + (b > a ? "-" + num(b) : "");
  }
  return out;
}

// 1234567 -> "1,234,567"
std::string grouped(index_t n) {
  std::string d = num(n), out;
  for (size_t k = 0; k < d.size(); ++k) {
    if (k > 0 && (d.size() - k) % 3 == 0) out += ',';
    out += d[k];
  }
  return out;
}

}  // namespace

std::string sci_text(double x) {
  if (std::isnan(x)) return "-";
  if (std::isinf(x)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.1e", x);
  return b;
}

double dtype_tolerance(CheckTensor t, NpyDtype dtype) {
  const bool half = dtype == NpyDtype::f2 || dtype == NpyDtype::bf16;
  // an LSE saved in a half type is rounded like O: it gets O's tolerance of that type
  return pick(computed_tol(dtype), t == CheckTensor::lse && half ? CheckTensor::o : t);
}

std::vector<CheckLevel> check_levels(const std::array<ClaimedTensor, kCheckTensors>& out, std::optional<double> tolerance) {
  std::vector<CheckLevel> levels(1);
  levels[0].name = tolerance ? "--tolerance" : "the outputs' dtypes";
  for (CheckTensor t : kAllCheckTensors)
    levels[0].tol[idx(t)] = tolerance ? *tolerance : dtype_tolerance(t, out[idx(t)].dtype);
  for (NpyDtype d : {NpyDtype::f4, NpyDtype::bf16}) {  // a float32 or a bfloat16 computation / merge
    CheckLevel l{npy_dtype_name(d), {}};
    bool looser = false;
    for (CheckTensor t : kAllCheckTensors) {
      const double prev = levels.back().tol[idx(t)];
      l.tol[idx(t)] = std::max(prev, pick(computed_tol(d), t));
      looser = looser || (out[idx(t)].present && l.tol[idx(t)] > prev);
    }
    if (looser) levels.push_back(l);
  }
  return levels;
}

std::string Chunks::label(index_t r, index_t c, index_t P) const {
  if (per_rank == 1) return "all";
  return "chunk " + num(c == 0 ? r : 2 * P - 1 - r);
}

Chunks layout_chunks(const CpSpec& spec) {
  const Partition& part = spec.partition();
  const Packing& pk = spec.packing();
  const index_t P = spec.P(), S = spec.S();
  Chunks ch;
  ch.per_rank = spec.layout() == Layout::zigzag ? 2 : 1;
  ch.chunk_of.assign(sz(S), 0);
  ch.rank_of.assign(sz(S), 0);
  for (index_t g = 0; g < S; ++g) {
    const index_t r = part.owner(g).rank;
    ch.rank_of[sz(g)] = r;
    if (ch.per_rank == 2) {  // the global chunk of g within its (padded) sequence: r, or 2P-1-r
      const index_t s = pk.seq_of(g), start = pk.cu_seqlens_padded[sz(s)];
      const index_t c = (pk.cu_seqlens_padded[sz(s + 1)] - start) / (2 * P);
      ch.chunk_of[sz(g)] = (g - start) / c == r ? 0 : 1;
    }
  }
  return ch;
}

TokenDiff token_diff(const Tensor3<double>& x, const Tensor3<double>& y, const std::vector<index_t>* tokens, bool compact,
                     const Packing* real_only, bool claimed, const Tensor3<double>* ref) {
  TokenDiff r;
  const index_t n = tokens ? static_cast<index_t>(tokens->size()) : x.n, row = x.h * x.d;
  for (index_t a = 0; a < n; ++a) {
    const index_t g = tokens ? (*tokens)[sz(a)] : a;
    if (real_only && !real_only->real(g)) continue;
    const double *p = x.token(g), *q = y.token(compact ? a : g), *f = ref ? ref->token(g) : nullptr;
    for (index_t e = 0; e < row; ++e) {
      const double d = elem_diff(p[e], q[e], claimed);
      if (f && !std::isfinite(p[e]) && std::isfinite(f[e])) {  // a claimed NaN / inf: evidence
        ++r.seen;
        r.matched += d == 0 ? 1 : 0;
      }
      if (!std::isnan(d)) r.max = std::max(r.max, d);
    }
  }
  return r;
}

double cell_diff(const Tensor3<double>& x, const Tensor3<double>& ref, const std::vector<index_t>* tokens,
                 const Packing* real_only) {
  return token_diff(x, ref, tokens, false, real_only, false).max;
}

double claimed_diff(const Tensor3<double>& x, const Tensor3<double>& ref, const Packing* real_only) {
  return token_diff(x, ref, nullptr, false, real_only, true).max;
}

double ref_scale(const Tensor3<double>& ref, const Packing* real_only) {
  double m = 0;
  const index_t row = ref.h * ref.d;
  for (index_t g = 0; g < ref.n; ++g) {
    if (real_only && !real_only->real(g)) continue;
    for (index_t e = 0; e < row; ++e)
      if (std::isfinite(ref.token(g)[e])) m = std::max(m, std::abs(ref.token(g)[e]));
  }
  return m > 0 ? m : 1.0;
}

double ErrorMap::max(CheckTensor t) const {
  double m = 0;
  for (double x : v[idx(t)]) m = std::max(m, x);
  return m;
}

bool ErrorMap::any_nonfinite() const {
  for (const NonFinite& n : nonfinite_total)
    if (n.total() > 0) return true;
  return false;
}

ErrorMap error_map(const CpSpec& spec, const Chunks& chunks, const std::array<ClaimedTensor, kCheckTensors>& out,
                   const std::array<const Tensor3<double>*, kCheckTensors>& ref, const std::array<double, kCheckTensors>& scale) {
  ErrorMap m;
  m.ranks = spec.P(), m.chunks = chunks.per_rank;
  const Packing& pk = spec.packing();
  for (CheckTensor t : kAllCheckTensors) {
    if (!out[idx(t)].present) continue;
    const Tensor3<double>& x = out[idx(t)].x;
    const Tensor3<double>& r = *ref[idx(t)];
    const index_t H = x.h, D = x.d;
    m.heads[idx(t)] = H;
    std::vector<double>& v = m.v[idx(t)];
    v.assign(sz(m.ranks * m.chunks * H), 0.0);
    m.nonfinite[idx(t)].assign(v.size(), NonFinite{});
    for (index_t g = 0; g < x.n; ++g) {
      if (t == CheckTensor::lse && !pk.real(g)) continue;  // padding has no LSE
      const index_t cell0 = (chunks.rank_of[sz(g)] * m.chunks + chunks.chunk_of[sz(g)]) * H;
      for (index_t i = 0; i < H; ++i) {
        double& c = v[sz(cell0 + i)];
        for (index_t e = 0; e < D; ++e) {
          const double a = x.at(g, i, e), b = r.at(g, i, e), d = elem_diff(a, b, true);
          if (!std::isnan(d)) {
            c = std::max(c, d / scale[idx(t)]);
          } else {  // a claimed NaN / inf: evidence apart, not an error
            m.nonfinite[idx(t)][sz(cell0 + i)].add(a);
            m.nonfinite_total[idx(t)].add(a);
          }
        }
      }
    }
  }
  return m;
}

std::vector<std::string> where_lines(const ErrorMap& m, const Chunks& chunks, const std::array<double, kCheckTensors>& tol) {
  std::vector<std::string> lines;
  for (CheckTensor t : kAllCheckTensors) {
    const index_t H = m.heads[idx(t)];
    if (H == 0 || m.max(t) <= tol[idx(t)]) continue;
    std::set<index_t> ranks, local_chunks, heads;
    index_t above = 0, wr = 0, wc = 0, wi = 0;
    double worst = -1;
    for (index_t r = 0; r < m.ranks; ++r)
      for (index_t c = 0; c < m.chunks; ++c)
        for (index_t i = 0; i < H; ++i) {
          const double e = m.at(t, r, c, i);
          if (e > worst) worst = e, wr = r, wc = c, wi = i;
          if (e <= tol[idx(t)]) continue;
          ++above, ranks.insert(r), local_chunks.insert(c), heads.insert(i);
        }
    std::string s = std::string(tensor_label(t)) + ": " + num(above) + " of " + num(m.ranks * m.chunks * H) + " cells above " +
                    sci(tol[idx(t)]) + ": ranks " + ranges(ranks);
    if (m.chunks == 2)
      s += local_chunks.size() == 2 ? ", both chunks" : local_chunks.count(0) ? ", first chunk only (global chunk r)" : ", second chunk only (global chunk 2P-1-r)";
    s += ", heads " + ranges(heads) + "; worst " + sci(worst) + " at rank " + num(wr) +
         (m.chunks == 2 ? " " + chunks.label(wr, wc, m.ranks) : "") + " head " + num(wi);
    lines.push_back(s);
  }
  return lines;
}

std::vector<std::string> nonfinite_lines(const ErrorMap& m) {
  std::vector<std::string> lines;
  for (CheckTensor t : kAllCheckTensors) {
    const NonFinite& n = m.nonfinite_total[idx(t)];
    if (n.total() == 0) continue;
    std::set<index_t> ranks, labels, heads;
    for (index_t r = 0; r < m.ranks; ++r)
      for (index_t c = 0; c < m.chunks; ++c)
        for (index_t i = 0; i < m.heads[idx(t)]; ++i)
          if (m.nonfinite_at(t, r, c, i).total() > 0)
            ranks.insert(r), heads.insert(i), labels.insert(m.chunks == 2 ? (c == 0 ? r : 2 * m.ranks - 1 - r) : 0);
    std::string kinds;
    const std::pair<index_t, const char*> parts[] = {{n.nan, "NaN"}, {n.pos_inf, "+inf"}, {n.neg_inf, "-inf"}};
    for (const auto& [k, name] : parts)
      if (k > 0) kinds += (kinds.empty() ? "" : " and ") + grouped(k) + " " + name;
    std::string s = std::string(tensor_label(t)) + " holds " + kinds + " (rank" + (ranks.size() > 1 ? "s " : " ") + ranges(ranks);
    if (m.chunks == 2) s += std::string(", chunk") + (labels.size() > 1 ? "s " : " ") + ranges(labels);
    s += std::string(", head") + (heads.size() > 1 ? "s " : " ") + ranges(heads) + ")";
    lines.push_back(s);
  }
  return lines;
}

}  // namespace cplab
