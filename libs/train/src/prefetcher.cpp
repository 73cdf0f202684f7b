#include "prefetcher.h"

#include <algorithm>
#include <chrono>

namespace chessrl::train {

Prefetcher::Prefetcher(ExampleSource& source, std::int64_t first_step, int rank, int world,
                       int batch_size, int depth, bool pin,
                       std::function<void(const std::string&)> log, double value_q_ratio,
                       bool mask_illegal)
    : source_(source),
      next_step_(first_step),
      rank_(rank),
      world_(world),
      batch_size_(batch_size),
      depth_(std::size_t(std::max(depth, 1))),
      pin_(pin),
      value_q_ratio_(value_q_ratio),
      mask_illegal_(mask_illegal),
      log_(std::move(log)),
      thread_([this] { run(); }) {}

Prefetcher::~Prefetcher() {
  stop();
  thread_.join();
}

void Prefetcher::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

std::optional<Batch> Prefetcher::pop(const std::atomic<bool>& abandon,
                                     std::chrono::milliseconds grace,
                                     const std::function<void()>& waiting) {
  std::unique_lock lock(mu_);
  auto abandon_at = std::chrono::steady_clock::time_point::max();
  while (!stopping_ && queue_.empty()) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (waiting) {
      lock.unlock();
      waiting();
      lock.lock();
      if (stopping_ || !queue_.empty()) break;
    }
    if (abandon.load() && abandon_at == std::chrono::steady_clock::time_point::max())
      abandon_at = std::chrono::steady_clock::now() + grace;
    if (std::chrono::steady_clock::now() >= abandon_at) return std::nullopt;
  }
  if (queue_.empty()) return std::nullopt;
  Batch b = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return b;
}

void Prefetcher::run() {
  auto pause = std::chrono::milliseconds(250);
  int failures = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || queue_.size() < depth_; });
      if (stopping_) return;
    }
    auto examples = source_.fetch(next_step_, rank_, world_, batch_size_);
    fetches_returned_.fetch_add(1);
    if (!examples || examples->size() != std::size_t(batch_size_)) {
      const std::string why = examples ? "got " + std::to_string(examples->size()) + " of " +
                                             std::to_string(batch_size_) + " examples"
                                       : examples.error();
      // The first failure and then every tenth: a long outage stays readable.
      if (failures++ % 10 == 0)
        log_("data: fetching step " + std::to_string(next_step_) + "'s batch failed (" + why +
             "); retrying");
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, pause, [&] { return stopping_; });
      if (stopping_) return;
      pause = std::min(pause * 2, std::chrono::milliseconds(5000));
      continue;
    }
    if (failures > 0) log_("data: fetching works again after " + std::to_string(failures) + " failures");
    failures = 0;
    pause = std::chrono::milliseconds(250);
    Batch b = make_batch(*examples, pin_, value_q_ratio_, mask_illegal_);
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(b));
    ++next_step_;
    cv_.notify_all();
  }
}

}  // namespace chessrl::train
