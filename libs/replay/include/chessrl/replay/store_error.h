// StoreResult<T>: what every ReplayStore and ModelStore call returns: a
// Result<T> whose failure also says what kind of failure it is, so the
// replay service answers with the right gRPC code and its clients know
// whether trying again can help (the table is in docs/replay.md, "Status
// codes"). A plain Failure (fail("...")) is kUnavailable: most store
// failures are Redis being unreachable or slow.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>

#include "chessrl/core/result.h"

namespace chessrl::replay {

enum class StoreErrorKind : std::uint8_t {
  kUnavailable,      // unreachable, timed out, busy: the same call may succeed later
  kDataLoss,         // stored data is damaged or missing (a CRC mismatch, a missing
                     // position, a record that does not parse): retrying reads it again
  kInvalidArgument,  // the request cannot succeed as asked (a count over the limit)
};

struct StoreFailure {
  StoreErrorKind kind = StoreErrorKind::kUnavailable;
  std::string message;
};

inline StoreFailure store_fail(StoreErrorKind kind, std::string message) {
  return StoreFailure{kind, std::move(message)};
}

template <class T>
class [[nodiscard]] StoreResult : public Result<T> {
 public:
  StoreResult(T value) : Result<T>(std::move(value)) {}            // NOLINT
  StoreResult(Failure failure) : Result<T>(std::move(failure)) {}  // NOLINT: kUnavailable
  StoreResult(Result<T> result) : Result<T>(std::move(result)) {}  // NOLINT: kUnavailable
  StoreResult(StoreFailure failure)                                // NOLINT
      : Result<T>(Failure{std::move(failure.message)}), kind_(failure.kind) {}

  // Precondition: !ok().
  StoreErrorKind kind() const {
    assert(!this->ok());
    return kind_;
  }
  // The failure with its kind, to pass on from a caller returning another
  // StoreResult. Precondition: !ok().
  StoreFailure failure() const { return StoreFailure{kind(), this->error()}; }

 private:
  StoreErrorKind kind_ = StoreErrorKind::kUnavailable;
};

}  // namespace chessrl::replay
