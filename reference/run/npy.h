// npy.h: read and write NumPy .npy files holding little-endian float32 / float64 arrays.
//
// What it is: npy_read, which loads a C-ordered '<f4' or '<f8' array (format 1.0, 2.0 or 3.0) into
// doubles, and npy_write, which saves a C-ordered float or double buffer as format 1.0 ('<f4' /
// '<f8'), header space-padded and '\n'-terminated so the data starts on a 64-byte boundary, like
// NumPy. Every malformed or unsupported file throws cplab::Error naming the file and the rule broken;
// the data size is checked against the file size before anything is allocated.
// What it is not: a general .npy library. No integer, complex, structured or big-endian dtypes, no
// Fortran order, no .npz archives, no memory mapping, no pickled object arrays.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/error.h"

namespace cplab {

enum class NpyDtype { f4, f8 };  // little-endian float32 / float64

struct NpyArray {
  NpyDtype dtype;
  std::vector<std::int64_t> shape;  // C order
  std::vector<double> values;       // converted to double, C order, size == product(shape)
};

// "(2, 3, 4)", "(7,)", "()": a shape as NumPy prints it, for messages
std::string npy_shape_string(const std::vector<std::int64_t>& shape);

// Reads path; throws cplab::Error ("<path>: <rule broken>") on any malformed or unsupported file.
NpyArray npy_read(const std::string& path);

// Writes a C-ordered array of product(shape) elements (data may be null when that is 0), whole or
// not at all (core/output_file.h: an existing file is replaced only by a complete new one).
// Throws cplab::Error if a shape entry is negative, shape has more than 64 dimensions (the reader's
// limit; NumPy's is 32), or the file cannot be written.
void npy_write(const std::string& path, const std::vector<std::int64_t>& shape, const float* data);   // '<f4'
void npy_write(const std::string& path, const std::vector<std::int64_t>& shape, const double* data);  // '<f8'
// The same bytes to a stream (e.g. an OutputSet's fill); name is the file named in messages.
void npy_write(std::ostream& out, const std::string& name, const std::vector<std::int64_t>& shape, const float* data);
void npy_write(std::ostream& out, const std::string& name, const std::vector<std::int64_t>& shape, const double* data);

}  // namespace cplab
