#include "registry_health.h"

namespace chessrl::evaluator_service {

bool RegistryHealth::succeeded(Clock::time_point) {
  std::lock_guard lock(mutex_);
  const bool was_failing = failing_;
  failing_ = false;
  last_error_.clear();
  return was_failing;
}

bool RegistryHealth::failed(const std::string& error, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  last_error_ = error;
  if (failing_) return false;
  failing_ = true;
  failing_since_ = now;
  return true;
}

std::string RegistryHealth::reason(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  if (!failing_) return "";
  if (now - failing_since_ <= threshold_) return "";
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - failing_since_);
  return "model registry " + address_ + " unreachable for " + std::to_string(seconds.count()) +
         " s: " + last_error_;
}

}  // namespace chessrl::evaluator_service
