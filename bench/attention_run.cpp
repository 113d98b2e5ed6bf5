// attention_run.cpp: run_shape (attention_run.h): the GPU side of `cplab-bench attention`.
//
// What it is: buffers, input upload, the b back-to-back launches per iteration, the checked run's
// read-back and the cudaEvent timing. Host code only (g++), calling cuda/attention.h.
// What it is not: a kernel (cuda/), or a judge of the numbers it reads back (attention_check.cpp).
#include "attention_run.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attention.h"  // cuda/
#include "check.h"
#include "device_buffer.h"
#include "inputs.h"
#include "core/mask.h"

namespace cplab::bench {

namespace {

using cuda::DeviceBuffer;
using Bytes = DeviceBuffer<std::byte>;

// A blocking stream (not cudaStreamNonBlocking): DeviceBuffer's plain cudaMemcpy uploads run on the
// legacy default stream, and only a blocking stream is ordered after them.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CPLAB_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { CPLAB_CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { (void)cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// a device array of n elements of `dtype` holding input tensor t (inputs.h), rounded to the dtype
Bytes upload_input(Input t, std::size_t n, DType dtype) {
  const std::size_t es = dtype_size(dtype);
  std::vector<std::byte> host(n * es);
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::int64_t chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t i0 = static_cast<std::size_t>(c) * kChunk, i1 = std::min(n, i0 + kChunk);
    input_bytes(t, i0, i1 - i0, dtype, host.data() + i0 * es);
  }
  Bytes dev(host.size());
  dev.copy_from_host(host);
  return dev;
}

// `count` elements of `dtype` at device address p, as doubles
std::vector<double> read_dtype(const std::byte* p, std::size_t count, DType dtype) {
  std::vector<std::byte> host(count * dtype_size(dtype));
  CPLAB_CUDA_CHECK(cudaMemcpy(host.data(), p, host.size(), cudaMemcpyDeviceToHost));
  return from_dtype(host, dtype);
}

std::vector<float> read_f32(const float* p, std::size_t count) {
  std::vector<float> host(count);
  CPLAB_CUDA_CHECK(cudaMemcpy(host.data(), p, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// ms per iteration of `step` on `stream`: `warmup` untimed iterations, then `iters` between two events
template <class F>
double time_ms(F&& step, int warmup, int iters, cudaStream_t stream) {
  Event start, stop;
  for (int i = 0; i < warmup; ++i) step();
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  CPLAB_CUDA_CHECK(cudaEventRecord(start.e, stream));
  for (int i = 0; i < iters; ++i) step();
  CPLAB_CUDA_CHECK(cudaEventRecord(stop.e, stream));
  CPLAB_CUDA_CHECK(cudaEventSynchronize(stop.e));
  CPLAB_CUDA_CHECK(cudaGetLastError());
  float ms = 0.0f;
  CPLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e, stop.e));
  return static_cast<double>(ms) / iters;
}

}  // namespace

ShapeTimes run_shape(const AttentionPlan& plan, const Shape& x, GpuSamples& out) {
  const DType dt = plan.dtype;
  const auto kernel = static_cast<cuda::Kernel>(plan.kernel);
  const auto es = static_cast<std::int64_t>(dtype_size(dt));
  const std::int64_t n = x.b * x.s, s = x.s, h = x.h, hk = x.hk, d = x.d;
  const auto nq = static_cast<std::size_t>(n * h * d), nkv = static_cast<std::size_t>(n * hk * d);
  cuda::AttnDims dims;
  dims.sq = dims.sk = s;
  dims.h = h;
  dims.hk = hk;
  dims.d = dims.dv = d;
  cuda::check_supported(kernel, dt, dims);
  const MaskRule rule = (x.causal ? Mask::causal(0) : Mask::none()).rule();  // no arrays: host rule is fine
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  Stream stream;
  const Bytes q = upload_input(Input::q, nq, dt), k = upload_input(Input::k, nkv, dt), v = upload_input(Input::v, nkv, dt);
  Bytes o(nq * static_cast<std::size_t>(es));
  DeviceBuffer<float> lse(static_cast<std::size_t>(h * n));
  // sequence j: tokens [j*s, (j+1)*s) of the token-major tensors, LSE/Delta block j of (b, h, s)
  auto at = [&](const Bytes& buf, std::int64_t j, std::int64_t heads) { return buf.data() + j * s * heads * d * es; };
  auto at_mut = [&](Bytes& buf, std::int64_t j, std::int64_t heads) { return buf.data() + j * s * heads * d * es; };
  auto forward = [&] {
    for (std::int64_t j = 0; j < x.b; ++j)
      cuda::attention_forward(kernel, dt, dims, at(q, j, h), at(k, j, hk), at(v, j, hk), rule, scale,
                              at_mut(o, j, h), lse.data() + j * h * s, stream.s);
  };

  ShapeTimes t;
  forward();  // the checked run (the backward needs its O and LSE too)
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  out = GpuSamples{};
  out.rows = sample_rows(s);
  const std::vector<float> lse0 = read_f32(lse.data(), static_cast<std::size_t>(s));  // head 0, sequence 0
  for (const std::int64_t r : out.rows) {
    const std::vector<double> row = read_dtype(o.data() + r * h * d * es, static_cast<std::size_t>(d), dt);
    out.o.insert(out.o.end(), row.begin(), row.end());
    out.lse.push_back(lse0[static_cast<std::size_t>(r)]);
  }
  if (plan.fwd) t.fwd_ms = time_ms(forward, plan.warmup, plan.iters, stream.s);
  if (!plan.bwd) return t;

  const Bytes dout = upload_input(Input::dout, nq, dt);
  DeviceBuffer<float> delta(static_cast<std::size_t>(h * n)), dq(nq), dk(nkv), dv(nkv);
  CPLAB_CUDA_CHECK(cudaMemsetAsync(dq.data(), 0, nq * sizeof(float), stream.s));
  CPLAB_CUDA_CHECK(cudaMemsetAsync(dk.data(), 0, nkv * sizeof(float), stream.s));
  CPLAB_CUDA_CHECK(cudaMemsetAsync(dv.data(), 0, nkv * sizeof(float), stream.s));
  auto backward = [&] {
    for (std::int64_t j = 0; j < x.b; ++j) {
      float* delta_j = delta.data() + j * h * s;
      cuda::softmax_delta(dt, s, h, d, at(o, j, h), at(dout, j, h), delta_j, stream.s);
      cuda::attention_backward(kernel, dt, dims, at(q, j, h), at(k, j, hk), at(v, j, hk), at(dout, j, h),
                               lse.data() + j * h * s, delta_j, rule, scale, dq.data() + j * s * h * d,
                               dk.data() + j * s * hk * d, dv.data() + j * s * hk * d, stream.s);
    }
  };
  backward();  // the checked run
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(stream.s));
  for (const std::int64_t r : out.rows) {
    const std::vector<float> row = read_f32(dq.data() + r * h * d, static_cast<std::size_t>(d));
    out.dq_rows.insert(out.dq_rows.end(), row.begin(), row.end());
  }
  if (s <= kFullBackwardMaxSeq) {  // sequence 0: dQ of heads [0, g), dK and dV of KV head 0
    const std::int64_t g = h / hk;
    const std::vector<float> q0 = read_f32(dq.data(), static_cast<std::size_t>(s * h * d));
    const std::vector<float> k0 = read_f32(dk.data(), static_cast<std::size_t>(s * hk * d));
    const std::vector<float> v0 = read_f32(dv.data(), static_cast<std::size_t>(s * hk * d));
    out.full = true;
    for (std::int64_t r = 0; r < s; ++r) {
      const auto q_row = q0.begin() + r * h * d;
      const std::int64_t kv_row = r * hk * d;
      out.dq.insert(out.dq.end(), q_row, q_row + g * d);
      out.dk.insert(out.dk.end(), k0.begin() + kv_row, k0.begin() + kv_row + d);
      out.dv.insert(out.dv.end(), v0.begin() + kv_row, v0.begin() + kv_row + d);
    }
  }
  t.bwd_ms = time_ms(backward, plan.warmup, plan.iters, stream.s);
  return t;
}

}  // namespace cplab::bench
