// mask_options.h: the mask options of `cplab run` (and `cplab plan`): --window, --chunk, --sinks,
// --sink-logits, registered and applied in one place.
//
// What it is: MaskOptions (what was given), add_mask_options (registers the options on a CLI11
// subcommand, each --help text stating the rule), and apply_mask_options (puts what was given into
// CpFields: a window or chunk only when given, so that CpSpec refuses a given 0; --sink-logits
// read from its .npy file, which must be 1-d, and it implies --sinks). The rules themselves (W and
// C in [1, 2^31 - 1], not both, chunk only with --causal, one finite sink per head) are CpSpec's
// (modes/cp_spec.h), which names them when they are broken.
// What it is not: the mask (reference/core/mask_rule.h PositionRule) or the sinks' arithmetic
// (reference/core/sinks.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "modes/cp_spec.h"

namespace cplab::app {

struct MaskOptions {
  index_t window = 0, chunk = 0;
  bool sinks = false;
  std::string sink_logits;  // a .npy file of shape (heads,)
  CLI::Option *window_opt = nullptr, *chunk_opt = nullptr, *sink_logits_opt = nullptr;
};

// with_sinks: also --sinks and --sink-logits (cplab run; cplab plan takes the mask only)
void add_mask_options(CLI::App* sub, MaskOptions& m, bool with_sinks);
// the given options into f (f.causal must already be set); cplab::Error for an unreadable or
// non-1-d --sink-logits file, naming it
void apply_mask_options(const MaskOptions& m, CpFields& f);

}  // namespace cplab::app
