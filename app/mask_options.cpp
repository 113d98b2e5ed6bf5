// mask_options.cpp: --window, --chunk, --sinks, --sink-logits (mask_options.h).
#include "mask_options.h"

#include "core/error.h"
#include "run/npy.h"

namespace cplab::app {

void add_mask_options(CLI::App* sub, MaskOptions& m, bool with_sinks) {
  m.window_opt = sub->add_option("--window", m.window,
                                 "sliding window of W tokens (positions inside each sequence when packed):\n"
                                 "with --causal query i sees key j iff i - W < j <= i (FlashAttention's\n"
                                 "window_size = (W-1, 0)); without, iff |i - j| < W. 1 <= W <= 2^31-1");
  m.chunk_opt = sub->add_option("--chunk", m.chunk,
                                "chunked attention of C tokens (needs --causal; not with --window): query i\n"
                                "sees key j iff j <= i and floor(i/C) == floor(j/C). 1 <= C <= 2^31-1");
  if (!with_sinks) return;
  sub->add_flag("--sinks", m.sinks,
                "attention sinks (gpt-oss): one learnable logit s_h per query head joins every row's\n"
                "softmax denominator, nothing is added to the output; with --backward d s_h is checked\n"
                "too. Values from --sink-logits, else uniform in [-1, 1] from --seed");
  m.sink_logits_opt = sub->add_option("--sink-logits", m.sink_logits,
                                      "read the sink logits from a .npy file of shape (heads,), float32/float64\n"
                                      "(implies --sinks)");
}

void apply_mask_options(const MaskOptions& m, CpFields& f) {
  if (m.window_opt && m.window_opt->count() > 0) f.window = m.window;
  if (m.chunk_opt && m.chunk_opt->count() > 0) f.chunk = m.chunk;
  f.sinks = m.sinks;
  if (!m.sink_logits_opt || m.sink_logits_opt->count() == 0) return;
  require(!m.sink_logits.empty(), "--sink-logits needs a value, got an empty string");
  // the header first (float32 / float64 only, every malformed file named), the data only if it is small
  const NpyHeader h = npy_read_header(m.sink_logits);
  require(h.shape.size() == 1, m.sink_logits + ": sink logits must be 1-d, shape (heads,), got shape " +
                                   npy_shape_string(h.shape));
  require(h.count <= kMaxHeads, m.sink_logits + ": " + std::to_string(h.count) + " sink logits, more than " +
                                    std::to_string(kMaxHeads) + " heads can be (one logit per query head)");
  require(h.count >= 1, m.sink_logits + ": holds no sink logits, shape " + npy_shape_string(h.shape) +
                            " (one logit per query head: shape (heads,))");
  const NpyArray a = npy_read(m.sink_logits, h);
  f.sinks = true;
  f.sink_logits = a.values;  // their count and finiteness: CpSpec's rules
}

}  // namespace cplab::app
