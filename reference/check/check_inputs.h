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
// What it is not: the comparison (error_map.h) or the sizes' own rules (modes/cp_spec.h).
#pragma once

#include <array>
#include <string>

#include "modes/cp_spec.h"
#include "run/experiment.h"
#include "run/npy.h"

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
  std::string source;             // "DIR/o.npy" or "DIR/rank{0..7}/o.npy"
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
  std::string inputs_dir, outputs_dir;
  std::array<NpyDtype, 4> input_dtypes{};  // q, k, v, do
  std::array<ClaimedTensor, kCheckTensors> out;
  ClaimedSinkGrad dsinks;
  bool backward() const { return out[idx(CheckTensor::dq)].present; }
};

// the (S, h, 1) LSE tensor of an (h, S) Rows, and back
Tensor3<double> lse_tensor(const Rows<double>& lse);
Rows<double> lse_rows(const Tensor3<double>& lse);

// the sink logits of a check with --sinks and no --sink-logits: DIR/sinks.npy, 1-d (cplab::Error
// naming the file if missing, not of shape (heads,), or not finite)
std::vector<double> read_sink_logits(const std::string& inputs_dir, index_t heads);

// one file's checks, for the inference check (infer_check.h) to read its files by the same rules:
// whether path exists (a path that cannot be looked at is a cplab::Error naming the reason); its
// header, whose shape must be `shape` (cplab::Error naming the file, both shapes and dims, e.g.
// "(T, heads, v-head-dim)"); its data, NaN and inf refused (lse: -inf allowed), the element named
bool check_path_exists(const std::string& path);
NpyHeader check_npy_header(const std::string& path, const std::vector<std::int64_t>& shape, const std::string& dims);
std::vector<double> check_npy_data(const std::string& path, const NpyHeader& header, bool lse);

// Reads and checks every file for spec (cplab::Error naming the file and the rule); the headers of
// all of them first, then the data. With spec.sinks() the sink logits are spec's (CpFields::sink_logits).
CheckData load_check_data(const CpSpec& spec, const std::string& inputs_dir, const std::string& outputs_dir);

}  // namespace cplab
