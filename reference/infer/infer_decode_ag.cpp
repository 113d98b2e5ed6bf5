// infer_decode_ag.cpp: all-gather-Q decode (see infer_attention.h), the scheme of vLLM's decode
// context parallelism (docs.vllm.ai, "Context Parallel Deployment").
//
// Step 0 ("q", all-gather): every rank gathers every rank's new tokens' Q (real rows, no padding).
// Step 1: every rank attends ALL the new tokens (in rank order) to its own KV shard, one tile.
// Step 2 ("o+lse", all-to-all): rank r sends owner j the partial (O, LSE) rows of j's queries;
// owner j merges the N partials in source-rank order (merge.h) and applies the sinks.
// vLLM combines the partials with an LSE all-gather and a reduce-scatter over heads instead; the
// all-to-all here moves the same O rows plus the LSE, and keeps each output on its token's owner.
// With N = 1 there is one step (the tile) and no message.
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
InferOutput<T> infer_decode_ag(const InferSpec& s, const InferLocal<T>& in, SimComm& comm,
                               const std::vector<T>& sinks) {
  const int N = static_cast<int>(s.N());
  const index_t h = s.h(), d = s.d(), dv = s.dv(), T_all = s.T();
  auto nq = [&](int r) { return static_cast<index_t>(s.q_rows(r).size()); };
  // every rank's queries in rank order, as KV rows, and where each rank's block starts
  std::vector<index_t> all_q, start;
  for (int r = 0; r < N; ++r) {
    start.push_back(static_cast<index_t>(all_q.size()));
    all_q.insert(all_q.end(), s.q_kv_rows(r).begin(), s.q_kv_rows(r).end());
  }
  const int tile_step = N > 1 ? 1 : 0;
  std::vector<std::vector<T>> gathered;
  if (N > 1) {
    comm.set_step(Phase::fwd, 0);
    std::vector<std::vector<T>> mine;
    for (int r = 0; r < N; ++r) mine.push_back(in.q[static_cast<size_t>(r)].data);
    gathered = comm.all_gather<T>("q", mine);
  } else {
    gathered = {in.q[0].data};
  }
  comm.set_step(Phase::fwd, tile_step);
  std::vector<Tensor3<T>> po(static_cast<size_t>(N));
  std::vector<Rows<T>> pl(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) {
    if (gathered[static_cast<size_t>(r)].size() != static_cast<size_t>(T_all * h * d))
      throw std::logic_error("decode-ag: wrong all-gather size");
    const auto t0 = TileClock::now();
    const Tensor3<T> q_all = take_rows(gathered[static_cast<size_t>(r)], 0, T_all, h, d);
    const InferTile t = infer_tile_mask(s, all_q, s.kv_rows(r));
    infer_attend(s, t, q_all, in.k[static_cast<size_t>(r)], in.v[static_cast<size_t>(r)], po[static_cast<size_t>(r)],
                 pl[static_cast<size_t>(r)]);
    if (comm.trace()) comm.trace()->add(infer_tile_event(s, tile_step, r, r, "local", t, all_q, s.kv_rows(r), us_since(t0)));
  }
  // slice every rank's partial by owner and return the slices
  std::vector<std::vector<std::vector<T>>> blocks(static_cast<size_t>(N), std::vector<std::vector<T>>(static_cast<size_t>(N)));
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < N; ++j) {
      const index_t n = nq(j), a = start[static_cast<size_t>(j)];
      Tensor3<T> o(n, h, dv);
      std::copy(po[static_cast<size_t>(r)].token(a), po[static_cast<size_t>(r)].token(a) + n * h * dv, o.data.begin());
      const Rows<T> l = pl[static_cast<size_t>(r)].block(0, a, h, n);
      blocks[static_cast<size_t>(r)][static_cast<size_t>(j)] = flat_partial(o, l);
    }
  if (N > 1) comm.set_step(Phase::fwd, 2);
  const std::vector<std::vector<T>> got = N > 1 ? comm.all_to_all<T>("o+lse", blocks) : std::vector<std::vector<T>>{blocks[0][0]};
  InferOutput<T> out;
  merge_at_owners(s, got, sinks, out.o, out.lse);
  if (comm.pending() != 0) throw std::logic_error("decode-ag left undelivered messages");
  return out;
}

#define CPLAB_INFER_FWD(T)                                                                                         \
  template InferOutput<T> infer_decode_ag<T>(const InferSpec&, const InferLocal<T>&, SimComm&, const std::vector<T>&);
CPLAB_INFER_FWD(float)
CPLAB_INFER_FWD(double)
#undef CPLAB_INFER_FWD

}  // namespace cplab
