// sinks.cpp: the attention-sink rules of sinks.h.
#include "core/sinks.h"

#include "core/softmax_rules.h"

namespace cplab {

template <class T>
void apply_sinks(View3<T> o, RowsView<T> lse, const T* sinks) {
  for (index_t i = 0; i < o.h; ++i) {
    HeadMap<T> O = head(o, i);
    for (index_t t = 0; t < o.n; ++t) {
      const T l = lse(i, t);
      if (l == neg_inf<T>()) continue;  // a row that sees no key (padding) stays empty
      const T merged = lse_merge(l, sinks[i]);
      O.row(t) *= merge_weight(l, merged);
      lse(i, t) = merged;
    }
  }
}

template <class T>
void sink_grad(CView3<T> o, CView3<T> dout, RowsView<const T> lse, const T* sinks, T* ds) {
  for (index_t i = 0; i < o.h; ++i) {
    const CHeadMap<T> O = head(o, i), dO = head(dout, i);
    T sum = 0;
    for (index_t t = 0; t < o.n; ++t) {
      const T l = lse(i, t);
      if (l == neg_inf<T>()) continue;
      sum += hd_exp(sinks[i] - l) * O.row(t).dot(dO.row(t));
    }
    ds[i] -= sum;
  }
}

#define CPLAB_INSTANTIATE(T)                                                     \
  template void apply_sinks<T>(View3<T>, RowsView<T>, const T*);                \
  template void sink_grad<T>(CView3<T>, CView3<T>, RowsView<const T>, const T*, T*);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
