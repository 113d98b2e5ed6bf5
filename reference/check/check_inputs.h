// check_inputs.h: the files `cplab check` reads: another implementation's inputs and outputs.
//
// What it is: CheckData, the inputs (Q, K, V and optional dO, global token order) and the claimed
// outputs (O, LSE, dQ, dK, dV) of another CP implementation, every one placed in global token order
// and held as an (S, heads, dim) tensor (LSE as (S, heads, 1)), with the file(s) and dtype it came
// from; load_check_data reads them for a CpSpec and checks every rule, naming the file and the rule:
//   --inputs DIR     q.npy (S, h, d), k.npy (S, hk, d), v.npy (S, hk, dv), optional do.npy (S, h, dv)
//   --outputs DIR    o.npy (S, h, dv) [required], lse.npy (h, S), dq.npy (S, h, d), dk.npy (S, hk, d),
//                    dv.npy (S, hk, dv) in global order, or per-rank shards rank{r}/o.npy (S/P, h, dv),
//                    rank{r}/lse.npy (h, S/P), ... in rank r's local order (the layout's
//                    Partition::indices(r) are their global positions), one file per rank 0..P-1;
//                    dq, dk, dv come all three or not at all, and need do.npy
//   dtypes           float16 '<f2', bfloat16 ('<V2' as ml_dtypes saves it), float32, float64 (run/npy.h)
//   values           inputs (and sink logits, dsinks.npy) finite: NaN and inf refused, naming the
//                    element; outputs (o, lse, dq, dk, dv) may hold NaN and inf: evidence that
//                    run_check maps (error_map.h), not bad input (issue 38)
//   sinks (--sinks)  the sink logits (heads): --sink-logits FILE, else DIR/sinks.npy of --inputs (the
//                    spec's sink_logits: CpSpec checks their count and values); dsinks.npy (heads) in
//                    --outputs, optional, with the gradients: d s_h, or rank{r}/dsinks.npy, each rank's
//                    part (its rows' sum), added up. Without --sinks, sinks.npy and dsinks.npy are refused.
// S is the packed total after padding when --cu-seqlens is given (padding tokens are rows of the
// files too). Every header is read and checked before any data.
// The same rules run on tensors in memory (the Python binding): CheckSources holds the inputs and
// outputs as TensorSources (run/tensor_source.h), the files found in the folders or arrays in
// memory, and every message names a tensor as its source does ("DIR/dq.npy" or "outputs['dq']",
// "DIR/rank2/o.npy" or "outputs[2]['o']"); memory adds two rules: a key that is not a tensor's,
// and a list of per-rank outputs whose length is not cp.
// What it is not: the comparison (error_map.h) or the sizes' own rules (modes/cp_spec.h).
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "modes/cp_spec.h"
#include "run/experiment.h"
#include "run/npy.h"
#include "run/tensor_source.h"

namespace cplab {

// the outputs a check compares, in this order everywhere (reports, error maps, JSON)
enum class CheckTensor : int { o = 0, lse = 1, dq = 2, dk = 3, dv = 4 };
inline constexpr int kCheckTensors = 5;
inline constexpr std::array<CheckTensor, kCheckTensors> kAllCheckTensors = {
    CheckTensor::o, CheckTensor::lse, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv};
const char* tensor_label(CheckTensor t);  // "O", "LSE", "dQ", "dK", "dV"
const char* tensor_key(CheckTensor t);    // "o", "lse", "dq", "dk", "dv" (file stems, JSON keys)
inline int idx(CheckTensor t) { return static_cast<int>(t); }

// one claimed output, in global token order
struct ClaimedTensor {
  bool present = false;
  NpyDtype dtype = NpyDtype::f8;  // the least precise of its files
  std::string source;             // "DIR/o.npy" or "DIR/rank{0..7}/o.npy" (memory: "outputs['o']", "outputs[{0..7}]['o']")
  bool shards = false;            // given as per-rank shards (each rank's local order), not in global order
  Tensor3<double> x;              // (S, heads, dim); LSE: (S, h, 1)
};

// the claimed sink gradient d s_h (heads): one vector, not a token tensor (no error map)
struct ClaimedSinkGrad {
  bool present = false;
  NpyDtype dtype = NpyDtype::f8;
  std::string source;        // "DIR/dsinks.npy" or "DIR/rank{0..7}/dsinks.npy" (summed)
  std::vector<double> x;     // (h)
};

struct CheckData {
  Inputs in;                        // q, k, v (global order, double); dout empty without do.npy; sinks (h) with --sinks
  std::string inputs_dir, outputs_dir;  // the folders (CheckSources::inputs_name, outputs_name in memory)
  bool arrays = false;  // from memory (the Python binding: CheckSources without files), not from folders
  std::array<NpyDtype, 4> input_dtypes{};  // q, k, v, do
  std::array<ClaimedTensor, kCheckTensors> out;
  ClaimedSinkGrad dsinks;
  bool backward() const { return out[idx(CheckTensor::dq)].present; }
};

// the (S, h, 1) LSE tensor of an (h, S) Rows, and back
Tensor3<double> lse_tensor(const Rows<double>& lse);
Rows<double> lse_rows(const Tensor3<double>& lse);

// the tensors of a check, each found (a file) or given (memory); absent ones are absent keys
struct CheckSources {
  std::map<std::string, TensorSource> inputs;   // q (S, h, d), k (S, hk, d), v (S, hk, dv), [do (S, h, dv)], [sinks (h)]
  std::map<std::string, TensorSource> outputs;  // global order: o (S, h, dv) [lse (h, S), dq (S, h, d), dk (S, hk, d),
                                                // dv (S, hk, dv), dsinks (h)]
  std::vector<std::map<std::string, TensorSource>> shards;  // or per rank r (none, or cp of them), r's local order:
                                                            // o (S/cp, h, dv), lse (h, S/cp), ..., dsinks (h): r's part
  // files: the folders (--inputs DIR, --outputs DIR); an absent tensor is named DIR/k.npy, DIR/rank{r}/k.npy.
  // memory: "" and "outputs" (the defaults); an absent tensor is named k, outputs['k'], outputs[r]['k']
  std::string inputs_name, outputs_name = "outputs";
  bool files = false;
};

// Checks every rule for spec on the sources (cplab::Error naming the tensor and the rule): which
// are there, then every header (shape), then the data. With spec.sinks() the sink logits are
// spec's (CpFields::sink_logits); a sinks input without spec.sinks() is refused.
CheckData load_check_data(const CpSpec& spec, const CheckSources& sources);

// Finds the files of --inputs DIR and --outputs DIR (the folders' own rules, rank{r}/ shards of
// this run's ranks only) and checks them as load_check_data(spec, sources) does.
CheckData load_check_data(const CpSpec& spec, const std::string& inputs_dir, const std::string& outputs_dir);

// the sink logits (heads) of a source: 1-d, one per query head (q_name: what has the heads, for the
// message), finite (cplab::Error naming the source)
std::vector<double> read_sink_logits(const TensorSource& sinks, index_t heads, const std::string& q_name);
// the sink logits of a check with --sinks and no --sink-logits: DIR/sinks.npy (cplab::Error naming
// the file if missing, or as above)
std::vector<double> read_sink_logits(const std::string& inputs_dir, index_t heads);

// one tensor's checks, for every reader of a check's tensors: its header, whose shape must be
// `shape` (cplab::Error naming it, both shapes and dims, e.g. "(T, heads, v-head-dim)"); its data,
// NaN and inf refused (lse: -inf allowed; output: kept, evidence for error_map.h), the element named
const NpyHeader& check_source_shape(const TensorSource& src, const std::vector<std::int64_t>& shape, const std::string& dims);
std::vector<double> check_source_values(const TensorSource& src, bool lse, bool output = false);

// the same for a file (the inference check, infer_check.h): whether path exists (a path that cannot
// be looked at is a cplab::Error naming the reason); its header; its data
bool check_path_exists(const std::string& path);
NpyHeader check_npy_header(const std::string& path, const std::vector<std::int64_t>& shape, const std::string& dims);
std::vector<double> check_npy_data(const std::string& path, const NpyHeader& header, bool lse);

}  // namespace cplab
