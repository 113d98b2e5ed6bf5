// layout.cpp: validation, index lists and (un)sharding for layout.h.
#include "layout/layout.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace cplab {

Layout parse_layout(const std::string& s) {
  if (s == "contiguous") return Layout::contiguous;
  if (s == "zigzag") return Layout::zigzag;
  if (s == "striped") return Layout::striped;
  throw Error("layout '" + s + "' is not one of: contiguous, zigzag, striped");
}

std::string to_string(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::zigzag: return "zigzag";
    case Layout::striped: return "striped";
  }
  return "?";
}

index_t span_count(const std::vector<Span>& spans) {
  index_t c = 0;
  for (const Span& sp : spans) c += sp.count;
  return c;
}

std::vector<index_t> positions(const std::vector<Span>& spans) {
  std::vector<index_t> out;
  out.reserve(static_cast<std::size_t>(span_count(spans)));
  for (const Span& sp : spans)
    for (index_t i = 0; i < sp.count; ++i) out.push_back(sp.begin + i * sp.stride);
  return out;
}

std::string to_string(const std::vector<Span>& spans) {
  std::string s;
  for (const Span& sp : spans) {
    if (!s.empty()) s += " ";
    s += std::to_string(sp.begin) + ".." + std::to_string(sp.begin + (sp.count - 1) * sp.stride);
    if (sp.stride != 1 && sp.count > 1) s += " step " + std::to_string(sp.stride);
  }
  return s;
}

std::vector<Span> to_spans(const std::vector<index_t>& pos) {
  std::vector<Span> out;
  size_t i = 0;
  while (i < pos.size()) {
    Span s{pos[i], 1, 1};
    if (i + 1 < pos.size() && pos[i + 1] > pos[i]) {
      s.stride = pos[i + 1] - pos[i];
      while (i + s.count < pos.size() && pos[i + s.count] == s.begin + s.count * s.stride) ++s.count;
    }
    out.push_back(s);
    i += static_cast<size_t>(s.count);
  }
  return out;
}

std::string layout_rule(Layout l, index_t cp) {
  return (l == Layout::zigzag ? "2*cp = " : "cp = ") + std::to_string(layout_factor(l, cp));
}

void check_cp_size(index_t P) {
  require(P >= 1, "cp " + std::to_string(P) + " must be >= 1");
  require(P <= kMaxRanks, "cp " + std::to_string(P) + " is more than the " + std::to_string(kMaxRanks) +
                              " ranks the CPU reference simulates (a ring computes cp*cp tiles)");
}

void check_partition(Layout layout, std::int64_t seq, std::int64_t cp) {
  require(layout == Layout::contiguous || layout == Layout::zigzag || layout == Layout::striped,
          "unknown layout " + std::to_string(static_cast<int>(layout)));
  check_cp_size(cp);
  require(seq >= 1, "seq " + std::to_string(seq) + " must be >= 1");
  require(seq % layout_factor(layout, cp) == 0,
          "seq " + std::to_string(seq) + " is not a multiple of " + layout_rule(layout, cp) +
              (layout == Layout::zigzag ? " (zigzag splits the sequence into 2*cp equal chunks)"
                                        : " (" + to_string(layout) + " gives every rank seq/cp tokens)"));
}

Partition::Partition(Layout layout, index_t seq, index_t cp) : layout_(layout), cu_{0, seq}, cp_(cp) {
  check_partition(layout, seq, cp);
}

Partition::Partition(Layout layout, std::vector<index_t> cu_padded, index_t cp)
    : layout_(layout), cu_(std::move(cu_padded)), cp_(cp) {
  check_packed_partition(layout, cu_, cp);
}

void check_packed_partition(Layout layout, const std::vector<std::int64_t>& cu, std::int64_t cp) {
  require(cu.size() >= 2 && cu[0] == 0, "cu_seqlens must start at 0 and hold at least one sequence");
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    try {
      check_partition(layout, cu[s + 1] - cu[s], cp);
    } catch (const Error& e) {
      throw Error(cu.size() == 2 ? std::string(e.what()) : "sequence " + std::to_string(s) + " (padded): " + e.what());
    }
  }
}

std::vector<index_t> Partition::indices(index_t rank, index_t l0, index_t count) const {
  if (count < 0) count = local_len() - l0;
  std::vector<index_t> out(static_cast<size_t>(count));
  for (index_t l = 0; l < count; ++l) out[static_cast<size_t>(l)] = global(rank, l0 + l);
  return out;
}

template <class T>
std::vector<Tensor3<T>> shard(const Partition& p, const Tensor3<T>& x) {
  require(x.n == p.seq(), "tensor has " + std::to_string(x.n) + " tokens, layout expects seq " +
                              std::to_string(p.seq()));
  std::vector<Tensor3<T>> out;
  const size_t row = static_cast<size_t>(x.h * x.d);
  for (index_t r = 0; r < p.cp(); ++r) {
    Tensor3<T> y(p.local_len(), x.h, x.d);
    for (index_t l = 0; l < p.local_len(); ++l)
      std::memcpy(y.token(l), x.token(p.global(r, l)), row * sizeof(T));
    out.push_back(std::move(y));
  }
  return out;
}

template <class T>
Tensor3<T> unshard(const Partition& p, const std::vector<Tensor3<T>>& xs) {
  require(static_cast<index_t>(xs.size()) == p.cp(), "unshard needs one tensor per rank");
  Tensor3<T> x(p.seq(), xs[0].h, xs[0].d);
  const size_t row = static_cast<size_t>(x.h * x.d);
  for (index_t r = 0; r < p.cp(); ++r)
    for (index_t l = 0; l < p.local_len(); ++l)
      std::memcpy(x.token(p.global(r, l)), xs[static_cast<size_t>(r)].token(l), row * sizeof(T));
  return x;
}

template <class T>
std::vector<Rows<T>> shard_rows(const Partition& p, const Rows<T>& x) {
  std::vector<Rows<T>> out;
  for (index_t r = 0; r < p.cp(); ++r) {
    Rows<T> y(x.rows(), p.local_len());
    for (index_t l = 0; l < p.local_len(); ++l) y.col(l) = x.col(p.global(r, l));
    out.push_back(std::move(y));
  }
  return out;
}

template <class T>
Rows<T> unshard_rows(const Partition& p, const std::vector<Rows<T>>& xs) {
  Rows<T> x(xs[0].rows(), p.seq());
  for (index_t r = 0; r < p.cp(); ++r)
    for (index_t l = 0; l < p.local_len(); ++l) x.col(p.global(r, l)) = xs[static_cast<size_t>(r)].col(l);
  return x;
}

#define CPLAB_INSTANTIATE(T)                                                            \
  template std::vector<Tensor3<T>> shard<T>(const Partition&, const Tensor3<T>&);       \
  template Tensor3<T> unshard<T>(const Partition&, const std::vector<Tensor3<T>>&);     \
  template std::vector<Rows<T>> shard_rows<T>(const Partition&, const Rows<T>&);        \
  template Rows<T> unshard_rows<T>(const Partition&, const std::vector<Rows<T>>&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
