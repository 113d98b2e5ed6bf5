// cp_gpu.cpp: GpuCpRank and the mode dispatch (see cp_gpu.h).
#include "cp_gpu.h"

#include <cmath>

#include "core/error.h"
#include "core/util.h"

namespace cplab::cuda {

GpuCpRank::GpuCpRank(const GpuCpSpec& s, Comm& c) : comm_(&c), h_(s.cp.h()), sinks_(s.cp.sinks()) {
  s.check();
  switch (s.cp.mode()) {
    case Mode::p2p:
      ring_ = std::make_unique<GpuRingRank>(s.ring(), c);
      kv_ = DeviceBuffer<std::byte>(ring_->kv_cur.size());
      ring_->kv_in = kv_.data();
      return;
    case Mode::allgather:
      ag_ = std::make_unique<GpuAgRank>(s, c);
      io_ = ag_.get();
      return;
    case Mode::a2a:
      uly_ = std::make_unique<GpuUlyssesRank>(s, c);
      io_ = uly_.get();
      return;
    case Mode::a2a_p2p:
      hcp_ = std::make_unique<GpuHcpRank>(s, c);
      io_ = hcp_.get();
      return;
  }
  throw Error("GpuCpRank: a Mode value outside the mode table");
}

GpuCpRank::~GpuCpRank() = default;

std::byte* GpuCpRank::q() { return ring_ ? ring_->q.data() : io_->q.data(); }
std::byte* GpuCpRank::kv() { return ring_ ? kv_.data() : io_->kv.data(); }
std::byte* GpuCpRank::dout() { return ring_ ? ring_->dout.data() : io_->dout.data(); }
const std::byte* GpuCpRank::o() const { return ring_ ? ring_->o.data() : io_->o.data(); }
const float* GpuCpRank::dq() const { return ring_ ? ring_->dq.data() : io_->dq.data(); }
const float* GpuCpRank::dkv() const { return ring_ ? ring_->dkv_acc.data() : io_->dkv.data(); }

const float* GpuCpRank::lse() const {
  if (ring_) return ring_->lse.data();
  if (ag_) return ag_->lse.data();
  if (uly_) return uly_->lse.data();
  return hcp_->ring.lse.data();
}

GpuCpRank::SinkSlot GpuCpRank::sink_slot() {
  if (ring_) return {&ring_->sinks, &ring_->dsinks, 0};
  if (ag_) return {&ag_->sinks, &ag_->dsinks, 0};
  if (uly_) return {&uly_->sinks, &uly_->dsinks, comm_->rank() * static_cast<std::int64_t>(uly_->sinks.size())};
  return {&hcp_->ring.sinks, &hcp_->ring.dsinks, hcp_->a * static_cast<std::int64_t>(hcp_->ring.sinks.size())};
}

void GpuCpRank::set_sinks(const std::vector<float>& logits) {
  require(sinks_, "set_sinks: the spec has no --sinks");
  require(static_cast<std::int64_t>(logits.size()) == h_, "set_sinks takes one logit per query head: " + num(h_) +
                                                              " values, got " + num(static_cast<std::int64_t>(logits.size())));
  for (float x : logits) require(std::isfinite(x), "set_sinks: every sink logit must be a finite number");
  const SinkSlot slot = sink_slot();
  const auto first = logits.begin() + slot.head0;
  slot.sinks->copy_from_host(std::vector<float>(first, first + static_cast<std::ptrdiff_t>(slot.sinks->size())));
}

std::vector<double> GpuCpRank::dsinks() {
  require(sinks_, "dsinks: the spec has no --sinks");
  const SinkSlot slot = sink_slot();
  std::vector<float> part(slot.ds->size());
  slot.ds->copy_to_host(part);
  std::vector<double> all(static_cast<std::size_t>(h_), 0.0);
  for (std::size_t i = 0; i < part.size(); ++i) all[static_cast<std::size_t>(slot.head0) + i] = part[i];
  return all;
}

std::vector<cudaStream_t> GpuCpRank::streams() {
  if (ring_) return {ring_->compute.get(), ring_->transfer.get()};
  if (ag_) return {ag_->stream.get()};
  if (uly_) return {uly_->stream.get()};
  return {hcp_->ring.compute.get(), hcp_->ring.transfer.get()};
}

namespace {

template <class R>
std::vector<R*> pick(const std::vector<GpuCpRank*>& ranks, R* (GpuCpRank::*get)()) {
  std::vector<R*> out;
  for (GpuCpRank* x : ranks) {
    R* r = (x->*get)();
    require(r != nullptr, "a driven rank was built for another mode than the spec's");
    out.push_back(r);
  }
  return out;
}

}  // namespace

void gpu_cp_forward(const GpuCpSpec& s, const std::vector<GpuCpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  if (times) times->reset(s.cp.fwd_steps(), ranks.size());
  switch (s.cp.mode()) {
    case Mode::p2p: return gpu_ring_forward(s.ring(), pick(ranks, &GpuCpRank::ring), work, times);
    case Mode::allgather: return gpu_allgather_forward(s, pick(ranks, &GpuCpRank::allgather), work, times);
    case Mode::a2a: return gpu_ulysses_forward(s, pick(ranks, &GpuCpRank::ulysses), work, times);
    case Mode::a2a_p2p: return gpu_hcp_forward(s, pick(ranks, &GpuCpRank::hcp), work, times);
  }
  throw Error("gpu_cp_forward: a Mode value outside the mode table");
}

void gpu_cp_backward(const GpuCpSpec& s, const std::vector<GpuCpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  if (times) times->reset(s.cp.bwd_steps(), ranks.size());
  switch (s.cp.mode()) {
    case Mode::p2p: return gpu_ring_backward(s.ring(), pick(ranks, &GpuCpRank::ring), work, times);
    case Mode::allgather: return gpu_allgather_backward(s, pick(ranks, &GpuCpRank::allgather), work, times);
    case Mode::a2a: return gpu_ulysses_backward(s, pick(ranks, &GpuCpRank::ulysses), work, times);
    case Mode::a2a_p2p: return gpu_hcp_backward(s, pick(ranks, &GpuCpRank::hcp), work, times);
  }
  throw Error("gpu_cp_backward: a Mode value outside the mode table");
}

}  // namespace cplab::cuda
