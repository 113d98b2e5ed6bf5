// 13_gpu_kernels: what cplab's GPU kernels do differently from the reference, shown on the CPU.
//
// What it is: lesson 13's program. The kernels (cuda/attention_v1.cu, attention_v2_*.cu) and the
// reference compute the same attention, but a kernel never sees a whole row of logits: it walks
// key blocks with an online softmax (reference/core/softmax_rules.h, the kernels' own rules, run here
// on the CPU), skips key blocks no query of its block can see (reference/core/mask_rule.h), keeps its
// accumulators in fp32 while P is rounded to bf16 for the tensor cores (reference/core/dtype.h), and
// spreads each 16 x 8 accumulator over the 32 lanes of a warp (cuda/mma_layout.h). On Hopper
// (kernel v3) tiles arrive by TMA in a 128-byte swizzled layout that wgmma reads through matrix
// descriptors (cuda/wgmma_layout.h).
// What it is not: a GPU run (cplab-bench attention and tests/cuda/test_attention.cpp are; they need a
// GPU), or the GPU CP modes (cuda/cp/).
#include <cmath>
#include <cstdio>

#include "../../cuda/mma_layout.h"
#include "../../cuda/wgmma_layout.h"
#include "core/dense_attention.h"
#include "core/dtype.h"
#include "lesson.h"
#include "core/mask_rule.h"
#include "core/softmax_rules.h"

using namespace cplab;
using namespace cplab::lesson;

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 13: what the GPU kernels do differently",
           "Same attention as the reference, computed block by block, in mixed precision, by warps.");
  Tensor3<double> q(1, 1, 2), k(4, 1, 2), v(4, 1, 2);
  q.data = {1, 0};
  k.data = {1, 0, 0, 1, 1, 1, -1, 0};
  v.data = {1, 0, 0, 1, 2, 2, -1, 1};
  const double scale = default_scale(2);
  const AttnOut<double> ref = dense_forward(q, k, v, Mask::none(), scale);

  L.step("a kernel sees keys a block at a time: the online softmax of softmax_rules.h");
  std::printf("Query 0 of lesson 1 against its 4 keys, in blocks of 2 keys (m: running max, l: running sum):\n");
  OnlineRow<double> row;
  double acc[2] = {0, 0};
  for (int b0 = 0; b0 < 4; b0 += 2) {
    double s[2], bmax = neg_inf<double>();
    for (int j = 0; j < 2; ++j) {
      s[j] = scale * (q.at(0, 0, 0) * k.at(b0 + j, 0, 0) + q.at(0, 0, 1) * k.at(b0 + j, 0, 1));
      bmax = std::max(bmax, s[j]);
    }
    const double alpha = online_rescale(row, bmax);
    for (double& x : acc) x *= alpha;
    for (int j = 0; j < 2; ++j) {
      const double p = online_weight(row, s[j]);
      online_add(row, p);
      for (int e = 0; e < 2; ++e) acc[e] += p * v.at(b0 + j, 0, e);
    }
    std::printf("after keys %d..%d: rescale %s, m = %s, l = %s, acc = %s\n", b0, b0 + 1, fmt(alpha).c_str(), fmt(row.m).c_str(),
                fmt(row.l).c_str(), list(std::vector<double>{acc[0], acc[1]}).c_str());
  }
  const double inv = online_inv_l(row);
  show("O = acc / l", list(std::vector<double>{acc[0] * inv, acc[1] * inv}));
  show("LSE = m + log l", online_lse(row));
  show("the reference's O", list(std::vector<double>{ref.o.data[0], ref.o.data[1]}));
  show("the reference's LSE", ref.lse(0, 0));
  std::printf("Same numbers: the merge of lesson 2, applied inside the kernel to every key block.\n");

  L.step("blocks of 128 queries x 64 keys and a causal mask: which key tiles a query block loads");
  const index_t S = 256, Br = 128, B = 64;  // v2's tile shapes (FlashAttention-2's): Br query rows, B keys
  const MaskRule causal{MaskKind::causal, 0, nullptr, nullptr};
  std::vector<std::vector<std::string>> rows;
  index_t loaded = 0, full = 0;
  for (index_t q0 = 0; q0 < S; q0 += Br) {
    std::string line;
    for (index_t t0 = 0; t0 < S; t0 += B) {
      bool any = false, all = true;
      for (index_t a = q0; a < q0 + Br; ++a) {
        const KeyRange r = causal.keys(a, S);
        any = any || (r.lo < t0 + B && r.hi > t0);
        all = all && r.lo <= t0 && r.hi >= t0 + B;
      }
      line += !any ? " skip" : (all ? " full" : " mask");
      loaded += any ? 1 : 0;
      full += all ? 1 : 0;
    }
    rows.push_back({"queries " + std::to_string(q0) + "..." + std::to_string(q0 + Br - 1), line});
  }
  table({"query block", "key tiles 0..3"}, rows);
  show("tiles loaded", loaded);
  show("of which every row sees all 64 keys (no per-element test)", full);
  show("tiles skipped", static_cast<std::int64_t>((S / Br) * (S / B) - loaded));
  std::printf("'full' tiles run without the mask test; only the tiles the diagonal crosses test each element.\n");

  L.step("mixed precision: bf16 inputs and P, fp32 accumulation");
  std::printf("The tensor cores multiply bf16 (8 significant bits). Rounding P to bf16 before P V:\n");
  double worst = 0, maxo = 0;
  for (int e = 0; e < 2; ++e) {
    double o = 0;
    for (int b = 0; b < 4; ++b) {
      const double s = scale * (q.at(0, 0, 0) * k.at(b, 0, 0) + q.at(0, 0, 1) * k.at(b, 0, 1));
      o += round_to(bwd_prob(s, ref.lse(0, 0)), DType::bf16) * v.at(b, 0, e);
    }
    worst = std::max(worst, std::abs(o - ref.o.data[static_cast<size_t>(e)]));
    maxo = std::max(maxo, std::abs(ref.o.data[static_cast<size_t>(e)]));
  }
  show("relative error of O from bf16 P alone", worst / maxo);
  show("bf16 unit roundoff 2^-8", std::ldexp(1.0, -8));
  show("round_to(0.1, bf16)", round_to(0.1, DType::bf16));
  show("round_to(0.1, fp16)", round_to(0.1, DType::f16));
  std::printf("So the GPU is tested against the double reference with per-dtype tolerances (cuda/README.md).\n");

  L.step("a warp holds a 16 x 8 accumulator: which lane owns which element (mma.sync m16n8k16)");
  std::vector<double> lanes(16 * 8);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const mma::RC rc = mma::frag_c(lane, i);
      lanes[static_cast<size_t>(rc.row * 8 + rc.col)] = lane;
    }
  matrix("lane of C[row][col]", lanes, 16, 8, 3);
  std::printf("Each lane holds 2 columns of 2 rows (g and g + 8, g = lane / 4): a row's max and sum\n"
              "need the 4 lanes of a group, combined with __shfl_xor_sync. The S accumulator of two\n"
              "such tiles is, register for register, the A operand of P V: P never leaves registers.\n");

  L.step("Hopper (kernel v3): TMA lays a tile out swizzled, wgmma reads it through a descriptor");
  std::vector<double> slot(8 * 8);
  std::vector<int> hits(8, 0);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {  // 16-byte chunk c (8 bf16 columns) of row r of a 64-column panel
      const std::uint32_t at = wgmma::tile_offset(128, r, 8 * c) - static_cast<std::uint32_t>(128 * r);
      slot[static_cast<size_t>(r * 8 + c)] = at / 16;
      if (c == 0) ++hits[at / 16];
    }
  matrix("16-byte slot of chunk c in row r (128-byte swizzle)", slot, 8, 8, 3);
  int distinct = 0;
  for (int x : hits) distinct += x > 0;
  show("slots that chunk 0 of rows 0..7 land in", static_cast<std::int64_t>(distinct));
  const std::uint64_t kdesc = wgmma::desc_k_major(0, 128, 0, 1), vdesc = wgmma::desc_mn_major(32768, 128, 1);
  show("K descriptor, head-dim slice 16..31: start address / 16", static_cast<std::int64_t>(kdesc & 0x3FFF));
  show("K descriptor: stride between 8-row groups (bytes)", static_cast<std::int64_t>(((kdesc >> 32) & 0x3FFF) << 4));
  show("V descriptor: offset to the next 64 head-dim columns (bytes)", static_cast<std::int64_t>(((vdesc >> 16) & 0x3FFF) << 4));
  std::printf("Row r's chunks are permuted by XOR with r mod 8, so the same column of 8 consecutive rows\n"
              "touches 8 different groups of 4 banks: reading a column slice of a tile has no bank conflicts.\n"
              "One wgmma multiplies 64 rows (a warpgroup: 4 warps) by up to 256 columns; Q and K are\n"
              "read K-major (the head dim contiguous), V MN-major (its head dim is the product's N).\n");

  L.finish(13,
           {"cplab run --mode p2p --cp 2 --seq 256 --heads 2 --kv-heads 1 --head-dim 16 --causal --dtype float   (fp32 on the CPU)"});
  return 0;
}
