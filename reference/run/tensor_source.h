// tensor_source.h: one tensor to read, from a .npy file or from memory, named as its messages name it.
//
// What it is: TensorSource, a tensor `cplab check` or `cplab run` reads: its name (what every message
// about it says: a file's path, or for memory the argument, e.g. "q", "outputs['o']",
// "outputs[2]['o']"), its header (shape in C order, dtype float16 / bfloat16 / float32 / float64:
// NpyDtype, element count) and its values: a file's data, read with npy_read once its header was
// checked, or C-contiguous little-endian elements of that dtype in memory that the caller keeps
// alive (and unchanged) while the source is used. values() converts exactly, as npy_read does (the
// same code, npy_to_double); f8_data() gives in-memory float64 elements in place.
// A file's header is read on first use (header(), shape(), dtype()): the rules that come before
// it (a file missing, a size given elsewhere) keep their order, and a malformed file is a
// cplab::Error naming it there (run/npy.h). source_tensor makes the (n, h, d) tensor of a source.
// What it is not: the rules of a check or a run (check/check_inputs.h, app/run_files.h), or a
// general array view: no strides, no big-endian or integer elements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "run/npy.h"

namespace cplab {

class TensorSource {
 public:
  // a .npy file; name = path (its header is read on first use)
  static TensorSource file(const std::string& path);
  // a .npy file whose header the caller read with npy_read_header (values() checks it still says so)
  static TensorSource file(const std::string& path, const NpyHeader& header);
  // count(shape) elements of dtype at data, C order, little-endian; cplab::Error naming `name` if a
  // shape entry is negative, the count overflows, or data is null with elements to read
  static TensorSource memory(const std::string& name, const std::vector<std::int64_t>& shape, NpyDtype dtype,
                             const void* data);

  std::string name;  // in every message: "DIR/q.npy", "q", "outputs[2]['o']"

  bool in_memory() const { return !is_file_; }
  // shape, dtype, count (data_offset: 0 in memory); a file's is read the first time (cplab::Error)
  const NpyHeader& header() const;
  const std::vector<std::int64_t>& shape() const { return header().shape; }
  NpyDtype dtype() const { return header().dtype; }
  // every element as a double, C order (a file: cplab::Error if it changed since its header was read)
  std::vector<double> values() const;
  // in-memory float64: the caller's elements, to use in place; nullptr otherwise
  const double* f8_data() const;

 private:
  bool is_file_ = true;
  const void* data_ = nullptr;                  // memory only
  mutable std::optional<NpyHeader> header_;     // a file's: read on first use
};

// the (n, h, d) tensor of src, whose shape the caller checked is (n, h, d): its values(), or for
// in-memory float64 the caller's elements themselves (Tensor3::borrow: read in place, never written;
// the caller keeps them alive while the tensor and its copies live)
Tensor3<double> source_tensor(const TensorSource& src, index_t n, index_t h, index_t d);

}  // namespace cplab
