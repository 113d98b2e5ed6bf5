// cp_spec.cpp: GpuCpSpec (see cp_spec.h).
#include "cp_spec.h"

#include "core/error.h"
#include "core/util.h"
#include "modes/hierarchical_cp.h"

namespace cplab::cuda {

AttnDims GpuCpSpec::tile_dims() const {
  const CpSpec& c = cp;
  switch (c.mode()) {
    case Mode::p2p: return AttnDims{c.n(), c.n(), c.h(), c.hk(), c.d(), c.dv()};
    case Mode::allgather: return AttnDims{c.n(), c.S(), c.h(), c.hk(), c.d(), c.dv()};
    case Mode::a2a: return AttnDims{c.S(), c.S(), c.h() / c.P(), c.hk() / c.P(), c.d(), c.dv()};
    case Mode::a2a_p2p:
      return AttnDims{c.S() / c.ocp(), c.S() / c.ocp(), c.h() / c.icp(), c.hk() / c.icp(), c.d(), c.dv()};
  }
  throw Error("GpuCpSpec: a Mode value outside the mode table");
}

void GpuCpSpec::check() const {
  require(!cp.replicate_kv(),
          "--replicate-kv is not supported on GPU ranks (the KV heads must divide by the a2a size)");
  require(cp.merge() == MergeKind::streaming,
          "GPU ranks merge partial results streaming (--merge fold runs on the CPU reference)");
  check_supported(kernel, dtype, tile_dims());
}

GpuCpSpec GpuCpSpec::ring() const {
  switch (cp.mode()) {
    case Mode::p2p: return *this;
    case Mode::a2a_p2p: return GpuCpSpec{hcp_ring_spec(cp), dtype, kernel};
    case Mode::allgather:
    case Mode::a2a: break;
  }
  throw Error("--mode " + to_string(cp.mode()) + " has no ring (only p2p and a2a+p2p do)");
}

namespace {
std::size_t checked_size(const GpuCpSpec& s, std::int64_t elems) {
  s.check();
  return sz(elems);
}
}  // namespace

RankIO::RankIO(const GpuCpSpec& s)
    : q(checked_size(s, s.cp.n() * s.cp.h() * s.cp.d()) * dtype_size(s.dtype)),
      kv(sz(s.cp.n() * s.cp.hk() * (s.cp.d() + s.cp.dv())) * dtype_size(s.dtype)),
      dout(sz(s.cp.n() * s.cp.h() * s.cp.dv()) * dtype_size(s.dtype)),
      o(sz(s.cp.n() * s.cp.h() * s.cp.dv()) * dtype_size(s.dtype)),
      dq(sz(s.cp.n() * s.cp.h() * s.cp.d())),
      dkv(sz(s.cp.n() * s.cp.hk() * (s.cp.d() + s.cp.dv()))) {}

DeviceBuffer<float> sink_buffer(const CpSpec& c, std::int64_t head0, std::int64_t heads) {
  if (!c.sinks()) return {};
  require(head0 >= 0 && heads > 0 && head0 + heads <= c.h(),
          "sink_buffer: heads [" + num(head0) + ", " + num(head0 + heads) + ") are not query heads of the spec (h = " +
              num(c.h()) + ")");
  const std::vector<double>& given = c.fields().sink_logits;
  std::vector<float> v(sz(heads), 0.f);
  if (!given.empty())
    for (std::int64_t i = 0; i < heads; ++i) v[sz(i)] = static_cast<float>(given[sz(head0 + i)]);
  DeviceBuffer<float> b(sz(heads));
  b.copy_from_host(v);
  return b;
}

std::string describe(const GpuCpSpec& s) {
  const CpSpec& c = s.cp;
  std::string t = "mode=" + to_string(c.mode()) + " layout=" + to_string(c.layout()) + " cp=" + num(c.P()) +
                  " seq=" + num(c.S()) + " heads=" + num(c.h()) + "/" + num(c.hk()) + " d=" + num(c.d()) + "/" +
                  num(c.dv()) + " causal=" + num(c.causal()) + " window=" + num(c.window()) +
                  " chunk=" + num(c.chunk()) + " sinks=" + num(c.sinks()) + " dtype=" + to_string(s.dtype) +
                  " kernel=v" + num(static_cast<int>(s.kernel)) + " hcp=" + num(c.icp()) + "x" + num(c.ocp()) +
                  " cu=";
  for (index_t x : c.fields().cu_seqlens) t += num(x) + ",";
  return t + " pad=" + num(c.pad());
}

}  // namespace cplab::cuda
