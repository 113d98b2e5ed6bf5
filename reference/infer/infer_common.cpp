// infer_common.cpp: tiles, events and message buffers of the inference variants (see infer_common.h).
#include "infer/infer_common.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/attention_kernel.h"
#include "core/merge.h"
#include "core/sinks.h"
#include "layout/thd.h"
#include "modes/cp_common.h"

namespace cplab {

InferTile infer_tile_mask(const InferSpec& s, const std::vector<index_t>& q, const std::vector<index_t>& k) {
  InferTile t;
  if (q.empty() || k.empty()) return t;
  t.mask = token_mask(s.kv_packing(), q, k, s.rule());
  t.skipped = visible_pairs(t.mask, static_cast<std::int64_t>(q.size()), static_cast<std::int64_t>(k.size())) == 0;
  return t;
}

Event infer_tile_event(const InferSpec& s, int step, int rank, int peer, const std::string& section,
                       const InferTile& t, const std::vector<index_t>& q, const std::vector<index_t>& k, double dur_us) {
  return cp_tile_event(Phase::fwd, step, rank, peer, section, t.mask, t.skipped, q, k, s.h(), s.d(), s.dv(), dur_us);
}

template <class T>
void infer_attend(const InferSpec& s, const InferTile& t, const Tensor3<T>& q, const Tensor3<T>& k,
                  const Tensor3<T>& v, Tensor3<T>& o, Rows<T>& lse) {
  o = Tensor3<T>(q.n, s.h(), s.dv());
  lse = Rows<T>::Constant(s.h(), q.n, -std::numeric_limits<T>::infinity());
  if (t.skipped) return;
  attention_forward<T>(q.view(), k.view(), v.view(), t.mask, static_cast<T>(s.scale()), o.view(), rows_view(lse));
}

template <class T>
std::vector<T> pad_rows(const Tensor3<T>& x, index_t rows) {
  if (rows < x.n) throw std::logic_error("pad_rows: more rows than the padded size");
  std::vector<T> out(static_cast<size_t>(rows * x.h * x.d), T(0));
  std::copy(x.data.begin(), x.data.end(), out.begin());
  return out;
}

template <class T>
Tensor3<T> take_rows(const std::vector<T>& buf, size_t off, index_t n, index_t h, index_t d) {
  Tensor3<T> x(n, h, d);
  if (off + x.data.size() > buf.size()) throw std::logic_error("take_rows: buffer too small");
  std::copy(buf.begin() + static_cast<std::ptrdiff_t>(off), buf.begin() + static_cast<std::ptrdiff_t>(off + x.data.size()),
            x.data.begin());
  return x;
}

template <class T>
std::vector<T> flat_partial(const Tensor3<T>& o, const Rows<T>& lse) {
  std::vector<T> out(o.data);
  out.insert(out.end(), lse.data(), lse.data() + lse.size());
  return out;
}

template <class T>
void unflat_partial(const std::vector<T>& buf, size_t off, Tensor3<T>& o, Rows<T>& lse) {
  const size_t no = o.data.size(), nl = static_cast<size_t>(lse.size());
  if (off + no + nl > buf.size()) throw std::logic_error("unflat_partial: buffer too small");
  std::copy(buf.begin() + static_cast<std::ptrdiff_t>(off), buf.begin() + static_cast<std::ptrdiff_t>(off + no), o.data.begin());
  std::copy(buf.begin() + static_cast<std::ptrdiff_t>(off + no), buf.begin() + static_cast<std::ptrdiff_t>(off + no + nl),
            lse.data());
}

template <class T>
void merge_at_owners(const InferSpec& s, const std::vector<std::vector<T>>& got, const std::vector<T>& sinks,
                     std::vector<Tensor3<T>>& o, std::vector<Rows<T>>& lse) {
  const index_t N = s.N(), h = s.h(), dv = s.dv();
  for (index_t j = 0; j < N; ++j) {
    const index_t n = static_cast<index_t>(s.q_rows(j).size());
    Tensor3<T>& oj = o.emplace_back(n, h, dv);
    Rows<T>& lj = lse.emplace_back(Rows<T>::Constant(h, n, -std::numeric_limits<T>::infinity()));
    const size_t blk = static_cast<size_t>(n * h * (dv + 1));
    if (got[static_cast<size_t>(j)].size() != blk * static_cast<size_t>(N))
      throw std::logic_error("merge_at_owners: the all-to-all delivered the wrong size");
    for (index_t src = 0; src < N; ++src) {  // source-rank order
      Tensor3<T> o_p(n, h, dv);
      Rows<T> l_p(h, n);
      unflat_partial(got[static_cast<size_t>(j)], blk * static_cast<size_t>(src), o_p, l_p);
      merge_streaming<T>(oj.view(), rows_view(lj), 0, o_p.view(), rows_view(std::as_const(l_p)));
    }
    if (!sinks.empty()) apply_sinks<T>(oj.view(), rows_view(lj), sinks.data());
  }
}

#define CPLAB_INFER_COMMON(T)                                                                                     \
  template void infer_attend<T>(const InferSpec&, const InferTile&, const Tensor3<T>&, const Tensor3<T>&,          \
                                const Tensor3<T>&, Tensor3<T>&, Rows<T>&);                                         \
  template std::vector<T> pad_rows<T>(const Tensor3<T>&, index_t);                                                 \
  template Tensor3<T> take_rows<T>(const std::vector<T>&, size_t, index_t, index_t, index_t);                      \
  template std::vector<T> flat_partial<T>(const Tensor3<T>&, const Rows<T>&);                                      \
  template void unflat_partial<T>(const std::vector<T>&, size_t, Tensor3<T>&, Rows<T>&);                     \
  template void merge_at_owners<T>(const InferSpec&, const std::vector<std::vector<T>>&, const std::vector<T>&,   \
                                   std::vector<Tensor3<T>>&, std::vector<Rows<T>>&);
CPLAB_INFER_COMMON(float)
CPLAB_INFER_COMMON(double)
#undef CPLAB_INFER_COMMON

}  // namespace cplab
