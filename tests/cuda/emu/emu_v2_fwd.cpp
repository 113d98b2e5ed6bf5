// emu_v2_fwd.cpp: kernel v2's forward (cuda/attention_v2_fwd.cu, included, compiled with
// CPLAB_EMULATE) launched on the host emulation, with the grid and shared-memory size of its
// launcher (emu_kernels.h).
#include "attention_v2_fwd.cu"

#include "emu_kernels.h"

namespace cplab_emu {

using namespace cplab::cuda::detail;

template <int D, class T>
void v2_forward_d(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                  float* lse, const float* sinks) {
  launch(dim3(blocks_for(d.sq, kBr), static_cast<unsigned>(d.h)), kThreads, Smem<D>::bytes(sizeof(T)),
         [&] { fwd_kernel<D, T>(q, k, v, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, o, lse, sinks); });
}

template <class T>
void v2_forward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale,
                T* o, float* lse, const float* sinks) {
  cp_async_mode = mode;
  if (d.d == 64) v2_forward_d<64, T>(d, q, k, v, mask, scale, o, lse, sinks);
  else v2_forward_d<128, T>(d, q, k, v, mask, scale, o, lse, sinks);
}

template void v2_forward<__half>(CpAsync, const AttnDims&, const __half*, const __half*, const __half*,
                                 const MaskRule&, float, __half*, float*, const float*);
template void v2_forward<__nv_bfloat16>(CpAsync, const AttnDims&, const __nv_bfloat16*, const __nv_bfloat16*,
                                        const __nv_bfloat16*, const MaskRule&, float, __nv_bfloat16*, float*,
                                        const float*);

}  // namespace cplab_emu
