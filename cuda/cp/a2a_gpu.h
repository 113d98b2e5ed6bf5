// a2a_gpu.h: GpuA2a, one member's side of the head <-> sequence all-to-all of ulysses_a2a.h on the
// GPU, for one tensor shape.
//
// What it is: the reference's a2a_before / a2a_after (ulysses_a2a.h A2aPlan: which positions every
// member holds before and after) compiled into four RowMoves lists for this member:
//   before  x (n, heads, w) in its data-layout order -> pack: block g = its tokens, head group g,
//           in g's target order -> all_to_all -> unpack: y (m, heads/G, w) in this member's
//           target order (m = |to[me]|)
//   after   the inverse: y (m, heads/G, w) -> pack: block i = the rows of member i's positions in
//           i's local order -> all_to_all -> unpack: head group g of x (n, heads, w)
// Every block is n tokens x heads/G x w elements: the plans of --mode a2a and a2a+p2p give every
// member's target list all of every member's tokens (the constructor checks it and throws
// cplab::Error otherwise). Element size is the caller's: the dtype for Q, K, V, O, dO; 4 for
// the fp32 gradients.
// What it is not: the collective (Comm::all_to_all over group()), or a buffer owner: the caller
// passes send and recv workspaces of at least bytes() bytes each.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm.h"
#include "cp_spec.h"
#include "row_moves.h"
#include "modes/ulysses_a2a.h"

namespace cplab::cuda {

// The four row lists of one member (host side; GpuA2a uploads them, tests apply them on the CPU).
// Byte offsets into: x (n, heads, w), y (m, heads/G, w), and the (G, block) send / recv buffers.
struct A2aRowLists {
  RowList pack_before, unpack_before, pack_after, unpack_after;
  std::size_t block_bytes = 0;
};
// throws cplab::Error naming the rule (equal blocks, heads divisible by G)
A2aRowLists a2a_row_lists(const A2aPlan& plan, std::int64_t me, std::int64_t heads, std::int64_t w, std::size_t elem);

class GpuA2a {
 public:
  GpuA2a() = default;
  // plan: the group's A2aPlan; me: this member's position; a tensor of `heads` heads of w elements
  // of `elem` bytes per token (heads divisible by the group size)
  GpuA2a(const A2aPlan& plan, std::int64_t me, std::int64_t heads, std::int64_t w, std::size_t elem);

  std::size_t block_bytes() const { return block_; }
  std::size_t bytes() const { return block_ * static_cast<std::size_t>(group_.size()); }  // send / recv size
  const Group& group() const { return group_; }

  // The three phases of each direction, all on one stream per member. A driver of several members
  // in one thread (LocalComm) issues a phase for every member before the next phase (lockstep):
  // a received block may be read only once every member has issued its exchange.
  void pack_before(const void* x, void* send, cudaStream_t st) const { pack_before_.run(send, x, st); }
  void unpack_before(const void* recv, void* y, cudaStream_t st) const { unpack_before_.run(y, recv, st); }
  void pack_after(const void* y, void* send, cudaStream_t st) const { pack_after_.run(send, y, st); }
  void unpack_after(const void* recv, void* x, cudaStream_t st) const { unpack_after_.run(x, recv, st); }
  void exchange(const void* send, void* recv, Comm& comm, cudaStream_t st) const;

 private:
  Group group_;
  std::size_t block_ = 0;
  RowMoves pack_before_, unpack_before_, pack_after_, unpack_after_;
};

// The all-to-alls of one member of an a2a group (Ulysses over all ranks, a2a+p2p's inner groups):
// one GpuA2a per tensor shape (dtype: Q, K, V, and O out / dO in; fp32: dQ, dK, dV back) and the
// send / recv workspaces they share (sized for the largest).
struct A2aSet {
  A2aSet(const A2aPlan& plan, std::int64_t me, const GpuCpSpec& s);
  GpuA2a q, k, v, o, dq, dk, dv;
  DeviceBuffer<std::byte> send, recv;
};

// One all-to-all of every driven member, in lockstep (pack all, exchange all, unpack all) on each
// member's stream: before (in = x -> out = y) or after (in = y -> out = x).
struct A2aCall {
  const GpuA2a* a;
  const void* in;
  void* out;
  void* send;
  void* recv;
  Comm* comm;
  cudaStream_t stream;
};
void a2a_lockstep(const std::vector<A2aCall>& calls, bool before);

// The calls of tensor `which` for ranks with an A2aSet `a2a`, a Comm* `comm` and main_stream();
// in(rank) and out(rank) give the buffers.
template <class Rank, class In, class Out>
void a2a_all(const std::vector<Rank*>& ranks, GpuA2a A2aSet::*which, bool before, In in, Out out) {
  std::vector<A2aCall> c;
  for (Rank* x : ranks) c.push_back({&(x->a2a.*which), in(*x), out(*x), x->a2a.send.data(), x->a2a.recv.data(), x->comm, x->main_stream()});
  a2a_lockstep(c, before);
}

}  // namespace cplab::cuda
