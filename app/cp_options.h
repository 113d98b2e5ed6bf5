// cp_options.h: the options that describe a CP layer (a CpSpec), registered once for every
// command that takes one: `cplab run` and `cplab check`.
//
// What it is: CpOptions, the values of --mode, --hcp, --cu-seqlens, --pad, --replicate-kv, --cp,
// --seq, --heads, --kv-heads, --head-dim, --v-head-dim, --causal (and the mask options --window,
// --chunk, --sinks, --sink-logits of mask_options.h), --layout, --merge and --scale as
// the command line gave them (with cplab run's defaults), add_cp_options (their registration, help
// text included) and cp_fields (the CpFields they make: mode, layout and merge parsed, --hcp and
// --cu-seqlens read; an empty value refused). given() tells an option the user wrote from a
// default, so that sizes read from .npy files can be checked against the ones also given.
// What it is not: the rules (modes/cp_spec.h checks the fields when the CpSpec is built), or a
// command's own options (--backward, --dtype, files, ...: cmd_run.cpp, cmd_check.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "mask_options.h"
#include "modes/cp_spec.h"

namespace cplab::app {

struct CpOptions {
  CpFields f;  // sizes, flags and scale as given (cplab run's defaults otherwise)
  std::string mode = "p2p", layout = "zigzag", merge = "streaming", hcp, cu;
  index_t seq = 4096;  // --seq; with --cu-seqlens the packed total unless given
  MaskOptions mask;    // --window --chunk --sinks --sink-logits (mask_options.h)
  std::map<std::string, CLI::Option*> options;  // by long name

  // whether --name was on the command line (name without the dashes)
  bool given(const std::string& name) const;
};

// registers the options on sub; o must outlive sub's parse
void add_cp_options(CLI::App* sub, CpOptions& o);

// the CpFields of the options: o.f with mode, layout, merge, --hcp and --cu-seqlens parsed, and seq
// = --seq (without --cu-seqlens, or with it when --seq was given: CpSpec checks they agree) or 0
// (the packed total), and the mask options applied. cplab::Error naming the option on a bad value.
CpFields cp_fields(const CpOptions& o);

}  // namespace cplab::app
