// seeded_sinks.h: the attention-sink logits a run draws from its seed when none are given.
//
// What it is: seeded_sink_logits(seed, h), h values uniform in [-1, 1] from a stream of their own
// (the seed and the tag "sink"), so adding --sinks leaves a run's Q, K, V (and dO) unchanged. Used
// by run/experiment.cpp sink_inputs (training) and infer/infer_run.cpp make_infer_inputs (inference).
// What it is not: the sinks' semantics (core/sinks.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace cplab {

std::vector<double> seeded_sink_logits(std::uint64_t seed, index_t h);

}  // namespace cplab
