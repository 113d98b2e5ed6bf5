// arrays.cpp: Python arrays as TensorSources (arrays.h).
#include "arrays.h"

#include <cstring>

namespace cplab::py {

namespace {

std::string python_type(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

// the NpyDtype of a DLPack dtype, or an error naming what was given
NpyDtype source_dtype(const nb::dlpack::dtype& t, bool bf16, const std::string& name) {
  using nb::dlpack::dtype_code;
  const auto code = static_cast<dtype_code>(t.code);
  if (t.lanes == 1) {
    if (bf16 && code == dtype_code::UInt && t.bits == 16) return NpyDtype::bf16;
    if (code == dtype_code::Float && t.bits == 64) return NpyDtype::f8;
    if (code == dtype_code::Float && t.bits == 32) return NpyDtype::f4;
    if (code == dtype_code::Float && t.bits == 16) return NpyDtype::f2;
    if (code == dtype_code::Bfloat && t.bits == 16) return NpyDtype::bf16;
  }
  const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string kind = t.code < 7 ? kinds[t.code] : "code " + std::to_string(t.code);
  throw nb::type_error((name + " has dtype " + kind + std::to_string(t.bits) +
                        (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "") +
                        ": cplab reads float16, bfloat16, float32 or float64 arrays")
                           .c_str());
}

}  // namespace

TensorSource ArrayHold::source(nb::handle obj, const std::string& name) {
  bool bf16 = false;
  if (nb::isinstance<nb::tuple>(obj) && nb::len(obj) == 2 && obj[1].is(nb::handle(Py_True))) {
    bf16 = true;
    obj = obj[0];
  }
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(obj, a, false))
    throw nb::type_error((name + " is a " + python_type(obj) +
                          ": cplab needs an array (NumPy, or an object with __dlpack__ or the buffer protocol, "
                          "e.g. a PyTorch CPU tensor)")
                             .c_str());
  if (a.device_type() != nb::device::cpu::value)
    throw nb::type_error((name + " is not in CPU memory (DLPack device type " + std::to_string(a.device_type()) +
                          "): cplab reads CPU arrays; move it first (tensor.cpu())")
                             .c_str());
  const NpyDtype dt = source_dtype(a.dtype(), bf16, name);
  std::vector<std::int64_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<std::int64_t>(a.shape(i));
  // C-contiguous (a dimension of size 1 may have any stride)?
  bool contiguous = true;
  std::int64_t want = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (shape[i] != 1 && a.stride(i) != want) contiguous = false;
    want *= shape[i];
  }
  views_.push_back(a);
  const std::int64_t item = npy_itemsize(dt);
  if (contiguous || want == 0)
    return TensorSource::memory(name, shape, dt, a.data());
  // one copy, C-ordered, of a strided view (element strides, possibly negative or zero)
  std::vector<std::byte>& c = copies_.emplace_back(static_cast<size_t>(want * item));
  const auto* base = static_cast<const std::byte*>(a.data());
  std::vector<std::int64_t> at(shape.size(), 0);
  for (std::int64_t n = 0; n < want; ++n) {
    std::int64_t off = 0;
    for (size_t i = 0; i < shape.size(); ++i) off += at[i] * a.stride(i);
    std::memcpy(c.data() + n * item, base + off * item, static_cast<size_t>(item));
    for (size_t i = shape.size(); i-- > 0;) {
      if (++at[i] < shape[i]) break;
      at[i] = 0;
    }
  }
  return TensorSource::memory(name, shape, dt, c.data());
}

}  // namespace cplab::py
