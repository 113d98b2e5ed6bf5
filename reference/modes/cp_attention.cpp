// cp_attention.cpp: mode dispatch (see cp_attention.h).
#include "modes/cp_attention.h"

#include <stdexcept>
#include <utility>

namespace cplab {

template <class T>
CpOutput<T> cp_attention_forward(const CpSpec& s, const PerRank<T>& q, const PerRank<T>& k, const PerRank<T>& v,
                                 SimComm& comm, CpState<T>& st, const std::vector<T>& sinks) {
  if (static_cast<index_t>(sinks.size()) != (s.sinks() ? s.h() : 0))
    throw std::logic_error("cp_attention: a spec with sinks takes one logit per query head, one without none");
  st.q = q, st.k = k, st.v = v;
  st.sinks = sinks;
  switch (s.mode()) {
    case Mode::p2p:
      st.ring = ring_forward(s, q, k, v, comm, {}, sinks);
      return CpOutput<T>{st.ring->o, st.ring->lse};
    case Mode::allgather:
      st.out = allgather_forward(s, q, k, v, comm, sinks);
      return *st.out;
    case Mode::a2a:
      st.ulysses = ulysses_forward(s, q, k, v, comm, sinks);
      return st.ulysses->out;
    case Mode::a2a_p2p:
      st.hcp = hcp_forward(s, q, k, v, comm, sinks);
      return st.hcp->out;
  }
  throw std::logic_error("cp_attention: a mode outside the mode table");
}

namespace {

template <class T>
CpGrads<T> mode_backward(const CpSpec& s, const CpState<T>& st, const PerRank<T>& dout, SimComm& comm) {
  switch (s.mode()) {
    case Mode::p2p:
      return ring_backward(s, st.q, st.k, st.v, *st.ring, dout, comm);
    case Mode::allgather:
      return allgather_backward(s, st.q, st.k, st.v, *st.out, dout, comm);
    case Mode::a2a:
      return ulysses_backward(s, *st.ulysses, dout, comm);
    case Mode::a2a_p2p:
      return hcp_backward(s, *st.hcp, dout, comm);
  }
  throw std::logic_error("cp_attention: a mode outside the mode table");
}

// the final (O', LSE') of every rank's rows, in the data layout, as the forward returned them
template <class T>
std::pair<const PerRank<T>*, const std::vector<Rows<T>>*> final_output(const CpSpec& s, const CpState<T>& st) {
  switch (s.mode()) {
    case Mode::p2p: return {&st.ring->o, &st.ring->lse};
    case Mode::allgather: return {&st.out->o, &st.out->lse};
    case Mode::a2a: return {&st.ulysses->out.o, &st.ulysses->out.lse};
    case Mode::a2a_p2p: return {&st.hcp->out.o, &st.hcp->out.lse};
  }
  throw std::logic_error("cp_attention: a mode outside the mode table");
}

}  // namespace

template <class T>
CpGrads<T> cp_attention_backward(const CpSpec& s, const CpState<T>& st, const PerRank<T>& dout, SimComm& comm) {
  CpGrads<T> g = mode_backward(s, st, dout, comm);
  if (!st.sinks.empty()) {  // every rank's rows: where a2a keeps the LSE head-sharded, the same sums
    const auto [o, lse] = final_output(s, st);
    g.dsinks.assign(st.sinks.size(), T(0));
    for (size_t r = 0; r < dout.size(); ++r)
      sink_grad<T>((*o)[r].view(), dout[r].view(), rows_view((*lse)[r]), st.sinks.data(), g.dsinks.data());
  }
  return g;
}

#define CPLAB_INSTANTIATE(T)                                                                                           \
  template CpOutput<T> cp_attention_forward<T>(const CpSpec&, const PerRank<T>&, const PerRank<T>&, const PerRank<T>&, \
                                               SimComm&, CpState<T>&, const std::vector<T>&);                          \
  template CpGrads<T> cp_attention_backward<T>(const CpSpec&, const CpState<T>&, const PerRank<T>&, SimComm&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
