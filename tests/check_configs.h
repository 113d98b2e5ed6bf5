// check_configs.h: the CP configurations the check tests run (tests/test_check.cpp,
// tests/test_check_merge.cpp, tests/test_check_rules.cpp), built from a mode, a layout, cp, a
// length and causality.
//
// What it is: a named CpFields (Config) and its builders: GQA 8 heads over 2, head dim 16, with a
// sliding window, attention sinks, chunks, or a2a+p2p's inner x outer split added.
// What it is not: the lists of configurations (each test file has its own) or any fault.
#pragma once

#include <string>

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

}  // namespace cplab::test
