// emu_v2_bwd.cpp: kernel v2's backward (cuda/attention_v2_bwd.cu, included, compiled with
// CPLAB_EMULATE) launched on the host emulation, with the grid and shared-memory size of its
// launcher (emu_kernels.h).
#include "attention_v2_bwd.cu"

#include "emu_kernels.h"

namespace cplab_emu {

using namespace cplab::cuda::detail;

template <int D, class T>
void v2_backward_d(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                   const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv) {
  launch(dim3(blocks_for(d.sk, kBc), static_cast<unsigned>(d.hk)), kThreads, Smem<D>::bytes(sizeof(T)), [&] {
    bwd_kernel<D, T>(q, k, v, dout, lse, delta, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, dq, dk, dv);
  });
}

template <class T>
void v2_backward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv) {
  cp_async_mode = mode;
  if (d.d == 64) v2_backward_d<64, T>(d, q, k, v, dout, lse, delta, mask, scale, dq, dk, dv);
  else v2_backward_d<128, T>(d, q, k, v, dout, lse, delta, mask, scale, dq, dk, dv);
}

#define CPLAB_EMU_V2B(T)                                                                                          \
  template void v2_backward<T>(CpAsync, const AttnDims&, const T*, const T*, const T*, const T*, const float*, \
                               const float*, const MaskRule&, float, float*, float*, float*);
CPLAB_EMU_V2B(__half)
CPLAB_EMU_V2B(__nv_bfloat16)
#undef CPLAB_EMU_V2B

}  // namespace cplab_emu
