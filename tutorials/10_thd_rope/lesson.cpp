// 10_thd_rope: packed sequences (THD) and RoPE positions under CP, on a three-sequence example
// (cp = 3, cu_seqlens = 0,12,36,42).
//
// What it is: lesson 10's program. Three sequences packed back to back (cu_seqlens 0,12,36,42)
// split over cp = 3 ranks by zigzag, sequence by sequence: cu_seqlens and the per-token facts
// (thd.h Packing), padding a batch whose lengths do not divide (real lengths 10, 24, 5: the
// packing() of a CpSpec with pad), each rank's partitioned indices per sequence and in all (its
// partition(), a layout.h Partition: TE's lists exactly), the RoPE position of every token a
// rank holds (thd.h rope_positions, cross-checked with TE's formula rope.h te_rope_position, and
// rotate-then-shard = shard-then-rotate), and a packed ring run checked against dense attention
// (experiment.h run_experiment).
// What it is not: an implementation: every index, position and error comes from reference/; the
// lesson only slices, prints and compares.
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "run/experiment.h"
#include "layout/layout.h"
#include "lesson.h"
#include "layout/rope.h"
#include "layout/thd.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

const index_t kCp = 3;

// a list with padding tokens marked *
std::string marked(const std::vector<index_t>& v, const std::vector<index_t>& tokens, const Packing& pk) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]) + (pk.real(tokens[i]) ? "" : "*");
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 10: packed sequences (THD) and RoPE positions",
           "Several sequences in one buffer, each split over the ranks on its own; every token keeps its own position.");

  L.step("cu_seqlens: three sequences back to back (cp = 3, cu_seqlens = [0, 12, 36, 42])");
  const Packing seed = Packing::unpadded({0, 12, 36, 42});
  show("cu_seqlens", list(seed.cu_seqlens));
  std::vector<index_t> lengths, seq_of, pos_of;
  for (index_t s = 0; s < seed.num_seqs(); ++s) lengths.push_back(seed.length(s));
  for (index_t g = 0; g < seed.total(); ++g) seq_of.push_back(seed.seq_of(g)), pos_of.push_back(seed.pos_of(g));
  show("lengths", list(lengths));
  show("tokens in the packed buffer", seed.total());
  show("sequence of token g (g = 0..41)", list(seq_of));
  show("position of token g in its sequence", list(pos_of));
  show("zigzag needs every length to be a multiple of", std::string(layout_rule(Layout::zigzag, kCp)));
  check_packed_lengths(seed.cu_seqlens, Layout::zigzag, kCp);  // throws if a length does not divide
  std::printf("12, 24 and 6 all are: this batch needs no padding.\n");

  L.step("padding: real lengths 10, 24, 5 (cu_seqlens = [0, 10, 34, 39])");
  const std::vector<index_t> real_cu{0, 10, 34, 39};
  try {
    check_packed_lengths(real_cu, Layout::zigzag, kCp);
  } catch (const Error& e) {
    std::printf("refused: %s\n", e.what());
  }
  // the layer this lesson runs in step 5, from the real cu_seqlens with pad set: the CpSpec pads them
  // once, Packing::padded(cu_seqlens, layout_factor(zigzag, cp)), and splits the padded buffer once
  // (its partition(), step 3)
  CpFields f;
  f.mode = Mode::p2p, f.layout = Layout::zigzag, f.cp = kCp;
  f.cu_seqlens = real_cu, f.pad = true;  // seq stays 0: the packed total
  f.heads = 4, f.kv_heads = 2, f.head_dim = 16, f.causal = true;
  const RunSpec spec{.cp = CpSpec(f), .backward = true};  // forward + backward, double
  const Packing& pk = spec.cp.packing();
  show("cu_seqlens (real)", list(pk.cu_seqlens));
  show("cu_seqlens_padded (offsets in the buffer)", list(pk.cu_seqlens_padded));
  std::vector<index_t> padding;
  for (index_t g = 0; g < pk.total(); ++g)
    if (!pk.real(g)) padding.push_back(g);
  show("padding tokens (at the end of each sequence)", list(padding));
  std::printf("Padded, the batch has the first batch's offsets, so it is split exactly like it.\n");

  L.step("each sequence split by zigzag on its own: 2*cp chunks per sequence, rank r keeps chunks r and 2*cp-1-r");
  const Partition& part = spec.cp.partition();  // Partition(zigzag, cu_seqlens_padded, cp)
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < kCp; ++r) {
    std::vector<std::string> row{"rank " + std::to_string(r)};
    for (index_t s = 0; s < pk.num_seqs(); ++s) {
      const index_t len = pk.cu_seqlens_padded[static_cast<size_t>(s + 1)] - pk.cu_seqlens_padded[static_cast<size_t>(s)];
      // rank r's local tokens of sequence s: its len / cp tokens after those of the earlier sequences
      row.push_back(list(part.indices(r, pk.cu_seqlens_padded[static_cast<size_t>(s)] / kCp, len / kCp)));
    }
    rows.push_back(row);
  }
  table({"", "sequence 0 (chunks of 2)", "sequence 1 (chunks of 4)", "sequence 2 (chunks of 1)"}, rows);
  std::printf("Concatenated, sequence after sequence (TE's thd_get_partitioned_indices):\n");
  bool inverse = true;
  for (index_t r = 0; r < kCp; ++r) {
    const std::vector<index_t> idx = part.indices(r);
    show("Rank " + std::to_string(r) + " indices", list(idx));
    for (size_t l = 0; l < idx.size(); ++l) {
      const RankLocal o = part.owner(idx[l]);
      inverse = inverse && o.rank == r && o.local == static_cast<index_t>(l);
    }
  }
  show("every token has one owner, and owner(global(r, l)) = (r, l)", yes(inverse));
  show("tokens per rank (42 / cp)", part.local_len());

  L.step("RoPE positions: a token's position inside its own sequence, whichever rank holds it");
  bool te_agrees = true;
  for (index_t r = 0; r < kCp; ++r) {
    const std::vector<index_t> idx = part.indices(r), pos = rope_positions(part, pk, r);
    show("rank " + std::to_string(r) + " tokens   ", marked(idx, idx, pk));
    show("rank " + std::to_string(r) + " positions", marked(pos, idx, pk));
    // TE's fused_rope formula, fed each sequence's local index and local length
    for (size_t l = 0; l < idx.size(); ++l) {
      const index_t s = pk.seq_of(idx[l]);
      const index_t first = pk.cu_seqlens_padded[static_cast<size_t>(s)] / kCp;
      const index_t local_len = (pk.cu_seqlens_padded[static_cast<size_t>(s + 1)] - pk.cu_seqlens_padded[static_cast<size_t>(s)]) / kCp;
      te_agrees = te_agrees && te_rope_position(static_cast<index_t>(l) - first, r, kCp, local_len) == pos[l];
    }
  }
  std::printf("(* = padding: its position is never used, padding sees no key and no key sees it)\n");
  show("TE's fused_rope.cu formula gives the same position for all 42 tokens", yes(te_agrees));
  const Inputs in = make_inputs(spec);
  Tensor3<double> whole = in.q;  // rotate the whole packed Q with every token's position, then shard
  std::vector<index_t> all_pos;
  for (index_t g = 0; g < pk.total(); ++g) all_pos.push_back(pk.pos_of(g));
  apply_rope(whole, all_pos, RopeConfig{});
  const std::vector<Tensor3<double>> rotated_then_sharded = shard(part, whole);
  std::vector<Tensor3<double>> sharded = shard(part, in.q);  // or shard first, each rank rotates its own
  double diff = 0;
  for (index_t r = 0; r < kCp; ++r) {
    apply_rope(sharded[static_cast<size_t>(r)], rope_positions(part, pk, r), RopeConfig{});
    for (size_t i = 0; i < sharded[static_cast<size_t>(r)].data.size(); ++i)
      diff = std::max(diff, std::abs(sharded[static_cast<size_t>(r)].data[i] - rotated_then_sharded[static_cast<size_t>(r)].data[i]));
  }
  show("max |shard(RoPE(Q)) - RoPE_rank(shard(Q))| (4 heads of 16)", diff);

  L.step("a packed ring run checked against dense attention, one sequence at a time");
  std::printf("p2p (ring), zigzag per sequence, cp 3, cu_seqlens 0,10,34,39 padded to 0,12,36,42,\n"
              "4 heads (2 KV heads) of 16, causal, forward + backward, double\n");
  const RunReport rep = run_experiment(spec, in);
  std::printf("error vs dense (max|x - ref| / max|ref|):  O %.2e  LSE %.2e  dQ %.2e  dK %.2e  dV %.2e\n", *rep.err_o,
              *rep.err_lse, *rep.err_dq, *rep.err_dk, *rep.err_dv);
  show("every error <= 1e-12", yes(rep.max_error() <= 1e-12));
  show("largest |O|, |dQ|, |dK|, |dV| on padding", rep.padding_max_abs);
  std::int64_t sum = 0;
  for (std::int64_t fl : rep.flops) sum += fl;
  show("forward FLOPs per rank", list(rep.flops_fwd));
  show("FLOPs per rank (forward + backward)", list(rep.flops));
  show("ranks' FLOPs sum to the dense attention's", yes(sum == rep.dense_flops));
  show("work ratio (max / min over ranks)", rep.work_ratio);
  std::vector<index_t> pad_per_rank;
  for (index_t r = 0; r < kCp; ++r) {
    index_t n = 0;
    for (index_t g : part.indices(r)) n += pk.real(g) ? 0 : 1;
    pad_per_rank.push_back(n);
  }
  show("padding tokens per rank (they do no work)", list(pad_per_rank));

  L.finish(10,
           {"cplab layout --cp 3 --cu-seqlens 0,12,36,42   (these indices and positions)",
            "cplab layout --cp 3 --cu-seqlens 0,10,34,39 --pad   (the padded batch, * = padding)",
            "cplab run --mode p2p --cp 3 --cu-seqlens 0,10,34,39 --pad --heads 4 --kv-heads 2 --head-dim 16 --causal --backward   (this step's run)"});
  return 0;
}
