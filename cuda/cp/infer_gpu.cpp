// infer_gpu.cpp: the inference variants on GPU ranks (see infer_gpu.h), tile by tile from
// infer_gpu_plan.h.
#include "infer_gpu.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/util.h"
#include "modes/ring_schedule.h"

namespace cplab::cuda {

namespace {

std::size_t es(const GpuInferSpec& s) { return dtype_size(s.dtype); }
std::size_t align16(std::size_t b) { return (b + 15) / 16 * 16; }
std::size_t q_bytes(const GpuInferSpec& s) { return sz(s.spec.Mq() * s.spec.h() * s.spec.d()) * es(s); }
std::size_t kv_bytes(const GpuInferSpec& s) {
  return sz(s.spec.Mkv() * s.spec.hk() * (s.spec.d() + s.spec.dv())) * es(s);
}
std::size_t o_bytes(const GpuInferSpec& s) { return sz(s.spec.Mq() * s.spec.h() * s.spec.dv()) * es(s); }
bool ring_of_q(const InferSpec& s) { return s.mode() == InferMode::pass_q || s.mode() == InferMode::decode_pass_q; }

// the rank's communicator, once the spec is checked (before the first CUDA call: the streams)
Comm* checked(const GpuInferSpec& s, Comm& c) {
  s.check();
  require(c.size() == s.spec.N(), "the communicator has " + num(c.size()) + " ranks, the inference step cp = " +
                                      num(s.spec.N()));
  return &c;
}

// one tile of the plan: queries (nq rows at q) x keys (nk rows of the block at kvb, Mkv-row stride)
// -> o (nq, h, dv) dtype, lse (h, nq) fp32; an empty tile writes O = 0, LSE = -inf without a kernel
void run_tile(const GpuInferSpec& s, const InferGpuTile& t, const DeviceMask& m, const std::byte* q,
              const std::byte* kvb, std::byte* o, float* lse, cudaStream_t st) {
  const InferSpec& c = s.spec;
  const std::int64_t h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  if (t.nq == 0) return;
  if (t.empty) {
    CPLAB_CUDA_CHECK(cudaMemsetAsync(o, 0, sz(t.nq * h * dv) * es(s), st));
    fill_f32(lse, h * t.nq, -INFINITY, st);
    return;
  }
  attention_forward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, h, hk, d, dv}, q, kvb,
                    kvb + sz(c.Mkv() * hk * d) * es(s), m.rule(), s.kernel_scale(), o, lse, st);
}

// after every rank's partials are final: sinks once per row, then the cast to the dtype
void finish(const GpuInferSpec& s, GpuInferRank& x, CpWork work) {
  const std::int64_t h = s.spec.h(), dv = s.spec.dv();
  cudaStream_t st = x.compute.get();
  if (x.n > 0 && does_compute(work)) {
    if (x.sinks.size() > 0) apply_sinks_f32(x.n, h, dv, x.o_acc.data(), x.lse.data(), x.sinks.data(), st);
    cast_from_f32(s.dtype, x.o_acc.data(), x.o.data(), x.n * h * dv, st);
  }
  x.computed.record(st);
}

// the accumulator (O = 0, LSE = -inf) on the compute stream
void start(const GpuInferSpec& s, GpuInferRank& x) {
  cudaStream_t st = x.compute.get();
  CPLAB_CUDA_CHECK(cudaMemsetAsync(x.o_acc.data(), 0, x.o_acc.size() * sizeof(float), st));
  if (x.n > 0) fill_f32(x.lse.data(), s.spec.h() * x.n, -INFINITY, st);
  x.computed.record(st);
}

// N ring steps: at step i every rank posts its held block to r+1 (ring_schedule.h) on the transfer
// stream and runs tile i on the compute stream; `tile` runs one rank's step-i tile with its block
void ring(const GpuInferSpec& s, const std::vector<GpuInferRank*>& ranks, CpWork work, TileTimes* times,
          const std::vector<const std::byte*>& first, std::size_t block,
          void (*tile)(const GpuInferSpec&, GpuInferRank&, const InferGpuTile&, std::int64_t, const std::byte*)) {
  const std::int64_t N = s.spec.N();
  std::vector<const std::byte*> held = first;
  for (std::int64_t i = 0; i < N; ++i) {
    const Nvtx step_range("inference ring step " + std::to_string(i));
    const bool post = ring_fwd_post(N, i).posts && does_comm(work);
    if (post) {
      for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
        GpuInferRank* x = ranks[xi];
        x->computed.wait_on(x->transfer.get());  // blk_next was last read by the previous step
        x->comm->group_start();
        x->comm->send(held[xi], block, static_cast<int>(ring_fwd_dst(N, x->r)), x->transfer.get());
        x->comm->recv(x->blk_next.data(), block, static_cast<int>(ring_fwd_src(N, x->r)), x->transfer.get());
        x->comm->group_end();
      }
      // after every rank has posted (LocalComm enqueues a pair once both halves are posted: ring_gpu.cpp)
      for (GpuInferRank* x : ranks) x->received.record(x->transfer.get());
    }
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuInferRank* x = ranks[xi];
      const InferGpuTile& t = x->plan.tiles[sz(i)];
      cudaStream_t st = x->compute.get();
      if (does_compute(work)) {
        if (times) times->start(i, xi, st);
        tile(s, *x, t, i, held[xi]);
        if (times) times->stop(i, xi, st);
      }
      x->computed.record(st);
    }
    if (post)
      for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
        GpuInferRank* x = ranks[xi];
        x->received.wait_on(x->compute.get());
        std::swap(x->blk_cur, x->blk_next);
        held[xi] = x->blk_cur.data();
      }
  }
}

// pass-KV: the rank's queries x the held K|V block, merged at once
void kv_tile(const GpuInferSpec& s, GpuInferRank& x, const InferGpuTile& t, std::int64_t i, const std::byte* held) {
  if (t.empty || t.nq == 0) return;  // nothing visible: merging O = 0, LSE = -inf changes nothing
  cudaStream_t st = x.compute.get();
  run_tile(s, t, x.masks[sz(i)], x.q.data(), held, x.o_part.data(), x.lse_part.data(), st);
  merge_streaming(s.dtype, x.n, s.spec.h(), s.spec.dv(), x.o_acc.data(), x.lse.data(), 0, x.n, x.o_part.data(),
                  x.lse_part.data(), st);
}

// pass-Q: the held Q block x the rank's own K|V, into the slot of the block's owner
void q_tile(const GpuInferSpec& s, GpuInferRank& x, const InferGpuTile& t, std::int64_t i, const std::byte* held) {
  std::byte* slot = x.parts.data() + sz(t.q_owner) * x.slot_bytes;
  run_tile(s, t, x.masks[sz(i)], held, x.kv.data(), slot, reinterpret_cast<float*>(slot + x.slot_lse),
           x.compute.get());
}

// pass-Q and decode: return the slots to their owners (one all-to-all), merge them with their LSE
void return_and_merge(const GpuInferSpec& s, const std::vector<GpuInferRank*>& ranks, CpWork work) {
  const Nvtx range("inference all-to-all of the partials");
  if (does_comm(work))
    for (GpuInferRank* x : ranks) x->comm->all_to_all(x->parts.data(), x->back.data(), x->slot_bytes, {}, x->compute.get());
  if (!does_compute(work)) return;
  for (GpuInferRank* x : ranks) {
    if (x->n == 0) continue;
    for (std::int64_t j = 0; j < s.spec.N(); ++j) {  // rank j's partial of this rank's queries
      const std::byte* slot = x->back.data() + sz(j) * x->slot_bytes;
      merge_streaming(s.dtype, x->n, s.spec.h(), s.spec.dv(), x->o_acc.data(), x->lse.data(), 0, x->n, slot,
                      reinterpret_cast<const float*>(slot + x->slot_lse), x->compute.get());
    }
  }
}

}  // namespace

void GpuInferSpec::check() const {
  check_supported(kernel, dtype, tile_dims());
}

AttnDims GpuInferSpec::tile_dims() const {
  const std::int64_t rows = spec.mode() == InferMode::decode_ag ? spec.T() : spec.Mq();
  return AttnDims{std::max<std::int64_t>(rows, 1), std::max<std::int64_t>(spec.Mkv(), 1), spec.h(), spec.hk(),
                  spec.d(), spec.dv()};
}

std::string describe(const GpuInferSpec& s) {
  const InferSpec& c = s.spec;
  std::string p, t;
  for (index_t b = 0; b < c.B(); ++b) {
    p += (b ? "," : "") + num(c.fields().cached[sz(b)]);
    t += (b ? "," : "") + num(c.fields().fresh[sz(b)]);
  }
  return "mode=" + to_string(c.mode()) + " N=" + num(c.N()) + " P=" + p + " T=" + t + " layout=" +
         to_string(c.fields().layout) + " cache=" + to_string(c.fields().cache_layout) + " h=" + num(c.h()) +
         " hk=" + num(c.hk()) + " d=" + num(c.d()) + " dv=" + num(c.dv()) + " mask=" + c.mask_name() +
         " dtype=" + to_string(s.dtype) + " kernel=" + to_string(s.kernel);
}

GpuInferRank::GpuInferRank(const GpuInferSpec& s, Comm& cm)
    : comm(checked(s, cm)),
      r(cm.rank()),
      n(static_cast<std::int64_t>(s.spec.q_rows(cm.rank()).size())),
      m(static_cast<std::int64_t>(s.spec.kv_rows(cm.rank()).size())),
      plan(infer_gpu_plan(s.spec, cm.rank())),
      q(q_bytes(s)),
      kv(kv_bytes(s)),
      o(o_bytes(s)),
      lse(sz(s.spec.h() * n)),
      o_acc(sz(s.spec.Mq() * s.spec.h() * s.spec.dv())) {
  const InferSpec& c = s.spec;
  const std::int64_t N = c.N(), h = c.h(), Mq = c.Mq();
  if (c.mode() == InferMode::pass_kv) {
    ring_bytes_ = kv_bytes(s);
    o_part = DeviceBuffer<std::byte>(o_bytes(s));
    lse_part = DeviceBuffer<float>(sz(h * Mq));
  } else {
    ring_bytes_ = ring_of_q(c) ? q_bytes(s) : 0;
    slot_lse = align16(o_bytes(s));
    slot_bytes = align16(slot_lse + sz(h * Mq) * sizeof(float));  // every slot 16-byte aligned
    parts = DeviceBuffer<std::byte>(sz(N) * slot_bytes);
    back = DeviceBuffer<std::byte>(sz(N) * slot_bytes);
    if (c.mode() == InferMode::decode_ag) gathered = DeviceBuffer<std::byte>(sz(N) * q_bytes(s));
  }
  if (ring_bytes_ > 0) {
    blk_cur = DeviceBuffer<std::byte>(ring_bytes_);
    blk_next = DeviceBuffer<std::byte>(ring_bytes_);
  }
  for (const InferGpuTile& t : plan.tiles) masks.emplace_back(t.mask, std::max<std::int64_t>(t.nq, 1));
  if (c.sinks()) {
    sinks = DeviceBuffer<float>(sz(h));
    std::vector<float> logits(sz(h), 0.0f);
    const std::vector<double>& given = c.fields().sink_logits;
    for (std::size_t i = 0; i < given.size() && i < logits.size(); ++i) logits[i] = static_cast<float>(given[i]);
    sinks.copy_from_host(logits);
  }
}

void GpuInferRank::set_sinks(const std::vector<float>& logits) {
  require(sinks.size() > 0, "set_sinks: the inference step has no --sinks");
  require(logits.size() == sinks.size(), "set_sinks: " + std::to_string(logits.size()) + " logits for " +
                                             std::to_string(sinks.size()) + " query heads");
  sinks.copy_from_host(logits);
}

void gpu_infer_forward(const GpuInferSpec& s, const std::vector<GpuInferRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const InferSpec& c = s.spec;
  const Nvtx range("inference forward " + to_string(c.mode()));
  for (GpuInferRank* x : ranks) {
    require(x->plan.tiles.size() == sz(c.N()) && x->comm->size() == c.N(),
            "a rank was built for another inference step (GpuInferRank(s, comm) with this spec)");
    start(s, *x);
  }
  if (times) times->reset(c.steps(), ranks.size());
  std::vector<const std::byte*> first;
  switch (c.mode()) {
    case InferMode::pass_kv:
      for (GpuInferRank* x : ranks) first.push_back(x->kv.data());
      ring(s, ranks, work, times, first, kv_bytes(s), kv_tile);
      break;
    case InferMode::pass_q:
    case InferMode::decode_pass_q:
      for (GpuInferRank* x : ranks) first.push_back(x->q.data());
      ring(s, ranks, work, times, first, q_bytes(s), q_tile);
      // the partials were written on the compute streams; the ring's last receive is waited on there
      return_and_merge(s, ranks, work);
      break;
    case InferMode::decode_ag: {
      if (does_comm(work)) {
        const Nvtx step("decode-ag step 0: all-gather Q");
        for (GpuInferRank* x : ranks) x->comm->all_gather(x->q.data(), x->gathered.data(), q_bytes(s), {}, x->compute.get());
      }
      if (does_compute(work)) {
        const Nvtx step("decode-ag step 1: tiles");
        const std::int64_t tiles_step = c.N() > 1 ? 1 : 0;  // the trace's: with N = 1 the tile is the only step
        for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
          GpuInferRank* x = ranks[xi];
          cudaStream_t st = x->compute.get();
          if (times) times->start(tiles_step, xi, st);
          for (std::size_t ti = 0; ti < x->plan.tiles.size(); ++ti) {
            const InferGpuTile& t = x->plan.tiles[ti];
            std::byte* slot = x->parts.data() + sz(t.q_owner) * x->slot_bytes;
            run_tile(s, t, x->masks[ti], x->gathered.data() + sz(t.q_owner) * q_bytes(s), x->kv.data(), slot,
                     reinterpret_cast<float*>(slot + x->slot_lse), st);
          }
          if (times) times->stop(tiles_step, xi, st);
        }
      }
      return_and_merge(s, ranks, work);
      break;
    }
  }
  for (GpuInferRank* x : ranks) finish(s, *x, work);
}

}  // namespace cplab::cuda
