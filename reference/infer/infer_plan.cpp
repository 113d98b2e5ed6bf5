// infer_plan.cpp: the trace of an inference step without computing it (see infer_plan.h). The
// loops repeat infer_pass_kv.cpp, infer_pass_q.cpp and infer_decode_ag.cpp step for step, and
// SimComm's message order (sim/comm.h: p2p sends, then tiles, then receives; an all-gather or
// all-to-all: every send in (source, destination) order, then the receives in (destination,
// source) order). tests/test_infer.cpp proves the equality with run_infer's trace.
#include "infer/infer_plan.h"

#include "core/error.h"
#include "core/util.h"
#include "infer/infer_common.h"
#include "plan/trace_plan.h"

namespace cplab {

namespace {

void msg(Trace& tr, EventKind kind, int step, int rank, int peer, const char* tensor, const char* op, std::int64_t bytes) {
  tr.add(message_event(kind, Phase::fwd, step, rank, peer, tensor, op, bytes));
}

// a ring of N steps moving blocks of `bytes` to r+1 before each step's tiles (steps 0 .. N-2);
// tile(step, rank) records the rank's tile
template <class Tile>
void ring(Trace& tr, int N, std::int64_t bytes, const char* tensor, Tile tile) {
  for (int i = 0; i < N; ++i) {
    const bool posts = i < N - 1;
    if (posts)
      for (int r = 0; r < N; ++r) msg(tr, EventKind::send, i, r, (r + 1) % N, tensor, "p2p", bytes);
    for (int r = 0; r < N; ++r) tile(i, r);
    if (posts)
      for (int r = 0; r < N; ++r) msg(tr, EventKind::recv, i, r, (r - 1 + N) % N, tensor, "p2p", bytes);
  }
}

// the closing all-to-all of partials: rank i sends owner j n_j rows of h (dv + 1) elements
void partials_a2a(Trace& tr, const InferSpec& s, int step, std::int64_t e) {
  const int N = static_cast<int>(s.N());
  auto bytes = [&](int j) { return static_cast<std::int64_t>(s.q_rows(j).size()) * s.h() * (s.dv() + 1) * e; };
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      if (j != i) msg(tr, EventKind::send, step, i, j, "o+lse", "all_to_all", bytes(j));
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i)
      if (i != j) msg(tr, EventKind::recv, step, j, i, "o+lse", "all_to_all", bytes(j));
}

}  // namespace

double infer_plan_work_estimate(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  const double N = static_cast<double>(s.N()), T = static_cast<double>(s.T()), KV = static_cast<double>(s.KV());
  // the ring variants walk every rank's rows once per step; decode-ag every query on every rank
  return s.info().ring ? N * (T + KV) : N * T + KV;
}

Trace infer_plan_trace(const InferRunSpec& rs) {
  require(rs.dtype == "double" || rs.dtype == "float", "dtype '" + rs.dtype + "' is not one of: double, float");
  require(rs.allow_long || infer_plan_work_estimate(rs) <= kMaxPlanWork,
          "planning this step walks about " + approx(infer_plan_work_estimate(rs)) +
              " token rows, more than the planner's limit (about a minute); pass --allow-long to plan it anyway");
  const InferSpec& s = rs.spec;
  const int N = static_cast<int>(s.N());
  const std::int64_t e = rs.dtype == "float" ? 4 : 8;
  Trace tr(N);
  tr.meta() = infer_trace_meta(rs);
  auto tile = [&](int step, int rank, int peer, const char* section, const std::vector<index_t>& q,
                  const std::vector<index_t>& k) {
    tr.add(infer_tile_event(s, step, rank, peer, section, infer_tile_mask(s, q, k), q, k, 0.0));
  };
  switch (s.mode()) {
    case InferMode::pass_kv:
      ring(tr, N, s.Mkv() * s.hk() * (s.d() + s.dv()) * e, "kv", [&](int i, int r) {
        const int j = ((r - i) % N + N) % N;
        tile(i, r, j, i == 0 ? "local" : "ring", s.q_kv_rows(r), s.kv_rows(j));
      });
      break;
    case InferMode::pass_q:
    case InferMode::decode_pass_q:
      ring(tr, N, s.Mq() * s.h() * s.d() * e, "q", [&](int i, int r) {
        const int j = ((r - i) % N + N) % N;
        tile(i, r, j, i == 0 ? "local" : "ring", s.q_kv_rows(j), s.kv_rows(r));
      });
      if (N > 1) partials_a2a(tr, s, N, e);
      break;
    case InferMode::decode_ag: {
      std::vector<index_t> all_q;
      for (int r = 0; r < N; ++r) all_q.insert(all_q.end(), s.q_kv_rows(r).begin(), s.q_kv_rows(r).end());
      if (N > 1) {
        auto bytes = [&](int i) { return static_cast<std::int64_t>(s.q_rows(i).size()) * s.h() * s.d() * e; };
        for (int i = 0; i < N; ++i)
          for (int j = 0; j < N; ++j)
            if (j != i) msg(tr, EventKind::send, 0, i, j, "q", "all_gather", bytes(i));
        for (int i = 0; i < N; ++i)
          for (int src = 0; src < N; ++src)
            if (src != i) msg(tr, EventKind::recv, 0, i, src, "q", "all_gather", bytes(src));
      }
      for (int r = 0; r < N; ++r) tile(N > 1 ? 1 : 0, r, r, "local", all_q, s.kv_rows(r));
      if (N > 1) partials_a2a(tr, s, 2, e);
      break;
    }
  }
  return tr;
}

}  // namespace cplab
