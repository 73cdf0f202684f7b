// A background thread that fetches each step's examples from an
// ExampleSource, turns them into tensors and queues up to `depth` ready
// batches, so a training step never waits on the network while the source
// keeps up. A failed fetch is logged and retried after a pause (the replay
// service may be restarting). Internal to libs/train; pop() from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "batch.h"
#include "chessrl/train/source.h"

namespace chessrl::train {

class Prefetcher {
 public:
  Prefetcher(ExampleSource& source, std::int64_t first_step, int rank, int world, int batch_size,
             int depth, bool pin, std::function<void(const std::string&)> log,
             double value_q_ratio = 0, bool mask_illegal = false);
  ~Prefetcher();  // stops and joins the thread
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next step's batch, waiting for it. Gives up (nullopt) after stop(),
  // or once `abandon` has been true for `grace` (the caller was asked to stop
  // and the data does not come). `waiting`, if set, is called about every
  // 100 ms while it waits.
  std::optional<Batch> pop(const std::atomic<bool>& abandon, std::chrono::milliseconds grace,
                           const std::function<void()>& waiting = {});
  // Fetches that returned so far, successful or not: while it grows, the
  // source answers (a failing fetch is a wait with a reason); while it stands
  // still and pop() waits, a fetch hangs.
  std::uint64_t fetches_returned() const { return fetches_returned_.load(); }
  void stop();

 private:
  void run();

  ExampleSource& source_;
  std::int64_t next_step_;
  int rank_, world_, batch_size_;
  std::size_t depth_;
  bool pin_;
  double value_q_ratio_;
  bool mask_illegal_;
  std::function<void(const std::string&)> log_;
  std::atomic<std::uint64_t> fetches_returned_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace chessrl::train
