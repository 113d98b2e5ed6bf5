// run_binding.cpp: cplab._cplab.run and its result (the Python layer's cplab.run wraps them).
//
// What it is: _run(args, q, k, v, do, sinks) -> _RunResult: app/embedded.h's run_embedded on
// the arrays (arrays.h: float64 C-contiguous used in place), the GIL released and Ctrl-C honoured
// (call.h). _RunResult holds the RunReport; its outputs come out as read-only NumPy arrays over the
// report's own buffers (no copy: float runs hand out the float32 buffers the run computed, kept by
// RunSpec::keep_run_dtype), each keeping the result alive; shard(rank) copies rank r's tokens in its
// local order (the layout's Partition, as the ranks held them); report_json / trace_json are the
// command line's --json report and --trace file's text.
// What it is not: option parsing or rules (app/), or the result's Python API (python/cplab/_run.py).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "arrays.h"
#include "call.h"
#include "embedded.h"
#include "layout/layout.h"

namespace cplab::py {

namespace nb = nanobind;

namespace {

struct RunResult {
  std::shared_ptr<const RunReport> r;
  app::InputsSeen seen;
  double call_seconds = 0;  // the C++ call (run_embedded) alone, wall time: the baseline of the binding's overhead
};

template <class T>
nb::object view(nb::handle owner, const T* p, std::initializer_list<size_t> shape) {
  return nb::cast(nb::ndarray<nb::numpy, const T>(p, shape, owner), nb::rv_policy::reference);
}

// an output tensor (n, h, d): the float run's own float32 buffer when kept, else the doubles
nb::object tensor_out(nb::handle self, const Tensor3<double>& x, const Tensor3<float>& x32) {
  if (x32.numel() > 0) return view(self, x32.data.data(), {size_t(x32.n), size_t(x32.h), size_t(x32.d)});
  if (x.numel() == 0 && x.n == 0) return nb::none();
  return view(self, x.data.data(), {size_t(x.n), size_t(x.h), size_t(x.d)});
}

nb::object lse_out(nb::handle self, const RunReport& r) {
  if (r.lse32.size() > 0) return view(self, r.lse32.data(), {size_t(r.lse32.rows()), size_t(r.lse32.cols())});
  return view(self, r.lse.data(), {size_t(r.lse.rows()), size_t(r.lse.cols())});
}

// rank r's rows of x (global order) in its local order, as a new array
template <class T>
nb::object shard_of(const Partition& p, index_t rank, const Tensor3<T>& x) {
  const std::vector<index_t> idx = p.indices(rank);
  const size_t row = static_cast<size_t>(x.h * x.d);
  auto* buf = new T[idx.size() * row];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<T*>(q); });
  for (size_t i = 0; i < idx.size(); ++i) std::copy(x.token(idx[i]), x.token(idx[i]) + row, buf + i * row);
  return nb::cast(nb::ndarray<nb::numpy, T>(buf, {idx.size(), size_t(x.h), size_t(x.d)}, owner));
}
template <class T>
nb::object shard_rows_of(const Partition& p, index_t rank, const Rows<T>& x) {
  const std::vector<index_t> idx = p.indices(rank);
  auto* buf = new T[static_cast<size_t>(x.rows()) * idx.size()];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<T*>(q); });
  for (index_t h = 0; h < x.rows(); ++h)
    for (size_t i = 0; i < idx.size(); ++i) buf[static_cast<size_t>(h) * idx.size() + i] = x(h, idx[i]);
  return nb::cast(nb::ndarray<nb::numpy, T>(buf, {size_t(x.rows()), idx.size()}, owner));
}

}  // namespace

void bind_run(nb::module_& m) {
  nb::class_<RunResult>(m, "_RunResult")
      .def_prop_ro("o", [](nb::handle self) { const RunResult& s = nb::cast<const RunResult&>(self); return tensor_out(self, s.r->o, s.r->o32); })
      .def_prop_ro("lse", [](nb::handle self) { return lse_out(self, *nb::cast<const RunResult&>(self).r); })
      .def_prop_ro("dq", [](nb::handle self) { const RunResult& s = nb::cast<const RunResult&>(self); return tensor_out(self, s.r->dq, s.r->dq32); })
      .def_prop_ro("dk", [](nb::handle self) { const RunResult& s = nb::cast<const RunResult&>(self); return tensor_out(self, s.r->dk, s.r->dk32); })
      .def_prop_ro("dv", [](nb::handle self) { const RunResult& s = nb::cast<const RunResult&>(self); return tensor_out(self, s.r->dv, s.r->dv32); })
      .def_prop_ro("dsinks", [](nb::handle self) -> nb::object {
        const RunReport& r = *nb::cast<const RunResult&>(self).r;
        if (r.dsinks.empty()) return nb::none();
        return view(self, r.dsinks.data(), {r.dsinks.size()});
      })
      .def("report_json", [](const RunResult& s) { return report_json(*s.r).dump(2); })
      .def("trace_json", [](const RunResult& s) { return s.r->trace.to_json().dump(); })
      .def("write_trace", [](const RunResult& s, const std::string& path, bool chrome) { s.r->trace.write(path, chrome); })
      .def("shard", [](const RunResult& s, index_t rank) {
        const RunReport& r = *s.r;
        const Partition& p = r.spec.cp.partition();
        require(rank >= 0 && rank < r.spec.cp.P(),
                "rank " + std::to_string(rank) + " is not a rank of this run: it must be in [0, " + std::to_string(r.spec.cp.P() - 1) + "]");
        nb::dict d;
        const bool f32 = r.o32.numel() > 0;
        d["o"] = f32 ? shard_of(p, rank, r.o32) : shard_of(p, rank, r.o);
        d["lse"] = f32 ? shard_rows_of(p, rank, r.lse32) : shard_rows_of(p, rank, r.lse);
        if (r.dq.n > 0) {
          d["dq"] = f32 ? shard_of(p, rank, r.dq32) : shard_of(p, rank, r.dq);
          d["dk"] = f32 ? shard_of(p, rank, r.dk32) : shard_of(p, rank, r.dk);
          d["dv"] = f32 ? shard_of(p, rank, r.dv32) : shard_of(p, rank, r.dv);
        }
        return d;
      })
      .def("indices", [](const RunResult& s, index_t rank) {
        require(rank >= 0 && rank < s.r->spec.cp.P(), "rank " + std::to_string(rank) + " is not a rank of this run");
        return s.r->spec.cp.partition().indices(rank);
      })
      .def_prop_ro("output_addresses", [](const RunResult& s) {  // the C++ buffers the arrays view (tests)
        const RunReport& r = *s.r;
        const bool f32 = r.o32.numel() > 0;
        auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
        nb::dict d;
        d["o"] = at(f32 ? static_cast<const void*>(r.o32.data.data()) : r.o.data.data());
        d["lse"] = at(f32 ? static_cast<const void*>(r.lse32.data()) : r.lse.data());
        return d;
      })
      .def_ro("call_seconds", &RunResult::call_seconds)
      .def_prop_ro("inputs_seen", [](const RunResult& s) {
        nb::dict d;
        const char* names[] = {"q", "k", "v", "do"};
        for (int i = 0; i < 4; ++i)
          if (s.seen.address[i]) d[names[i]] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(s.seen.address[i]), s.seen.borrowed[i]);
        return d;
      });

  m.def(
      "_run",
      [](const std::vector<std::string>& args, nb::handle q, nb::handle k, nb::handle v, nb::handle dout, nb::handle sinks) {
        ArrayHold hold;
        std::optional<TensorSource> sq, sk, sv, sd, ss;
        if (!sinks.is_none()) ss = hold.source(sinks, "sinks");
        if (!q.is_none()) sq = hold.source(q, "q");
        if (!k.is_none()) sk = hold.source(k, "k");
        if (!v.is_none()) sv = hold.source(v, "v");
        if (!dout.is_none()) sd = hold.source(dout, "do");
        app::RunArrays a{sq ? &*sq : nullptr, sk ? &*sk : nullptr, sv ? &*sv : nullptr, sd ? &*sd : nullptr, ss ? &*ss : nullptr};
        RunResult res;
        res.r = interruptible_result<std::shared_ptr<const RunReport>>([&] {
          const auto t0 = std::chrono::steady_clock::now();
          auto r = std::make_shared<const RunReport>(app::run_embedded(args, a, &res.seen));
          res.call_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          return r;
        });
        return res;
      },
      nb::arg("args"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(), nb::arg("do").none(), nb::arg("sinks").none());
}

}  // namespace cplab::py
