// sink_kernels.cu: the kernels of sink_kernels.h (attention sinks on merged results, and d s_h).
//
// What it is: apply_kernel, a thread per (row, head), and grad_kernel, a block of kGradThreads per
// head summing its rows in a fixed order (a strided partial per thread, then a tree in shared
// memory), both on softmax_rules.h's rules through fold_sink (attention_impl.cuh), the same as
// reference/core/sinks.cpp. Compiled by nvcc for the library and by g++ under CPLAB_EMULATE for the
// kernel emulation tests (tests/cuda/emu/emu_sinks.cpp), which then cut the launchers.
// What it is not: the attention kernels (they fold a sink into a row themselves when one call sees
// the row's every key: attention_v1.cu, attention_tile.cuh store_rows).
#include "attention_impl.cuh"

#ifndef CPLAB_EMULATE
#include "core/error.h"
#include "core/util.h"
#include "sink_kernels.h"
#endif

namespace cplab::cuda::detail {

namespace {

constexpr int kApplyThreads = 256, kGradThreads = 256;

// o (n,h,dv), lse (h,n) fp32 in place; a thread per (row t, head i)
__global__ void sink_apply_kernel(float* __restrict__ o, float* __restrict__ lse, std::int64_t n, std::int64_t h,
                                  std::int64_t dv, const float* __restrict__ sinks) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n * h) return;
  const std::int64_t t = x / h, i = x % h;
  const SinkFold f = fold_sink(lse[i * n + t], sinks[i]);
  for (std::int64_t e = 0; e < dv; ++e) o[x * dv + e] *= f.weight;
  lse[i * n + t] = f.lse;
}

// ds[i] -= sum_t exp(s_i - lse(i,t)) delta(i,t); grid h blocks of kGradThreads, kGradThreads floats of
// dynamic shared memory
__global__ void sink_grad_kernel(const float* __restrict__ lse, const float* __restrict__ delta, std::int64_t n,
                                 const float* __restrict__ sinks, float* __restrict__ ds) {
  CPLAB_DYNAMIC_SMEM(float, part);  // (kGradThreads)
  const std::int64_t i = blockIdx.x;
  const float s = sinks[i];
  float sum = 0.f;
  for (std::int64_t t = threadIdx.x; t < n; t += kGradThreads) sum += sink_grad_term(s, lse[i * n + t], delta[i * n + t]);
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kGradThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) ds[i] -= part[0];
}

}  // namespace

}  // namespace cplab::cuda::detail

#ifndef CPLAB_EMULATE
namespace cplab::cuda {

using namespace detail;

void apply_sinks_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o, float* lse, const float* sinks,
                     cudaStream_t stream) {
  require(n > 0 && h > 0 && dv > 0, "apply_sinks_f32 needs n, h, dv > 0 (got " + num(n) + ", " + num(h) + ", " + num(dv) + ")");
  require(sinks != nullptr, "apply_sinks_f32 needs the sink logits (one per head)");
  sink_apply_kernel<<<blocks_for(n * h, kApplyThreads), kApplyThreads, 0, stream>>>(o, lse, n, h, dv, sinks);
  check_launch("apply_sinks_f32");
}

void sink_grad_f32(std::int64_t n, std::int64_t h, const float* lse, const float* delta, const float* sinks, float* ds,
                   cudaStream_t stream) {
  require(n > 0 && h > 0, "sink_grad_f32 needs n, h > 0 (got " + num(n) + ", " + num(h) + ")");
  require(h <= 2147483647, "sink_grad_f32 launches a block per head: h must fit a grid's x dimension");
  require(sinks != nullptr && ds != nullptr, "sink_grad_f32 needs the sink logits and their gradient (one per head)");
  sink_grad_kernel<<<static_cast<unsigned>(h), kGradThreads, kGradThreads * sizeof(float), stream>>>(lse, delta, n, sinks, ds);
  check_launch("sink_grad_f32");
}

}  // namespace cplab::cuda
#endif  // CPLAB_EMULATE
