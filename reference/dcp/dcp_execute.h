// dcp_execute.h: running a dynamic-CP schedule in the reference, with per-token loss scaling.
//
// What it is: execute_schedule runs every sample of a DcpSchedule, round by round, on its group of
// simulated ranks with CP = the group's size (a one-layer attention stack, layer_stack.h, with the
// chosen CP mode, p2p or allgather, and zigzag over the group), and checks it:
//   outputs   every sequence's output equals the dense stack's on that sequence
//   gradients Megatron's per-token loss (calculate_per_token_loss): every rank sums the weight
//             gradients of ITS tokens' losses, the DP x CP group sums those partials over all ranks
//             and rounds, and divides by the total token count; that must equal the gradient of the
//             mean token loss on a single device.
// Loss per token t: <g_t, y_t> for a fixed random g (any linear functional will do).
// What it is not: a performance simulation; groups run one after another.
#pragma once

#include "dcp/dcp_schedule.h"
#include "modes/layer_stack.h"

namespace cplab {

struct DcpExecution {
  double output_error = 0;    // max over sequences of max|y - y_dense| / max|y_dense|
  double gradient_error = 0;  // per-token-scaled dW vs single device: max|.| / max|.|
  double overcount_error = 0; // the same if the group-summed gradients were summed again (the bug it catches)
  std::int64_t tokens = 0;
};

// lengths must be multiples of 2 * ranks (Megatron's rule: any sequence may land on all ranks)
DcpExecution execute_schedule(const DcpSchedule& s, const std::vector<std::int64_t>& lengths, Mode mode,
                              std::uint64_t seed);

}  // namespace cplab
