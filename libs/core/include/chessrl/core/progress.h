// Progress: a process says what it is doing and how soon it will say so
// again; /healthz (a liveness probe, chessrl local's supervisor) reads from
// it whether the process still moves. A step loop beats once a step, a wait
// with a known reason beats while it waits, a rendezvous beats with its own
// timeout as the bound. A process that stays in one beat past its bound
// (a write on a wedged volume, a collective that never returns) is stalled:
// restarting it is the remedy. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace chessrl {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // Before any beat the process is "starting" with `startup_bound`.
  explicit Progress(Clock::duration startup_bound = std::chrono::minutes(10));

  // Now doing `what`; the next beat comes within `bound`.
  void beat(std::string what, Clock::duration bound);

  // "" while the last beat is within its bound; otherwise the reason, e.g.
  // "no progress for 412 s: still in 'training step 1200' (expected within 300 s)".
  std::string stalled(Clock::time_point now = Clock::now()) const;

  // What the last beat said.
  std::string doing() const;

 private:
  mutable std::mutex mutex_;
  std::string what_ = "starting";
  Clock::time_point since_;
  Clock::duration bound_;
};

}  // namespace chessrl
