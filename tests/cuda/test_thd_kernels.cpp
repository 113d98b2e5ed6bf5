// test_thd_kernels.cpp: the THD kernels (thd_kernels.h) against the CPU reference, exactly.
//
// What it is: for contiguous/zigzag/striped, cp in {1,2,3,4,8} and several packings (TE's
// cu_seqlens 0,12,36,42 at cp = 3, TE's unit test 0,8,16 at cp = 2, one sequence, padded mixes of
// short and long sequences, 300 sequences): thd_partitioned_indices == Partition::indices (all
// ranks and one rank), thd_shard_tokens == cplab::shard and thd_unshard_tokens == cplab::unshard
// (float and double tensors), the same byte for byte for every element size (f16 / bf16 typed,
// 1..16 bytes through the byte API, rows at odd addresses), unshard(shard(x)) == x, and a single
// sequence {0, S} == shard_tokens. The reference walks (rank, local) with packed_global, the shard
// kernels walk packed tokens with packed_owner, so both directions of layout_index.h meet here.
// Bad inputs: every ThdPartition refusal carries exactly the reference's message (check_cu_seqlens,
// then Partition's constructor), and bad rows / pointers / ranks throw before any launch.
// What it is not: a test of the index formulas themselves (tests/test_thd.cpp does that on the
// CPU), nor a benchmark. Needs a GPU: test_cuda_main.cpp skips the whole binary without one.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "device_buffer.h"
#include "test_bytes.h"
#include "core/error.h"
#include "layout/layout.h"
#include "layout_kernels.h"
#include "layout/thd.h"
#include "thd_kernels.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace cplab::cuda::test;

using cplab::Layout;
using cplab::Packing;
using cplab::Partition;
using cplab::Tensor3;
using cplab::cuda::DeviceBuffer;
using cplab::cuda::ThdPartition;
using I64 = std::vector<std::int64_t>;

// padded packings for a layout over P ranks: every real length rounded up to the layout's factor
std::vector<I64> packings(Layout layout, std::int64_t P) {
  const std::int64_t f = cplab::layout_factor(layout, P);
  std::vector<I64> out;
  out.push_back({0, 5 * f});                                                 // one sequence: the unpacked case
  out.push_back(Packing::padded({0, 5, 17, 18, 40}, f).cu_seqlens_padded);   // short and long, padded
  out.push_back(Packing::padded({0, 1, 2, 3}, f).cu_seqlens_padded);         // one real token each
  out.push_back(Packing::padded({0, 10, 34, 39}, f).cu_seqlens_padded);      // TE's padding example
  out.push_back(Packing::padded({0, 100, 101, 357, 1000}, f).cu_seqlens_padded);
  I64 many{0};  // 300 sequences of 1..50 real tokens: many blocks, a deep binary search
  for (std::int64_t s = 0; s < 300; ++s) many.push_back(many.back() + (s * 37) % 50 + 1);
  out.push_back(Packing::padded(many, f).cu_seqlens_padded);
  return out;
}

std::string text(const I64& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return v.size() > 8 ? s + ",..." : s;
}

// the reference's per-rank index lists, concatenated: (cp, T/cp)
I64 reference_indices(const Partition& part) {
  I64 all;
  for (std::int64_t r = 0; r < part.cp(); ++r) {
    const I64 idx = part.indices(r);
    all.insert(all.end(), idx.begin(), idx.end());
  }
  return all;
}

I64 gpu_indices(const ThdPartition& tp) {
  DeviceBuffer<std::int64_t> d(static_cast<std::size_t>(tp.total()));
  cplab::cuda::thd_partitioned_indices(tp, d.data(), nullptr);
  I64 h(d.size());
  d.copy_to_host(h);
  return h;
}

I64 gpu_indices(const ThdPartition& tp, std::int64_t rank) {
  DeviceBuffer<std::int64_t> d(static_cast<std::size_t>(tp.local_len()));
  cplab::cuda::thd_partitioned_indices(tp, rank, d.data(), nullptr);
  I64 h(d.size());
  d.copy_to_host(h);
  return h;
}

// reference shard of (T, row_bytes) bytes: rank r's local token l is packed token part.global(r, l)
std::vector<unsigned char> reference_shard_bytes(const Partition& part, const std::vector<unsigned char>& x,
                                                 std::size_t row_bytes) {
  std::vector<unsigned char> out(x.size());
  for (std::int64_t r = 0; r < part.cp(); ++r)
    for (std::int64_t l = 0; l < part.local_len(); ++l)
      std::memcpy(out.data() + static_cast<std::size_t>(r * part.local_len() + l) * row_bytes,
                  x.data() + static_cast<std::size_t>(part.global(r, l)) * row_bytes, row_bytes);
  return out;
}

// cplab::shard of an (T, h, d) tensor, the per-rank tensors concatenated (rank order)
template <typename T>
std::vector<T> reference_shard(const Partition& part, const std::vector<T>& x, std::int64_t h, std::int64_t d) {
  Tensor3<T> t(part.seq(), h, d);
  t.data = x;
  std::vector<T> out;
  for (const Tensor3<T>& y : cplab::shard(part, t)) out.insert(out.end(), y.data.begin(), y.data.end());
  return out;
}

// cplab::unshard of the rank-order (T, h, d) tensor x_ranks
template <typename T>
std::vector<T> reference_unshard(const Partition& part, const std::vector<T>& x_ranks, std::int64_t h,
                                 std::int64_t d) {
  std::vector<Tensor3<T>> xs;
  const auto per_rank = static_cast<std::ptrdiff_t>(part.local_len() * h * d);
  for (std::int64_t r = 0; r < part.cp(); ++r) {
    Tensor3<T> y(part.local_len(), h, d);
    y.data.assign(x_ranks.begin() + r * per_rank, x_ranks.begin() + (r + 1) * per_rank);
    xs.push_back(std::move(y));
  }
  return cplab::unshard(part, xs).data;
}

// shard / unshard of (T, h*d) float or double tensors == cplab::shard / cplab::unshard, exactly
template <typename T>
void check_against_reference_shard(const Partition& part, const ThdPartition& tp, std::int64_t h, std::int64_t d) {
  const auto n = static_cast<std::size_t>(part.seq() * h * d);
  std::vector<T> x(n), y(n);  // distinct, exactly representable values
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(i), y[i] = static_cast<T>(i) + T(1.0e6);
  DeviceBuffer<T> d_x(n), d_shard(n), d_y(n), d_y_packed(n);
  d_x.copy_from_host(x);
  d_y.copy_from_host(y);
  cplab::cuda::thd_shard_tokens(tp, d_x.data(), d_shard.data(), h * d, nullptr);
  cplab::cuda::thd_unshard_tokens(tp, d_y.data(), d_y_packed.data(), h * d, nullptr);
  std::vector<T> shard(n), y_packed(n);
  d_shard.copy_to_host(shard);
  d_y_packed.copy_to_host(y_packed);
  CHECK(shard == reference_shard(part, x, h, d));
  CHECK(y_packed == reference_unshard(part, y, h, d));
}

// typed wrappers for any element type, compared as bytes with the reference map
template <typename T>
void check_typed(const Partition& part, const ThdPartition& tp, std::int64_t row) {
  const auto n = static_cast<std::size_t>(part.seq() * row);
  const std::vector<T> x = random_elems<T>(n, 11);
  DeviceBuffer<T> d_x(n), d_shard(n), d_back(n);
  d_x.copy_from_host(x);
  cplab::cuda::thd_shard_tokens(tp, d_x.data(), d_shard.data(), row, nullptr);
  cplab::cuda::thd_unshard_tokens(tp, d_shard.data(), d_back.data(), row, nullptr);
  std::vector<T> shard(n), back(n);
  d_shard.copy_to_host(shard);
  d_back.copy_to_host(back);
  CHECK(bytes_of(shard) == reference_shard_bytes(part, bytes_of(x), static_cast<std::size_t>(row) * sizeof(T)));
  CHECK(bytes_of(back) == bytes_of(x));
}

}  // namespace

TEST_CASE("thd_partitioned_indices: TE's example (docs/sources.md) and TE's unit test, exactly") {
  // TransformerEngine's example (docs/sources.md): cp = 3, cu_seqlens = [0, 12, 36, 42]
  const ThdPartition seed(Layout::zigzag, {0, 12, 36, 42}, 3);
  CHECK(gpu_indices(seed) == I64{0, 1, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 41,    // rank 0
                                 2, 3, 8, 9, 16, 17, 18, 19, 28, 29, 30, 31, 37, 40,      // rank 1
                                 4, 5, 6, 7, 20, 21, 22, 23, 24, 25, 26, 27, 38, 39});    // rank 2
  CHECK(gpu_indices(seed, 0) == I64{0, 1, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 41});
  CHECK(gpu_indices(seed, 1) == I64{2, 3, 8, 9, 16, 17, 18, 19, 28, 29, 30, 31, 37, 40});
  CHECK(gpu_indices(seed, 2) == I64{4, 5, 6, 7, 20, 21, 22, 23, 24, 25, 26, 27, 38, 39});
  // TE's own unit test: cp = 2, cu = [0, 8, 16]
  const ThdPartition te(Layout::zigzag, {0, 8, 16}, 2);
  CHECK(gpu_indices(te, 0) == I64{0, 1, 6, 7, 8, 9, 14, 15});
  CHECK(gpu_indices(te, 1) == I64{2, 3, 4, 5, 10, 11, 12, 13});
  // the real lengths 10, 24, 5 padded to 2*cp = 6 give the same padded layout
  const ThdPartition padded(Layout::zigzag, Packing::padded({0, 10, 34, 39}, 6).cu_seqlens_padded, 3);
  CHECK(gpu_indices(padded) == gpu_indices(seed));
}

// f(part, tp) for every layout, cp in {1, 2, 3, 4, 8} and packing of packings(), with both partitions
template <class F>
void for_each_packing(F&& f) {
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (std::int64_t P : {1, 2, 3, 4, 8})
      for (const I64& cu : packings(layout, P)) {
        CAPTURE(cplab::to_string(layout));
        CAPTURE(P);
        CAPTURE(text(cu));
        f(Partition(layout, cu, P), ThdPartition(layout, cu, P));
      }
}

TEST_CASE("thd_partitioned_indices == Partition::indices for every layout, cp and packing") {
  for_each_packing([](const Partition& part, const ThdPartition& tp) {
    CHECK(tp.total() == part.seq());
    CHECK(tp.local_len() == part.local_len());
    CHECK(gpu_indices(tp) == reference_indices(part));
    for (std::int64_t r = 0; r < part.cp(); ++r) CHECK(gpu_indices(tp, r) == part.indices(r));
  });
}

TEST_CASE("thd_shard_tokens / thd_unshard_tokens == cplab::shard / cplab::unshard (float, double)") {
  for_each_packing([](const Partition& part, const ThdPartition& tp) {
    check_against_reference_shard<float>(part, tp, 2, 3);
    check_against_reference_shard<double>(part, tp, 1, 1);
    check_against_reference_shard<float>(part, tp, 4, 64);  // 1 KiB rows: 16-byte copies
  });
}

TEST_CASE("thd_shard_tokens / thd_unshard_tokens move rows of every dtype, byte for byte") {
  for (Layout layout : {Layout::zigzag, Layout::striped})
    for (std::int64_t P : {1, 3, 4})
      for (const I64& cu : packings(layout, P))
        for (std::int64_t row : {1, 3, 128}) {
          CAPTURE(cplab::to_string(layout));
          CAPTURE(P);
          CAPTURE(text(cu));
          CAPTURE(row);
          const Partition part(layout, cu, P);
          const ThdPartition tp(layout, cu, P);
          check_typed<__half>(part, tp, row);
          check_typed<__nv_bfloat16>(part, tp, row);
          check_typed<float>(part, tp, row);
          check_typed<double>(part, tp, row);
        }
}

TEST_CASE("thd shard / unshard byte API: element sizes 1..16 and rows at odd addresses") {
  const I64 cu = Packing::padded({0, 5, 17, 18, 40}, 6).cu_seqlens_padded;
  const Partition part(Layout::zigzag, cu, 3);
  const ThdPartition tp(Layout::zigzag, cu, 3);
  for (std::size_t elem : {1, 2, 3, 4, 8, 16})
    for (std::int64_t row : {1, 2, 5, 16})
      for (std::size_t offset : {0, 1, 2, 4, 8}) {  // each copy width the kernel picks: 16/8/4/2/1 bytes
        CAPTURE(elem);
        CAPTURE(row);
        CAPTURE(offset);
        const std::size_t row_bytes = elem * static_cast<std::size_t>(row);
        const std::size_t n = static_cast<std::size_t>(part.seq()) * row_bytes;
        const std::vector<unsigned char> x = random_bytes(n, 5);
        std::vector<unsigned char> x_offset(n + offset, 0);
        std::memcpy(x_offset.data() + offset, x.data(), n);
        DeviceBuffer<unsigned char> d_x(n + offset), d_shard(n + offset), d_back(n + offset);
        d_x.copy_from_host(x_offset);
        cplab::cuda::thd_shard_tokens(tp, d_x.data() + offset, d_shard.data() + offset, row, elem, nullptr);
        cplab::cuda::thd_unshard_tokens(tp, d_shard.data() + offset, d_back.data() + offset, row, elem, nullptr);
        std::vector<unsigned char> shard(n + offset), back(n + offset);
        d_shard.copy_to_host(shard);
        d_back.copy_to_host(back);
        shard.erase(shard.begin(), shard.begin() + static_cast<std::ptrdiff_t>(offset));
        back.erase(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(offset));
        CHECK(shard == reference_shard_bytes(part, x, row_bytes));
        CHECK(back == x);
      }
}

TEST_CASE("thd shard of a single sequence {0, S} == shard_tokens of S tokens") {
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (std::int64_t P : {1, 2, 4}) {
      const std::int64_t S = 2 * P * 9, row = 5;
      CAPTURE(cplab::to_string(layout));
      CAPTURE(P);
      const auto n = static_cast<std::size_t>(S * row);
      const std::vector<float> x = random_elems<float>(n, 7);
      DeviceBuffer<float> d_x(n), d_a(n), d_b(n);
      d_x.copy_from_host(x);
      const ThdPartition tp(layout, {0, S}, P);
      cplab::cuda::thd_shard_tokens(tp, d_x.data(), d_a.data(), row, nullptr);
      cplab::cuda::shard_tokens(d_x.data(), d_b.data(), S, P, row, layout, nullptr);
      std::vector<float> a(n), b(n);
      d_a.copy_to_host(a);
      d_b.copy_to_host(b);
      CHECK(bytes_of(a) == bytes_of(b));
    }
}

TEST_CASE("THD kernels refuse bad rows, pointers and ranks before launching") {
  const ThdPartition tp(Layout::zigzag, {0, 12, 36, 42}, 3);
  DeviceBuffer<float> d(42 * 2);
  DeviceBuffer<std::int64_t> idx(42);
  using cplab::cuda::thd_partitioned_indices;
  using cplab::cuda::thd_shard_tokens;
  using cplab::cuda::thd_unshard_tokens;
  CHECK_THROWS_WITH_AS(thd_shard_tokens(tp, d.data(), d.data() + 42, 0, nullptr),
                       "thd_shard_tokens: row_elems 0 must be > 0", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_unshard_tokens(tp, d.data(), d.data() + 42, -1, nullptr),
                       "thd_unshard_tokens: row_elems -1 must be > 0", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_shard_tokens(tp, static_cast<const void*>(d.data()), d.data() + 42, 1, 0, nullptr),
                       "thd_shard_tokens: elem_bytes must be > 0", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_shard_tokens(tp, static_cast<const void*>(d.data()), d.data() + 42,
                                        std::int64_t{1} << 58, 16, nullptr),
                       "thd_shard_tokens: 42 tokens x 288230376151711744 elements x 16 bytes does not fit in 2^63 "
                       "bytes",
                       cplab::Error);
  CHECK_THROWS_WITH_AS(thd_shard_tokens<float>(tp, nullptr, d.data(), 1, nullptr),
                       "thd_shard_tokens: x_packed is null", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_unshard_tokens<float>(tp, d.data(), nullptr, 1, nullptr),
                       "thd_unshard_tokens: x_packed is null", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_partitioned_indices(tp, 3, idx.data(), nullptr),
                       "thd_partitioned_indices: rank 3 is not in [0, cp = 3)", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_partitioned_indices(tp, -1, idx.data(), nullptr),
                       "thd_partitioned_indices: rank -1 is not in [0, cp = 3)", cplab::Error);
  CHECK_THROWS_WITH_AS(thd_partitioned_indices(tp, nullptr, nullptr), "thd_partitioned_indices: indices is null",
                       cplab::Error);
}
