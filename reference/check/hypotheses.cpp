// hypotheses.cpp: evaluating a hypothesis, and the sampled tokens (hypotheses.h).
#include "check/hypotheses.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/interrupt.h"
#include "core/util.h"

namespace cplab {

bool HypothesisResult::predicts_nonfinite(const std::array<index_t, kCheckTensors>& counts) const {
  bool any = false;
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (counts[i] == 0) continue;
    if (nonfinite_seen[i] == 0 || nonfinite_matched[i] != nonfinite_seen[i]) return false;
    any = true;
  }
  return any;
}

bool HypothesisResult::matches_nonfinite() const {
  index_t seen = 0;
  for (CheckTensor t : kAllCheckTensors) {
    if (nonfinite_matched[idx(t)] != nonfinite_seen[idx(t)]) return false;
    seen += nonfinite_seen[idx(t)];
  }
  return seen > 0;
}

int HypothesisResult::unchecked() const {
  int n = 0;
  for (CheckTensor t : kAllCheckTensors) n += kind[idx(t)] == PredKind::unchecked && !std::isnan(fault[idx(t)]) ? 1 : 0;
  return n;
}

HypothesisResult CheckContext::evaluate(const Hypothesis& h) const {
  interruption_point();  // every hypothesis and pair of cplab check (core/interrupt.h)
  return evaluate_hypothesis(h, data.out, ref, scale, base_err, levels, &spec.packing());
}

HypothesisResult evaluate_hypothesis(const Hypothesis& h, const std::array<ClaimedTensor, kCheckTensors>& out,
                                     const std::array<Tensor3<double>, kCheckTensors>& ref,
                                     const std::array<double, kCheckTensors>& scale,
                                     const std::array<double, kCheckTensors>& base_err, const std::vector<CheckLevel>& levels,
                                     const Packing* real_lse) {
  HypothesisResult r;
  r.id = h.id, r.name = h.name, r.method = h.method, r.priority = h.priority, r.spec_hint = h.spec_hint;
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    const Prediction& p = h.pred[i];
    r.kind[i] = p.kind;
    r.err[i] = r.fault[i] = std::numeric_limits<double>::quiet_NaN();
    if (!out[i].present) continue;  // fault NaN too: an absent output is neither checked nor unchecked
    const Packing* real = t == CheckTensor::lse ? real_lse : nullptr;
    if (p.kind == PredKind::reference) {
      r.err[i] = base_err[i], r.fault[i] = 0;
    } else if (p.kind == PredKind::faulted) {
      const std::vector<index_t>* tokens = p.tokens.empty() ? nullptr : &p.tokens;
      const TokenDiff e = token_diff(out[i].x, p.x, tokens, tokens != nullptr, real, true, &ref[i]);
      r.err[i] = e.max / scale[i];
      r.fault[i] = token_diff(ref[i], p.x, tokens, tokens != nullptr, real, false).max / scale[i];
      r.nonfinite_seen[i] = e.seen, r.nonfinite_matched[i] = e.matched;
      r.compared[i] = static_cast<index_t>(p.tokens.size());
    } else {
      r.fault[i] = 0;  // present, not checked
    }
  }
  for (size_t L = 0; L < levels.size() && r.level < 0; ++L) {
    bool fits = true, visible = false;
    for (CheckTensor t : kAllCheckTensors) {
      const int i = idx(t);
      if (std::isnan(r.err[i])) continue;
      fits = fits && r.err[i] <= levels[L].tol[i];
      visible = visible || (r.kind[i] == PredKind::faulted && r.fault[i] > levels[L].tol[i]);
    }
    if (fits && visible) r.level = static_cast<int>(L);
  }
  return r;
}

std::vector<index_t> sample_tokens(const CpSpec& spec, const Chunks& chunks, index_t per_chunk) {
  const Packing& pk = spec.packing();
  const index_t P = spec.P(), S = spec.S();
  std::vector<std::vector<index_t>> cells(sz(P * chunks.per_rank));
  for (index_t g = 0; g < S; ++g)
    if (pk.real(g)) cells[sz(chunks.rank_of[sz(g)] * chunks.per_rank + chunks.chunk_of[sz(g)])].push_back(g);
  std::vector<index_t> out;
  for (const std::vector<index_t>& c : cells) {
    const index_t n = static_cast<index_t>(c.size());
    if (n <= per_chunk) {
      out.insert(out.end(), c.begin(), c.end());
      continue;
    }
    for (index_t k = 0; k < per_chunk; ++k) out.push_back(c[sz(k * (n - 1) / (per_chunk - 1))]);
  }
  for (index_t s = 0; s < pk.num_seqs(); ++s)
    if (pk.length(s) > 0) out.push_back(pk.cu_seqlens_padded[sz(s)]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Prediction reference_at(const CheckContext& c, CheckTensor t, const std::vector<index_t>& tokens) {
  Prediction p;
  p.kind = PredKind::faulted;
  p.tokens = tokens;
  const Tensor3<double>& r = c.ref[idx(t)];
  p.x = Tensor3<double>(static_cast<index_t>(tokens.size()), r.h, r.d);
  for (size_t a = 0; a < tokens.size(); ++a)
    std::copy(r.token(tokens[a]), r.token(tokens[a]) + r.h * r.d, p.x.token(static_cast<index_t>(a)));
  return p;
}

}  // namespace cplab
