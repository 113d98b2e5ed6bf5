// merge.cpp: streaming and post-loop (TE) merging of partial attention results; see merge.h.
#include "core/merge.h"

#include "core/error.h"

namespace cplab {

MergeKind parse_merge(const std::string& s) {
  if (s == "streaming") return MergeKind::streaming;
  if (s == "fold") return MergeKind::fold;
  throw Error("merge '" + s + "' is not one of: streaming, fold");
}

std::string to_string(MergeKind m) { return m == MergeKind::streaming ? "streaming" : "fold"; }

template <class T>
void merge_streaming(View3<T> o_acc, RowsView<T> lse_acc, index_t row0, CView3<T> o_part,
                     RowsView<const T> lse_part) {
  for (index_t i = 0; i < o_acc.h; ++i) {
    HeadMap<T> O = head(o_acc, i);
    const CHeadMap<T> Op = head(o_part, i);
    for (index_t t = 0; t < o_part.n; ++t) {
      const T la = lse_acc(i, row0 + t), lb = lse_part(i, t);
      const T l = lse_merge(la, lb);
      const T alpha = merge_weight(la, l), beta = merge_weight(lb, l);
      O.row(row0 + t) = alpha * O.row(row0 + t) + beta * Op.row(t);
      lse_acc(i, row0 + t) = l;
    }
  }
}

template <class T>
PostLoopFold<T>::PostLoopFold(index_t n, index_t h, index_t dv) : n_(n), h_(h), dv_(dv) {}

template <class T>
void PostLoopFold<T>::add(index_t row0, Tensor3<T> o_part, Rows<T> lse_part) {
  parts_.push_back(Part{row0, std::move(o_part), std::move(lse_part)});
}

template <class T>
void PostLoopFold<T>::finish(View3<T> o, RowsView<T> lse) const {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  // phase A: the running LSE, partial by partial, in the order they were added
  for (index_t i = 0; i < h_; ++i)
    for (index_t t = 0; t < n_; ++t) lse(i, t) = ninf;
  for (const Part& p : parts_)
    for (index_t i = 0; i < h_; ++i)
      for (index_t t = 0; t < p.o.n; ++t) lse(i, p.row0 + t) = lse_merge(lse(i, p.row0 + t), p.lse(i, t));
  // phase B: every partial corrected with the final LSE
  for (index_t i = 0; i < h_; ++i) head(o, i).setZero();
  for (const Part& p : parts_)
    for (index_t i = 0; i < h_; ++i) {
      HeadMap<T> O = head(o, i);
      const CHeadMap<T> Op = head(p.o.view(), i);
      for (index_t t = 0; t < p.o.n; ++t)
        O.row(p.row0 + t) += merge_weight(p.lse(i, t), lse(i, p.row0 + t)) * Op.row(t);
    }
}

template void merge_streaming<float>(View3<float>, RowsView<float>, index_t, CView3<float>,
                                     RowsView<const float>);
template void merge_streaming<double>(View3<double>, RowsView<double>, index_t, CView3<double>,
                                      RowsView<const double>);
template class PostLoopFold<float>;
template class PostLoopFold<double>;

}  // namespace cplab
