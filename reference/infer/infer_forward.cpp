// infer_forward.cpp: infer_forward, the dispatch on the spec's variant (see infer_attention.h).
#include <stdexcept>

#include "infer/infer_attention.h"

namespace cplab {

template <class T>
InferOutput<T> infer_forward(const InferSpec& s, const InferLocal<T>& in, SimComm& comm, const std::vector<T>& sinks) {
  if (!sinks.empty() && static_cast<index_t>(sinks.size()) != s.h())
    throw std::logic_error("infer_forward: one sink logit per query head");
  if (in.q.size() != static_cast<size_t>(s.N()) || in.k.size() != static_cast<size_t>(s.N()) ||
      in.v.size() != static_cast<size_t>(s.N()))
    throw std::logic_error("infer_forward: one local Q, K and V per rank");
  for (int r = 0; r < static_cast<int>(s.N()); ++r)
    if (in.q[static_cast<size_t>(r)].n != static_cast<index_t>(s.q_rows(r).size()) ||
        in.k[static_cast<size_t>(r)].n != static_cast<index_t>(s.kv_rows(r).size()) ||
        in.v[static_cast<size_t>(r)].n != in.k[static_cast<size_t>(r)].n)
      throw std::logic_error("infer_forward: local tensors must hold the spec's rows");
  switch (s.mode()) {
    case InferMode::pass_kv: return infer_pass_kv(s, in, comm, sinks);
    case InferMode::pass_q:
    case InferMode::decode_pass_q: return infer_pass_q(s, in, comm, sinks);
    case InferMode::decode_ag: return infer_decode_ag(s, in, comm, sinks);
  }
  throw std::logic_error("infer_forward: an InferMode outside the table");
}

#define CPLAB_INFER_FWD(T) \
  template InferOutput<T> infer_forward<T>(const InferSpec&, const InferLocal<T>&, SimComm&, const std::vector<T>&);
CPLAB_INFER_FWD(float)
CPLAB_INFER_FWD(double)
#undef CPLAB_INFER_FWD

}  // namespace cplab
