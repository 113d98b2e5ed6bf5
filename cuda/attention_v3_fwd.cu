// attention_v3_fwd.cu: tier 2 forward attention for Hopper: wgmma tensor cores fed by TMA.
//
// What it is: one block per (128 query rows, head): three warpgroups, 384 threads. Warpgroup 2 is
// the producer: it gives its registers to the consumers (setmaxnreg.dec to 24; the consumers
// setmaxnreg.inc to 240) and one of its threads loads Q once and the K/V tiles of 128 keys by TMA
// (cp.async.bulk.tensor, 128-byte swizzled) into two stages; out-of-range rows arrive as zeros.
// Each stage has a full/empty mbarrier pair: the TMA bytes complete "full", every consumer thread
// arrives on "empty" when its products have read the stage, and the producer waits on "empty"
// before refilling it (no __syncthreads in the loop). Warpgroups 0 and 1 consume 64 rows each:
// S = Q K^T with wgmma.m64n128k16 straight from shared memory (both operands K-major), the mask
// (boundary tiles only) and softmax_rules.h's exp2 fast path on the accumulator registers with
// v2's own code (attention_tile.cuh: the register convention is the same), and O += P V with
// wgmma.m64nDk16 taking P from registers (S's accumulators repacked: wgmma_layout.h) and V from
// shared memory as an MN-major operand. Masks as in v2: key tiles no row can see are skipped,
// tiles every row sees in full skip the per-element test (so sliding windows and chunks, as per-row
// key ranges, are taken as in v2); attention sinks are folded in by v2's store_rows. Compiled for sm_90a when the build
// targets 90 (CMake; otherwise the kernel body is empty and check_supported refuses v3); the
// launcher refuses devices other than compute capability 9.0 with a cplab::Error.
// Within a warpgroup, S of tile j + 1 is issued before O += P V of tile j, and the softmax of tile
// j + 1 runs while that product does (wgmma_wait<1>: only S must have landed); between the two
// consumer warpgroups, named barriers make them issue their products by turns (ping-pong), so one's
// softmax overlaps the other's GEMMs. Blocks run the last query rows first (longest first, causal).
// What it is not: FlashAttention-3 in every detail (no cluster multicast, no FP8, two K/V stages,
// O rescaled after its product rather than before the next one is issued); the backward of kernel v3 is v2's (attention.h). Never run on a GPU (only on the CPU
// emulator, tests/cuda/emu).
#include "attention_impl.cuh"
#include "attention_tile.cuh"
#include "tensor_map.h"
#include "wgmma.cuh"
#include "wgmma_layout.h"

#ifndef CPLAB_HAVE_V3
#define CPLAB_HAVE_V3 0
#endif

namespace cplab::cuda::detail {

namespace {

// warpgroups 0 and 1 consume (64 query rows each), warpgroup 2 produces (one thread issues the TMA
// loads); setmaxnreg moves registers from the producer to the consumers: 384 threads launch with
// 168 registers each (65536 / 384, rounded down to 8), the producer drops to 24 and the consumers
// rise to 240 (24 + 2 x 240 = 504 = 3 x 168: the block's registers exactly, as FlashAttention-3)
constexpr int kBr = 128, kBc = 128, kConsumers = 2, kConsumerThreads = 128 * kConsumers,
              kThreads = kConsumerThreads + 128, kProducerRegs = 24, kConsumerRegs = 240;
// ping-pong: named barrier kTurn0 + w (w = 0, 1; 0 is __syncthreads') is consumer warpgroup w's
// turn to issue its products; it syncs there (128 threads) and the other warpgroup's arrive (128)
// completes it, so the two warpgroups issue their GEMMs by turns and one's softmax runs while the
// other's products do. Per warpgroup, T key tiles are T + 1 turns (the first S, then S of tile
// j + 1 with O += P V of tile j, then the last O += P V): warpgroup 1 hands over once before its
// first turn and not after its last, so every barrier gets exactly the arrivals its syncs need.
constexpr int kTurn0 = 1;

struct Dims {
  std::int64_t sq, sk, h, hk;
};

// shared memory: Q, K[2], V[2] (1024-aligned tiles of swizzled 64-column panels), 5 barriers, 4 ints
template <int D>
struct Smem {
  static constexpr std::uint32_t kQ = kBr * D * 2, kKV = kBc * D * 2;
  __host__ __device__ static constexpr std::uint32_t k_at(int s) { return kQ + static_cast<std::uint32_t>(s) * kKV; }
  __host__ __device__ static constexpr std::uint32_t v_at(int s) { return kQ + 2 * kKV + static_cast<std::uint32_t>(s) * kKV; }
  static constexpr std::uint32_t kBars = kQ + 4 * kKV;
  static constexpr int kNumBars = 5;  // Q, full[2] (TMA landed), empty[2] (every consumer done with the stage)
  static constexpr size_t kBytes = 1024 + kBars + kNumBars * sizeof(std::uint64_t) + 4 * sizeof(int);  // + alignment slack
};

template <int D, class T>
__global__ void __launch_bounds__(kThreads, 1)
    fwd_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
               const __grid_constant__ CUtensorMap tv, Dims P, MaskRule mask, float scale, T* __restrict__ o,
               float* __restrict__ lse, const float* __restrict__ sinks) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CPLAB_EMULATE)  // CPLAB_EMULATE: g++, tests/cuda/emu
  using S = Smem<D>;
  CPLAB_DYNAMIC_SMEM(unsigned char, raw);
  // the swizzle pattern repeats every 1024 bytes of the shared address: align the base to it
  unsigned char* base = raw + ((1024 - (smem_addr(raw) & 1023)) & 1023);
  const std::uint32_t sbase = smem_addr(base);
  std::uint64_t* bar = reinterpret_cast<std::uint64_t*>(base + S::kBars);  // [0]: Q, [1 + s]: stage s full
  std::uint64_t* empty = bar + 3;                                           // [s]: stage s released
  int* red = reinterpret_cast<int*>(bar + S::kNumBars);                     // block_keys' scratch

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, lane = tid % 32;
  const int tg = mma::thread_in_group(lane);
  // longest first: the blocks of the last query rows (under a causal mask the ones with the most key
  // tiles) get the lowest block indices, which the hardware tends to start first
  const std::int64_t q0 = static_cast<std::int64_t>(gridDim.x - 1 - blockIdx.x) * kBr, i = blockIdx.y,
                     kh = i / (P.h / P.hk);

  if (threadIdx.x == 0) {
    for (int b = 0; b < 3; ++b) mbar_init(&bar[b], 1);  // one arrival (the loader's expect_tx) + the bytes
    for (int s = 0; s < 2; ++s) mbar_init(&empty[s], kConsumerThreads);  // every consumer thread arrives once per use
    mbar_init_fence();
  }
  const BlockKeys bk = block_keys(mask, q0, kBr, P.sq, P.sk, kBc, red);  // (its __syncthreads publish the barriers)
  const std::int64_t t_begin = bk.t_begin, t_end = bk.t_end;

  // TMA: a tile is D / 64 boxes of 64 columns (one per swizzled panel); coordinates (column, head, row)
  auto load_kv = [&](std::int64_t j, int s) {
    mbar_expect_tx(&bar[1 + s], 2 * S::kKV);
    for (int p = 0; p < D / 64; ++p) {
      tma_load_3d(base + S::k_at(s) + wgmma::panel_offset(kBc, p), &tk, &bar[1 + s], 64 * p, static_cast<int>(kh), static_cast<int>(j * kBc));
      tma_load_3d(base + S::v_at(s) + wgmma::panel_offset(kBc, p), &tv, &bar[1 + s], 64 * p, static_cast<int>(kh), static_cast<int>(j * kBc));
    }
  };
  if (wg == kConsumers) {  // the producer warpgroup: its registers go to the consumers, one thread loads
    setmaxnreg_dec<kProducerRegs>();
    if (tid == 0 && t_begin < t_end) {
      mbar_expect_tx(&bar[0], S::kQ);
      for (int p = 0; p < D / 64; ++p)
        tma_load_3d(base + wgmma::panel_offset(kBr, p), &tq, &bar[0], 64 * p, static_cast<int>(i), static_cast<int>(q0));
      for (std::int64_t j = t_begin; j < t_end; ++j) {
        const int stage = static_cast<int>((j - t_begin) & 1);
        // the n-th use of a stage (n = (j - t_begin) / 2) waits until every consumer has released
        // use n - 1, the empty barrier's phase n - 1: parity (n & 1) ^ 1 (the first use passes at
        // once: phase 0 is current, so the phase "before" it, parity 1, counts as completed)
        mbar_wait(&empty[stage], static_cast<std::uint32_t>((((j - t_begin) >> 1) & 1) ^ 1));
        load_kv(j, stage);
      }
    }
    return;  // the consumers wait for every load on the full barriers: nothing is left in flight
  }
  setmaxnreg_inc<kConsumerRegs>();

  // a consumer thread's two rows (accumulator registers with (i / 2) even: x = 0, odd: x = 1)
  const wgmma::RC r0 = wgmma::frag_d(tid, 0);
  const std::int64_t row[2] = {q0 + 64 * wg + r0.row, q0 + 64 * wg + r0.row + 8};
  KeyRange kr[2];
  for (int x = 0; x < 2; ++x) kr[x] = row[x] < P.sq ? mask.keys(row[x], P.sk) : KeyRange{0, 0};

  FastRow st[2];
  const float c = scale * kLog2e;  // softmax_rules.h fast path: 2^(x c - m c) on raw logits x
  float acc[D / 2];
  for (float& x : acc) x = 0.f;

  // the consumer's three pieces: wait for a stage, issue S = Q K^T (this warpgroup's 64 rows x 128
  // keys) on it, and mask + online softmax of S (attention_tile.cuh: the register convention is v2's)
  auto wait_full = [&](std::int64_t j) {
    mbar_wait(&bar[1 + ((j - t_begin) & 1)], static_cast<std::uint32_t>(((j - t_begin) >> 1) & 1));
    __syncwarp();  // wgmma's .sync.aligned needs the warp converged after the per-thread spin
  };
  auto issue_s = [&](float (&sc)[kBc / 2], int stage) {
    for (float& x : sc) x = 0.f;
    fence_operands(sc);
    wgmma_fence();
    for (int k = 0; k < D / 16; ++k)
      wgmma_ss<kBc, T>(sc, wgmma::desc_k_major(sbase, kBr, 64 * wg, k), wgmma::desc_k_major(sbase + S::k_at(stage), kBc, 0, k));
    wgmma_commit();
  };
  auto softmax_s = [&](float (&sc)[kBc / 2], std::int64_t j, float (&alpha)[2]) {
    const std::int64_t t0 = j * kBc;
    if (!bk.full(t0, kBc, P.sk)) mask_tile<kBc / 2>([&](int e) -> float& { return sc[e]; }, kr, t0, tg);
    softmax_tile<kBc / 2>([&](int e) -> float& { return sc[e]; }, st, c, alpha);
  };
  // wgmma::p_from_s: register r of key slice k is S's 8k + 2r, 8k + 2r + 1
  auto pack_p = [&](const float (&sc)[kBc / 2], std::uint32_t (&pa)[kBc / 16][4]) {
    for (int e = 0; e < kBc / 2; e += 2) pa[e / 8][(e % 8) / 2] = pack2<T>(sc[e], sc[e + 1]);
  };

  if (t_begin < t_end) {
    float s[kBc / 2], alpha[2];
    std::uint32_t pa[kBc / 16][4];
    mbar_wait(&bar[0], 0);
    wait_full(t_begin);
    if (wg == 1) named_barrier_arrive(kTurn0, kConsumerThreads);  // warpgroup 0 issues first
    named_barrier_sync(kTurn0 + wg, kConsumerThreads);              // ping-pong: this warpgroup's turn
    issue_s(s, 0);
    named_barrier_arrive(kTurn0 + (wg ^ 1), kConsumerThreads);      // the other's turn
    wgmma_wait<0>();  // S of the first tile
    fence_operands(s);
    softmax_s(s, t_begin, alpha);  // (O is still 0: its rescale is skipped)
    pack_p(s, pa);
    // O += P V: P from registers, V (keys x D) as an MN-major operand
    auto issue_pv = [&](int stage) {
      fence_operands(acc);
      fence_operands(pa);
      wgmma_fence();
      for (int k = 0; k < kBc / 16; ++k) wgmma_rs<D, T>(acc, pa[k], wgmma::desc_mn_major(sbase + S::v_at(stage), kBc, k));
      wgmma_commit();
    };
    auto retire_pv = [&](int stage) {
      fence_operands(acc);
      fence_operands(pa);  // P's registers stay untouched until the product has read them
      mbar_arrive(&empty[stage]);  // this thread is done with the stage: once all are, the producer may refill it
    };
    // one tile per iteration, the last one after the loop: S of tile j + 1 is issued before
    // O += P V of tile j, so tile j + 1's softmax runs while that product does (FlashAttention-3's
    // intra-warpgroup overlap); no branch between a product's issue and its wait, so ptxas can
    // keep the wgmma pipeline
    std::int64_t j = t_begin;
    for (; j + 1 < t_end; ++j) {
      const int stage = static_cast<int>((j - t_begin) & 1);
      wait_full(j + 1);
      named_barrier_sync(kTurn0 + wg, kConsumerThreads);
      issue_s(s, stage ^ 1);  // s's values are in pa already
      issue_pv(stage);
      named_barrier_arrive(kTurn0 + (wg ^ 1), kConsumerThreads);
      wgmma_wait<1>();  // S of tile j + 1 has landed (the older group); O += P V may still run
      fence_operands(s);
      softmax_s(s, j + 1, alpha);  // the row max and sum move on; O is rescaled once its product is done
      wgmma_wait<0>();  // O += P V of tile j has landed
      retire_pv(stage);
      for (int e = 0; e < D / 2; ++e) acc[e] *= alpha[(e >> 1) & 1];
      pack_p(s, pa);
    }
    named_barrier_sync(kTurn0 + wg, kConsumerThreads);
    issue_pv(static_cast<int>((j - t_begin) & 1));
    // warpgroup 1's last turn is not handed on: warpgroup 0 has none left, and an arrival nobody
    // syncs on would stay on the barrier
    if (wg == 0) named_barrier_arrive(kTurn0 + 1, kConsumerThreads);
    wgmma_wait<0>();  // O += P V of the last tile has landed
    retire_pv(static_cast<int>((j - t_begin) & 1));
  }

  store_rows<D>(st, scale, row, P.sq, P.h, i, tg, [&](int e) -> float& { return acc[e]; }, o, lse, sinks);
#else
  __trap();  // not an sm_90a build: the launcher never gets here (v3_check_device)
#endif
}

#ifndef CPLAB_EMULATE
template <int D, class T>
void launch(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o, float* lse,
            const float* sinks, cudaStream_t s) {
  const DType t = std::is_same_v<T, __half> ? DType::f16 : DType::bf16;
  const CUtensorMap tq = tma_tile_map(t, q, d.sq, d.h, D, kBr), tk = tma_tile_map(t, k, d.sk, d.hk, D, kBc),
                    tv = tma_tile_map(t, v, d.sk, d.hk, D, kBc);
  const size_t smem = Smem<D>::kBytes;
  allow_smem(fwd_kernel<D, T>, smem);
  fwd_kernel<D, T><<<dim3(blocks_for(d.sq, kBr), static_cast<unsigned>(d.h)), kThreads, smem, s>>>(
      tq, tk, tv, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, o, lse, sinks);
  check_launch("attention v3 forward");
}
#endif  // CPLAB_EMULATE

}  // namespace

#ifndef CPLAB_EMULATE
bool v3_built() { return CPLAB_HAVE_V3 != 0; }

template <class T>
void v3_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o, float* lse,
                const float* sinks, cudaStream_t s) {
  v3_check_device();
  if (d.d == 64) launch<64, T>(d, q, k, v, mask, scale, o, lse, sinks, s);
  else launch<128, T>(d, q, k, v, mask, scale, o, lse, sinks, s);
}

template void v3_forward<__half>(const AttnDims&, const __half*, const __half*, const __half*, const MaskRule&, float,
                                 __half*, float*, const float*, cudaStream_t);
template void v3_forward<__nv_bfloat16>(const AttnDims&, const __nv_bfloat16*, const __nv_bfloat16*,
                                        const __nv_bfloat16*, const MaskRule&, float, __nv_bfloat16*, float*,
                                        const float*, cudaStream_t);
#endif  // CPLAB_EMULATE

}  // namespace cplab::cuda::detail
