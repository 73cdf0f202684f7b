// RegistryHealth: whether the model registry has answered lately, for
// /healthz. Calls report successes and failures; reason() is empty until
// failures have lasted longer than the threshold with no success between.
// Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace chessrl::evaluator_service {

class RegistryHealth {
 public:
  using Clock = std::chrono::steady_clock;

  RegistryHealth(std::string address, std::chrono::seconds threshold)
      : address_(std::move(address)), threshold_(threshold) {}

  // Returns true when this ends a run of failures (to log the recovery).
  bool succeeded(Clock::time_point now = Clock::now());
  // Returns true for the first failure of a run (to log it once).
  bool failed(const std::string& error, Clock::time_point now = Clock::now());

  // "" when healthy, else "model registry <address> unreachable for 75 s: <error>".
  std::string reason(Clock::time_point now = Clock::now()) const;

 private:
  std::string address_;
  std::chrono::seconds threshold_;
  mutable std::mutex mutex_;
  bool failing_ = false;
  Clock::time_point failing_since_{};
  std::string last_error_;
};

}  // namespace chessrl::evaluator_service
