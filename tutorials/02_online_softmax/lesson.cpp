// 02_online_softmax: merging partial attention results (O_b, LSE_b) exactly, block by block.
//
// What it is: lesson 2's program. Three queries against eight keys cut into four key blocks (one of
// them empty); each block's partial (O_b, LSE_b) from the reference kernel (attention_forward), then
// the two merges of merge.h: merge_streaming (a running (O, LSE) updated after every block) and
// PostLoopFold (TE: keep every partial, fold them after the loop), both compared with dense
// attention; why the rule is exact (weights exp(LSE_b - LSE) sum to 1), the same rule inside one
// FlashAttention row (softmax_rules.h OnlineRow), and the -inf cases.
// What it is not: an implementation: every merge, weight and LSE comes from reference/core/merge.h and
// reference/core/softmax_rules.h; the lesson only sums and compares numbers to show them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "core/dense_attention.h"
#include "run/experiment.h"
#include "lesson.h"
#include "core/merge.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

struct Block {
  index_t k0, nk;  // keys [k0, k0 + nk)
};
const std::vector<Block> kBlocks = {{0, 3}, {3, 0}, {3, 2}, {5, 3}};

std::string keys_text(const Block& b) {
  return b.nk == 0 ? "keys [3, 3) (empty)" : "keys [" + std::to_string(b.k0) + ", " + std::to_string(b.k0 + b.nk) + ")";
}
std::vector<double> lse_row(const Rows<double>& lse) { return std::vector<double>(lse.data(), lse.data() + lse.cols()); }
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}
double max_abs_diff(const Rows<double>& a, const Rows<double>& b) { return max_abs_diff(lse_row(a), lse_row(b)); }

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 2: online softmax: merging partial results",
           "Attention over a set of keys, computed block by block and merged with the LSE, is exact.");
  CpFields f;  // only for make_inputs: seeded uniform [-1, 1] values of S = 8 tokens, 1 head of d = 4
  f.seq = 8, f.heads = 1, f.kv_heads = 1, f.head_dim = 4;
  const Inputs in = make_inputs(RunSpec{.cp = CpSpec(f)});
  Tensor3<double> q(3, 1, 4);  // the first three queries
  std::copy(in.q.data.begin(), in.q.data.begin() + 12, q.data.begin());
  const Tensor3<double>&k = in.k, &v = in.v;
  const double scale = default_scale(4);

  L.step("the inputs: 3 queries, 8 keys and values (head dim 4), the keys cut into 4 blocks");
  matrix("Q", q.data, 3, 4, 10);
  matrix("K", k.data, 8, 4, 10);
  matrix("V", v.data, 8, 4, 10);
  for (size_t b = 0; b < kBlocks.size(); ++b) std::printf("block %zu: %s\n", b, keys_text(kBlocks[b]).c_str());

  L.step("the target: dense attention over all 8 keys (reference/core/dense_attention.h)");
  const AttnOut<double> dense = dense_forward(q, k, v, Mask::none(), scale);
  matrix("O", dense.o.data, 3, 4, 10);
  show("LSE", list(lse_row(dense.lse)));

  L.step("each block alone: its partial (O_b, LSE_b), softmax over that block's keys only");
  std::vector<Tensor3<double>> o_part;
  std::vector<Rows<double>> lse_part;
  for (size_t b = 0; b < kBlocks.size(); ++b) {
    o_part.emplace_back(3, 1, 4);
    lse_part.push_back(Rows<double>(1, 3));
    attention_forward<double>(q.view(), k.view().rows(kBlocks[b].k0, kBlocks[b].nk),
                              v.view().rows(kBlocks[b].k0, kBlocks[b].nk), Mask::none(), scale,
                              o_part[b].view(), rows_view(lse_part[b]));
    std::printf("block %zu (%s):\n", b, keys_text(kBlocks[b]).c_str());
    show("  LSE_b", list(lse_row(lse_part[b])));
    matrix("  O_b", o_part[b].data, 3, 4, 10);
  }
  std::printf("Each O_b is normalised over its own keys only; none of them is the answer.\n");

  L.step("streaming merge (merge_streaming): a running (O, LSE), updated after every block");
  Tensor3<double> o_run(3, 1, 4);  // the accumulator starts empty: O = 0, LSE = -inf
  Rows<double> lse_run = Rows<double>::Constant(1, 3, -std::numeric_limits<double>::infinity());
  show("start: LSE", list(lse_row(lse_run)));
  for (size_t b = 0; b < kBlocks.size(); ++b) {
    const double l_old = lse_run(0, 0), l_new = lse_merge(l_old, lse_part[b](0, 0));
    std::printf("row 0: alpha = exp(LSE - LSE_new) = %s, beta = exp(LSE_b - LSE_new) = %s\n",
                fmt(merge_weight(l_old, l_new)).c_str(), fmt(merge_weight(lse_part[b](0, 0), l_new)).c_str());
    merge_streaming<double>(o_run.view(), rows_view(lse_run), 0, o_part[b].view(), rows_view(std::as_const(lse_part[b])));
    show("after block " + std::to_string(b) + ": LSE", list(lse_row(lse_run)));
    matrix("after block " + std::to_string(b) + ": O", o_run.data, 3, 4, 10);
  }
  const double err_stream = std::max(max_abs_diff(o_run.data, dense.o.data), max_abs_diff(lse_run, dense.lse));
  show("streaming: max |(O, LSE) - dense|", err_stream);
  show("streaming equals dense attention to 1e-14", yes(err_stream < 1e-14));

  L.step("TE's post-loop fold (PostLoopFold): keep every partial, fold after the loop");
  PostLoopFold<double> fold(3, 1, 4);
  for (size_t b = 0; b < kBlocks.size(); ++b) fold.add(0, o_part[b], lse_part[b]);
  Tensor3<double> o_fold(3, 1, 4);
  Rows<double> lse_fold(1, 3);
  fold.finish(o_fold.view(), rows_view(lse_fold));
  show("partials kept alive until the end", static_cast<std::int64_t>(fold.partials()));
  show("phase A, the final LSE", list(lse_row(lse_fold)));
  matrix("phase B, O = sum_b exp(LSE_b - LSE) O_b", o_fold.data, 3, 4, 10);
  const double err_fold = std::max(max_abs_diff(o_fold.data, dense.o.data), max_abs_diff(lse_fold, dense.lse));
  show("fold: max |(O, LSE) - dense|", err_fold);
  show("fold equals dense attention to 1e-14", yes(err_fold < 1e-14));
  show("max |fold - streaming|", std::max(max_abs_diff(o_fold.data, o_run.data), max_abs_diff(lse_fold, lse_run)));

  L.step("why it is exact: exp(LSE) = sum_b exp(LSE_b), and the weights sum to 1");
  std::vector<double> w;
  double wsum = 0, sum_exp = 0;
  std::vector<double> o_row0(4, 0.0);
  for (size_t b = 0; b < kBlocks.size(); ++b) {
    w.push_back(merge_weight(lse_part[b](0, 0), dense.lse(0, 0)));
    wsum += w.back();
    sum_exp += std::exp(lse_part[b](0, 0));
    for (int e = 0; e < 4; ++e) o_row0[static_cast<size_t>(e)] += w.back() * o_part[b].at(0, 0, e);
  }
  show("row 0: weights exp(LSE_b - LSE) per block", list(w));
  show("row 0: the weights sum to", wsum);
  show("row 0: log sum_b exp(LSE_b)", std::log(sum_exp));
  show("row 0: dense LSE", dense.lse(0, 0));
  show("row 0: max |sum_b w_b O_b - dense O|", max_abs_diff(o_row0, std::vector<double>(dense.o.data.begin(), dense.o.data.begin() + 4)));

  L.step("the same rule inside one kernel: FlashAttention-2's OnlineRow (softmax_rules.h)");
  std::printf("row 0, keys streamed block by block: m = running max logit, l = sum exp(s - m)\n");
  OnlineRow<double> row;
  std::vector<double> acc(4, 0.0);
  for (size_t b = 0; b < kBlocks.size(); ++b) {
    std::vector<double> s;  // the block's logits scale * q0 . k (shown, and fed to the rules)
    for (index_t kk = kBlocks[b].k0; kk < kBlocks[b].k0 + kBlocks[b].nk; ++kk) {
      double dot = 0;
      for (int e = 0; e < 4; ++e) dot += q.at(0, 0, e) * k.at(kk, 0, e);
      s.push_back(scale * dot);
    }
    const double bmax = s.empty() ? neg_inf<double>() : *std::max_element(s.begin(), s.end());
    const double alpha = online_rescale(row, bmax);
    for (double& a : acc) a *= alpha;
    for (size_t x = 0; x < s.size(); ++x) {
      const double p = online_weight(row, s[x]);
      online_add(row, p);
      for (int e = 0; e < 4; ++e) acc[static_cast<size_t>(e)] += p * v.at(kBlocks[b].k0 + static_cast<index_t>(x), 0, e);
    }
    std::printf("after block %zu: m = %s, l = %s, LSE = m + log l = %s\n", b, fmt(row.m).c_str(), fmt(row.l).c_str(),
                fmt(online_lse(row)).c_str());
  }
  for (double& a : acc) a *= online_inv_l(row);
  show("O row 0 = acc / l", list(acc));
  show("row 0: max |online - dense|", std::max(max_abs_diff(acc, std::vector<double>(dense.o.data.begin(), dense.o.data.begin() + 4)),
                                              std::abs(online_lse(row) - dense.lse(0, 0))));

  L.step("-inf: an empty partial weighs exactly 0, and nothing turns into NaN");
  const double ninf = neg_inf<double>();
  show("lse_merge(-inf, 1.5)", lse_merge(ninf, 1.5));
  show("lse_merge(-inf, -inf)", lse_merge(ninf, ninf));
  show("merge_weight(-inf, 1.5)", merge_weight(ninf, 1.5));
  show("merge_weight(-inf, -inf)", merge_weight(ninf, ninf));
  show("the naive weight exp(-inf - (-inf)) is NaN", yes(std::isnan(std::exp(ninf - ninf))));
  Tensor3<double> o_empty(3, 1, 4);  // a row that sees no key anywhere: empty accumulator + empty partial
  Rows<double> lse_empty = Rows<double>::Constant(1, 3, ninf);
  merge_streaming<double>(o_empty.view(), rows_view(lse_empty), 0, o_part[1].view(), rows_view(std::as_const(lse_part[1])));
  std::printf("an empty accumulator (start state) merged with the empty block 1:\n");
  show("  LSE", list(lse_row(lse_empty)));
  show("  O row 0", list(std::vector<double>(o_empty.data.begin(), o_empty.data.begin() + 4)));
  bool any_nan = false;
  for (double x : o_empty.data) any_nan = any_nan || std::isnan(x);
  show("any NaN", yes(any_nan));

  L.finish(2,
           {"cplab run --mode p2p --cp 4 --seq 64 --heads 2 --kv-heads 1 --head-dim 8 --causal --merge streaming   (the running merge)",
            "cplab run --mode p2p --cp 4 --seq 64 --heads 2 --kv-heads 1 --head-dim 8 --causal --merge fold   (TE's post-loop fold: the same errors)"});
  return 0;
}
