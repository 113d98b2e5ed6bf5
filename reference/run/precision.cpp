// precision.cpp: parse_precision and its helpers (see precision.h).
#include "run/precision.h"

#include <sstream>

#include "core/error.h"

namespace cplab {

Precision parse_precision(const std::string& text) {
  const std::string head = "--precision '" + text + "': ";
  require(!text.empty(), "--precision needs stages such as inputs=bf16,accumulate=fp32,partials=bf16,merge=fp32");
  Precision p;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    require(eq != std::string::npos && eq > 0 && eq + 1 < item.size(),
            head + "each stage is name=dtype (inputs, accumulate, partials, merge), got '" + item + "'");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    auto dtype = [&](std::optional<DType>& slot) {
      require(!slot, head + name + " is given twice");
      try {
        slot = parse_dtype(value);
      } catch (const Error&) {
        throw Error(head + name + "=" + value + ": the dtype must be one of fp32, fp16, bf16");
      }
    };
    if (name == "inputs") dtype(p.inputs);
    else if (name == "partials") dtype(p.partials);
    else if (name == "merge") dtype(p.merge);
    else if (name == "accumulate") {
      require(!p.accumulate, head + "accumulate is given twice");
      require(value == "fp32" || value == "f32" || value == "fp64" || value == "f64",
              head + "accumulate=" + value + ": the arithmetic is fp32 or fp64");
      p.accumulate = value == "fp32" || value == "f32" ? "float" : "double";
    } else {
      throw Error(head + "unknown stage '" + name + "' (the stages: inputs, accumulate, partials, merge)");
    }
  }
  require(text.back() != ',', head + "ends with a comma");
  return p;
}

std::string to_string(const Precision& p) {
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : ",") + x; };
  if (p.inputs) add("inputs=" + to_string(*p.inputs));
  if (p.accumulate) add(std::string("accumulate=") + (*p.accumulate == "float" ? "fp32" : "fp64"));
  if (p.partials) add("partials=" + to_string(*p.partials));
  if (p.merge) add("merge=" + to_string(*p.merge));
  return s;
}

void apply_storage(const Precision& p, CpFields& f) {
  f.partials_dtype = p.partials;
  f.merge_dtype = p.merge;
}

void round_inputs(Inputs& in, DType t) {
  for (Tensor3<double>* x : {&in.q, &in.k, &in.v, &in.dout})
    round_in_place(x->data.data(), x->data.size(), t);
}

}  // namespace cplab
