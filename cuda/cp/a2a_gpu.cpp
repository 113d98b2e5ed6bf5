// a2a_gpu.cpp: GpuA2a (see a2a_gpu.h): the reference's A2aPlan turned into row-copy lists.
#include "a2a_gpu.h"

#include <algorithm>

#include "core/error.h"

namespace cplab::cuda {

namespace {

// position -> local index in `pos` (-1: absent), for positions in [0, limit); a table, not a map:
// the plans of a 64K-token run are walked tens of times per rank
std::vector<index_t> where(const std::vector<index_t>& pos, index_t limit) {
  std::vector<index_t> m(static_cast<std::size_t>(limit), -1);
  for (std::size_t l = 0; l < pos.size(); ++l) m[static_cast<std::size_t>(pos[l])] = static_cast<index_t>(l);
  return m;
}

}  // namespace

A2aRowLists a2a_row_lists(const A2aPlan& plan, std::int64_t me, std::int64_t heads, std::int64_t w, std::size_t elem) {
  const std::int64_t G = static_cast<std::int64_t>(plan.members.size());
  require(G >= 1 && me >= 0 && me < G, "a2a: member " + std::to_string(me) + " of a group of " + std::to_string(G));
  require(plan.from.size() == static_cast<size_t>(G) && plan.to.size() == static_cast<size_t>(G), "a2a: the plan needs from and to for every member");
  require(heads % G == 0, "a2a: " + std::to_string(heads) + " heads do not divide by the group size " + std::to_string(G));
  const std::int64_t n = static_cast<std::int64_t>(plan.from[0].size()), hg = heads / G;
  const std::int64_t row = hg * w * static_cast<std::int64_t>(elem), full = heads * w * static_cast<std::int64_t>(elem);
  index_t limit = 0;  // one past the largest position of the plan
  for (const auto* lists : {&plan.from, &plan.to})
    for (const std::vector<index_t>& l : *lists)
      for (index_t pos : l) {
        require(pos >= 0, "a2a: position " + std::to_string(pos) + " is negative");
        limit = std::max(limit, pos + 1);
      }
  auto in = [&](const std::vector<index_t>& at, index_t pos) { return at[static_cast<std::size_t>(pos)] >= 0; };
  // equal blocks: every member holds n positions, and every target list holds all of them
  std::vector<std::vector<index_t>> to_at;
  for (std::int64_t g = 0; g < G; ++g) {
    to_at.push_back(where(plan.to[static_cast<size_t>(g)], limit));
    require(static_cast<std::int64_t>(plan.from[static_cast<size_t>(g)].size()) == n &&
                static_cast<std::int64_t>(plan.to[static_cast<size_t>(g)].size()) == G * n,
            "a2a: the all-to-all needs equal blocks (every member n tokens, every target G*n)");
    for (std::int64_t i = 0; i < G; ++i)
      for (index_t pos : plan.from[static_cast<size_t>(i)])
        require(in(to_at.back(), pos), "a2a: position " + std::to_string(pos) + " of member " + std::to_string(i) +
                                                  " is not in member " + std::to_string(g) + "'s target list");
  }
  A2aRowLists L;
  L.block_bytes = static_cast<std::size_t>(n * row);
  for (RowList* l : {&L.pack_before, &L.unpack_before, &L.pack_after, &L.unpack_after}) l->row_bytes = row;
  const std::vector<index_t> from_at = where(plan.from[static_cast<size_t>(me)], limit);
  const std::vector<index_t>& my_to = to_at[static_cast<size_t>(me)];
  // before, pack: block g = my positions in g's target order, head group g
  for (std::int64_t g = 0; g < G; ++g) {
    std::int64_t k = 0;
    for (index_t pos : plan.to[static_cast<size_t>(g)])
      if (in(from_at, pos)) L.pack_before.add(g * n * row + k++ * row, from_at[static_cast<size_t>(pos)] * full + g * row);
  }
  // before, unpack: block i holds member i's positions in my target order -> my target order
  for (std::int64_t i = 0; i < G; ++i) {
    const std::vector<index_t> at_i = where(plan.from[static_cast<size_t>(i)], limit);
    std::int64_t k = 0;
    for (index_t pos : plan.to[static_cast<size_t>(me)])
      if (in(at_i, pos)) L.unpack_before.add(my_to[static_cast<size_t>(pos)] * row, i * n * row + k++ * row);
  }
  // after, pack: block i = the rows of member i's positions (i's local order) of my y
  for (std::int64_t i = 0; i < G; ++i) {
    std::int64_t l = 0;
    for (index_t pos : plan.from[static_cast<size_t>(i)]) L.pack_after.add(i * n * row + l++ * row, my_to[static_cast<size_t>(pos)] * row);
  }
  // after, unpack: block g = head group g of my n tokens, local order
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t l = 0; l < n; ++l) L.unpack_after.add(l * full + g * row, g * n * row + l * row);
  return L;
}

GpuA2a::GpuA2a(const A2aPlan& plan, std::int64_t me, std::int64_t heads, std::int64_t w, std::size_t elem)
    : group_(plan.members) {
  const A2aRowLists L = a2a_row_lists(plan, me, heads, w, elem);
  block_ = L.block_bytes;
  pack_before_ = RowMoves(L.pack_before);
  unpack_before_ = RowMoves(L.unpack_before);
  pack_after_ = RowMoves(L.pack_after);
  unpack_after_ = RowMoves(L.unpack_after);
}


void GpuA2a::exchange(const void* send, void* recv, Comm& comm, cudaStream_t st) const {
  comm.all_to_all(send, recv, block_, group_, st);
}

A2aSet::A2aSet(const A2aPlan& plan, std::int64_t me, const GpuCpSpec& s)
    : q(plan, me, s.cp.h(), s.cp.d(), dtype_size(s.dtype)),
      k(plan, me, s.cp.hk(), s.cp.d(), dtype_size(s.dtype)),
      v(plan, me, s.cp.hk(), s.cp.dv(), dtype_size(s.dtype)),
      o(plan, me, s.cp.h(), s.cp.dv(), dtype_size(s.dtype)),
      dq(plan, me, s.cp.h(), s.cp.d(), sizeof(float)),
      dk(plan, me, s.cp.hk(), s.cp.d(), sizeof(float)),
      dv(plan, me, s.cp.hk(), s.cp.dv(), sizeof(float)) {
  std::size_t ws = 0;
  for (const GpuA2a* a : {&q, &k, &v, &o, &dq, &dk, &dv}) ws = std::max(ws, a->bytes());
  send = DeviceBuffer<std::byte>(ws);
  recv = DeviceBuffer<std::byte>(ws);
}

void a2a_lockstep(const std::vector<A2aCall>& calls, bool before) {
  for (const A2aCall& c : calls) before ? c.a->pack_before(c.in, c.send, c.stream) : c.a->pack_after(c.in, c.send, c.stream);
  for (const A2aCall& c : calls) c.a->exchange(c.send, c.recv, *c.comm, c.stream);
  for (const A2aCall& c : calls) before ? c.a->unpack_before(c.recv, c.out, c.stream) : c.a->unpack_after(c.recv, c.out, c.stream);
}

}  // namespace cplab::cuda
