// Result<T>: a value or an error message, for failures callers are expected to
// handle (a bad FEN, an illegal move). Cheap to move; not thread-safe to share
// mutably. Use chessrl::Error (error.h) only at I/O and configuration boundaries.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "chessrl/core/error.h"

namespace chessrl {

// The error side of a Result: a human-readable message naming what is wrong.
struct Failure {
  std::string message;
};

inline Failure fail(std::string message) { return Failure{std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
  Result(Failure failure) : v_(std::move(failure)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Preconditions: ok() for value(), !ok() for error().
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const std::string& error() const {
    assert(!ok());
    return std::get<1>(v_).message;
  }

  // The value, or throws chessrl::Error with the message (for tools and tests).
  T value_or_throw() && {
    if (!ok()) throw Error(error());
    return std::get<0>(std::move(v_));
  }

 private:
  std::variant<T, Failure> v_;
};

// Result<void>: success or an error message, for operations with no value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure failure) : error_(std::move(failure.message)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& error() const {
    assert(!ok_);
    return error_;
  }
  // Throws chessrl::Error with the message when not ok (for tools and tests).
  void value_or_throw() const {
    if (!ok_) throw Error(error_);
  }

 private:
  std::string error_;
  bool ok_ = true;
};

}  // namespace chessrl
