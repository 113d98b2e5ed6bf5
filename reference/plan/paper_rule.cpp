// paper_rule.cpp: Algorithm 1 of arXiv 2411.01783 (see paper_rule.h).
#include "plan/paper_rule.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace cplab {

namespace {

constexpr std::int64_t kMaxRuleCount = std::int64_t{1} << 40;

constexpr std::int64_t kMaxRuleHeads = std::int64_t{1} << 20;

void check_count(std::int64_t v, std::int64_t lo, std::int64_t hi, const char* what) {
  require(v >= lo && v <= hi, std::string("paper rule: ") + what + " = " + std::to_string(v) + " must be in [" +
                                  std::to_string(lo) + ", " + (hi == kMaxRuleCount ? "2^40" : "2^20") + "]");
}

void check_real(double v, const char* what) {
  require(std::isfinite(v) && v > 0, std::string("paper rule: ") + what + " must be finite and > 0");
}

}  // namespace

PaperRule paper_rule_pass_kv(std::int64_t T, std::int64_t P, std::int64_t N, double C, std::int64_t NKV, std::int64_t NH,
                             double e, double BW) {
  check_count(T, 1, kMaxRuleCount, "T (new tokens)");
  check_count(P, 0, kMaxRuleCount, "P (cached tokens)");
  check_count(N, 1, kMaxRuleCount, "N (ranks)");
  check_count(NKV, 1, kMaxRuleHeads, "NKV (KV heads)");
  check_count(NH, 1, kMaxRuleHeads, "NH (query heads)");
  check_real(C, "C (FLOP/s)");
  check_real(e, "e (bytes per element)");
  check_real(BW, "BW (bytes/s)");
  PaperRule r;
  r.t_threshold = static_cast<double>(N) * C * static_cast<double>(NKV) * e / (2.0 * static_cast<double>(NH) * BW);
  r.ratio = static_cast<double>(T) / static_cast<double>(T + P);
  r.ratio_threshold = 2.0 * static_cast<double>(NKV) / static_cast<double>(NH);
  r.t_holds = static_cast<double>(T) >= r.t_threshold;
  // T/(T+P) >= 2·NKV/NH  <=>  T·NH >= 2·NKV·(T+P): exact in 64 bits (T·NH <= 2^60, 2·NKV·(T+P) <= 2^62)
  r.ratio_holds = T * NH >= 2 * NKV * (T + P);
  r.pass_kv = r.t_holds || r.ratio_holds;
  r.T = T;
  return r;
}

std::string PaperRule::reason() const {
  char b[320];
  const long long t = static_cast<long long>(T);
  if (t_holds && ratio_holds)
    std::snprintf(b, sizeof b,
                  "pass-KV: both conditions hold: T = %lld >= N*C*NKV*e / (2*NH*BW) = %.0f tokens, and T/(T+P) = "
                  "%.4g%% >= 2*NKV/NH = %.4g%%",
                  t, t_threshold, 100 * ratio, 100 * ratio_threshold);
  else if (t_holds)
    std::snprintf(b, sizeof b,
                  "pass-KV: T = %lld >= N*C*NKV*e / (2*NH*BW) = %.0f tokens (its KV transfer hides under its "
                  "compute), though T/(T+P) = %.4g%% < 2*NKV/NH = %.4g%%",
                  t, t_threshold, 100 * ratio, 100 * ratio_threshold);
  else if (ratio_holds)
    std::snprintf(b, sizeof b,
                  "pass-KV: T/(T+P) = %.4g%% >= 2*NKV/NH = %.4g%% (KV is no larger than Q), though T = %lld < "
                  "N*C*NKV*e / (2*NH*BW) = %.0f tokens",
                  100 * ratio, 100 * ratio_threshold, t, t_threshold);
  else
    std::snprintf(b, sizeof b,
                  "pass-Q: T = %lld < N*C*NKV*e / (2*NH*BW) = %.0f tokens (KV would not hide) and T/(T+P) = "
                  "%.4g%% < 2*NKV/NH = %.4g%% (Q is the smaller block)",
                  t, t_threshold, 100 * ratio, 100 * ratio_threshold);
  return b;
}

}  // namespace cplab
