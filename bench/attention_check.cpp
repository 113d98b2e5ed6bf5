// attention_check.cpp: check_forward / check_backward (attention_check.h).
//
// What it is: the reference side of the check: inputs rebuilt element by element from inputs.h
// (so the reference sees exactly the rounded values the GPU saw), reference/core/attention_kernel.h in
// double on the sampled rows or whole heads, and the relative error (core/rel_error.h).
// What it is not: a second attention implementation; every reference number comes from reference/.
#include "attention_check.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/dense_attention.h"
#include "core/rel_error.h"
#include "inputs.h"

namespace cplab::bench {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// tokens `tokens` of sequence 0, heads [h0, h0 + count) of input t, which has `heads` heads of dim d
Tensor3<double> gather(Input t, const std::vector<std::int64_t>& tokens, std::int64_t heads, std::int64_t h0,
                       std::int64_t count, std::int64_t d, DType dtype) {
  Tensor3<double> x(static_cast<index_t>(tokens.size()), count, d);
  for (std::size_t a = 0; a < tokens.size(); ++a)
    for (std::int64_t i = 0; i < count; ++i)
      for (std::int64_t e = 0; e < d; ++e)
        x.at(static_cast<index_t>(a), i, e) =
            input_value(t, static_cast<std::uint64_t>((tokens[a] * heads + h0 + i) * d + e), dtype);
  return x;
}

std::vector<std::int64_t> all_rows(std::int64_t s) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(s));
  for (std::int64_t i = 0; i < s; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

// core/rel_error.h's metric of an output against the reference (an output of another size: infinite)
double error_of(const std::vector<double>& gpu, const double* ref, std::size_t n) {
  return gpu.size() == n ? rel_error(gpu.data(), ref, n) : kInf;
}

// The reference forward of the sampled rows of head 0 (sequence 0): the rows alone, each with its
// own visible key range [0, r + 1) when causal, against all s keys of KV head 0.
struct RowReference {
  Tensor3<double> q, k, v, o;  // q, o (rows, 1, d); k, v (s, 1, d)
  Rows<double> lse;            // (1, rows)
  Mask mask;
};

RowReference row_reference(const AttentionPlan& plan, const Shape& x, const std::vector<std::int64_t>& rows) {
  RowReference r;
  const std::vector<std::int64_t> keys = all_rows(x.s);
  r.q = gather(Input::q, rows, x.h, 0, 1, x.d, plan.dtype);
  r.k = gather(Input::k, keys, x.hk, 0, 1, x.d, plan.dtype);
  r.v = gather(Input::v, keys, x.hk, 0, 1, x.d, plan.dtype);
  if (x.causal) {
    std::vector<std::int64_t> lo(rows.size(), 0), hi;
    for (const std::int64_t row : rows) hi.push_back(row + 1);
    r.mask = Mask::ranges(std::move(lo), std::move(hi));
  } else {
    r.mask = Mask::none();
  }
  r.o = Tensor3<double>(static_cast<index_t>(rows.size()), 1, x.d);
  r.lse = Rows<double>(1, static_cast<index_t>(rows.size()));
  attention_forward<double>(r.q.view(), r.k.view(), r.v.view(), r.mask, default_scale(x.d), r.o.view(),
                            rows_view(r.lse));
  return r;
}

}  // namespace

double CheckResult::max_error() const {
  double m = 0.0;
  for (const auto& [name, e] : errors) m = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(m, e);
  return m;
}

std::string CheckResult::worst() const {
  std::string w;
  double m = -1.0;
  for (const auto& [name, e] : errors)
    if (!(e <= m)) {  // also takes NaN
      m = e;
      w = name;
    }
  return w;
}

std::vector<CheckResult> check_forward(const AttentionPlan& plan, const Shape& x,
                                       const std::vector<const GpuSamples*>& outs) {
  std::vector<CheckResult> results;
  if (outs.empty()) return results;
  const RowReference ref = row_reference(plan, x, outs.front()->rows);
  for (const GpuSamples* gpu : outs) {
    CheckResult c;
    c.checked = std::to_string(gpu->rows.size()) + " rows";
    const bool same = gpu->rows == outs.front()->rows;  // else the sizes below cannot match: infinite error
    c.errors.emplace_back("O", same ? error_of(gpu->o, ref.o.data.data(), ref.o.data.size()) : kInf);
    if (gpu->has_lse)
      c.errors.emplace_back("LSE", same ? error_of(gpu->lse, ref.lse.data(), static_cast<std::size_t>(ref.lse.size()))
                                        : kInf);
    results.push_back(std::move(c));
  }
  return results;
}

std::vector<CheckResult> check_backward(const AttentionPlan& plan, const Shape& x,
                                        const std::vector<const GpuSamples*>& outs) {
  std::vector<CheckResult> results;
  if (outs.empty()) return results;
  const double scale = default_scale(x.d);
  if (outs.front()->full) {  // dense reference on sequence 0's query heads [0, g) and KV head 0
    const std::int64_t g = x.h / x.hk;
    const std::vector<std::int64_t> rows = all_rows(x.s);
    const Tensor3<double> q = gather(Input::q, rows, x.h, 0, g, x.d, plan.dtype);
    const Tensor3<double> k = gather(Input::k, rows, x.hk, 0, 1, x.d, plan.dtype);
    const Tensor3<double> v = gather(Input::v, rows, x.hk, 0, 1, x.d, plan.dtype);
    const Tensor3<double> dout = gather(Input::dout, rows, x.h, 0, g, x.d, plan.dtype);
    const Mask mask = x.causal ? Mask::causal(0) : Mask::none();
    const AttnOut<double> fwd = dense_forward<double>(q, k, v, mask, scale);
    const AttnGrads<double> ref = dense_backward<double>(q, k, v, fwd, dout, mask, scale);
    for (const GpuSamples* gpu : outs) {
      CheckResult c;
      c.checked = g == 1 ? "full head" : "full heads 0-" + std::to_string(g - 1);
      c.errors.emplace_back("dQ", error_of(gpu->dq, ref.dq.data.data(), ref.dq.data.size()));
      c.errors.emplace_back("dK", error_of(gpu->dk, ref.dk.data.data(), ref.dk.data.size()));
      c.errors.emplace_back("dV", error_of(gpu->dv, ref.dv.data.data(), ref.dv.data.size()));
      results.push_back(std::move(c));
    }
    return results;
  }
  // dQ of a row needs only that row (its O, LSE, dO and its visible keys): exact on the sample
  const RowReference ref = row_reference(plan, x, outs.front()->rows);
  const Tensor3<double> dout = gather(Input::dout, outs.front()->rows, x.h, 0, 1, x.d, plan.dtype);
  const Rows<double> delta = softmax_delta<double>(ref.o.view(), dout.view());
  Tensor3<double> dq(ref.q.n, 1, x.d), dk_part(x.s, 1, x.d), dv_part(x.s, 1, x.d);  // dK, dV: partial sums, unused
  attention_backward<double>(ref.q.view(), ref.k.view(), ref.v.view(), dout.view(), rows_view(ref.lse),
                             rows_view(delta), ref.mask, scale, dq.view(), dk_part.view(), dv_part.view());
  for (const GpuSamples* gpu : outs) {
    CheckResult c;
    c.checked = "dQ " + std::to_string(gpu->rows.size()) + " rows";
    const bool same = gpu->rows == outs.front()->rows;
    c.errors.emplace_back("dQ", same ? error_of(gpu->dq_rows, dq.data.data(), dq.data.size()) : kInf);
    results.push_back(std::move(c));
  }
  return results;
}

CheckResult check_forward(const AttentionPlan& plan, const Shape& x, const GpuSamples& gpu) {
  return check_forward(plan, x, std::vector<const GpuSamples*>{&gpu}).front();
}

CheckResult check_backward(const AttentionPlan& plan, const Shape& x, const GpuSamples& gpu) {
  return check_backward(plan, x, std::vector<const GpuSamples*>{&gpu}).front();
}

}  // namespace cplab::bench
