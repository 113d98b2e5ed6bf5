// merge.h: combining partial attention results (O_i, LSE_i) computed over disjoint key sets.
//
// What it is: the exact rule that makes context parallelism possible. If rows of O_a and O_b are
// softmax-attention over key sets A and B with log-sum-exps L_a and L_b, then over A u B
//   L = log(exp(L_a) + exp(L_b)) = max + log1p(exp(min - max))
//   O = exp(L_a - L) O_a + exp(L_b - L) O_b
// Two ways to apply it, both here, both exact (tests compare them):
//   streaming   keep a running (O, L) and update it after every tile (Ring Attention's recurrence;
//               memory: one partial at a time)
//   fold        TE's scheme: keep every step's (O_i, L_i), stream only L, and after the loop
//               O = sum_i exp(L_i - L) O_i (memory: all P partials alive, TE issue #952)
// -inf safe: an empty partial (L_i = -inf, O_i = 0) has weight exactly 0, merge(-inf, x) = x, and
// merge(-inf, -inf) = -inf; no NaN can come out of an empty row.
// What it is not: a reduction over ranks (ring_p2p.h decides which tiles are merged where).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_kernel.h"
#include "core/softmax_rules.h"

namespace cplab {

enum class MergeKind { streaming, fold };
MergeKind parse_merge(const std::string& s);  // "streaming" | "fold", else throws cplab::Error
std::string to_string(MergeKind m);

// lse_merge(a, b) and merge_weight(l_part, l_total): softmax_rules.h (shared with cuda/)

// Streaming update of rows [row0, row0 + part.n) of the accumulator with one partial.
template <class T>
void merge_streaming(View3<T> o_acc /*(n,h,dv)*/, RowsView<T> lse_acc /*(h,n)*/, index_t row0,
                     CView3<T> o_part /*(m,h,dv)*/, RowsView<const T> lse_part /*(h,m)*/);

// TE's post-loop fold: add() every partial, then finish() writes the merged O and LSE.
template <class T>
class PostLoopFold {
 public:
  PostLoopFold(index_t n, index_t h, index_t dv);
  // keep a partial for rows [row0, row0 + o_part.n)
  void add(index_t row0, Tensor3<T> o_part, Rows<T> lse_part);
  // phase A: running LSE over the partials in order; phase B: O = sum_i exp(L_i - L) O_i
  void finish(View3<T> o /*(n,h,dv)*/, RowsView<T> lse /*(h,n)*/) const;
  index_t partials() const { return static_cast<index_t>(parts_.size()); }

 private:
  struct Part {
    index_t row0;
    Tensor3<T> o;
    Rows<T> lse;
  };
  index_t n_, h_, dv_;
  std::vector<Part> parts_;
};

}  // namespace cplab
