// hypotheses.h: named faults of CP implementations, each tested against the numbers.
//
// What it is: a Hypothesis is a fault ("dK and dV swapped", "KV head i % kv_heads", "ring step 2
// missing", ...) turned into a prediction of every output: the reference's own value (the fault
// leaves it alone), a faulted value (a transform of the reference outputs, or attention recomputed
// under the faulted rule, at every token or at sampled rows / keys), or "not checked" (the fault
// changes it in a way not modelled, e.g. the gradients after a forward-only fault). evaluate()
// compares the claimed outputs with the prediction, with the error map's metric (error_map.h). A
// hypothesis explains the outputs at a level when every checked output is within that level's
// tolerance of its prediction and the fault is visible at that level (it moves some output by more
// than the tolerance: a fault the numbers cannot tell from "no fault" is never reported). A claimed
// NaN or inf (error_map.h) is left out of the errors unless the prediction holds the same value
// there: then it matches (counted in nonfinite_matched), and a hypothesis that predicts every claimed
// NaN / inf it meets ranks before one that leaves them unexplained.
// The catalogue (priority: lower = more specific, reported first among equals):
//   faults_transform.cpp  10 tokens in another layout's order; 20-29 dK / dV swapped, summed,
//                         shifted by a rank (and the public ring package's mix-up); 70 LSE in base 2;
//                         90 padding tokens not zero
//   faults_recompute.cpp  30 dK / dV without the cross-rank reduction; 40 KV head i % kv_heads; 41 another
//                         KV head count (the first u KV heads only);
//                         50 causal mask off by one; 52 sliding window off by one; 60 softmax scale (61: a
//                         custom one applied twice); 71 LSE without the max;
//                         80 a ring step missing or doubled in O / LSE (p2p)
//   faults_merge.cpp      82-83 the online-softmax merge's running output not rescaled (running max of
//                         the scores, or of the steps' LSEs); 84-85 partial O's summed / averaged (p2p)
//   faults_backward.cpp   86 ring backward with each step's partial LSE; 87 with each step's partial D;
//                         88-89 a stale KV buffer in the ring backward (step 0's, or the previous step's)
//   faults_rules.cpp      32 ring bypassed (local attention only); 45 a rank's own KV block unmasked;
//                         54 causal mask added; 56-59 causal, window, chunk, every mask dropped;
//                         91-92 THD sequence bounds off by the padding
//   faults_sinks.cpp      55 attention sinks counted k times per row instead of once (ignored: k = 0;
//                         on every rank: k = cp; once per merged partial: k = the row's partials)
//   faults_transform.cpp  72-74 LSE written in another layout than the one read (transposed
//                         [tokens, heads]; a per-head stride rounded up; per-sequence padding)
//   faults_factor.cpp     76 an output off by a constant factor (1/group, 1/cp, 2, -1, ... named);
//                         77 off by a per-head factor (least squares against the reference)
// and "no fault" itself (priority 100), which at a looser level than the outputs' dtypes says
// "equivalent within float32's (bfloat16's ...) tolerance".
// What it is not: faults to inject (tests/check_faults.h makes those, independently, for the
// tests), or a mode: nothing here runs a CP algorithm.
#pragma once

#include <array>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/error_map.h"
#include "check/sampled_attention.h"

namespace cplab {

enum class PredKind { reference, faulted, unchecked };

struct Prediction {
  PredKind kind = PredKind::reference;
  std::vector<index_t> tokens;  // faulted: the tokens x holds, in x's order (empty: every token)
  Tensor3<double> x;            // faulted: (tokens or S, heads, dim)
};
// the prediction "every token is x" (x: (S, heads, dim)), the faults' usual form
inline Prediction faulted(Tensor3<double> x) {
  Prediction p;
  p.kind = PredKind::faulted;
  p.x = std::move(x);
  return p;
}

// the prediction "the tokens `tokens` are x" (x: (tokens, heads, dim)): a recomputation at samples
inline Prediction at(const std::vector<index_t>& tokens, Tensor3<double> x) {
  Prediction p = faulted(std::move(x));
  p.tokens = tokens;
  return p;
}
// the prediction "not checked" (the fault changes it in a way not modelled)
inline Prediction unchecked() {
  Prediction p;
  p.kind = PredKind::unchecked;
  return p;
}
// "16 sampled rows": how many tokens a recomputation used, for a hypothesis's method
inline std::string count(const std::vector<index_t>& v, const char* what) {
  return std::to_string(v.size()) + " sampled " + what;
}

struct Hypothesis {
  std::string id, name;  // "kv_head_mod", "KV head map i % kv_heads instead of i / (heads / kv_heads)"
  int priority = 0;
  std::string method;    // how the prediction was made, for the report
  std::array<Prediction, kCheckTensors> pred;
  // set when the fault IS another spec: the outputs are correct for it ("--causal: the spec given
  // lacks it", "--layout striped", "--scale 0.125", "the spec without --causal"); the verdict says so
  std::string spec_hint = "";  // (= "": the aggregate initialisers that leave it out stay warning-free)
};

struct HypothesisResult {
  std::string id, name, method, spec_hint;
  int priority = 0;
  std::array<PredKind, kCheckTensors> kind{};
  std::array<double, kCheckTensors> err{};    // claimed vs prediction / max|ref| (NaN: not checked or absent)
  std::array<double, kCheckTensors> fault{};  // prediction vs reference / max|ref| (how far the fault moves it)
  std::array<index_t, kCheckTensors> compared{};  // tokens compared (0: every token)
  // claimed NaN / inf among the compared values, and those the prediction holds too (faulted only)
  std::array<index_t, kCheckTensors> nonfinite_seen{}, nonfinite_matched{};
  int level = -1;  // the tightest level (index into the check's levels) it explains; -1: none
  int family = -1;  // the family that made it (fault_families() index; -1: none, a pair)
  // a pair of faults (pairs.h): the two faults' ids, and how far each moves every output / max|ref|
  // (the first against the reference, the second against the first's prediction); empty otherwise
  std::string pair_a, pair_b;
  std::array<double, kCheckTensors> moved_a{}, moved_b{};
  int unchecked() const;  // outputs given but not checked under it
  // it predicts the claimed NaN / inf: every output holding some (counts: error_map.h's totals) has
  // some among its compared values, each the prediction's own value there
  bool predicts_nonfinite(const std::array<index_t, kCheckTensors>& counts) const;
  bool matches_nonfinite() const;  // it met claimed NaN / inf and holds each of them (the ranking's test)
};

// everything the hypotheses read: the spec, the files, the reference and the check's levels
struct CheckContext {
  const CpSpec& spec;
  const CheckData& data;
  std::array<Tensor3<double>, kCheckTensors> ref;  // the reference outputs (LSE (S, h, 1)); empty if not given
  std::array<double, kCheckTensors> scale{};       // max|ref| per output (error_map.h ref_scale)
  std::array<double, kCheckTensors> base_err{};    // claimed vs reference (the error map's maxima)
  std::vector<CheckLevel> levels;
  Chunks chunks;
  std::vector<index_t> rows, keys;  // sampled tokens (sorted) for the recomputed hypotheses
  std::vector<HypothesisResult> results;
  std::vector<std::string> skipped;  // families not tested: every output they would change matches the reference
  std::array<index_t, kCheckTensors> nonfinite{};  // claimed NaN / inf per output (error_map.h)
  // the pair search's re-runs (pairs.h): the family running now (its results say so), the one
  // hypothesis wanted (empty: all), where to keep the hypotheses themselves (null: nowhere), and
  // token maps src (S) whose images tail_keys adds to the keys it picks (a fault composed with them)
  int family = -1;
  std::string only_id = "";
  std::vector<Hypothesis>* capture = nullptr;
  std::vector<std::vector<index_t>> token_maps = {};
  bool all_stages = false;  // a re-run: every stage of a staged hypothesis computed, fit or not
  // a pair's transforms: the outputs the first fault explains, which a transform must leave alone
  // (a family whose every hypothesis moves one of them is not run)
  std::array<bool, kCheckTensors> frozen{};
  // a staged hypothesis's next stage is worth computing: r fits so far (or all_stages)
  bool next_stage(bool fits_so_far) const { return fits_so_far || all_stages; }
  // every output r checked is within the loosest level's tolerance (a staged hypothesis may go on)
  bool fits_so_far(const HypothesisResult& r) const {
    for (CheckTensor t : kAllCheckTensors)
      if (!std::isnan(r.err[idx(t)]) && !(r.err[idx(t)] <= levels.back().tol[idx(t)])) return false;
    return true;
  }

  bool present(CheckTensor t) const { return data.out[idx(t)].present; }
  // output t was given and differs from the reference beyond its tolerance, or holds NaN / inf
  bool wrong(CheckTensor t) const {
    return present(t) && (!(base_err[idx(t)] <= levels[0].tol[idx(t)]) || nonfinite[idx(t)] > 0);
  }
  // whether the hypotheses of a family that change only the outputs ts are worth testing: some of ts
  // is wrong (a fault that moves only right outputs cannot explain anything); if not, it is skipped
  bool worth(std::initializer_list<CheckTensor> ts, const std::string& what) {
    for (CheckTensor t : ts)
      if (wrong(t)) return true;
    skipped.push_back(what);
    return false;
  }
  HypothesisResult evaluate(const Hypothesis& h) const;
  // whether a family should compute hypothesis id (a re-run wants one only)
  bool wants(const std::string& id) const { return only_id.empty() || only_id == id; }
  // r (h's evaluation) added to the results, h kept where capture points (a re-run)
  void keep(const Hypothesis& h, HypothesisResult r) {
    if (!wants(h.id)) return;
    r.family = family;
    if (capture) capture->push_back(h);
    results.push_back(std::move(r));
  }
  void add(const Hypothesis& h) {
    if (wants(h.id)) keep(h, evaluate(h));
  }
};

// what CheckContext::evaluate does, for any claimed outputs (the inference check, infer_check.h,
// calls it too): out the claimed outputs, ref / scale / base_err the reference's, levels the
// check's; real_lse: LSE compared on real tokens only (null: every token)
HypothesisResult evaluate_hypothesis(const Hypothesis& h, const std::array<ClaimedTensor, kCheckTensors>& out,
                                     const std::array<Tensor3<double>, kCheckTensors>& ref,
                                     const std::array<double, kCheckTensors>& scale,
                                     const std::array<double, kCheckTensors>& base_err, const std::vector<CheckLevel>& levels,
                                     const Packing* real_lse);

// per_chunk real tokens of every rank's chunk, evenly spaced with its first and last, and the
// first token of every sequence, sorted
std::vector<index_t> sample_tokens(const CpSpec& spec, const Chunks& chunks, index_t per_chunk);
// the reference's prediction of output t at `tokens` (a faulted prediction equal to the reference)
Prediction reference_at(const CheckContext& c, CheckTensor t, const std::vector<index_t>& tokens);

// the sampled keys to check dK, dV with under rule, and the queries that see them: the 16 sampled
// keys nearest the end of their sequence (and, in a pair search's re-run, their images under
// c.token_maps) (under a causal mask only the queries after a key see it,
// so the O and LSE of a tail of the queries suffice; without a mask every query sees every key)
std::pair<std::vector<index_t>, std::vector<index_t>> tail_keys(const CheckContext& c, const AttnRule& rule);

void transform_hypotheses(CheckContext& c);  // faults_transform.cpp
// the token maps of the transforms (faults_transform.cpp): src (S) with out[g] = ref[src[g]]: a
// rank's buffer holding layout held's tokens placed at layout placed's positions (none when the
// lengths do not fit a layout); every token from the rank `shift` after its own, same local index
std::optional<std::vector<index_t>> layout_source(const CpSpec& spec, Layout held, Layout placed);
std::vector<index_t> rank_shift_source(const CpSpec& spec, index_t shift);
void recompute_hypotheses(CheckContext& c);  // faults_recompute.cpp
void attn_rule_hypotheses(CheckContext& c);  // faults_rules.cpp

// a fault that is attention under another rule, tested in stages that stop as soon as an output fits
// neither the fault nor the loosest level: O and LSE at the sampled rows; then dQ there; then dK, dV
// at the sampled tail keys (from the O and LSE of every query that sees them); the result added to
// c.results (faults_recompute.cpp)
void rule_fault(CheckContext& c, const AttnRule& rule, const std::string& id, const std::string& name, int priority,
                const std::string& spec_hint = "");
void sink_hypotheses(CheckContext& c);       // faults_sinks.cpp
void merge_hypotheses(CheckContext& c);      // faults_merge.cpp
void backward_hypotheses(CheckContext& c);   // faults_backward.cpp
void factor_hypotheses(CheckContext& c);     // faults_factor.cpp

// the families above in the order run_check runs them; transform: its predictions are transforms of
// c.ref (every token), so a pair search can apply it to another fault's prediction (pairs.h)
struct FaultFamily {
  const char* name;
  void (*run)(CheckContext&);
  bool transform;
};
const std::vector<FaultFamily>& fault_families();

}  // namespace cplab
