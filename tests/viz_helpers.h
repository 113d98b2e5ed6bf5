// viz_helpers.h: what the cplab-viz scene tests share: the parameters of a run to draw and the
// index of a (phase, step) in a run model's steps.
// What it is not: a test (test_viz*.cpp) or a copy of the viz's own parsing (viz/cli).
#pragma once

#include <utility>

#include "model.h"

namespace cplab::viz::test {

inline VizParams run_params(Mode mode, Layout layout, index_t cp, index_t seq, bool causal = true) {
  VizParams p;
  p.cp.mode = mode;
  p.cp.layout = layout;
  p.cp.cp = cp;
  p.cp.seq = seq;
  p.cp.causal = causal;
  return p;
}

// the index of (ph, step) in m.steps, -1 if the trace has no such step
inline int step_index(const RunModel& m, Phase ph, int step) {
  for (size_t i = 0; i < m.steps.size(); ++i)
    if (m.steps[i] == std::make_pair(ph, step)) return static_cast<int>(i);
  return -1;
}

}  // namespace cplab::viz::test
