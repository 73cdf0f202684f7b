// StopSignals: SIGTERM and SIGINT as a stop request, for services and tools
// that finish their work (a checkpoint, the games in progress) before exiting.
//
// Construct it at the top of main(), before any thread starts: it blocks both
// signals in the constructing thread, so every thread started afterwards
// inherits the mask, and one thread of its own takes them with sigwait, sets
// the flag and logs "<program>: SIGTERM: <what>" (a second signal: "<program>:
// SIGTERM again: already stopping") on stderr. Threads that libraries start
// before main() (OpenBLAS's pool) do not block the signals, so it also installs
// an async-signal-safe handler (an atomic and write(2)) that does the same.
//
// Only one may exist at a time (a second constructor throws chessrl::Error).
// Destroy it on the thread that made it (the end of main()): it joins its
// thread (which looks for that every 100 ms) and restores that thread's signal
// mask and the previous handlers. flag(),
// requested(), request() and wait_for() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace chessrl {

class StopSignals {
 public:
  // `program` prefixes the log lines; `what` says what happens now
  // ("stopping after this step (a checkpoint is written)").
  explicit StopSignals(std::string program, std::string what = "stopping");
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGTERM or SIGINT arrived or request() was called; never reset.
  const std::atomic<bool>& flag() const;
  bool requested() const { return flag().load(std::memory_order_relaxed); }
  // Sets the flag as if signalled (wakes wait_for), without a log line.
  void request();
  // Sleeps until stop is requested or `timeout` passes; true if requested.
  bool wait_for(std::chrono::milliseconds timeout) const;

 private:
  void watch();

  std::string program_, what_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace chessrl
