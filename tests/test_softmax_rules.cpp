// test_softmax_rules.cpp: the per-tile online-softmax and backward rules of softmax_rules.h (the
// ones the CUDA kernels use), run on the CPU in the kernels' loop structure and compared with the
// reference's dense attention, for every mask kind, GQA and a fully masked row.
#include <doctest/doctest.h>

#include <vector>

#include "helpers.h"
#include "core/mask_rule.h"
#include "core/softmax_rules.h"

using namespace cplab;
using namespace cplab::test;

namespace {

template <class T>
struct BlockwiseOut {
  Tensor3<T> o;
  Rows<T> lse;
  Tensor3<T> dq, dk, dv;
};

// The CUDA kernels' structure on the CPU: per (head, query row) an OnlineRow over key blocks of bc
// keys (forward), then per visible pair the recomputed P and dS (backward). T is the accumulation
// type; the inputs are double.
template <class T>
BlockwiseOut<T> blockwise(const Tensor3<double>& q, const Tensor3<double>& k, const Tensor3<double>& v,
                          const Tensor3<double>& dout, const MaskRule& mask, double scale_d, index_t bc) {
  const index_t sq = q.n, sk = k.n, h = q.h, grp = q.h / k.h, d = q.d, dv = v.d;
  const T scale = static_cast<T>(scale_d);
  BlockwiseOut<T> r{Tensor3<T>(sq, h, dv), Rows<T>(h, sq), Tensor3<T>(sq, h, d), Tensor3<T>(sk, k.h, d), Tensor3<T>(sk, k.h, dv)};
  auto logit = [&](index_t a, index_t i, index_t b) {
    T s = 0;
    for (index_t e = 0; e < d; ++e) s += static_cast<T>(q.at(a, i, e)) * static_cast<T>(k.at(b, i / grp, e));
    return scale * s;
  };
  for (index_t i = 0; i < h; ++i)
    for (index_t a = 0; a < sq; ++a) {
      const KeyRange kr = mask.keys(a, sk);
      OnlineRow<T> row;
      std::vector<T> acc(static_cast<size_t>(dv), T(0)), s(static_cast<size_t>(bc));
      for (index_t b0 = 0; b0 < sk; b0 += bc) {
        const index_t nb = std::min(bc, sk - b0);
        T block_max = neg_inf<T>();
        for (index_t j = 0; j < nb; ++j) {
          const index_t b = b0 + j;
          s[static_cast<size_t>(j)] = (b >= kr.lo && b < kr.hi) ? logit(a, i, b) : neg_inf<T>();
          block_max = std::max(block_max, s[static_cast<size_t>(j)]);
        }
        const T alpha = online_rescale(row, block_max);
        for (T& x : acc) x *= alpha;
        for (index_t j = 0; j < nb; ++j) {
          const T p = online_weight(row, s[static_cast<size_t>(j)]);
          online_add(row, p);
          for (index_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += p * static_cast<T>(v.at(b0 + j, i / grp, e));
        }
      }
      const T inv = online_inv_l(row);
      for (index_t e = 0; e < dv; ++e) r.o.at(a, i, e) = acc[static_cast<size_t>(e)] * inv;
      r.lse(i, a) = online_lse(row);
    }
  for (index_t i = 0; i < h; ++i)
    for (index_t a = 0; a < sq; ++a) {
      T delta = 0;
      for (index_t e = 0; e < dv; ++e) delta += static_cast<T>(dout.at(a, i, e)) * r.o.at(a, i, e);
      const KeyRange kr = mask.keys(a, sk);
      for (index_t b = kr.lo; b < kr.hi; ++b) {
        const T p = bwd_prob(logit(a, i, b), r.lse(i, a));
        T dp = 0;
        for (index_t e = 0; e < dv; ++e) dp += static_cast<T>(dout.at(a, i, e)) * static_cast<T>(v.at(b, i / grp, e));
        const T ds = bwd_ds(p, dp, delta);
        for (index_t e = 0; e < d; ++e) {
          r.dq.at(a, i, e) += scale * ds * static_cast<T>(k.at(b, i / grp, e));
          r.dk.at(b, i / grp, e) += scale * ds * static_cast<T>(q.at(a, i, e));
        }
        for (index_t e = 0; e < dv; ++e) r.dv.at(b, i / grp, e) += p * static_cast<T>(dout.at(a, i, e));
      }
    }
  return r;
}

}  // namespace

TEST_CASE("softmax rules: blockwise online softmax and backward equal dense attention, every mask kind") {
  const index_t sq = 13, sk = 21, h = 4, hk = 2, d = 8, dv = 6;
  const auto q = random_tensor<double>(sq, h, d, 11), k = random_tensor<double>(sk, hk, d, 12);
  const auto v = random_tensor<double>(sk, hk, dv, 13), dout = random_tensor<double>(sq, h, dv, 14);
  const double scale = 0.7;
  std::vector<std::int64_t> lo(static_cast<size_t>(sq)), hi(static_cast<size_t>(sq));
  for (index_t a = 0; a < sq; ++a) lo[static_cast<size_t>(a)] = a / 3, hi[static_cast<size_t>(a)] = a == 4 ? a / 3 : a + 5;  // row 4: empty
  const std::vector<std::pair<const char*, Mask>> masks = {
      {"none", Mask::none()}, {"causal", Mask::causal(0)}, {"causal(-1)", Mask::causal(-1)},
      {"bottom-right", Mask::causal(sk - sq)}, {"ranges with an empty row", Mask::ranges(lo, hi)}};
  for (const auto& [name, mask] : masks)
    for (index_t bc : {1, 4, 8, 64}) {
      CAPTURE(name);
      CAPTURE(bc);
      const AttnOut<double> ref = dense_forward(q, k, v, mask, scale);
      const AttnGrads<double> g = dense_backward(q, k, v, ref, dout, mask, scale);
      const BlockwiseOut<double> x = blockwise<double>(q, k, v, dout, mask.rule(), scale, bc);
      CHECK(rel_error(x.o, ref.o) < 1e-13);
      CHECK(rel_error(x.lse, ref.lse) < 1e-13);  // -inf must match -inf (the empty row)
      CHECK(rel_error(x.dq, g.dq) < 1e-12);
      CHECK(rel_error(x.dk, g.dk) < 1e-12);
      CHECK(rel_error(x.dv, g.dv) < 1e-12);
      const BlockwiseOut<float> f = blockwise<float>(q, k, v, dout, mask.rule(), scale, bc);  // fp32 accumulation
      CHECK(rel_error(f.o, ref.o) < 1e-5);
      CHECK(rel_error(f.lse, ref.lse) < 1e-5);
      CHECK(rel_error(f.dq, g.dq) < 1e-4);
      CHECK(rel_error(f.dk, g.dk) < 1e-4);
      CHECK(rel_error(f.dv, g.dv) < 1e-4);
    }
}

TEST_CASE("softmax rules: -inf safety of the online state") {
  OnlineRow<float> r;
  CHECK(online_rescale(r, neg_inf<float>()) == 1.0f);  // nothing visible: acc stays 0
  CHECK(online_weight(r, neg_inf<float>()) == 0.0f);
  CHECK(online_lse(r) == neg_inf<float>());
  CHECK(online_inv_l(r) == 0.0f);
  CHECK(online_rescale(r, 2.0f) == 0.0f);  // first visible block: the (empty) old sums are dropped
  online_add(r, online_weight(r, 2.0f));
  CHECK(r.l == 1.0f);
  CHECK(online_lse(r) == 2.0f);
  CHECK(online_rescale(r, 1.0f) == 1.0f);  // a smaller block max changes nothing
  CHECK(bwd_prob(1.0f, neg_inf<float>()) == 0.0f);
  CHECK(bwd_prob(neg_inf<float>(), 1.0f) == 0.0f);
  CHECK(bwd_ds(0.0f, 5.0f, 3.0f) == 0.0f);
}

// The kernels' fast path (FastRow: raw logits, 2^fma(x, c, -mc), -inf guard once per row) in the
// same blockwise loop, forward only, float: o (sq, h, dv) and lse (h, sq) against dense attention.
TEST_CASE("softmax rules: the kernels' exp2 fast path equals dense attention in float for every mask kind") {
  const index_t sq = 13, sk = 21, h = 4, hk = 2, d = 8, dv = 6, grp = h / hk;
  const auto q = random_tensor<double>(sq, h, d, 21), k = random_tensor<double>(sk, hk, d, 22);
  const auto v = random_tensor<double>(sk, hk, dv, 23);
  const double scale = 0.7;
  const float c = static_cast<float>(scale) * kLog2e;
  std::vector<std::int64_t> lo(static_cast<size_t>(sq)), hi(static_cast<size_t>(sq));
  for (index_t a = 0; a < sq; ++a) lo[static_cast<size_t>(a)] = a / 3, hi[static_cast<size_t>(a)] = a == 4 ? a / 3 : a + 5;  // row 4: empty
  const std::vector<std::pair<const char*, Mask>> masks = {
      {"none", Mask::none()}, {"causal(-1)", Mask::causal(-1)}, {"ranges with an empty row", Mask::ranges(lo, hi)}};
  for (const auto& [name, mask] : masks)
    for (index_t bc : {1, 4, 64}) {
      CAPTURE(name);
      CAPTURE(bc);
      const AttnOut<double> ref = dense_forward(q, k, v, mask, scale);
      Tensor3<double> o(sq, h, dv);
      Rows<double> lse(h, sq);
      for (index_t i = 0; i < h; ++i)
        for (index_t a = 0; a < sq; ++a) {
          const KeyRange kr = mask.rule().keys(a, sk);
          FastRow row;
          std::vector<float> acc(static_cast<size_t>(dv), 0.f), x(static_cast<size_t>(bc));
          for (index_t b0 = 0; b0 < sk; b0 += bc) {
            const index_t nb = std::min(bc, sk - b0);
            float block_max = neg_inf<float>();
            for (index_t j = 0; j < nb; ++j) {
              float s = 0.f;  // the raw logit q.k (unscaled), -inf where masked
              for (index_t e = 0; e < d; ++e) s += static_cast<float>(q.at(a, i, e)) * static_cast<float>(k.at(b0 + j, i / grp, e));
              x[static_cast<size_t>(j)] = (b0 + j >= kr.lo && b0 + j < kr.hi) ? s : neg_inf<float>();
              block_max = std::max(block_max, x[static_cast<size_t>(j)]);
            }
            float mc = 0.f;
            const float alpha = fast_rescale(row, block_max, c, mc);
            for (float& y : acc) y *= alpha;
            for (index_t j = 0; j < nb; ++j) {
              const float p = fast_weight(x[static_cast<size_t>(j)], c, mc);
              row.l += p;
              for (index_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += p * static_cast<float>(v.at(b0 + j, i / grp, e));
            }
          }
          for (index_t e = 0; e < dv; ++e) o.at(a, i, e) = acc[static_cast<size_t>(e)] * fast_inv_l(row);
          lse(i, a) = fast_lse(row, static_cast<float>(scale));
        }
      CHECK(rel_error(o, ref.o) < 1e-5);
      CHECK(rel_error(lse, ref.lse) < 1e-5);  // -inf must match -inf (the empty row)
    }
}

TEST_CASE("softmax rules: -inf safety of the fast path with no per-element branch") {
  const float c = 0.5f * kLog2e;
  FastRow r;
  float mc = 1.f;
  CHECK(fast_rescale(r, neg_inf<float>(), c, mc) == 0.0f);  // nothing visible: acc (0) times 0, no NaN
  CHECK(mc == 0.0f);                                          // the guard: 2^(-inf - 0) = 0
  CHECK(fast_weight(neg_inf<float>(), c, mc) == 0.0f);
  CHECK(r.l == 0.0f);
  CHECK(fast_lse(r, 0.5f) == neg_inf<float>());
  CHECK(fast_inv_l(r) == 0.0f);
  CHECK(fast_rescale(r, 4.0f, c, mc) == 0.0f);  // first visible block: the (empty) old sums are dropped
  r.l += fast_weight(4.0f, c, mc);
  CHECK(r.l == 1.0f);
  CHECK(fast_lse(r, 0.5f) == doctest::Approx(2.0f));  // m scale + log 1
  CHECK(fast_weight(neg_inf<float>(), c, mc) == 0.0f);  // a masked logit under a finite max
  CHECK(fast_rescale(r, 2.0f, c, mc) == 1.0f);          // a smaller block max changes nothing
  CHECK(fast_rescale(r, 6.0f, c, mc) == doctest::Approx(std::exp(-1.0f)));  // 2^((4 - 6) c) = e^(-1)
  // the backward's P = exp(scale x - LSE) from LSE log2(e); a row that sees no key gives 0, no NaN
  CHECK(fast_bwd_prob(3.0f, c, fast_lse_offset(1.0f)) == doctest::Approx(std::exp(0.5f * 3.0f - 1.0f)));
  CHECK(fast_bwd_prob(3.0f, c, fast_lse_offset(neg_inf<float>())) == 0.0f);
  CHECK(bwd_prob(0.5f * 3.0f, 1.0f) == doctest::Approx(fast_bwd_prob(3.0f, c, fast_lse_offset(1.0f))));
}
