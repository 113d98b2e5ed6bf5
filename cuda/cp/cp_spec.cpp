// cp_spec.cpp: GpuCpSpec (see cp_spec.h).
#include "cp_spec.h"

#include "error.h"

namespace cplab::cuda {

GpuRingSpec GpuCpSpec::ring() const {
  GpuRingSpec r{run.layout, run.causal, P(), S(), h(), hk(), d(), dv(), dtype, kernel, scale()};
  if (packed()) r.packing = tokens();
  return r;
}

bool GpuCpSpec::packed() const {
  const Packing p = tokens();
  return p.num_seqs() > 1 || p.has_padding();
}

GpuRingSpec GpuCpSpec::hcp_ring() const {
  return GpuRingSpec{Layout::zigzag, run.causal, run.ocp, S(), h() / run.icp, hk() / run.icp, d(), dv(), dtype, kernel, scale()};
}

std::int64_t GpuCpSpec::fwd_steps() const {
  if (run.mode == "p2p") return P();
  if (run.mode == "allgather") return 2;
  if (run.mode == "a2a") return 3;
  return run.ocp + 2;  // a2a+p2p: inner a2a, ocp ring steps, a2a back
}

std::int64_t GpuCpSpec::bwd_steps() const {
  if (run.mode == "allgather") return 3;  // gather, tiles, reduce-scatter
  return fwd_steps();
}

void GpuCpSpec::check() const {
  validate_rules(run);  // the reference's rules for the mode, layout, sizes and packing
  require(!run.replicate_kv, "--replicate-kv is not supported on GPU ranks (the KV heads must divide by the a2a size)");
  require(run.merge == MergeKind::streaming, "GPU ranks merge partial results streaming (--merge fold runs on the CPU reference)");
  const std::int64_t S = this->S(), n = this->n();
  AttnDims dims{n, n, h(), hk(), d(), dv()};  // p2p: local Q x a held block
  if (run.mode == "allgather") dims = AttnDims{n, S, h(), hk(), d(), dv()};
  if (run.mode == "a2a") dims = AttnDims{S, S, h() / P(), hk() / P(), d(), dv()};
  if (run.mode == "a2a+p2p") dims = AttnDims{S / run.ocp, S / run.ocp, h() / run.icp, hk() / run.icp, d(), dv()};
  check_supported(kernel, dtype, dims);
}

namespace {
std::size_t sz(std::int64_t x) { return static_cast<std::size_t>(x); }
std::size_t checked_size(const GpuCpSpec& s, std::int64_t elems) {
  s.check();
  return sz(elems);
}
}  // namespace

RankIO::RankIO(const GpuCpSpec& s)
    : q(checked_size(s, s.n() * s.h() * s.d()) * dtype_size(s.dtype)),
      kv(sz(s.n() * s.hk() * (s.d() + s.dv())) * dtype_size(s.dtype)),
      dout(sz(s.n() * s.h() * s.dv()) * dtype_size(s.dtype)),
      o(sz(s.n() * s.h() * s.dv()) * dtype_size(s.dtype)),
      dq(sz(s.n() * s.h() * s.d())),
      dkv(sz(s.n() * s.hk() * (s.d() + s.dv()))) {}

std::string describe(const GpuCpSpec& s) {
  std::string t = "mode=" + s.run.mode + " layout=" + to_string(s.run.layout) + " cp=" + std::to_string(s.P()) +
                  " seq=" + std::to_string(s.S()) + " heads=" + std::to_string(s.h()) + "/" + std::to_string(s.hk()) +
                  " d=" + std::to_string(s.d()) + "/" + std::to_string(s.dv()) + " causal=" + std::to_string(s.run.causal) +
                  " dtype=" + to_string(s.dtype) + " kernel=v" + std::to_string(static_cast<int>(s.kernel)) +
                  " hcp=" + std::to_string(s.run.icp) + "x" + std::to_string(s.run.ocp) + " cu=";
  for (index_t c : s.run.cu_seqlens) t += std::to_string(c) + ",";
  return t + " pad=" + std::to_string(s.run.pad);
}

}  // namespace cplab::cuda
