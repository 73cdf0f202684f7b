// Rank 0's model publishing, off the step loop: one background thread, a
// queue of one (a newer model replaces one not yet sent, counted as
// skipped), retries with backoff. Training never waits on the registry; at
// the end, finish() gives the queued model a bounded time to go out, and a
// call still in flight after that is abandoned: the thread is detached and
// never touches the publisher's owner again (the publish function must own
// what it uses; the process should exit without waiting for it).
// Internal to libs/train; no LibTorch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "chessrl/core/result.h"
#include "chessrl/nn/checkpoint.h"

namespace chessrl::train {

struct PublisherCounts {
  std::uint64_t published = 0;  // models the registry took
  std::uint64_t skipped = 0;    // replaced by a newer one before they went out
  std::uint64_t failed = 0;     // attempts that failed (each retry counts)
  bool abandoned = false;       // a call was still in flight at the end
};

// When rank 0 offers a model: at every multiple of `every_steps` steps (0:
// not by steps), and also once `every_seconds` have passed since the last
// model offered or since training started (0: not by time), whichever comes
// first. The time cadence keeps versions coming at a steady rate however
// fast steps are; the step cadence alone is what it always was.
class PublishCadence {
 public:
  using Clock = std::chrono::steady_clock;
  PublishCadence(std::int64_t every_steps, double every_seconds, Clock::time_point start);
  bool enabled() const { return every_steps_ > 0 || every_.count() > 0; }
  // Whether the model after `step` is due at `now`; when it is, the time
  // cadence starts again from `now`.
  bool due(std::int64_t step, Clock::time_point now);

 private:
  std::int64_t every_steps_;
  Clock::duration every_;
  Clock::time_point last_;
};

class BackgroundPublisher {
 public:
  using PublishFn = std::function<Result<std::uint64_t>(const nn::Checkpoint&)>;
  using LogFn = std::function<void(const std::string&)>;
  // After each attempt (never after the publisher is gone): the version, or
  // nothing when the attempt failed.
  using OutcomeFn = std::function<void(std::optional<std::uint64_t>)>;
  struct Options {
    // The retries' chessrl::Backoff (equal jitter: each wait between half and
    // all of first_backoff * 2^n, at most max_backoff).
    std::chrono::milliseconds first_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
  };

  BackgroundPublisher(PublishFn publish, LogFn log, Options options, OutcomeFn outcome = {});
  BackgroundPublisher(PublishFn publish, LogFn log)
      : BackgroundPublisher(std::move(publish), std::move(log), Options{}) {}
  // Stops at once (finish() first to let the queued model out). A call in
  // flight is abandoned, not waited for.
  ~BackgroundPublisher();

  // Queues `model` (rank 0's weights at `step`) and returns at once.
  void offer(nn::Checkpoint model, std::int64_t step);
  // Gives the queued model, if any, until `wait` to go out, then stops
  // retrying. True when nothing was left unsent.
  bool finish(std::chrono::milliseconds wait);
  PublisherCounts counts() const;

 private:
  struct Shared {
    PublishFn publish;
    LogFn log;
    OutcomeFn outcome;
    Options options;
    std::mutex mu;
    std::condition_variable cv;
    std::optional<std::pair<nn::Checkpoint, std::int64_t>> pending;
    bool busy = false;       // a model is being sent (or retried)
    bool stopping = false;   // no more retries
    bool abandoned = false;  // the owner is gone: touch nothing of it
    PublisherCounts counts;
  };
  static void run(std::shared_ptr<Shared> s);

  std::shared_ptr<Shared> s_;
  std::thread thread_;
};

}  // namespace chessrl::train
