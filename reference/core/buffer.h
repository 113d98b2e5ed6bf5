// buffer.h: the storage of a Tensor3 (core/tensor.h), a vector that either owns its elements or
// borrows someone else's read-only ones.
//
// What it is: Buffer<T>, with the std::vector-like interface the reference uses (data, size,
// begin/end, [], range-for, assign, ==, conversion to std::vector<T>). It holds a plain T* and a
// size, so element access costs what a vector's does. It either
//   - OWNS a std::vector<T> (the default: every Tensor3 the reference allocates), or
//   - BORROWS a const T* and a size (Buffer::borrow; Tensor3::borrow), e.g. a NumPy array's memory
//     handed over by the Python binding without a copy.
// Const access of a borrowing buffer (data() const, begin() const, operator[] const, const
// range-for) reads the borrowed memory itself. Any non-const access (data(), begin(), end(),
// operator[], assign, non-const range-for) first copies the borrowed elements into an owned
// vector (copy on write), so nothing ever writes into the lender's memory. Copying a borrowing
// buffer gives another borrowing one (cheap; each copy detaches on its own first write); moving
// moves.
// Lifetime: the CALLER who borrows keeps the borrowed memory alive and unchanged for as long as the
// buffer and every copy of it live (the Python binding holds a reference to the array for the call).
// Threads: the first non-const access of a borrowing buffer allocates and must not race with any
// other access of that buffer (detach() is not synchronised); an owning buffer behaves as a vector.
// What it is not: a general container. No resize, no push_back, no allocator; the owned vector is
// allocated by core/alloc.h (alloc_vector) so a failed detach says how much it wanted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/alloc.h"

namespace cplab {

template <class T>
class Buffer {
 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  Buffer() = default;
  Buffer(std::vector<T> v) : own_(std::move(v)), p_(own_.data()), n_(own_.size()) {}  // NOLINT: implicit by design
  // a buffer reading p[0, n) without copying it; p must outlive the buffer and its copies
  static Buffer borrow(const T* p, size_type n) {
    Buffer b;
    b.p_ = const_cast<T*>(p);  // never written through: every non-const access detaches first
    b.n_ = n;
    b.borrowed_ = true;
    return b;
  }
  Buffer(const Buffer& o) : own_(o.own_), p_(o.borrowed_ ? o.p_ : own_.data()), n_(o.n_), borrowed_(o.borrowed_) {}
  Buffer(Buffer&& o) noexcept : own_(std::move(o.own_)), p_(o.p_), n_(o.n_), borrowed_(o.borrowed_) { o.reset(); }
  Buffer& operator=(const Buffer& o) {
    if (this != &o) *this = Buffer(o);
    return *this;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      own_ = std::move(o.own_);
      p_ = o.p_, n_ = o.n_, borrowed_ = o.borrowed_;
      o.reset();
    }
    return *this;
  }
  Buffer& operator=(std::vector<T> v) { return *this = Buffer(std::move(v)); }

  bool borrowed() const { return borrowed_; }
  // how many borrowing Buffer<T> have copied their elements on a write, process-wide (the tests
  // check that a run never copies the inputs it borrows)
  static std::size_t detaches() { return detaches_.load(std::memory_order_relaxed); }
  size_type size() const { return n_; }
  bool empty() const { return n_ == 0; }

  const T* data() const { return p_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  const T* cbegin() const { return p_; }
  const T* cend() const { return p_ + n_; }
  const T& operator[](size_type i) const { return p_[i]; }

  T* data() { return own(); }
  T* begin() { return own(); }
  T* end() { return own() + n_; }  // detaches too: begin() and end() agree in either order of evaluation
  T& operator[](size_type i) { return own()[i]; }
  template <class It>
  void assign(It first, It last) {
    *this = Buffer(std::vector<T>(first, last));
  }
  void assign(size_type n, const T& value) { *this = Buffer(std::vector<T>(n, value)); }

  // a copy as a std::vector (moved out when this is an owning rvalue)
  operator std::vector<T>() const& { return std::vector<T>(begin(), end()); }  // NOLINT: implicit by design
  operator std::vector<T>() && {                                              // NOLINT
    if (borrowed_) return std::vector<T>(cbegin(), cend());
    std::vector<T> v = std::move(own_);
    reset();
    return v;
  }
  friend bool operator==(const Buffer& a, const Buffer& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator==(const Buffer& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<T> own_;  // the elements when owning; empty when borrowing
  T* p_ = nullptr;      // own_.data() when owning, the borrowed pointer when borrowing
  size_type n_ = 0;
  bool borrowed_ = false;
  static inline std::atomic<std::size_t> detaches_{0};

  T* own() {
    if (borrowed_) [[unlikely]]
      detach();
    return p_;
  }
  void detach() {  // copy on write: the borrowed elements into an owned vector
    std::vector<T> v = alloc_vector<T>(n_, [&] { return "a copy of " + std::to_string(n_) + " borrowed elements"; });
    std::copy(p_, p_ + n_, v.data());
    own_ = std::move(v);
    p_ = own_.data(), borrowed_ = false;
    detaches_.fetch_add(1, std::memory_order_relaxed);
  }
  void reset() { own_.clear(), p_ = nullptr, n_ = 0, borrowed_ = false; }
};

}  // namespace cplab
