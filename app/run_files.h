// run_files.h: the files of `cplab run`: its .npy inputs, read header first, and its outputs,
// checked before the run and written whole after it.
//
// What it is: RunFiles (the paths given), header3 / load3 (a Q, K, V or dO source: its header
// checked against the sizes known so far before any data is read, then its data, NaN and inf
// refused), prepare_outputs (every output could be written and none is an input or another
// output; nothing created or truncated) and write_outputs (the trace files and --out-dir's .npy
// files committed together, core/output_file.h: every one written, or none and every existing file
// as it was).
// What it is not: the .npy format (run/npy.h), or the run (run/experiment.h).
#pragma once

#include <string>

#include "run/experiment.h"
#include "run/npy.h"
#include "run/tensor_source.h"

namespace cplab::app {

struct RunFiles {
  std::string q, k, v, dout;          // --q, --k, --v, --do (.npy inputs)
  std::string out_dir, trace, chrome;  // --out-dir, --trace, --chrome-trace
  bool dsinks = false;                 // --out-dir also writes dsinks.npy (heads,) (--sinks --backward)
};

// the header of a 3-d (s, heads, dim) source (a --q file, or an array in memory); s, h, d: 0 = not
// known yet (filled), else must agree (cplab::Error naming the source and what: "Q", "K", "V", "dO")
const NpyHeader& header3(const TensorSource& src, const char* what, index_t& s, index_t& h, index_t& d);
// the data of a source whose header header3 checked (x: (s, heads, dim)), NaN and inf refused
Tensor3<double> load3(const TensorSource& src, const char* what);
// throws cplab::Error unless every output could be written, none being an input or another output
void prepare_outputs(const RunFiles& o, bool backward);
// the outputs of a run that succeeded (r.o etc. empty for a planned run, which has no --out-dir)
void write_outputs(const RunFiles& o, const RunReport& r, bool backward, bool f32);

}  // namespace cplab::app
