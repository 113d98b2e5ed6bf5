// test_row_lists.cpp: the GPU modes' row lists (a2a_row_lists, allgather_row_lists), applied on the
// CPU, against the reference's own all-to-all and all-gather reorders. Runs without a GPU: this is
// the index logic of the GPU all-to-all and all-gather modes, checked where it can be.
// What it is not: a test of the copy kernel (RowMoves::run) or of the communication (GPU only).
#include <doctest/doctest.h>

#include <cstring>

#include "helpers.h"
#include "a2a_gpu.h"
#include "allgather_gpu.h"
#include "modes/hierarchical_cp.h"
#include "modes/ulysses_a2a.h"

using namespace cplab;
using namespace cplab::cuda;

namespace {

std::vector<std::byte> bytes_of(const Tensor3<double>& t) {
  std::vector<std::byte> b(t.data.size() * sizeof(double));
  std::memcpy(b.data(), t.data.data(), b.size());
  return b;
}
std::vector<double> doubles_of(const std::vector<std::byte>& b) {
  std::vector<double> x(b.size() / sizeof(double));
  std::memcpy(x.data(), b.data(), b.size());
  return x;
}

// every member's tensor through the GPU lists (pack, Comm::all_to_all's semantics, unpack) equals
// the reference's a2a_before, and a2a_after brings it back
void check_plan(const A2aPlan& plan, index_t heads, index_t w) {
  const index_t G = static_cast<index_t>(plan.members.size());
  PerRank<double> x;
  for (index_t i = 0; i < G; ++i) x.push_back(test::random_tensor<double>(static_cast<index_t>(plan.from[0].size()), heads, w, 10 + static_cast<std::uint64_t>(i)));
  SimComm sim(static_cast<int>(*std::max_element(plan.members.begin(), plan.members.end()) + 1), nullptr);
  const PerRank<double> want = a2a_before(plan, x, "x", sim);
  std::vector<A2aRowLists> L;
  for (index_t me = 0; me < G; ++me) L.push_back(a2a_row_lists(plan, me, heads, w, sizeof(double)));
  const std::size_t block = L[0].block_bytes;
  std::vector<std::vector<std::byte>> send(static_cast<size_t>(G), std::vector<std::byte>(block * static_cast<size_t>(G)));
  auto recv = send;
  for (index_t i = 0; i < G; ++i) apply(L[static_cast<size_t>(i)].pack_before, send[static_cast<size_t>(i)].data(), bytes_of(x[static_cast<size_t>(i)]).data());
  auto exchange = [&] {  // out_i block j = in_j block i
    for (index_t i = 0; i < G; ++i)
      for (index_t j = 0; j < G; ++j)
        std::memcpy(recv[static_cast<size_t>(i)].data() + static_cast<size_t>(j) * block, send[static_cast<size_t>(j)].data() + static_cast<size_t>(i) * block, block);
  };
  exchange();
  PerRank<double> y;
  for (index_t g = 0; g < G; ++g) {
    std::vector<std::byte> out(want[static_cast<size_t>(g)].data.size() * sizeof(double));
    apply(L[static_cast<size_t>(g)].unpack_before, out.data(), recv[static_cast<size_t>(g)].data());
    CHECK(doubles_of(out) == want[static_cast<size_t>(g)].data);
    y.push_back(want[static_cast<size_t>(g)]);
  }
  for (index_t g = 0; g < G; ++g) apply(L[static_cast<size_t>(g)].pack_after, send[static_cast<size_t>(g)].data(), bytes_of(y[static_cast<size_t>(g)]).data());
  exchange();
  for (index_t i = 0; i < G; ++i) {
    std::vector<std::byte> out(x[static_cast<size_t>(i)].data.size() * sizeof(double));
    apply(L[static_cast<size_t>(i)].unpack_after, out.data(), recv[static_cast<size_t>(i)].data());
    CHECK(doubles_of(out) == x[static_cast<size_t>(i)].data);
  }
}

}  // namespace

TEST_CASE("GPU a2a row lists equal the reference's all-to-all: --mode a2a (every layout, packed) and a2a+p2p's inner groups") {
  for (Layout layout : {Layout::zigzag, Layout::striped, Layout::contiguous})
    for (index_t P : {1, 2, 3, 4}) {
      CAPTURE(to_string(layout));
      CAPTURE(P);
      check_plan(sequence_plan(Partition(layout, 2 * P * 6, P)), 2 * P, 3);
      check_plan(sequence_plan(Partition(layout, {0, 2 * P * 2, 2 * P * 5, 2 * P * 6}, P)), P, 2);  // packed
    }
  for (auto [icp, ocp] : {std::pair<index_t, index_t>{2, 2}, {2, 3}, {4, 2}, {1, 4}, {3, 1}}) {
    CAPTURE(icp);
    CAPTURE(ocp);
    const Partition data(Layout::zigzag, 2 * icp * ocp * 5, icp * ocp);
    for (index_t p = 0; p < ocp; ++p) check_plan(hcp_inner_plan(data, icp, ocp, p), 2 * icp, 3);
  }
}

TEST_CASE("GPU a2a row lists refuse unequal blocks and heads that do not divide") {
  A2aPlan bad{{0, 1}, {{0, 1}, {2, 3}}, {{0, 1, 2, 3}, {0, 1, 2}}};
  CHECK_THROWS_WITH_AS(a2a_row_lists(bad, 0, 2, 1, 4), doctest::Contains("equal blocks"), cplab::Error);
  CHECK_THROWS_WITH_AS(a2a_row_lists(sequence_plan(Partition(Layout::zigzag, 16, 2)), 0, 3, 1, 4),
                       doctest::Contains("3 heads do not divide by the group size 2"), cplab::Error);
}

TEST_CASE("GPU all-gather row lists equal the reference's unshard and shard, every layout and packed") {
  const index_t hk = 2, d = 3, dv = 2;
  for (Layout layout : {Layout::zigzag, Layout::striped, Layout::contiguous})
    for (index_t P : {1, 2, 3, 4})
      for (bool packed : {false, true}) {
        CAPTURE(to_string(layout));
        CAPTURE(P);
        const Partition part = packed ? Partition(layout, {0, 2 * P * 3, 2 * P * 4}, P) : Partition(layout, 2 * P * 5, P);
        const index_t S = part.seq(), n = part.local_len();
        const Tensor3<double> K = test::random_tensor<double>(S, hk, d, 1), V = test::random_tensor<double>(S, hk, dv, 2);
        const PerRank<double> ks = shard(part, K), vs = shard(part, V);
        std::vector<double> gathered;  // Comm::all_gather: rank 0's K|V, rank 1's, ...
        for (index_t r = 0; r < P; ++r) {
          gathered.insert(gathered.end(), ks[static_cast<size_t>(r)].data.begin(), ks[static_cast<size_t>(r)].data.end());
          gathered.insert(gathered.end(), vs[static_cast<size_t>(r)].data.begin(), vs[static_cast<size_t>(r)].data.end());
        }
        const AgRowLists L = allgather_row_lists(part, hk, d, dv, sizeof(double));
        std::vector<double> kv_seq(static_cast<size_t>(S * hk * (d + dv)));
        apply(L.k_order, kv_seq.data(), gathered.data());
        apply(L.v_order, reinterpret_cast<std::byte*>(kv_seq.data()) + S * hk * d * 8, gathered.data());
        CHECK(std::vector<double>(kv_seq.begin(), kv_seq.begin() + S * hk * d) == K.data);
        CHECK(std::vector<double>(kv_seq.begin() + S * hk * d, kv_seq.end()) == V.data);
        // the gradient split works on fp32 (4-byte) rows
        std::vector<float> dkv_seq(static_cast<size_t>(S * hk * (d + dv)));
        for (size_t i = 0; i < dkv_seq.size(); ++i) dkv_seq[i] = static_cast<float>(i);
        std::vector<float> blocks(dkv_seq.size());
        apply(L.dk_split, blocks.data(), dkv_seq.data());
        apply(L.dv_split, blocks.data(), dkv_seq.data());
        for (index_t r = 0; r < P; ++r)
          for (index_t l = 0; l < n; ++l) {
            const index_t g = part.global(r, l), base = r * n * hk * (d + dv);
            for (index_t e = 0; e < hk * d; ++e) CHECK(blocks[static_cast<size_t>(base + l * hk * d + e)] == dkv_seq[static_cast<size_t>(g * hk * d + e)]);
            for (index_t e = 0; e < hk * dv; ++e)
              CHECK(blocks[static_cast<size_t>(base + n * hk * d + l * hk * dv + e)] == dkv_seq[static_cast<size_t>(S * hk * d + g * hk * dv + e)]);
          }
      }
}
