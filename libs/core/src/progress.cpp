#include "chessrl/core/progress.h"

#include <utility>

namespace chessrl {

Progress::Progress(Clock::duration startup_bound) : since_(Clock::now()), bound_(startup_bound) {}

void Progress::beat(std::string what, Clock::duration bound) {
  const auto now = Clock::now();
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
  since_ = now;
  bound_ = bound;
}

std::string Progress::stalled(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  if (now - since_ <= bound_) return "";
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  return "no progress for " + std::to_string(duration_cast<seconds>(now - since_).count()) +
         " s: still in '" + what_ + "' (expected within " +
         std::to_string(duration_cast<seconds>(bound_).count()) + " s)";
}

std::string Progress::doing() const {
  std::lock_guard lock(mutex_);
  return what_;
}

}  // namespace chessrl
