// Evaluator::run: the service loop. A watch thread records the newest version
// the registry announces; the loop also asks the registry every --poll
// seconds (which keeps the health status current while the watch stream
// only waits), and evaluates the newest version not yet evaluated; after an
// evaluation the registry failed, it tries again with backoff (chessrl::Backoff).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "chessrl/core/backoff.h"
#include "evaluator.h"

namespace chessrl::evaluator_service {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Sleeps up to `duration`, waking early when `stop` is raised or `wake` says so.
template <class Wake>
void nap(std::chrono::milliseconds duration, const std::atomic<bool>& stop, Wake&& wake) {
  const auto until = Clock::now() + duration;
  while (!stop.load() && !wake() && Clock::now() < until) std::this_thread::sleep_for(50ms);
}

}  // namespace

Result<void> Evaluator::run(const std::atomic<bool>& stop) {
  std::atomic<bool> watch_stop{false};
  std::thread watcher([&] {
    watch_client_->watch(
        0,
        [&](const v1::ModelInfo& info) {
          std::uint64_t seen = newest_.load();
          while (info.version() > seen && !newest_.compare_exchange_weak(seen, info.version())) {
          }
          registry_ok();
          return !watch_stop.load();
        },
        watch_stop, 200ms);
  });
  struct JoinWatcher {
    std::atomic<bool>& flag;
    std::thread& thread;
    ~JoinWatcher() {
      flag = true;
      thread.join();
    }
  } join_watcher{watch_stop, watcher};

  log_("watching the model registry at " + options_.registry + " (last evaluated: v" +
       std::to_string(progress_.last_evaluated) + ")");
  const std::chrono::milliseconds poll = std::chrono::seconds(options_.poll_s);
  // After an evaluation the registry failed: 1 s, then doubling up to --poll
  // (equal jitter: between half and all of each).
  Backoff retry({.initial = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), poll),
                 .max = poll,
                 .jitter = BackoffPolicy::Jitter::kEqual,
                 .deadline = std::nullopt});
  auto next_poll = Clock::now();
  while (!stop.load()) {
    if (Clock::now() >= next_poll) {
      auto latest = registry_->latest();
      if (latest.ok()) {
        registry_ok();
        if (latest->has_value()) {
          std::uint64_t seen = newest_.load();
          const std::uint64_t version = (*latest)->version();
          while (version > seen && !newest_.compare_exchange_weak(seen, version)) {
          }
        }
      } else {
        registry_failed(latest.error());
      }
      next_poll = Clock::now() + poll;
    }
    const std::uint64_t candidate = newest_.load();
    if (candidate <= progress_.last_evaluated) {
      nap(std::min(poll,
                   std::chrono::duration_cast<std::chrono::milliseconds>(next_poll - Clock::now())),
          stop, [&] { return newest_.load() > progress_.last_evaluated; });
      continue;
    }
    if (candidate > progress_.last_evaluated + 1) {
      if (progress_.last_evaluated == 0) {
        log_("starting at v" + std::to_string(candidate) + ", the newest version");
      } else {
        log_("skipping v" + std::to_string(progress_.last_evaluated + 1) +
             (candidate - progress_.last_evaluated > 2 ? "..v" + std::to_string(candidate - 1)
                                                       : std::string()) +
             ": v" + std::to_string(candidate) + " is newer");
      }
    }
    Evaluation evaluation = evaluate(candidate, stop);
    switch (evaluation.outcome) {
      case Evaluation::Outcome::kDone:
        retry.reset();
        break;
      case Evaluation::Outcome::kStopped:
        log_("stopped during v" + std::to_string(candidate) + "; nothing of it was written");
        break;
      case Evaluation::Outcome::kRetry: {
        const std::chrono::milliseconds wait = retry.next().value_or(poll);
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(wait.count()) / 1000.0);
        log_("v" + std::to_string(candidate) + ": " + evaluation.error + " (will retry in " +
             seconds + " s)");
        nap(wait, stop, [] { return false; });
        next_poll = Clock::now();
        break;
      }
      case Evaluation::Outcome::kFatal:
        return fail("v" + std::to_string(candidate) + ": " + evaluation.error);
    }
  }
  return {};
}

}  // namespace chessrl::evaluator_service
