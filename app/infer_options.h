// infer_options.h: the options of an inference step (issue 37): --kv-cache and --cache-layout,
// registered once for `cplab run` and `cplab check`, and the InferFields they make with the CP
// options they share (cp_options.h).
//
// What it is: InferOptions (what was given), add_infer_options (the registration, --help text
// included), infer_wanted (whether a command line asks for an inference step: --kv-cache given,
// or an inference-only --mode, which then needs --kv-cache) and infer_fields (the InferFields of
// reference/infer/infer_spec.h from the CP options and these, every option that has no meaning for
// inference refused with the rule named):
//   --kv-cache P       P cached tokens for every request, or "P0,P1,..." one per request
//   --cache-layout     zigzag (what the paper's zigzag prefills leave) | interleaved (token p on
//                      rank p mod N, serving engines' decode layout)
//   --seq T            the new tokens of one request; --cu-seqlens 0,T0,T0+T1,... packs requests
//                      (the cumulative NEW tokens; --seq, if given, is their total)
//   --layout           how the prefill variants (p2p, pass-q) split each request's new tokens;
//                      the decode variants place them round-robin by position (not an option)
//   refused            --backward (inference has no backward), --merge fold, --hcp, --replicate-kv,
//                      --pad, the training-only modes allgather, a2a, a2a+p2p
// What it is not: the rules of the sizes (InferSpec's constructor checks them once) or a command.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cp_options.h"
#include "infer/infer_spec.h"

namespace cplab::app {

struct InferOptions {
  std::string kv_cache, cache_layout = "zigzag";
  CLI::Option *kv_cache_opt = nullptr, *cache_layout_opt = nullptr;
};

// registers --kv-cache and --cache-layout on sub; o must outlive sub's parse
void add_infer_options(CLI::App* sub, InferOptions& o);

// true when the command line asks for an inference step: --kv-cache given. An inference-only mode
// (pass-q, decode-pass-q, decode-ag) without it, and --cache-layout without it, are cplab::Error
// naming the rule.
bool infer_wanted(const CpOptions& cp, const InferOptions& io);

// the InferFields of the options (mode, layouts, requests, sizes, mask, sinks, scale); backward:
// --backward was given (refused). cplab::Error naming the first rule broken.
InferFields infer_fields(const CpOptions& cp, const InferOptions& io, bool backward);

// "100,200" or "100" of a vector (the report's spelling of P_b and T_b)
std::string join_counts(const std::vector<index_t>& v);

}  // namespace cplab::app
