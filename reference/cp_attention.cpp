// cp_attention.cpp: mode dispatch (see cp_attention.h).
#include "cp_attention.h"

#include <stdexcept>

namespace cplab {

template <class T>
CpOutput<T> cp_attention_forward(const ModeSpec& m, const CpConfig<T>& cfg, const PerRank<T>& q, const PerRank<T>& k,
                                 const PerRank<T>& v, SimComm& comm, CpState<T>& st) {
  if (!cfg.packing.cu_seqlens.empty() && cfg.packing.cu_seqlens_padded != cfg.part.cu_padded())
    throw std::logic_error("cp_attention: the packing and the partition disagree on cu_seqlens_padded");
  st.q = q, st.k = k, st.v = v;
  if (m.mode == "p2p") {
    const RingConfig<T> rc{cfg.part, cfg.causal, cfg.scale, cfg.merge, cfg.packed() ? &cfg.packing : nullptr};
    st.ring = ring_forward(rc, q, k, v, comm);
    return CpOutput<T>{st.ring->o, st.ring->lse};
  }
  if (m.mode == "allgather") {
    st.out = allgather_forward(cfg, q, k, v, comm);
    return *st.out;
  }
  if (m.mode == "a2a") {
    st.ulysses = ulysses_forward(cfg, q, k, v, comm);
    return st.ulysses->out;
  }
  if (m.mode == "a2a+p2p") {
    st.hcp = hcp_forward(cfg, m.icp, m.ocp, q, k, v, comm);
    return st.hcp->out;
  }
  throw std::logic_error("cp_attention: unknown mode " + m.mode);
}

template <class T>
CpGrads<T> cp_attention_backward(const ModeSpec& m, const CpConfig<T>& cfg, const CpState<T>& st,
                                 const PerRank<T>& dout, SimComm& comm) {
  if (m.mode == "p2p") {
    const RingConfig<T> rc{cfg.part, cfg.causal, cfg.scale, cfg.merge, cfg.packed() ? &cfg.packing : nullptr};
    return ring_backward(rc, st.q, st.k, st.v, *st.ring, dout, comm);
  }
  if (m.mode == "allgather") return allgather_backward(cfg, st.q, st.k, st.v, *st.out, dout, comm);
  if (m.mode == "a2a") return ulysses_backward(cfg, *st.ulysses, dout, comm);
  if (m.mode == "a2a+p2p") return hcp_backward(cfg, m.icp, m.ocp, *st.hcp, dout, comm);
  throw std::logic_error("cp_attention: unknown mode " + m.mode);
}

#define CPLAB_INSTANTIATE(T)                                                                                    \
  template CpOutput<T> cp_attention_forward<T>(const ModeSpec&, const CpConfig<T>&, const PerRank<T>&,          \
                                               const PerRank<T>&, const PerRank<T>&, SimComm&, CpState<T>&);    \
  template CpGrads<T> cp_attention_backward<T>(const ModeSpec&, const CpConfig<T>&, const CpState<T>&,          \
                                               const PerRank<T>&, SimComm&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
