// infer_pass_kv.cpp: pass-KV, the ring of training over a persistent KV cache (see infer_attention.h).
//
// N steps. At step i rank r holds the KV shard of rank j = (r - i) mod N (its cache shard and its
// new tokens' KV), and before computing it posts that shard to r+1 ("kv", steps 0 .. N-2), so the
// transfer overlaps the tile. Every message is padded to Mkv rows, the largest shard, as the paper
// does so that every step moves the same bytes (arXiv 2411.01783, section 3); the receiver knows
// every shard's true length from the spec (the request lengths every rank holds) and drops the
// padding. The tile is the rank's new tokens x the held shard, merged into its running (O, LSE) on
// the spot (merge.h, streaming); the sinks go in once per row at the end.
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
InferOutput<T> infer_pass_kv(const InferSpec& s, const InferLocal<T>& in, SimComm& comm, const std::vector<T>& sinks) {
  const int N = static_cast<int>(s.N());
  const index_t h = s.h(), hk = s.hk(), d = s.d(), dv = s.dv(), M = s.Mkv();
  InferOutput<T> out;
  std::vector<Tensor3<T>> k_held = in.k, v_held = in.v;
  for (int r = 0; r < N; ++r) {
    const index_t n = static_cast<index_t>(s.q_rows(r).size());
    out.o.emplace_back(n, h, dv);
    out.lse.push_back(Rows<T>::Constant(h, n, -std::numeric_limits<T>::infinity()));
  }
  for (int i = 0; i < N; ++i) {
    comm.set_step(Phase::fwd, i);
    const bool posts = i < N - 1;
    if (posts)
      for (int r = 0; r < N; ++r) {
        std::vector<T> buf = pad_rows(k_held[static_cast<size_t>(r)], M);
        const std::vector<T> vb = pad_rows(v_held[static_cast<size_t>(r)], M);
        buf.insert(buf.end(), vb.begin(), vb.end());
        comm.send<T>(r, (r + 1) % N, "kv", buf);
      }
    for (int r = 0; r < N; ++r) {
      const int j = ((r - i) % N + N) % N;
      const auto t0 = TileClock::now();
      const InferTile t = infer_tile_mask(s, s.q_kv_rows(r), s.kv_rows(j));
      if (!t.skipped) {
        Tensor3<T> o_i;
        Rows<T> lse_i;
        infer_attend(s, t, in.q[static_cast<size_t>(r)], k_held[static_cast<size_t>(r)], v_held[static_cast<size_t>(r)],
                     o_i, lse_i);
        merge_streaming<T>(out.o[static_cast<size_t>(r)].view(), rows_view(out.lse[static_cast<size_t>(r)]), 0,
                           o_i.view(), rows_view(std::as_const(lse_i)));
      }
      if (comm.trace())
        comm.trace()->add(infer_tile_event(s, i, r, j, i == 0 ? "local" : "ring", t, s.q_kv_rows(r), s.kv_rows(j),
                                           us_since(t0)));
    }
    if (posts)
      for (int r = 0; r < N; ++r) {
        const int src = (r - 1 + N) % N, j = ((r - i - 1) % N + N) % N;  // the shard rank j, from r-1
        const std::vector<T> buf = comm.recv<T>(r, src, "kv");
        const index_t m = static_cast<index_t>(s.kv_rows(j).size());
        if (buf.size() != static_cast<size_t>(M * hk * (d + dv))) throw std::logic_error("pass-KV: wrong message size");
        k_held[static_cast<size_t>(r)] = take_rows(buf, 0, m, hk, d);
        v_held[static_cast<size_t>(r)] = take_rows(buf, static_cast<size_t>(M * hk * d), m, hk, dv);
      }
  }
  if (!sinks.empty())
    for (int r = 0; r < N; ++r)
      apply_sinks<T>(out.o[static_cast<size_t>(r)].view(), rows_view(out.lse[static_cast<size_t>(r)]), sinks.data());
  if (comm.pending() != 0) throw std::logic_error("pass-KV left undelivered messages");
  return out;
}

template InferOutput<float> infer_pass_kv<float>(const InferSpec&, const InferLocal<float>&, SimComm&,
                                                 const std::vector<float>&);
template InferOutput<double> infer_pass_kv<double>(const InferSpec&, const InferLocal<double>&, SimComm&,
                                                   const std::vector<double>&);

}  // namespace cplab
