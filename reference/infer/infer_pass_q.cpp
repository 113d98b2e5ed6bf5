// infer_pass_q.cpp: pass-Q and pass-Q ring decode (see infer_attention.h).
//
// N ring steps, then one all-to-all. At step i rank r holds the Q block of rank j = (r - i) mod N
// and, before computing, posts it to r+1 ("q", steps 0 .. N-2), padded to Mq rows (the largest
// block; the paper pads the ring's messages, arXiv 2411.01783 section 3). Rank r attends the
// visiting block to its own KV (cache shard + new tokens), which never moves, and KEEPS the partial
// (O, LSE) where it computed it. At step N ("o+lse", all-to-all) every rank sends owner j the
// partial of j's block, real rows only; owner j merges the N partials in source-rank order with
// merge.h's exact rule (an empty partial, LSE = -inf, weighs exactly 0), then applies the sinks.
// decode-pass-q is the same loop over the decode placement (infer_spec.h: new tokens round-robin).
// With N = 1 there is one step and no message.
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/merge.h"
#include "core/sinks.h"
#include "infer/infer_attention.h"
#include "infer/infer_common.h"
#include "modes/cp_common.h"

namespace cplab {

template <class T>
InferOutput<T> infer_pass_q(const InferSpec& s, const InferLocal<T>& in, SimComm& comm, const std::vector<T>& sinks) {
  const int N = static_cast<int>(s.N());
  const index_t h = s.h(), d = s.d(), M = s.Mq();
  auto nq = [&](int r) { return static_cast<index_t>(s.q_rows(r).size()); };
  std::vector<Tensor3<T>> q_held = in.q;
  // partial[r][j]: rank r's partial for rank j's queries (n_j rows)
  std::vector<std::vector<Tensor3<T>>> po(static_cast<size_t>(N), std::vector<Tensor3<T>>(static_cast<size_t>(N)));
  std::vector<std::vector<Rows<T>>> pl(static_cast<size_t>(N), std::vector<Rows<T>>(static_cast<size_t>(N)));
  for (int i = 0; i < N; ++i) {
    comm.set_step(Phase::fwd, i);
    const bool posts = i < N - 1;
    if (posts)
      for (int r = 0; r < N; ++r) comm.send<T>(r, (r + 1) % N, "q", pad_rows(q_held[static_cast<size_t>(r)], M));
    for (int r = 0; r < N; ++r) {
      const int j = ((r - i) % N + N) % N;
      const auto t0 = TileClock::now();
      const InferTile t = infer_tile_mask(s, s.q_kv_rows(j), s.kv_rows(r));
      infer_attend(s, t, q_held[static_cast<size_t>(r)], in.k[static_cast<size_t>(r)], in.v[static_cast<size_t>(r)],
                   po[static_cast<size_t>(r)][static_cast<size_t>(j)], pl[static_cast<size_t>(r)][static_cast<size_t>(j)]);
      if (comm.trace())
        comm.trace()->add(infer_tile_event(s, i, r, j, i == 0 ? "local" : "ring", t, s.q_kv_rows(j), s.kv_rows(r),
                                           us_since(t0)));
    }
    if (posts)
      for (int r = 0; r < N; ++r) {
        const int src = (r - 1 + N) % N, j = ((r - i - 1) % N + N) % N;  // rank j's block, from r-1
        const std::vector<T> buf = comm.recv<T>(r, src, "q");
        if (buf.size() != static_cast<size_t>(M * h * d)) throw std::logic_error("pass-Q: wrong message size");
        q_held[static_cast<size_t>(r)] = take_rows(buf, 0, nq(j), h, d);
      }
  }
  // the closing all-to-all: partials to their owners
  std::vector<std::vector<std::vector<T>>> blocks(static_cast<size_t>(N), std::vector<std::vector<T>>(static_cast<size_t>(N)));
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < N; ++j)
      blocks[static_cast<size_t>(r)][static_cast<size_t>(j)] =
          flat_partial(po[static_cast<size_t>(r)][static_cast<size_t>(j)], pl[static_cast<size_t>(r)][static_cast<size_t>(j)]);
  if (N > 1) comm.set_step(Phase::fwd, N);
  const std::vector<std::vector<T>> got = N > 1 ? comm.all_to_all<T>("o+lse", blocks) : std::vector<std::vector<T>>{blocks[0][0]};
  InferOutput<T> out;
  merge_at_owners(s, got, sinks, out.o, out.lse);
  if (comm.pending() != 0) throw std::logic_error("pass-Q left undelivered messages");
  return out;
}

template InferOutput<float> infer_pass_q<float>(const InferSpec&, const InferLocal<float>&, SimComm&,
                                                const std::vector<float>&);
template InferOutput<double> infer_pass_q<double>(const InferSpec&, const InferLocal<double>&, SimComm&,
                                                  const std::vector<double>&);

}  // namespace cplab
