// npy.h: read and write NumPy .npy files holding little-endian float arrays.
//
// What it is: npy_read_header, which reads and checks a file's preamble and header dict and compares
// the data size the shape needs with the file size, reading no data (a caller checks the shape
// against the sizes it knows, and the memory the data needs against its limit, before anything is
// allocated: cplab run does); npy_read, which then loads a C-ordered '<f2' (float16), bfloat16,
// '<f4' or '<f8' array (format 1.0, 2.0 or 3.0) into doubles (every value exactly); and npy_write, which saves a C-ordered float or double buffer as
// format 1.0 ('<f4' / '<f8'), header space-padded and '\n'-terminated so the data starts on a 64-byte
// boundary, like NumPy. Every malformed or unsupported file throws cplab::Error naming the file and
// the rule broken; element counts go through core/checked.h; a failed allocation of the data is
// "out of memory allocating N GiB for the data of <path>" (core/alloc.h).
// bfloat16: NumPy has no bfloat16; ml_dtypes' bfloat16 (JAX, TensorFlow, Keras) is saved by np.save
// as the 2-byte void dtype '<V2' (or '|V2'), and some tools write the header descr 'bfloat16'. All
// three are read as bfloat16: a 2-byte void array is assumed to hold bfloat16 values.
// What it is not: a general .npy library. No integer, complex, structured or big-endian dtypes, no
// Fortran order, no .npz archives, no memory mapping, no pickled object arrays. It writes float32
// and float64 only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/error.h"

namespace cplab {

enum class NpyDtype { f4, f8, f2, bf16 };  // little-endian float32 / float64 / float16 / bfloat16

// "float32", "float64", "float16", "bfloat16"
std::string npy_dtype_name(NpyDtype dtype);

struct NpyArray {
  NpyDtype dtype;
  std::vector<std::int64_t> shape;  // C order
  std::vector<double> values;       // converted to double, C order, size == product(shape)
};

// "(2, 3, 4)", "(7,)", "()": a shape as NumPy prints it, for messages
std::string npy_shape_string(const std::vector<std::int64_t>& shape);

// What a file's header says, every rule checked and the data size equal to what the file holds.
struct NpyHeader {
  NpyDtype dtype = NpyDtype::f8;
  std::vector<std::int64_t> shape;  // C order
  std::int64_t count = 0;           // product(shape): elements
  std::int64_t data_offset = 0;     // bytes before the data
};
std::int64_t npy_itemsize(NpyDtype dtype);  // 4, 8, 2 or 2

// Reads path's header only; throws cplab::Error ("<path>: <rule broken>") on any malformed or
// unsupported file, or one whose data is shorter or longer than the shape needs.
NpyHeader npy_read_header(const std::string& path);
// Reads path (header, then data); the same errors.
NpyArray npy_read(const std::string& path);
// Reads the data of a file whose header was read (and checked by the caller) with npy_read_header;
// cplab::Error if the header no longer says the same.
NpyArray npy_read(const std::string& path, const NpyHeader& expected);

// The count little-endian elements of dtype at raw (count * npy_itemsize(dtype) bytes, any
// alignment) as doubles, every value exactly, to out[0, count): the conversion npy_read applies to
// a file's data, for the same data in memory (run/tensor_source.h).
void npy_to_double(const std::byte* raw, std::size_t count, NpyDtype dtype, double* out);

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
