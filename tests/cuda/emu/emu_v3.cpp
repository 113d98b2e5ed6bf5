// emu_v3.cpp: kernel v3's forward (cuda/attention_v3_fwd.cu, included, compiled with CPLAB_EMULATE)
// launched on the host emulation, with the grid, block and shared-memory size of its launcher and
// its TMA tensor maps made by cuda/tensor_map.cpp's own tma_tile_map (whose driver call is the
// emulation's encode_tiled under CPLAB_EMULATE: tma_emu.h) (emu_kernels.h).
#include "attention_v3_fwd.cu"

#include <type_traits>

#include "emu_kernels.h"

namespace cplab_emu {

using namespace cplab::cuda::detail;

template <int D, class T>
void v3_forward_d(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                  float* lse, const float* sinks) {
  const cplab::DType t = std::is_same_v<T, __half> ? cplab::DType::f16 : cplab::DType::bf16;
  const CUtensorMap tq = tma_tile_map(t, q, d.sq, d.h, D, kBr), tk = tma_tile_map(t, k, d.sk, d.hk, D, kBc),
                    tv = tma_tile_map(t, v, d.sk, d.hk, D, kBc);
  launch(dim3(blocks_for(d.sq, kBr), static_cast<unsigned>(d.h)), kThreads, Smem<D>::kBytes,
         [&] { fwd_kernel<D, T>(tq, tk, tv, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, o, lse, sinks); });
}

template <class T>
void v3_forward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale,
                T* o, float* lse, const float* sinks) {
  async_mode = mode == CpAsync::immediate ? Async::early : Async::late;
  if (d.d == 64) v3_forward_d<64, T>(d, q, k, v, mask, scale, o, lse, sinks);
  else v3_forward_d<128, T>(d, q, k, v, mask, scale, o, lse, sinks);
}

template void v3_forward<__half>(CpAsync, const AttnDims&, const __half*, const __half*, const __half*,
                                 const MaskRule&, float, __half*, float*, const float*);
template void v3_forward<__nv_bfloat16>(CpAsync, const AttnDims&, const __nv_bfloat16*, const __nv_bfloat16*,
                                        const __nv_bfloat16*, const MaskRule&, float, __nv_bfloat16*, float*,
                                        const float*);

}  // namespace cplab_emu
