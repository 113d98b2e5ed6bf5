// test_tensor_borrow.cpp: Tensor3 over borrowed memory (core/buffer.h, Tensor3::borrow).
//
// What it is: a borrowing tensor reads the lender's pointer itself (const access, copies), copies it
// on the first non-const access and never writes into it; run_experiment on borrowed Q, K, V, dO
// gives bit-identical results to owned ones and copies none of them (Buffer::detaches); the bad
// borrows are refused with one line.
// What it is not: the Python binding (python/ checks the NumPy side: the address it hands over).
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "run/experiment.h"

using namespace cplab;

TEST_CASE("borrow: const access reads the lender's memory, a write copies it first and leaves it unchanged") {
  const std::vector<double> mem = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // (2, 3, 2)
  const Tensor3<double> x = Tensor3<double>::borrow(mem.data(), 2, 3, 2);
  CHECK(x.borrowed());
  CHECK(x.data.borrowed());
  CHECK(x.data.data() == mem.data());
  CHECK(x.data.begin() == mem.data());
  CHECK(x.data.end() == mem.data() + 12);
  CHECK(&x.data[5] == mem.data() + 5);
  CHECK(x.token(1) == mem.data() + 6);
  CHECK(x.view().data == mem.data());
  CHECK(x.at(1, 2, 1) == 12.0);
  double sum = 0;
  for (double e : x.data) sum += e;  // const range-for
  CHECK(sum == 78.0);
  CHECK(x.data == mem);

  // a copy borrows the same memory
  const std::size_t before = Buffer<double>::detaches();
  Tensor3<double> y = x;
  CHECK(y.borrowed());
  CHECK(std::as_const(y).data.data() == mem.data());
  CHECK(Buffer<double>::detaches() == before);

  // a non-const access detaches the copy only: the lender's memory and x are unchanged
  y.data[0] = -1.0;
  CHECK(!y.borrowed());
  CHECK(Buffer<double>::detaches() == before + 1);
  CHECK(std::as_const(y).data.data() != mem.data());
  CHECK(y.data[0] == -1.0);
  CHECK(y.data[11] == 12.0);
  CHECK(mem[0] == 1.0);
  CHECK(x.borrowed());
  CHECK(x.data.data() == mem.data());

  // every non-const route detaches: data(), begin()/end() (in either order), at, token, view, range-for, assign
  auto fresh = [&] { return Tensor3<double>::borrow(mem.data(), 2, 3, 2); };
  {
    Tensor3<double> z = fresh();
    double* e = z.data.end();
    double* b = z.data.begin();
    CHECK(e - b == 12);
    CHECK(b != mem.data());
  }
  {
    Tensor3<double> z = fresh();
    z.at(0, 0, 1) = 7;
    CHECK(!z.borrowed());
  }
  {
    Tensor3<double> z = fresh();
    CHECK(z.token(1) != mem.data() + 6);
    CHECK(!z.borrowed());
  }
  {
    Tensor3<double> z = fresh();
    CHECK(z.view().data != mem.data());
  }
  {
    Tensor3<double> z = fresh();
    for (double& e : z.data) e = 0;
    CHECK(z.data[3] == 0.0);
  }
  {
    Tensor3<double> z = fresh();
    z.data.assign(mem.rbegin(), mem.rend());
    CHECK(!z.borrowed());
    CHECK(z.data[0] == 12.0);
  }
  {
    Tensor3<double> z = fresh();
    z.data = std::vector<double>(12, 3.0);
    CHECK(!z.borrowed());
  }
  CHECK(mem == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});

  // moving moves the borrow; an owned tensor copies as before
  Tensor3<double> m = fresh();
  Tensor3<double> moved = std::move(m);
  CHECK(moved.borrowed());
  CHECK(std::as_const(moved).data.data() == mem.data());
  Tensor3<double> owned(2, 3, 2);
  const Tensor3<double> owned_copy = owned;
  CHECK(!owned_copy.borrowed());
  CHECK(owned_copy.data.data() != std::as_const(owned).data.data());
  const std::vector<double> as_vector = x.data;  // a copy out, as std::vector
  CHECK(as_vector == mem);
}

TEST_CASE("borrow: a null pointer or an impossible shape is refused with one line") {
  CHECK_THROWS_WITH_AS(Tensor3<double>::borrow(nullptr, 2, 3, 4), "borrowing an (2, 3, 4) tensor: the data pointer is null",
                       Error);
  CHECK(Tensor3<double>::borrow(nullptr, 0, 3, 4).numel() == 0);  // nothing to read
  const double one = 1;
  CHECK_THROWS_AS(Tensor3<double>::borrow(&one, -1, 1, 1), Error);
}

TEST_CASE("borrow: run_experiment on borrowed inputs is bit-identical and copies none of them") {
  CpFields f;
  f.mode = Mode::p2p;
  f.layout = Layout::zigzag;
  f.causal = true;
  f.cp = 2;
  f.seq = 16;
  f.heads = 4;
  f.kv_heads = 2;
  f.head_dim = 8;
  for (const char* dtype : {"double", "float"}) {
    CAPTURE(dtype);
    RunSpec s{CpSpec(f), true};
    s.dtype = dtype;
    s.seed = 5;
    const Inputs owned = make_inputs(s);
    auto lend = [](const Tensor3<double>& x) { return Tensor3<double>::borrow(x.data.data(), x.n, x.h, x.d); };
    const Inputs lent{lend(owned.q), lend(owned.k), lend(owned.v), lend(owned.dout), owned.sinks};
    const std::size_t before = Buffer<double>::detaches();
    const RunReport a = run_experiment(s, owned), b = run_experiment(s, lent);
    CHECK(Buffer<double>::detaches() == before);  // no borrowed input was copied on a write
    CHECK(lent.q.data.borrowed());
    CHECK(lent.k.data.borrowed());
    CHECK(lent.v.data.borrowed());
    CHECK(lent.dout.data.borrowed());
    CHECK(lent.q.data.data() == owned.q.data.data());
    CHECK(a.o.data == b.o.data);
    CHECK(a.dq.data == b.dq.data);
    CHECK(a.dk.data == b.dk.data);
    CHECK(a.dv.data == b.dv.data);
    CHECK((a.lse == b.lse).all());
    CHECK(*a.err_o == *b.err_o);
    CHECK(*a.err_dk == *b.err_dk);
  }
}
