// allgather_gpu.cpp: all-gather KV on GPU ranks (see allgather_gpu.h).
#include "allgather_gpu.h"

#include <cmath>

#include "core/error.h"
#include "core/util.h"

namespace cplab::cuda {

namespace {

// columns [c0, c0 + m) of every row of y (h, n) <- x (h, m), fp32
void put_cols(float* y, const float* x, std::int64_t h, std::int64_t n, std::int64_t c0, std::int64_t m, cudaStream_t st) {
  CPLAB_CUDA_CHECK(cudaMemcpy2DAsync(y + c0, sz(n) * sizeof(float), x, sz(m) * sizeof(float), sz(m) * sizeof(float), sz(h),
                                     cudaMemcpyDeviceToDevice, st));
}
// y (h, m) <- columns [c0, c0 + m) of x (h, n)
void get_cols(float* y, const float* x, std::int64_t h, std::int64_t n, std::int64_t c0, std::int64_t m, cudaStream_t st) {
  CPLAB_CUDA_CHECK(cudaMemcpy2DAsync(y, sz(m) * sizeof(float), x + c0, sz(n) * sizeof(float), sz(m) * sizeof(float), sz(h),
                                     cudaMemcpyDeviceToDevice, st));
}

// step 0 of both passes: gather every rank's K|V and put it in sequence order
void gather_kv(const GpuCpSpec& s, const std::vector<GpuAgRank*>& ranks) {
  const CpSpec& c = s.cp;
  const std::size_t kv_bytes = sz(c.n() * c.hk() * (c.d() + c.dv())) * dtype_size(s.dtype);
  for (GpuAgRank* x : ranks) x->comm->all_gather(x->kv.data(), x->gathered.data(), kv_bytes, {}, x->stream.get());
  for (GpuAgRank* x : ranks) {
    x->k_order.run(x->kv_seq.data(), x->gathered.data(), x->stream.get());
    x->v_order.run(x->kv_seq.data() + sz(c.S() * c.hk() * c.d()) * dtype_size(s.dtype), x->gathered.data(),
                   x->stream.get());
  }
}

}  // namespace

AgRowLists allgather_row_lists(const Partition& part, std::int64_t hk, std::int64_t d, std::int64_t dv, std::size_t elem) {
  const std::int64_t P = part.cp(), S = part.seq(), n = part.local_len(), kvw = hk * (d + dv);
  const std::int64_t E = static_cast<std::int64_t>(elem), krow = hk * d, vrow = hk * dv;
  AgRowLists L;
  L.k_order.row_bytes = krow * E;
  L.v_order.row_bytes = vrow * E;
  L.dk_split.row_bytes = krow * 4;
  L.dv_split.row_bytes = vrow * 4;
  for (std::int64_t owner = 0; owner < P; ++owner)  // block `owner`: that rank's rows, its local order
    for (std::int64_t l = 0; l < n; ++l) {
      const std::int64_t g = part.global(owner, l), block = owner * n * kvw;  // sequence position g
      L.k_order.add(g * krow * E, (block + l * krow) * E);
      L.v_order.add(g * vrow * E, (block + n * krow + l * vrow) * E);
      L.dk_split.add((block + l * krow) * 4, g * krow * 4);
      L.dv_split.add((block + n * krow + l * vrow) * 4, (S * krow + g * vrow) * 4);
    }
  return L;
}

GpuAgRank::GpuAgRank(const GpuCpSpec& s, Comm& cm) : RankIO(s), comm(&cm), r(cm.rank()) {
  const CpSpec& c = s.cp;
  require(cm.size() == c.P(), "the communicator has " + num(cm.size()) + " ranks, the spec cp = " + num(c.P()));
  const std::int64_t P = c.P(), S = c.S(), n = c.n(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const std::size_t e = dtype_size(s.dtype);
  const std::int64_t kvw = hk * (d + dv);  // K|V elements per token
  for (DeviceBuffer<float>* b : {&lse, &lse_t, &delta, &delta_t}) *b = DeviceBuffer<float>(sz(h * n));
  gathered = DeviceBuffer<std::byte>(sz(P * n * kvw) * e);
  kv_seq = DeviceBuffer<std::byte>(sz(S * kvw) * e);
  dkv_seq = DeviceBuffer<float>(sz(S * kvw));
  dkv_send = DeviceBuffer<float>(sz(S * kvw));
  dkv_recv = DeviceBuffer<float>(sz(S * kvw));
  const AgRowLists L = allgather_row_lists(c.partition(), hk, d, dv, e);
  k_order = RowMoves(L.k_order);
  v_order = RowMoves(L.v_order);
  dk_split = RowMoves(L.dk_split);
  dv_split = RowMoves(L.dv_split);
  tiles = allgather_tiles(c.partition(), c.packing(), c.packed(), c.rule(), r);
  for (const AgTile& t : tiles) masks.emplace_back(t.mask, t.nq);
  sinks = sink_buffer(c, 0, h);
  dsinks = DeviceBuffer<float>(sinks.size());
}

void gpu_allgather_forward(const GpuCpSpec& s, const std::vector<GpuAgRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("all-gather forward");
  const CpSpec& c = s.cp;
  const std::int64_t n = c.n(), S = c.S(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const float scale = s.kernel_scale();
  const std::size_t e = dtype_size(s.dtype);
  if (does_comm(work)) {
    const Nvtx step("all-gather forward step 0: gather K, V");
    gather_kv(s, ranks);
  }
  const Nvtx step("all-gather forward step 1: tiles");
  for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
    GpuAgRank* x = ranks[xi];
    cudaStream_t st = x->stream.get();
    if (!does_compute(work)) continue;
    if (times) times->start(1, xi, st);
    for (std::size_t ti = 0; ti < x->tiles.size(); ++ti) {
      const AgTile& t = x->tiles[ti];
      const bool whole = t.q0 == 0 && t.nq == n;  // the tile's LSE is the rank's
      float* lse = whole ? x->lse.data() : x->lse_t.data();
      if (t.nk == 0) {  // no query of the tile sees a key: O = 0, LSE = -inf
        CPLAB_CUDA_CHECK(cudaMemsetAsync(x->o.data() + sz(t.q0 * h * dv) * e, 0, sz(t.nq * h * dv) * e, st));
        fill_f32(lse, h * t.nq, -INFINITY, st);  // on the device: no pageable host copy
      } else {
        attention_forward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, h, hk, d, dv}, x->q.data() + sz(t.q0 * h * d) * e,
                          x->kv_seq.data() + sz(t.k0 * hk * d) * e, x->kv_seq.data() + sz(S * hk * d + t.k0 * hk * dv) * e,
                          x->masks[ti].rule(), scale, x->o.data() + sz(t.q0 * h * dv) * e, lse, st,
                          x->sinks.size() > 0 ? x->sinks.data() : nullptr);  // the tile sees its rows' every key
      }
      if (!whole) put_cols(x->lse.data(), lse, h, n, t.q0, t.nq, st);
    }
    if (times) times->stop(1, xi, st);
  }
}

void gpu_allgather_backward(const GpuCpSpec& s, const std::vector<GpuAgRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("all-gather backward");
  const CpSpec& c = s.cp;
  const std::int64_t P = c.P(), n = c.n(), S = c.S(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const float scale = s.kernel_scale();
  const std::int64_t kvw = hk * (d + dv);
  const std::size_t e = dtype_size(s.dtype);
  if (does_comm(work)) {
    const Nvtx step("all-gather backward step 0: gather K, V");
    gather_kv(s, ranks);
  }
  if (does_compute(work)) {
    const Nvtx step("all-gather backward step 1: tiles");
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuAgRank* x = ranks[xi];
      cudaStream_t st = x->stream.get();
      if (times) times->start(1, xi, st);
      softmax_delta(s.dtype, n, h, dv, x->o.data(), x->dout.data(), x->delta.data(), st);
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dq.data(), 0, x->dq.size() * sizeof(float), st));
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_seq.data(), 0, x->dkv_seq.size() * sizeof(float), st));
      if (x->sinks.size() > 0) {  // d s_h of this rank's rows
        CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dsinks.data(), 0, x->dsinks.size() * sizeof(float), st));
        sink_grad_f32(n, h, x->lse.data(), x->delta.data(), x->sinks.data(), x->dsinks.data(), st);
      }
      for (std::size_t ti = 0; ti < x->tiles.size(); ++ti) {
        const AgTile& t = x->tiles[ti];
        if (t.nk == 0) continue;  // no gradient where no key is seen
        const bool whole = t.q0 == 0 && t.nq == n;
        if (!whole) {
          get_cols(x->lse_t.data(), x->lse.data(), h, n, t.q0, t.nq, st);
          get_cols(x->delta_t.data(), x->delta.data(), h, n, t.q0, t.nq, st);
        }
        attention_backward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, h, hk, d, dv}, x->q.data() + sz(t.q0 * h * d) * e,
                           x->kv_seq.data() + sz(t.k0 * hk * d) * e, x->kv_seq.data() + sz(S * hk * d + t.k0 * hk * dv) * e,
                           x->dout.data() + sz(t.q0 * h * dv) * e, whole ? x->lse.data() : x->lse_t.data(),
                           whole ? x->delta.data() : x->delta_t.data(), x->masks[ti].rule(), scale,
                           x->dq.data() + sz(t.q0 * h * d), x->dkv_seq.data() + sz(t.k0 * hk * d),
                           x->dkv_seq.data() + sz(S * hk * d + t.k0 * hk * dv), st);
      }
      if (times) times->stop(1, xi, st);
    }
  }
  if (!does_comm(work)) return;
  const Nvtx step("all-gather backward step 2: reduce-scatter dK, dV");
  const std::size_t block = sz(n * kvw);
  for (GpuAgRank* x : ranks) {
    x->dk_split.run(x->dkv_send.data(), x->dkv_seq.data(), x->stream.get());
    x->dv_split.run(x->dkv_send.data(), x->dkv_seq.data(), x->stream.get());
  }
  for (GpuAgRank* x : ranks) x->comm->all_to_all(x->dkv_send.data(), x->dkv_recv.data(), block * sizeof(float), {}, x->stream.get());
  for (GpuAgRank* x : ranks) {  // dkv = the sum of every rank's contribution to this rank's rows
    cudaStream_t st = x->stream.get();
    CPLAB_CUDA_CHECK(cudaMemcpyAsync(x->dkv.data(), x->dkv_recv.data(), block * sizeof(float), cudaMemcpyDeviceToDevice, st));
    for (std::int64_t src = 1; src < P; ++src)
      accumulate_f32(x->dkv.data(), x->dkv_recv.data() + sz(src) * block, static_cast<std::int64_t>(block), st);
  }
}

}  // namespace cplab::cuda
