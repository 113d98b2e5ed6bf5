// check_binding.cpp: cplab._cplab._check, `cplab check` on arrays (the Python layer's cplab.check
// wraps it in a CheckReport, python/cplab/_check.py).
//
// What it is: _check(args, inputs, outputs) -> (text, json, exit_status): inputs a dict of arrays
// (q, k, v, optional do, sinks), outputs a dict (o, optional lse, dq, dk, dv, dsinks: global token
// order) or a list of per-rank dicts (each rank's local order), every array as arrays.h takes it;
// app/embedded.h's check_embedded applies the command line's rules, naming the argument
// ("outputs['dq']", "outputs[2]['o']"); the text and JSON are check_text and check_json, as
// `cplab check` and `cplab check --json` print them. The GIL is released and Ctrl-C honoured.
// What it is not: the check (reference/check/) or its rules (check/check_inputs.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "arrays.h"
#include "call.h"
#include "embedded.h"

namespace cplab::py {

namespace nb = nanobind;

namespace {

std::string quoted(const std::string& key) { return "['" + key + "']"; }

// a dict of arrays as named sources; keys must be strings
std::map<std::string, TensorSource> dict_sources(ArrayHold& hold, nb::handle d, const std::string& name) {
  if (!nb::isinstance<nb::dict>(d))
    throw nb::type_error((name + " must be a dict of arrays (name -> array), got " +
                          std::string(nb::type_name(d.type()).c_str())).c_str());
  std::map<std::string, TensorSource> out;
  for (auto [key, value] : nb::borrow<nb::dict>(d)) {
    if (!nb::isinstance<nb::str>(key))
      throw nb::type_error((name + " has a key that is not a string (" + std::string(nb::type_name(key.type()).c_str()) + ")").c_str());
    const std::string k = nb::cast<std::string>(key);
    out.emplace(k, hold.source(value, name + quoted(k)));
  }
  return out;
}

}  // namespace

void bind_check(nb::module_& m) {
  m.def(
      "_check",
      [](const std::vector<std::string>& args, nb::handle inputs, nb::handle outputs) {
        ArrayHold hold;
        CheckSources s;
        s.inputs_name = "inputs";
        s.outputs_name = "outputs";
        s.inputs = dict_sources(hold, inputs, "inputs");
        if (nb::isinstance<nb::list>(outputs) || nb::isinstance<nb::tuple>(outputs)) {
          size_t r = 0;
          for (nb::handle d : outputs) s.shards.push_back(dict_sources(hold, d, "outputs[" + std::to_string(r++) + "]"));
        } else {
          s.outputs = dict_sources(hold, outputs, "outputs");
        }
        std::string text, json;
        int status = 0;
        interruptible([&] {
          const CheckReport r = app::check_embedded(args, s);
          text = check_text(r);
          json = check_json(r).dump(2);
          status = r.exit_status();
        });
        return nb::make_tuple(text, json, status);
      },
      nb::arg("args"), nb::arg("inputs"), nb::arg("outputs"));
}

}  // namespace cplab::py
