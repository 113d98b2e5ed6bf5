// test_kernel_emu_masks.cpp: the masks of today's models and attention sinks in the attention
// kernels v1 and v2 (their own source, run on the CPU by the host emulation), against the double
// reference, forward and backward.
//
// What it is: every mask comes from the reference's one definition (mask_rule.h PositionRule through
// mask.h sequence_mask, or thd.h token_mask when packed), as the CP modes hand it to the kernels:
//   sliding window, causal W = 1, 7, 64; two-sided (not causal) W = 7, 64
//   chunked attention C = 16, 100
//   packed sequences (cu_seqlens, padding rows that see nothing) with a window and with a chunk
// each with and without attention sinks (one fp32 logit per head, sink_logits), v2 in bf16 (and
// fp16 for some) and v1 in fp32; with sinks also d s_h from the emulated sink_grad kernel
// (emu_case.h run_case: tolerances of test_gpu_util.h, cuda/README.md). Then the CP way of a sink:
// a row's keys split into two tiles computed without the sink, merged (the reference's
// merge_streaming), and the sink applied ONCE by the emulated apply_sinks kernel equals the
// reference; applying it on each tile instead is shown to be far outside the tolerance.
// What it is not: a GPU test (tests/cuda/test_attention.cpp and test_modes_gpu.cpp have these
// cases for a device), or kernel v3 (wgmma / TMA are not emulated).
#include <doctest/doctest.h>

#include <vector>

#include "core/merge.h"
#include "emu_case.h"
#include "layout/thd.h"
#include "modes/cp_common.h"  // iota_positions

using namespace cplab_emu_test;

namespace {

constexpr index_t kLen = 130;  // two full 64-row tiles and a tail

Case rule_case(const std::string& name, const PositionRule& rule) {
  return Case{name, kLen, kLen, sequence_mask(rule, kLen)};
}

// three sequences of real lengths 30, 70, 27, each padded to a multiple of 8 (padding rows see nothing)
Case packed_case(const std::string& name, const PositionRule& rule) {
  const Packing p = Packing::padded({0, 30, 100, 127}, 8);
  const std::vector<index_t> all = iota_positions(0, p.total());
  return Case{name, p.total(), p.total(), token_mask(p, all, all, rule)};
}

std::vector<Case> mask_cases() {
  return {rule_case("causal window 1", PositionRule{true, 1, 0}),
          rule_case("causal window 7", PositionRule{true, 7, 0}),
          rule_case("causal window 64", PositionRule{true, 64, 0}),
          rule_case("two-sided window 7", PositionRule{false, 7, 0}),
          rule_case("two-sided window 64", PositionRule{false, 64, 0}),
          rule_case("chunk 16", PositionRule{true, 0, 16}),
          rule_case("chunk 100", PositionRule{true, 0, 100}),
          packed_case("packed, causal window 7", PositionRule{true, 7, 0}),
          packed_case("packed, chunk 16", PositionRule{true, 0, 16})};
}

}  // namespace

TEST_CASE("emulated kernel v2 (fwd + bwd): windows, chunks, packed, sinks on and off, bf16") {
  using T = __nv_bfloat16;
  for (const Case& c : mask_cases()) {
    run_case<T>(2, DType::bf16, 64, 64, 2, 1, c, CpAsync::deferred);
    run_case<T>(2, DType::bf16, 64, 64, 2, 2, c, CpAsync::immediate, sink_logits(2));
  }
}

TEST_CASE("emulated kernel v2 (fwd + bwd): windows and chunks with sinks, fp16, head dim 128") {
  using T = __half;
  for (const Case& c : mask_cases())
    if (c.name == "causal window 7" || c.name == "two-sided window 64" || c.name == "chunk 100")
      run_case<T>(2, DType::f16, 128, 128, 2, 1, c, CpAsync::deferred, sink_logits(2));
}

TEST_CASE("emulated kernel v1 (fwd + bwd): windows, chunks, packed, sinks on and off, fp32, d 40, dv 24") {
  for (const Case& c : mask_cases()) {
    run_case<float>(1, DType::f32, 40, 24, 2, 1, c, CpAsync::deferred);
    run_case<float>(1, DType::f32, 40, 24, 2, 1, c, CpAsync::deferred, sink_logits(2));
  }
}

namespace {

// keys [k0, k0 + nk) of mask m (sq x sk) in the tile's own coordinates
Mask key_slice(const Mask& m, index_t sq, index_t sk, index_t k0, index_t nk) {
  std::vector<std::int64_t> lo(static_cast<size_t>(sq)), hi(static_cast<size_t>(sq));
  for (index_t a = 0; a < sq; ++a) {
    const KeyRange r = m.keys(a, sk);
    lo[static_cast<size_t>(a)] = clamp_key(r.lo - k0, nk), hi[static_cast<size_t>(a)] = clamp_key(r.hi - k0, nk);
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

struct Merged {
  std::vector<double> o, lse;  // the kernels' O (sq, h, dv) and LSE (h, sq) after the sink
};

// kernel v2 (bf16) on the key tiles [0, split) and [split, sk), each WITHOUT the sink unless
// sink_per_tile; merged in double (reference merge_streaming), then the sink applied once by the
// emulated apply_sinks kernel (fp32) unless sink_per_tile
Merged split_run(const Case& c, const RefCase& rc, index_t h, index_t hk, index_t d, index_t split,
                 const std::vector<double>& sinks, bool sink_per_tile) {
  using T = __nv_bfloat16;
  const DType t = DType::bf16;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const std::vector<T> Q = as_elements<T>(rc.q.data, t), K = as_elements<T>(rc.k.data, t),
                       V = as_elements<T>(rc.v.data, t);
  const std::vector<float> S = as_floats(sinks);
  Tensor3<double> o_acc(c.sq, h, d);
  Rows<double> lse_acc = Rows<double>::Constant(h, c.sq, neg_inf<double>());
  for (auto [k0, nk] : {std::pair<index_t, index_t>{0, split}, {split, c.sk - split}}) {
    const Mask m = key_slice(c.mask, c.sq, c.sk, k0, nk);
    std::vector<T> O = poisoned<T>(static_cast<size_t>(c.sq * h * d));
    std::vector<float> L = poisoned<float>(static_cast<size_t>(h * c.sq));
    cplab_emu::v2_forward<T>(CpAsync::deferred, AttnDims{c.sq, nk, h, hk, d, d}, Q.data(), K.data() + k0 * hk * d,
                             V.data() + k0 * hk * d, m.rule(), scale, O.data(), L.data(),
                             sink_per_tile ? S.data() : nullptr);
    Tensor3<double> o_part(c.sq, h, d);
    o_part.data = as_doubles(O, t);
    Rows<double> lse_part(h, c.sq);
    for (index_t x = 0; x < h * c.sq; ++x) lse_part.data()[x] = L[static_cast<size_t>(x)];
    merge_streaming<double>(o_acc.view(), rows_view(lse_acc), 0, o_part.view(), rows_view(std::as_const(lse_part)));
  }
  std::vector<float> o(o_acc.data.begin(), o_acc.data.end()), lse(lse_acc.data(), lse_acc.data() + lse_acc.size());
  if (!sink_per_tile) cplab_emu::apply_sinks(c.sq, h, d, o.data(), lse.data(), S.data());
  return Merged{{o.begin(), o.end()}, {lse.begin(), lse.end()}};
}

}  // namespace

TEST_CASE("emulated kernels: under CP the sink enters each row once, after the merge (apply_sinks)") {
  const index_t h = 4, hk = 2, d = 64;
  const std::vector<double> sinks = sink_logits(h);
  const Tol tol = tolerance(DType::bf16);
  for (const Case& c : {rule_case("causal window 7", PositionRule{true, 7, 0}),
                        rule_case("causal window 64", PositionRule{true, 64, 0}),
                        rule_case("chunk 16", PositionRule{true, 0, 16}), rule_case("causal", PositionRule{true, 0, 0})}) {
    CAPTURE(c.name);
    const RefCase rc = ref_case(c.sq, c.sk, h, hk, d, d, c.mask, 1.0 / std::sqrt(double(d)), DType::bf16, sinks);
    const Merged once = split_run(c, rc, h, hk, d, 70, sinks, false);
    CHECK(rel(once.o, rc.ref.o.data) < tol.o);
    CHECK(lse_err(once.lse, rc.ref.lse) < tol.lse);
    // the mistake: a sink on each tile (counted once per rank) puts exp(s_h) into the rows that see
    // keys of both tiles twice, which moves their LSE more than 10 times the tolerance
    const Merged twice = split_run(c, rc, h, hk, d, 70, sinks, true);
    CHECK(lse_err(twice.lse, rc.ref.lse) > 10 * tol.lse);
  }
}
