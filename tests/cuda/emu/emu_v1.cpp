// emu_v1.cpp: kernel v1 (cuda/attention_v1.cu, included, compiled with CPLAB_EMULATE) launched on
// the host emulation, with the grids and shared-memory sizes of its launchers (emu_kernels.h).
#include "attention_v1.cu"

#include "emu_kernels.h"

namespace cplab_emu {

using namespace cplab::cuda::detail;

template <class T>
void v1_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks) {
  const size_t smem = fwd_smem_bytes(d);  // the launcher's own
  launch(dim3(blocks_for(d.sq, kRows), static_cast<unsigned>(d.h)), kRows, smem,
         [&] { fwd_kernel<T>(q, k, v, plain(d), mask, scale, o, lse, sinks); });
}

template <class T>
void v1_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv) {
  const size_t smem_q = sizeof(float) * static_cast<size_t>(kKeys * (d.d + d.dv));
  launch(dim3(blocks_for(d.sq, kRows), static_cast<unsigned>(d.h)), kRows, smem_q,
         [&] { dq_kernel<T>(q, k, v, dout, lse, delta, plain(d), mask, scale, dq); });
  const size_t smem_kv =
      sizeof(float) * static_cast<size_t>(kQRows * (d.d + d.dv + 2)) + 2 * sizeof(std::int64_t) * kQRows;
  launch(dim3(blocks_for(d.sk, kRows), static_cast<unsigned>(d.hk)), kRows, smem_kv,
         [&] { dkdv_kernel<T>(q, k, v, dout, lse, delta, plain(d), mask, scale, dk, dv); });
}

#define CPLAB_EMU_V1(T)                                                                                      \
  template void v1_forward<T>(const AttnDims&, const T*, const T*, const T*, const MaskRule&, float, T*, float*, \
                              const float*);                                                               \
  template void v1_backward<T>(const AttnDims&, const T*, const T*, const T*, const T*, const float*, const float*, \
                               const MaskRule&, float, float*, float*, float*);
CPLAB_EMU_V1(float)
CPLAB_EMU_V1(__half)
CPLAB_EMU_V1(__nv_bfloat16)
#undef CPLAB_EMU_V1

}  // namespace cplab_emu
