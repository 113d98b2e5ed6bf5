// tensor_source.cpp: a tensor to read from a .npy file or from memory (tensor_source.h).
#include "run/tensor_source.h"

#include <cstddef>

#include "core/alloc.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"

namespace cplab {

TensorSource TensorSource::file(const std::string& path) {
  TensorSource s;
  s.name = path;
  return s;
}

TensorSource TensorSource::file(const std::string& path, const NpyHeader& header) {
  TensorSource s = file(path);
  s.header_ = header;
  return s;
}

TensorSource TensorSource::memory(const std::string& name, const std::vector<std::int64_t>& shape, NpyDtype dtype,
                                  const void* data) {
  const std::string too_many = name + ": shape " + npy_shape_string(shape) + " has too many elements";
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    require(d >= 0, name + ": shape " + npy_shape_string(shape) + " has a negative entry");
    count = mul_checked(count, d, too_many);
  }
  mul_checked(count, npy_itemsize(dtype), too_many);  // its bytes too
  require(count == 0 || data != nullptr, name + ": shape " + npy_shape_string(shape) + " but no data (a null pointer)");
  TensorSource s;
  s.name = name;
  s.is_file_ = false;
  s.data_ = data;
  s.header_ = NpyHeader{dtype, shape, count, 0};
  return s;
}

const NpyHeader& TensorSource::header() const {
  if (!header_) header_ = npy_read_header(name);
  return *header_;
}

std::vector<double> TensorSource::values() const {
  if (is_file_) return npy_read(name, header()).values;
  const NpyHeader& h = *header_;
  std::vector<double> v = alloc_vector<double>(static_cast<std::size_t>(h.count), [&] { return "the data of " + name; });
  npy_to_double(static_cast<const std::byte*>(data_), v.size(), h.dtype, v.data());
  return v;
}

const double* TensorSource::f8_data() const {
  return !is_file_ && header_->dtype == NpyDtype::f8 ? static_cast<const double*>(data_) : nullptr;
}

Tensor3<double> source_tensor(const TensorSource& src, index_t n, index_t h, index_t d) {
  require(src.shape() == std::vector<std::int64_t>{n, h, d},
          src.name + ": has shape " + npy_shape_string(src.shape()) + ", not (" + num(n) + ", " + num(h) + ", " + num(d) + ")");
  // in-memory float64: the caller's elements, read in place (core/buffer.h: copy-on-write, so nothing
  // of cplab ever writes into them)
  if (const double* p = src.f8_data()) return Tensor3<double>::borrow(p, n, h, d);
  Tensor3<double> x;  // takes the values over (no second whole-size buffer)
  x.n = n, x.h = h, x.d = d;
  x.data = src.values();
  return x;
}

}  // namespace cplab
