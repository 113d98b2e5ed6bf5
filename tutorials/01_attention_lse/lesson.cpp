// 01_attention_lse: attention and its log-sum-exp, on numbers small enough to read.
//
// What it is: lesson 1's program. Three queries and four keys with two dims, one head: the logits
// S = scale Q K^T, the softmax weights, O and the LSE from the reference (dense_forward), the
// stable form m + log sum exp(s - m), a causal mask, and a fully masked row (LSE = -inf, O = 0).
// What it is not: an implementation: O and LSE come from reference/core/attention_kernel.h; the lesson
// computes S and the weights only to show them, and checks P V against the library's O.
#include <cmath>
#include <cstdio>

#include "core/dense_attention.h"
#include "lesson.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

Tensor3<double> tensor(index_t n, index_t d, const std::vector<double>& values) {
  Tensor3<double> t(n, 1, d);
  t.data = values;
  return t;
}

// the logits the library's kernel forms: scale * q_a . k_b (shown, not used for O)
std::vector<double> logits(const Tensor3<double>& q, const Tensor3<double>& k, double scale) {
  std::vector<double> s(static_cast<size_t>(q.n * k.n));
  for (index_t a = 0; a < q.n; ++a)
    for (index_t b = 0; b < k.n; ++b) {
      double dot = 0;
      for (index_t e = 0; e < q.d; ++e) dot += q.at(a, 0, e) * k.at(b, 0, e);
      s[static_cast<size_t>(a * k.n + b)] = scale * dot;
    }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 1: attention and its log-sum-exp",
           "Every CP mode splits attention into pieces and glues them back. The glue is the LSE.");
  const Tensor3<double> q = tensor(3, 2, {1, 0, 0, 1, 1, 1});
  const Tensor3<double> k = tensor(4, 2, {1, 0, 0, 1, 1, 1, -1, 0});
  const Tensor3<double> v = tensor(4, 2, {1, 0, 0, 1, 2, 2, -1, 1});
  const double scale = default_scale(2);

  L.step("the inputs: 3 queries, 4 keys, 4 values, head dim 2");
  matrix("Q", q.data, 3, 2);
  matrix("K", k.data, 4, 2);
  matrix("V", v.data, 4, 2);
  show("scale = 1/sqrt(d)", scale);

  L.step("logits S = scale * Q K^T: one row per query, one column per key");
  const std::vector<double> S = logits(q, k, scale);
  matrix("S", S, 3, 4);

  L.step("the library's O and LSE (reference/core/attention_kernel.h)");
  const AttnOut<double> full = dense_forward(q, k, v, Mask::none(), scale);
  matrix("O", full.o.data, 3, 2);
  std::vector<double> lse(full.lse.data(), full.lse.data() + 3);
  show("LSE", list(lse));
  std::printf("LSE of row a = log sum_b exp(S[a][b]); softmax weights P[a][b] = exp(S[a][b] - LSE[a]):\n");
  std::vector<double> P(12), PV(6, 0.0);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b) {
      P[static_cast<size_t>(a * 4 + b)] = std::exp(S[static_cast<size_t>(a * 4 + b)] - lse[static_cast<size_t>(a)]);
      for (int e = 0; e < 2; ++e) PV[static_cast<size_t>(a * 2 + e)] += P[static_cast<size_t>(a * 4 + b)] * v.at(b, 0, e);
    }
  matrix("P", P, 3, 4);
  double rowsum = 0, diff = 0;
  for (int b = 0; b < 4; ++b) rowsum += P[static_cast<size_t>(b)];
  for (int i = 0; i < 6; ++i) diff = std::max(diff, std::abs(PV[static_cast<size_t>(i)] - full.o.data[static_cast<size_t>(i)]));
  show("row 0 of P sums to", rowsum);
  show("max |P V - O|", diff);

  L.step("why LSE and not the sum itself: the stable form m + log sum exp(s - m)");
  std::printf("Multiply every query by 2000: exp(S) overflows double, the LSE does not.\n");
  Tensor3<double> q1000 = q;
  for (double& x : q1000.data) x *= 2000;
  const AttnOut<double> big = dense_forward(q1000, k, v, Mask::none(), scale);
  std::vector<double> big_lse(big.lse.data(), big.lse.data() + 3);
  show("LSE (queries x 2000)", list(big_lse));
  show("exp(LSE[0]) as a double", std::exp(big_lse[0]));
  std::printf("The row's max m carries the size; log sum exp(s - m) <= log(keys) = %s.\n", fmt(std::log(4.0)).c_str());

  L.step("a causal mask: query a sees keys 0..a only");
  const AttnOut<double> causal = dense_forward(q, k, v, Mask::causal(0), scale);
  matrix("O (causal)", causal.o.data, 3, 2);
  std::vector<double> clse(causal.lse.data(), causal.lse.data() + 3);
  show("LSE (causal)", list(clse));
  show("row 0 sees only key 0, so LSE[0] = S[0][0]", S[0]);

  L.step("a row that sees nothing: LSE = -inf and O = 0, never NaN");
  const AttnOut<double> none = dense_forward(q, k, v, Mask::causal(-1), scale);  // row 0 sees no key
  std::vector<double> nlse(none.lse.data(), none.lse.data() + 3);
  show("LSE (causal(-1): key b visible iff b <= a - 1)", list(nlse));
  show("O row 0", list(std::vector<double>{none.o.data[0], none.o.data[1]}));
  std::printf("An empty partial has weight exp(-inf - L) = 0 when partials are merged (lesson 2).\n");

  L.finish(1,
           {"cplab run --mode p2p --cp 1 --seq 64 --heads 1 --kv-heads 1 --head-dim 2 --causal   (the oracle itself)"});
  return 0;
}
