#include "publisher.h"

#include <algorithm>
#include <utility>

#include "chessrl/core/backoff.h"

namespace chessrl::train {

PublishCadence::PublishCadence(std::int64_t every_steps, double every_seconds,
                               Clock::time_point start)
    : every_steps_(std::max<std::int64_t>(every_steps, 0)),
      every_(every_seconds > 0 ? std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(every_seconds))
                               : Clock::duration::zero()),
      last_(start) {}

bool PublishCadence::due(std::int64_t step, Clock::time_point now) {
  const bool by_steps = every_steps_ > 0 && step % every_steps_ == 0;
  const bool by_time = every_.count() > 0 && now - last_ >= every_;
  if (!by_steps && !by_time) return false;
  last_ = now;
  return true;
}

BackgroundPublisher::BackgroundPublisher(PublishFn publish, LogFn log, Options options,
                                         OutcomeFn outcome)
    : s_(std::make_shared<Shared>()) {
  s_->publish = std::move(publish);
  s_->log = std::move(log);
  s_->outcome = std::move(outcome);
  s_->options = options;
  thread_ = std::thread(run, s_);
}

BackgroundPublisher::~BackgroundPublisher() {
  bool busy = false;
  {
    std::lock_guard lock(s_->mu);
    s_->stopping = true;
    busy = s_->busy;
    if (busy) {
      s_->abandoned = true;
      s_->counts.abandoned = true;
    }
    s_->cv.notify_all();
  }
  // A call in flight may block for its whole deadline: not waited for.
  if (busy)
    thread_.detach();
  else
    thread_.join();
}

void BackgroundPublisher::offer(nn::Checkpoint model, std::int64_t step) {
  std::lock_guard lock(s_->mu);
  if (s_->stopping) return;
  if (s_->pending) {
    ++s_->counts.skipped;
    s_->log("publishing step " + std::to_string(s_->pending->second) + " skipped: step " +
            std::to_string(step) + " replaces it before the registry took it");
  }
  s_->pending.emplace(std::move(model), step);
  s_->cv.notify_all();
}

bool BackgroundPublisher::finish(std::chrono::milliseconds wait) {
  std::unique_lock lock(s_->mu);
  const bool done = s_->cv.wait_for(lock, wait, [&] { return !s_->pending && !s_->busy; });
  if (!done) {
    s_->log("publishing: giving up on step " +
            std::to_string(s_->pending ? s_->pending->second : std::int64_t(-1)) + " after " +
            std::to_string(wait.count()) + " ms at the stop (the registry does not answer)");
    s_->counts.abandoned = s_->busy;
  }
  s_->stopping = true;
  s_->cv.notify_all();
  return done;
}

PublisherCounts BackgroundPublisher::counts() const {
  std::lock_guard lock(s_->mu);
  return s_->counts;
}

void BackgroundPublisher::run(std::shared_ptr<Shared> s) {
  std::unique_lock lock(s->mu);
  for (;;) {
    s->cv.wait(lock, [&] { return s->stopping || s->pending; });
    if (s->stopping) return;
    auto [model, step] = std::move(*s->pending);
    s->pending.reset();
    s->busy = true;
    // One trainer: the jitter only keeps the waits from being exactly regular.
    Backoff backoff({.initial = s->options.first_backoff,
                     .max = s->options.max_backoff,
                     .jitter = BackoffPolicy::Jitter::kEqual,
                     .deadline = std::nullopt});
    for (int attempt = 1;; ++attempt) {
      lock.unlock();
      auto version = s->publish(model);
      lock.lock();
      if (s->abandoned) return;  // the owner is gone
      if (s->outcome) s->outcome(version ? std::optional<std::uint64_t>(*version) : std::nullopt);
      if (version) {
        ++s->counts.published;
        s->log("published step " + std::to_string(step) + " as model version " +
               std::to_string(*version));
        break;
      }
      ++s->counts.failed;
      const bool replaced = bool(s->pending);
      if (s->stopping || replaced) {
        if (replaced) ++s->counts.skipped;
        s->log("publishing step " + std::to_string(step) + " failed" +
               (replaced ? " (a newer model replaces it)" : "") + ": " + version.error());
        break;
      }
      const std::chrono::milliseconds wait = backoff.next().value_or(s->options.max_backoff);
      s->log("publishing step " + std::to_string(step) + " failed (attempt " +
             std::to_string(attempt) + ", retrying in " + std::to_string(wait.count()) +
             " ms; training goes on): " + version.error());
      s->cv.wait_for(lock, wait, [&] { return s->stopping || bool(s->pending); });
      if (s->stopping || s->pending) {
        if (s->pending) ++s->counts.skipped;
        break;
      }
    }
    s->busy = false;
    s->cv.notify_all();
  }
}

}  // namespace chessrl::train
