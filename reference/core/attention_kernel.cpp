// attention_kernel.cpp: the blocked implementation of attention_kernel.h (see there for the math).
//
// Per block of kRowBlock query rows: [lo, hi) = the key columns any row of the block can see (every
// row's visible keys are one run, mask.h), taken kKeyBlock columns at a time. S = scale * Q_blk K^T
// and every other product go through gemm.h (route: kernel_route.h) straight on the token-major
// tensors (a head is a pointer and a row stride, no copy); the softmax and gradient work runs row
// by row over each row's visible run only (row_kernels.h), entries outside it set to exactly 0; the
// forward combines a window's chunks with the online softmax (softmax_rules.h). Parallel units:
// (head, row block) forward, (KV head, row group) backward. Scratch: one (forward) or two
// (backward) (kRowBlock, kKeyBlock) buffers per thread, kept between calls. A requested interrupt
// (core/interrupt.h) is polled before each unit and, in the backward, before each row block; the
// kernel then throws Interrupted after its parallel region.
#include "core/attention_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gemm.h"
#include "core/interrupt.h"
#include "core/row_kernels.h"
#include "core/softmax_rules.h"
#include "core/util.h"

namespace cplab {

namespace {

// the backward deals a lone KV head's row blocks to this many groups, run in parallel
constexpr index_t kRowGroups = 2;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// A requested interrupt (core/interrupt.h) as seen inside parallel_for: stop() is true once one is
// requested (and the loop was not itself entered inside a parallel region), and remembers it
class StopCheck {
 public:
  StopCheck() : stoppable_(interruptible_here()) {}
  bool operator()() const {
    if (!stoppable_ || !interrupt_requested()) [[likely]]
      return false;
    stopped_.store(true, std::memory_order_relaxed);
    return true;
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

 private:
  bool stoppable_;
  mutable std::atomic<bool> stopped_{false};
};

// OpenMP loop over [0, n) of body(i, stop) that carries the first exception (e.g. std::bad_alloc)
// out of the parallel region and rethrows it, instead of std::terminate. On an interrupt the units
// not started are skipped, a long unit may poll stop() and return early, and Interrupted is thrown
// after the region (the outputs are then incomplete and never returned).
template <class F>
void parallel_for(index_t n, F&& body) {
  std::exception_ptr err;
  const StopCheck stop;
#pragma omp parallel for schedule(dynamic)
  for (index_t i = 0; i < n; ++i) {
    if (stop()) continue;
    try {
      body(i, stop);
    } catch (...) {
#pragma omp critical(cplab_parallel_for)
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
  if (stop.stopped()) throw Interrupted();
}

// the key columns [lo, hi) that some row of block [a0, a0+n) can see (hi = 0: none)
KeyRange block_keys(const Mask& m, index_t a0, index_t n, index_t sk) {
  KeyRange b{sk, 0};
  for (index_t a = a0; a < a0 + n; ++a) {
    const KeyRange r = m.keys(a, sk);
    if (r.lo >= r.hi) continue;
    b.lo = std::min(b.lo, r.lo);
    b.hi = std::max(b.hi, r.hi);
  }
  if (b.hi == 0) b.lo = 0;
  return b;
}

// one head of a token-major tensor as a row-major matrix: its first element and its row stride
template <class T>
struct HeadPtr {
  T* p;
  index_t ld;
  T* row(index_t a) const { return p + a * ld; }
};
template <class T>
HeadPtr<const T> head_ptr(CView3<T> x, index_t i) {
  return {x.data + i * x.d, x.h * x.d};
}
template <class T>
HeadPtr<T> head_ptr(View3<T> x, index_t i) {
  return {x.data + i * x.d, x.h * x.d};
}

template <class T>
using RowArray = Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>;

struct Cols {
  index_t c0, c1;
};
// the visible columns [c0, c1) of query row `row` inside the key chunk kb, counted from kb.lo
// (c0 = c1: none)
inline Cols visible_cols(const Mask& m, index_t row, KeyRange kb, index_t sk) {
  const KeyRange r = m.keys(row, sk);
  const index_t lo = std::max(r.lo, kb.lo), hi = std::min(r.hi, kb.hi);
  if (lo >= hi) return {0, 0};
  return {lo - kb.lo, hi - kb.lo};
}

// the key chunks of a block's window kb: [lo, lo + kKeyBlock), ... (the last one shorter)
inline KeyRange key_chunk(KeyRange kb, index_t lo) { return {lo, std::min(lo + kKeyBlock, kb.hi)}; }

// row (w entries): columns outside [c.c0, c.c1) set to exactly 0
template <class T>
void zero_outside(T* row, Cols c, index_t w) {
  std::fill(row, row + c.c0, T(0));
  std::fill(row + c.c1, row + w, T(0));
}

// S (n, w), row stride w: scale * Q[a0, a0+n) K[kb]^T, the block's scores over its key window
template <class T>
void block_scores(Route route, HeadPtr<const T> Q, HeadPtr<const T> K, index_t d, T scale, index_t a0, index_t n, KeyRange kb,
                  T* S) {
  const index_t w = kb.hi - kb.lo;
  gemm<T>(route, Trans::no, Trans::yes, n, w, d, scale, Q.row(a0), Q.ld, K.row(kb.lo), K.ld, T(0), S, w);
}

// the widest key chunk of any row block (the scratch's width)
inline index_t widest_block(const Mask& m, index_t sq, index_t sk) {
  index_t w = 0;
  for (index_t a0 = 0; a0 < sq; a0 += kRowBlock) {
    const KeyRange kb = block_keys(m, a0, std::min(kRowBlock, sq - a0), sk);
    w = std::max(w, kb.hi - kb.lo);
  }
  return std::min(w, kKeyBlock);
}

// The calling thread's scratch of `count` elements (at most kRowBlock x kKeyBlock: 2 MiB of
// doubles) for buffer `slot` (0, 1), contents undefined, kept between calls (the kernel runs once
// per tile, and a fresh buffer costs page faults and zeroing every time).
template <class T>
T* scratch(int slot, index_t count) {
  thread_local std::vector<T> buf[2];
  std::vector<T>& b = buf[slot];
  if (b.size() < sz(count)) b.resize(sz(count));
  return b.data();
}

}  // namespace

void check_attention_shapes(index_t sq, index_t h, index_t d, index_t sk, index_t hk, index_t dk,
                            index_t skv, index_t hkv, index_t dv) {
  require(h >= 1, "heads " + std::to_string(h) + " must be >= 1");
  require(hk >= 1, "kv-heads " + std::to_string(hk) + " must be >= 1");
  require(h % hk == 0, "kv-heads " + std::to_string(hk) + " does not divide heads " +
                           std::to_string(h) + " (GQA/MQA needs heads = kv-heads * group size)");
  require(d >= 1, "head-dim " + std::to_string(d) + " must be >= 1");
  require(dv >= 1, "v head-dim " + std::to_string(dv) + " must be >= 1");
  require(d == dk, "Q head-dim " + std::to_string(d) + " differs from K head-dim " + std::to_string(dk));
  require(sk == skv, "K has " + std::to_string(sk) + " tokens but V has " + std::to_string(skv));
  require(hk == hkv, "K has " + std::to_string(hk) + " heads but V has " + std::to_string(hkv));
  require(sq >= 0 && sk >= 0, "token counts must be >= 0");
}

template <class T>
void attention_forward(CView3<T> q, CView3<T> k, CView3<T> v, const Mask& mask, T scale,
                       View3<T> o, RowsView<T> lse, const T* sinks) {
  check_attention_shapes(q.n, q.h, q.d, k.n, k.h, k.d, v.n, v.h, v.d);
  require(o.n == q.n && o.h == q.h && o.d == v.d, "O must be (sq, h, dv)");
  require(lse.h == q.h && lse.n == q.n, "LSE must be (h, sq)");
  const index_t sq = q.n, sk = k.n, group = q.h / k.h, width = widest_block(mask, sq, sk);
  const Route route = kernel_route(static_cast<double>(sq) * static_cast<double>(sk) * static_cast<double>(q.h));

  // parallel over (head, row block): each unit writes its own rows of O and LSE
  const index_t blocks = (sq + kRowBlock - 1) / kRowBlock;
  parallel_for(q.h * blocks, [&](index_t u, const StopCheck&) {
    const index_t i = u / blocks, a0 = u % blocks * kRowBlock;
    const HeadPtr<const T> Q = head_ptr(q, i), K = head_ptr(k, i / group), V = head_ptr(v, i / group);
    const HeadPtr<T> O = head_ptr(o, i);
    T* const S = scratch<T>(0, std::min(kRowBlock, sq) * width);
    {
      const index_t n = std::min(kRowBlock, sq - a0);
      const KeyRange kb = block_keys(mask, a0, n, sk);
      if (kb.hi <= kb.lo) {  // the whole block is masked
        for (index_t a = 0; a < n; ++a) {
          std::fill(O.row(a0 + a), O.row(a0 + a) + v.d, T(0));
          lse(i, a0 + a) = kNegInf<T>;
        }
        return;
      }
      // online softmax over the window's key chunks (FlashAttention-2's rule, softmax_rules.h):
      // m = running max (the sink's logit joins it once the row sees a key), l = sum exp(s - m),
      // O accumulates P V and is rescaled whenever m grows; one chunk is the plain softmax
      OnlineRow<T> r[kRowBlock];
      for (index_t c0 = kb.lo; c0 < kb.hi; c0 += kKeyBlock) {
        const KeyRange cb = key_chunk(kb, c0);
        const index_t w = cb.hi - cb.lo;
        const bool first = c0 == kb.lo;
        block_scores<T>(route, Q, K, q.d, scale, a0, n, cb, S);
        for (index_t a = 0; a < n; ++a) {
          T* row = S + a * w;
          const Cols c = visible_cols(mask, a0 + a, cb, sk);
          zero_outside(row, c, w);
          if (c.c1 <= c.c0) continue;  // nothing visible here: P = 0, m and l unchanged
          T bm = row_max(route, row + c.c0, c.c1 - c.c0);
          if (sinks) bm = std::max(bm, sinks[i]);  // the sink's logit is one more in the row
          const T alpha = online_rescale(r[a], bm);
          if (!first && alpha != T(1)) RowArray<T>(O.row(a0 + a), v.d) *= alpha;
          online_add(r[a], exp_shift_sum(route, row + c.c0, c.c1 - c.c0, r[a].m));
        }
        gemm<T>(route, Trans::no, Trans::no, n, v.d, w, T(1), S, w, V.row(cb.lo), V.ld, first ? T(0) : T(1),
                O.row(a0), O.ld);
      }
      T m[kRowBlock], l[kRowBlock];
      for (index_t a = 0; a < n; ++a) {
        m[a] = r[a].m, l[a] = r[a].l;
        // exp(s_h) joins the denominator of every row that sees a key; its value row is 0
        if (sinks && m[a] != kNegInf<T>) l[a] += std::exp(sinks[i] - m[a]);
      }
      for (index_t a = 0; a < n; ++a) {
        RowArray<T> out(O.row(a0 + a), v.d);
        if (l[a] > T(0)) {
          out /= l[a];
          lse(i, a0 + a) = m[a] + std::log(l[a]);
        } else {
          out.setZero();
          lse(i, a0 + a) = kNegInf<T>;
        }
      }
    }
  });
}

template <class T>
Rows<T> softmax_delta(CView3<T> o, CView3<T> dout) {
  require(o.n == dout.n && o.h == dout.h && o.d == dout.d, "O and dO must have the same shape");
  Rows<T> delta(o.h, o.n);
  for (index_t i = 0; i < o.h; ++i)
    delta.row(i) = (head(o, i).array() * head(dout, i).array()).rowwise().sum().transpose();
  return delta;
}

template <class T>
void attention_backward(CView3<T> q, CView3<T> k, CView3<T> v, CView3<T> dout,
                        RowsView<const T> lse, RowsView<const T> delta, const Mask& mask,
                        T scale, View3<T> dq, View3<T> dk, View3<T> dv) {
  check_attention_shapes(q.n, q.h, q.d, k.n, k.h, k.d, v.n, v.h, v.d);
  require(dout.n == q.n && dout.h == q.h && dout.d == v.d, "dO must be (sq, h, dv)");
  require(lse.h == q.h && lse.n == q.n && delta.h == q.h && delta.n == q.n,
          "LSE and Delta must be (h, sq)");
  require(dq.n == q.n && dq.h == q.h && dq.d == q.d, "dQ must be (sq, h, d)");
  require(dk.n == k.n && dk.h == k.h && dk.d == k.d, "dK must be (sk, hk, d)");
  require(dv.n == v.n && dv.h == v.h && dv.d == v.d, "dV must be (sk, hk, dv)");
  const index_t sq = q.n, sk = k.n, group = q.h / k.h, width = widest_block(mask, sq, sk);
  const Route route = kernel_route(static_cast<double>(sq) * static_cast<double>(sk) * static_cast<double>(q.h));

  // parallel over (KV head, row group): a unit owns dQ of its rows of the head's query group and adds
  // into dK / dV of its KV head. One KV head alone (MQA, Ulysses' ranks) would leave threads idle, so
  // its row blocks are dealt to kRowGroups groups (block b to group b % groups: causal work stays
  // even); groups after the first add into their own zeroed dK / dV, summed in group order after
  // the loop. The split depends on the KV heads only, never on the threads: the same bits on any
  // number of threads.
  const index_t groups = k.h >= kRowGroups ? 1 : kRowGroups;
  std::vector<std::vector<T>> part_dk(sz(groups - 1)), part_dv(sz(groups - 1));  // (sk, d), (sk, dv) each
  for (index_t r = 1; r < groups; ++r) {
    part_dk[sz(r - 1)].assign(sz(sk * k.d), T(0));
    part_dv[sz(r - 1)].assign(sz(sk * v.d), T(0));
  }
  parallel_for(k.h * groups, [&](index_t u, const StopCheck& stop) {
    const index_t g = u / groups, rg = u % groups;
    const HeadPtr<const T> K = head_ptr(k, g), V = head_ptr(v, g);
    const HeadPtr<T> dK = rg == 0 ? head_ptr(dk, g) : HeadPtr<T>{part_dk[sz(rg - 1)].data(), k.d};
    const HeadPtr<T> dV = rg == 0 ? head_ptr(dv, g) : HeadPtr<T>{part_dv[sz(rg - 1)].data(), v.d};
    T* const P = scratch<T>(0, std::min(kRowBlock, sq) * width);
    T* const dS = scratch<T>(1, std::min(kRowBlock, sq) * width);
    for (index_t i = g * group; i < (g + 1) * group; ++i) {
      const HeadPtr<const T> Q = head_ptr(q, i), dO = head_ptr(dout, i);
      const HeadPtr<T> dQ = head_ptr(dq, i);
      for (index_t a0 = rg * kRowBlock; a0 < sq; a0 += groups * kRowBlock) {
        if (stop()) return;  // a unit is a whole KV head: seconds at 8K tokens
        const index_t n = std::min(kRowBlock, sq - a0);
        const KeyRange kb = block_keys(mask, a0, n, sk);
        if (kb.hi <= kb.lo) continue;  // fully masked block: no gradient at all
        for (index_t c0 = kb.lo; c0 < kb.hi; c0 += kKeyBlock) {  // the key chunks: independent sums
          const KeyRange cb = key_chunk(kb, c0);
          const index_t w = cb.hi - cb.lo;
          block_scores<T>(route, Q, K, q.d, scale, a0, n, cb, P);
          for (index_t a = 0; a < n; ++a) {  // P = exp(S - LSE) on the visible run, exactly 0 elsewhere
            T* row = P + a * w;
            const T L = lse(i, a0 + a);
            Cols c = visible_cols(mask, a0 + a, cb, sk);
            if (L == kNegInf<T>) c = {0, 0};  // empty row: P = 0, never exp(-inf + inf)
            zero_outside(row, c, w);
            exp_shift(route, row + c.c0, c.c1 - c.c0, L);
          }
          gemm<T>(route, Trans::yes, Trans::no, w, v.d, n, T(1), P, w, dO.row(a0), dO.ld, T(1), dV.row(cb.lo), dV.ld);
          gemm<T>(route, Trans::no, Trans::yes, n, w, v.d, T(1), dO.row(a0), dO.ld, V.row(cb.lo), V.ld, T(0), dS, w);
          for (index_t a = 0; a < n; ++a) grad_scores(route, dS + a * w, P + a * w, w, delta(i, a0 + a));  // dS
          gemm<T>(route, Trans::no, Trans::no, n, q.d, w, scale, dS, w, K.row(cb.lo), K.ld, T(1), dQ.row(a0), dQ.ld);
          gemm<T>(route, Trans::yes, Trans::no, w, q.d, n, scale, dS, w, Q.row(a0), Q.ld, T(1), dK.row(cb.lo), dK.ld);
        }
      }
    }
  });
  for (index_t g = 0; g < k.h; ++g)  // the later row groups' dK / dV, in group order
    for (index_t r = 1; r < groups; ++r) {
      const HeadPtr<T> dK = head_ptr(dk, g), dV = head_ptr(dv, g);
      for (index_t t = 0; t < sk; ++t) {
        RowArray<T>(dK.row(t), k.d) += RowArray<T>(part_dk[sz(r - 1)].data() + t * k.d, k.d);
        RowArray<T>(dV.row(t), v.d) += RowArray<T>(part_dv[sz(r - 1)].data() + t * v.d, v.d);
      }
    }
}

#define CPLAB_INSTANTIATE(T)                                                                     \
  template void attention_forward<T>(CView3<T>, CView3<T>, CView3<T>, const Mask&, T, View3<T>,  \
                                     RowsView<T>, const T*);                                     \
  template Rows<T> softmax_delta<T>(CView3<T>, CView3<T>);                                       \
  template void attention_backward<T>(CView3<T>, CView3<T>, CView3<T>, CView3<T>,                \
                                      RowsView<const T>, RowsView<const T>, const Mask&, T,      \
                                      View3<T>, View3<T>, View3<T>);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
