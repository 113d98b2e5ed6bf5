// cp_attention.cpp: mode dispatch (see cp_attention.h).
#include "modes/cp_attention.h"

#include <stdexcept>

namespace cplab {

template <class T>
CpOutput<T> cp_attention_forward(const CpSpec& s, const PerRank<T>& q, const PerRank<T>& k, const PerRank<T>& v,
                                 SimComm& comm, CpState<T>& st) {
  st.q = q, st.k = k, st.v = v;
  switch (s.mode()) {
    case Mode::p2p:
      st.ring = ring_forward(s, q, k, v, comm);
      return CpOutput<T>{st.ring->o, st.ring->lse};
    case Mode::allgather:
      st.out = allgather_forward(s, q, k, v, comm);
      return *st.out;
    case Mode::a2a:
      st.ulysses = ulysses_forward(s, q, k, v, comm);
      return st.ulysses->out;
    case Mode::a2a_p2p:
      st.hcp = hcp_forward(s, q, k, v, comm);
      return st.hcp->out;
  }
  throw std::logic_error("cp_attention: a mode outside the mode table");
}

template <class T>
CpGrads<T> cp_attention_backward(const CpSpec& s, const CpState<T>& st, const PerRank<T>& dout, SimComm& comm) {
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

#define CPLAB_INSTANTIATE(T)                                                                                           \
  template CpOutput<T> cp_attention_forward<T>(const CpSpec&, const PerRank<T>&, const PerRank<T>&, const PerRank<T>&, \
                                               SimComm&, CpState<T>&);                                                 \
  template CpGrads<T> cp_attention_backward<T>(const CpSpec&, const CpState<T>&, const PerRank<T>&, SimComm&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
