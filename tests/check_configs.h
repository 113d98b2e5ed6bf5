// check_configs.h: the CP specs the check tests (test_check.cpp, test_check_rules.cpp) run and
// diagnose: a named CpFields, and builders for its variants.
//
// What it is: fields(mode, layout, cp, seq, causal) with 8 query heads over 2 KV heads of dim 16
// (GQA), and copies of it with a sliding window, chunks, attention sinks, or a2a+p2p's I x O.
// What it is not: the tests' lists of configurations (each test picks its own) or any fault.
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
