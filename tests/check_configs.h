// check_configs.h: the CP runs `cplab check`'s tests check (tests/test_check.cpp,
// tests/test_check_outputs.cpp, tests/test_check_merge.cpp, tests/test_check_rules.cpp): one list and
// the builders every one of them uses.
//
// What it is: configs(), every mode (p2p zigzag / contiguous / striped, all-gather, a2a, a2a+p2p),
// GQA (8 heads over 2 KV heads), a causal window, chunks, non-causal, sinks and packed sequences
// (cu_seqlens with padding), each named as the tables print it, and the small builders they use.
// What it is not: the faults (check_faults.h) or the claimed outputs (check_claimed.h).
#pragma once

#include <string>
#include <vector>

#include "modes/cp_spec.h"

namespace cplab::test {

struct Config {
  std::string name;
  CpFields f;
};

inline CpFields fields(Mode mode, Layout layout, index_t cp, index_t seq, bool causal) {
  CpFields f;
  f.mode = mode, f.layout = layout, f.cp = cp, f.seq = seq, f.causal = causal;
  f.heads = 8, f.kv_heads = 2, f.head_dim = 16;
  return f;
}

inline CpFields windowed(CpFields f, index_t w) {
  f.window = w;
  return f;
}

inline CpFields with_sinks(CpFields f) {
  f.sinks = true;  // the logits: drawn from the run's seed (make_inputs)
  return f;
}

inline CpFields chunked(CpFields f, index_t c) {
  f.chunk = c;
  return f;
}

inline CpFields hierarchical(index_t icp, index_t ocp, index_t seq) {
  CpFields f = fields(Mode::a2a_p2p, Layout::zigzag, icp * ocp, seq, true);
  f.icp = icp, f.ocp = ocp;
  return f;
}

inline std::vector<Config> configs() {
  CpFields packed = fields(Mode::p2p, Layout::zigzag, 2, 0, true);
  packed.cu_seqlens = {0, 10, 34, 39};
  packed.pad = true;
  CpFields packed_ag = fields(Mode::allgather, Layout::zigzag, 2, 0, true);
  packed_ag.cu_seqlens = {0, 7, 29, 40};
  packed_ag.pad = true;
  return {
      {"p2p zigzag causal cp 4 seq 256", fields(Mode::p2p, Layout::zigzag, 4, 256, true)},
      {"p2p contiguous causal cp 4 seq 64", fields(Mode::p2p, Layout::contiguous, 4, 64, true)},
      {"p2p zigzag causal window 9 cp 4 seq 64", windowed(fields(Mode::p2p, Layout::zigzag, 4, 64, true), 9)},
      {"p2p striped causal cp 4 seq 64", fields(Mode::p2p, Layout::striped, 4, 64, true)},
      {"p2p zigzag non-causal cp 4 seq 64", fields(Mode::p2p, Layout::zigzag, 4, 64, false)},
      {"allgather zigzag causal cp 4 seq 64", fields(Mode::allgather, Layout::zigzag, 4, 64, true)},
      {"a2a zigzag causal cp 2 seq 64", fields(Mode::a2a, Layout::zigzag, 2, 64, true)},
      {"p2p zigzag causal cp 2 packed 0,10,34,39 --pad", packed},
      {"p2p zigzag causal sinks cp 4 seq 64", with_sinks(fields(Mode::p2p, Layout::zigzag, 4, 64, true))},
      {"a2a+p2p zigzag causal sinks 2x2 seq 64", with_sinks(hierarchical(2, 2, 64))},
      {"p2p contiguous causal chunk 12 cp 4 seq 64", chunked(fields(Mode::p2p, Layout::contiguous, 4, 64, true), 12)},
      {"allgather zigzag causal cp 2 packed 0,7,29,40", packed_ag},
  };
}

}  // namespace cplab::test
