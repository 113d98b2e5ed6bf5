// memory_estimate.cpp: the peak memory of one run_experiment (see memory_estimate.h).
//
// Sizes below are bytes, as doubles. Q, K, V, O, L are the global (S, h, d), (S, hk, d),
// (S, hk, dv), (S, h, dv) tensors and the (h, S) LSE; Kr, Vr are K and V after --replicate-kv (what
// the modes get); e = sizeof(float or double) of the CP run, 8 for the inputs, results and oracle.
// A term's comment names the code that allocates it. Transient copies smaller than a tensor / P
// are folded into the "+ x/P" slop terms.
#include "run/memory_estimate.h"

#include <algorithm>
#include <omp.h>

#include "core/attention_kernel.h"
#include "modes/hierarchical_cp.h"
#include "modes/ring_schedule.h"

namespace cplab {

namespace {

struct Bytes {  // the global tensors at one element size
  double q, kr, vr, o, l;
  double kv() const { return kr + vr; }
  double qkv() const { return q + kr + vr; }
  double largest() const { return std::max({q, kr, vr, o}); }
};

Bytes at(const CpSpec& cp, double e) {
  const double S = static_cast<double>(cp.S()), h = static_cast<double>(cp.h());
  const double hk = static_cast<double>(cp.hk() * cp.kv_replication());
  const double d = static_cast<double>(cp.d()), dv = static_cast<double>(cp.dv());
  return Bytes{e * S * h * d, e * S * hk * d, e * S * hk * dv, e * S * h * dv, e * S * h};
}

// attention_kernel.cpp: each thread holds `blocks` matrices of kRowBlock x width scores (forward:
// S; backward: P and dS) for one head at a time, plus Eigen's GEMM packing buffers (~1 MiB)
double scratch(double e, double width, double heads, int blocks) {
  const double threads = std::min(heads, static_cast<double>(std::max(1, omp_get_max_threads())));
  return threads * (blocks * e * static_cast<double>(kRowBlock) * width + 1024.0 * 1024.0);
}

// SimComm all_to_all of a tensor of y bytes over a group of G (a2a_before / a2a_after): the send
// blocks (y), the messages, the concatenated receive buffers (y), the rebuilt tensors (y), and one
// member's received block and its take_rows / regrown copy
double a2a_transient(double y, double G) { return 3.0 * y + 2.0 * y / G; }

// ring_p2p.cpp over P ranks with KV shards of kv bytes, Q of q, O of o, LSE of l (all summed over
// the ring's ranks). What the forward keeps (RingForward): the last KV block, O and LSE.
double ring_keep(double kv, double o, double l) { return kv + o + l; }
// the forward's peak above what it keeps and its messages: flat() and recv() copies of one rank's
// block, the per-tile O_i / LSE_i and, with --merge fold, every partial (PostLoopFold)
double ring_fwd_extra(double P, double kv, double o, double l, double fold, double scr) {
  return (P > 1 ? 2 * kv / P : 0.0) + (o + l) / P + fold + scr;
}
// the backward's peak but its messages (ring_backward): the KV it walks (kcur, vcur), dQ, dKV
// accumulated, Delta, this step's dKV, and one rank's send / receive buffers
double ring_bwd_peak(double P, double q, double kv, double l, double scr) {
  return kv + q + kv + l + (P > 1 ? 6 * kv / P : 0.0) + kv + scr;
}
// the ring's messages in flight at once: every rank's KV block (forward), KV + dKV (backward)
double ring_messages(double P, double kv, bool backward) { return P > 1 ? (backward ? 2 : 1) * kv : 0.0; }

// --merge fold keeps every tile's O_i and LSE_i: the query rows of the tiles the ring computes
// (ring_plan_tile, closed-form without packing; packed, every tile counted whole: positions lists
// of the whole sequence are not built for an estimate)
double fold_partials(const CpSpec& ring, double e, double h, double dv) {
  if (ring.merge() != MergeKind::fold) return 0.0;
  const index_t P = ring.P();
  double rows = 0;
  for (index_t r = 0; r < P; ++r)
    for (index_t i = 0; i < P; ++i) {
      if (ring.packed()) {
        rows += static_cast<double>(ring.n());
        continue;
      }
      const RingTile t = ring_plan_tile(ring.partition(), nullptr, ring.rule(), r, ring_fwd_kv_block(P, r, i));
      if (!t.skipped) rows += static_cast<double>(t.nq);
    }
  return e * rows * h * (dv + 1);
}

struct ModeMemory {
  double keep = 0;      // what the forward leaves in CpState (beyond the shards' copies)
  double fwd = 0;       // the forward's peak above the shards and their copies
  double bwd = 0;       // the backward's peak above the shards, the kept state, O's copy and dO's shards
  double messages = 0;  // the most message bytes in flight at once (counted in every phase: see estimate_memory)
  double events = 0;    // trace events (tiles, sends, receives)
  double mailboxes = 0; // SimComm's (src, dst) mailboxes ever used
};

ModeMemory mode_memory(const RunSpec& s, double e) {
  const CpSpec& cp = s.cp;
  const Bytes x = at(cp, e);
  const double P = static_cast<double>(cp.P()), S = static_cast<double>(cp.S());
  const double h = static_cast<double>(cp.h()), hk = static_cast<double>(cp.hk() * cp.kv_replication());
  const double dv = static_cast<double>(cp.dv());
  const bool b = s.backward;
  const int phases = b ? 2 : 1;
  ModeMemory m;
  switch (cp.mode()) {
    case Mode::p2p: {
      m.keep = ring_keep(x.kv(), x.o, x.l);
      m.fwd = m.keep + ring_fwd_extra(P, x.kv(), x.o, x.l, fold_partials(cp, e, h, dv), scratch(e, S / P, h, 1));
      m.bwd = ring_bwd_peak(P, x.q, x.kv(), x.l, scratch(e, S / P, hk, 2));
      m.messages = ring_messages(P, x.kv(), b);
      m.events = phases * 3 * P * P;  // P^2 tiles, P(P-1) sends and receives
      m.mailboxes = 2 * P;
      break;
    }
    case Mode::allgather: {  // no KV replication in this mode: kv() is K + V
      const double gather = (2 * P + 2) * x.kv();  // gather_kv: own K|V, the gathered blocks, K and V per rank, one rank's blocks
      m.keep = x.o + x.l;                          // CpOutput in CpState
      m.fwd = std::max(gather, P * x.kv() + x.o + x.l + scratch(e, S, h, 1));
      // allgather_backward: gathered again; per rank dQ, a full-length dK and dV and their shards; every
      // rank's partial dK|dV (P x kv), then (besides reduce-scatter's messages) the result
      m.bwd = std::max({gather, P * x.kv() + x.q + 2 * x.kv() + P * x.kv() + x.l + scratch(e, S, hk, 2),
                        P * x.kv() + x.q + P * x.kv() + x.kv()});
      m.messages = (P - 1) * x.kv();  // the all-gathers' and the reduce-scatter's
      m.events = phases * 2 * P + (b ? 6 : 2) * P * (P - 1);
      m.mailboxes = P * (P - 1);
      break;
    }
    case Mode::a2a: {
      // ulysses_forward keeps the head-sharded Q, K, V, O, LSE and the data-layout O, LSE
      m.keep = x.qkv() + x.o + x.l + x.o + x.l;
      m.fwd = std::max({x.q + x.kr + a2a_transient(x.vr, P) + x.largest() / P,   // the all-to-all of V
                        x.qkv() + x.o + x.l + scratch(e, S, h / P, 1),         // the attention
                        x.qkv() + x.o + x.l + a2a_transient(x.o, P) + x.l});      // O back, LSE in place
      // ulysses_backward: dO head-sharded, dQ, dK, dV head-sharded, Delta, then each sent back
      m.bwd = x.o + std::max({a2a_transient(x.o, P), x.qkv() + x.l + scratch(e, S, hk / P, 2),
                              2 * x.qkv() + a2a_transient(x.largest(), P)});
      m.messages = x.largest();  // one all-to-all's (inside a2a_transient too)
      m.events = phases * (P + 8 * P * (P - 1));
      m.mailboxes = P * (P - 1);
      break;
    }
    case Mode::a2a_p2p: {
      const double I = static_cast<double>(cp.icp()), O = static_cast<double>(cp.ocp());
      const CpSpec ring = hcp_ring_spec(cp);
      const double rings_keep = ring_keep(x.kv(), x.o, x.l);  // every ring's RingForward, summed
      const double inner = x.largest() / O + a2a_transient(x.largest() / O, I);  // one group's copies and all-to-all
      m.keep = x.qkv() + rings_keep + x.o + x.l;             // after the inner all-to-all; the rings; O, LSE back
      // hcp_forward: one ring at a time, on copies of its members' Q, K, V
      const double ring_fwd = x.qkv() / I + (ring_keep(x.kv(), x.o, x.l) + ring_fwd_extra(O, x.kv(), x.o, x.l, 0, 0)) / I +
                              fold_partials(ring, e, h / I, dv) + scratch(e, S / O, h / I, 1);
      m.fwd = std::max({x.qkv() + inner, x.qkv() + rings_keep + ring_fwd, x.qkv() + rings_keep + x.o + x.l + inner});
      // hcp_backward: dO after the inner all-to-all; per ring copies of Q, K, V, dO and its backward;
      // the rings' gradients; then, group by group, copies of the group's dQ, dK, dV sent back by the
      // inner all-to-all into the result
      const double ring_bwd = (x.qkv() + x.o) / I + ring_bwd_peak(O, x.q, x.kv(), x.l, 0) / I + scratch(e, S / O, hk / I, 2);
      const double back = 2 * x.qkv() + x.qkv() / O + a2a_transient(x.largest() / O, I);
      m.bwd = x.o + std::max({inner, x.qkv() + ring_bwd, back});
      m.messages = std::max(ring_messages(O, x.kv(), b) / I, x.largest() / O);
      m.events = phases * (8 * O * I * (I - 1) + 3 * I * O * O);
      m.mailboxes = O * I * (I - 1) + 2 * I * O;
      break;
    }
  }
  return m;
}

}  // namespace

MemoryEstimate estimate_memory(const RunSpec& s) {
  const CpSpec& cp = s.cp;
  const bool b = s.backward;
  const double e = s.dtype == "float" ? 4.0 : 8.0;
  const Bytes x = at(cp, e), d8 = at(cp, 8.0);
  const double kv_ratio = static_cast<double>(cp.kv_replication());
  const double k8 = d8.kr / kv_ratio, v8 = d8.vr / kv_ratio;  // K and V as given (before replication)

  MemoryEstimate est;
  est.inputs = d8.q + k8 + v8 + (b ? d8.o : 0.0);  // Inputs: make_inputs or the .npy files, in double
  const double shards = 2 * x.qkv();                // shard(rounded<T>(...)) and CpState's copies of them
  const ModeMemory m = mode_memory(s, e);
  const double out_copy = x.o + x.l;                // cp_attention_forward returns a copy of O and LSE
  const double dout = b ? x.o : 0.0;                // shard(rounded<T>(in.dout))
  // the trace: ~256 bytes per event (Event: strings, spans) plus growth; a mailbox: map node + deque
  const double trace = 320.0 * m.events + 700.0 * m.mailboxes;
  // messages: freed on receipt, but their pages may stay with the C library (blocks under its mmap
  // threshold live on its heap) until messages of the same size reuse them: counted in every phase
  const double base = est.inputs + shards + trace + m.messages;

  const double cp_fwd = base + m.fwd;
  const double cp_bwd = b ? base + m.keep + out_copy + dout + std::max(x.o /* rounded dO */, m.bwd) : 0.0;
  // run_typed converts the results: O, LSE (and dQ, dK, dV) in double, through unshard's temporary
  // (and, with --replicate-kv, the sum of dK's replicas beside it)
  // (keep_run_dtype, float runs: also kept in float, for the Python binding)
  const double report = d8.o + d8.l + (b ? d8.q + k8 + v8 : 0.0) +
                        (s.keep_run_dtype && e == 4.0 ? 0.5 * (d8.o + d8.l + (b ? d8.q + k8 + v8 : 0.0)) : 0.0);
  const double unshard = x.largest() + (b && kv_ratio > 1 ? x.kr / kv_ratio : 0.0);
  const double results = base + m.keep + out_copy + dout + (b ? x.qkv() : 0.0) + report + unshard;

  // dense_oracle, after the CP run's state is gone: as_run copies of the inputs; the oracle's O, LSE
  // (dQ, dK, dV); one sequence's Q, K, V rows; its dense forward O, LSE (and dO rows, gradients, Delta)
  const Packing& pk = cp.packing();
  index_t longest = 0;
  for (index_t sq = 0; sq < pk.num_seqs(); ++sq) longest = std::max(longest, pk.length(sq));
  const double frac = static_cast<double>(longest) / static_cast<double>(cp.S());  // the longest sequence's share
  const double oracle_out = d8.o + d8.l + (b ? d8.q + k8 + v8 : 0.0);
  const double one_seq = frac * ((d8.q + k8 + v8) + d8.o + d8.l + (b ? d8.o + d8.q + k8 + v8 + d8.l : 0.0));
  const double as_run = est.inputs + (e == 4.0 ? 4.0 / 8.0 * d8.largest() : 0.0);  // float: cast<float> on the way
  const double oracle = est.inputs + trace + report + as_run + oracle_out + one_seq +
                        scratch(8.0, static_cast<double>(longest), static_cast<double>(cp.h()), b ? 2 : 1);

  const std::pair<double, const char*> phases[] = {
      {cp_fwd, "the CP forward"}, {cp_bwd, "the CP backward"}, {results, "the CP run's results"}, {oracle, "the dense oracle"}};
  for (const auto& [bytes, name] : phases)
    if (bytes > est.bytes) est.bytes = bytes, est.phase = name;
  // the allocator's share: page rounding, Eigen's temporaries, and freed blocks the C library keeps
  // (glibc's dynamic mmap threshold puts blocks up to 32 MiB on its heap). Measured (2 threads, glibc
  // 2.36, 30 runs of every mode): the terms above alone come to 1.01-1.22 x the peak RSS of runs of
  // 0.4-3.5 GiB, and to 0.86 x that of a 50 MiB run made mostly of score blocks; so 5% and 16 MiB on
  // top (then 1.06-1.30 x those runs; tests/memory_check.py holds 8 of them to [1.0, 1.5])
  est.bytes = 1.05 * est.bytes + 16.0 * 1024 * 1024;
  return est;
}

}  // namespace cplab
