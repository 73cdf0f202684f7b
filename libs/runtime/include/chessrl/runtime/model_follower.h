// ModelFollower keeps self-play up with the model registry. A watch thread
// holds a WatchModels stream and notes each new version; a loader thread
// downloads the newest one newer than the one playing, parses it and builds its
// backend while self-play goes on, then raises ready(): the runner's drain flag.
//
// Hearing of a version (docs/selfplay.md, "Following the registry"): the watch,
// and the start-up LatestModel question. A watch stream that ends is opened
// again after a jittered backoff on a fresh channel, not the old connection (a
// replica refusing it for capacity, RESOURCE_EXHAUSTED with
// rpc::kRetryElsewhereKey, or gone: a Service in front picks anew); while no
// stream is held the loader asks LatestModel every ~poll_interval (jittered),
// so a pod that cannot watch still learns of new versions. Each version newer
// than any known is announced once (on_announced), whichever way it came.
//
// Downloading it: the first GetModel of a version waits U(0, announce_spread),
// so a thousand pods told at once do not ask in the same millisecond. A model
// that does not parse or build is logged and skipped (self-play stays on the
// old one); one that check_model() refuses (over --max-model-params, or weights
// that do not match its header) is refused before anything is allocated,
// logged once and counted; neither is fetched again. A download that fails for
// good (NOT_FOUND, DATA_LOSS: the registry's copy or the bytes received do not
// match their CRC, a model over the client's size limit, INVALID_ARGUMENT, ...)
// skips that version the same way; one that may pass (UNAVAILABLE, a deadline,
// a token refused, INTERNAL, a capacity refusal naming another replica) is
// retried after a jittered backoff (download_backoff); a newer version heard of
// meanwhile does not wait for that retry. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <stop_token>
#include <thread>
#include <vector>

#include "chessrl/core/backoff.h"
#include "chessrl/core/splitmix64.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model.h"

namespace chessrl::runtime {

// What a ModelFollower reaches and whom it tells.
struct ModelFollowerOptions {
  using LogFunction = std::function<void(const std::string&)>;
  // Called (on the loader thread) once per version check_model() refused.
  using RefusedFunction = std::function<void(std::uint64_t version)>;
  // Called (on the loader thread) once per version skipped for another reason
  // (runtime::skip_reason() or "unusable"), with that reason.
  using SkippedFunction = std::function<void(std::uint64_t version, const std::string& reason)>;
  // Makes a version's bytes ready (on the loader thread).
  using LoadFunction = std::function<ModelLoad(const std::string& bytes, std::uint64_t version)>;

  rpc::ClientOptions registry;
  nn::TorchBackendOptions torch;
  LoadFunction loader;  // empty: build_model with `torch`
  LogFunction log;      // empty: nothing logged
  RefusedFunction on_refused;
  SkippedFunction on_skipped;
  // The first time a version newer than any known is heard of, from any source
  // (the start-up question, the watch), with the lock held: it must not call back.
  std::function<void(std::uint64_t version)> on_announced;
  // Each download of `version` that failed, with its code (on the loader thread).
  std::function<void(std::uint64_t version, grpc::StatusCode code)> on_download_failed;

  // The policy (docs/selfplay.md, "Following the registry", has the measurements).
  // A failed download that may pass is tried again after a wait drawn from this
  // (full jitter: U(0, cap), the cap doubling from 0.5 s to 30 s).
  BackoffPolicy download_backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(30000),
                                 2, BackoffPolicy::Jitter::kFull, std::nullopt};
  // A GetModel's deadline, when longer than registry.deadline: the time a
  // download may wait its turn in the registry's queue and then arrive. One
  // replay process sent 1,000 copies of a 14 MB version in 26-49 s on two
  // loaded cores (docs/scaling.md, "Model fan-out"): within two minutes, every
  // pod of such a fleet is served in its turn, none times out and joins the
  // queue again at the back; a registry whose queue is longer still names a
  // later turn (chessrl-retry-after-ms). A dead connection is found by the
  // channel's keepalive, not by this deadline.
  std::chrono::milliseconds download_deadline{120000};
  // The first GetModel of a version just heard of waits U(0, announce_spread).
  std::chrono::milliseconds announce_spread{1000};
  // The waits between watch streams (a stream held for a while starts it again).
  BackoffPolicy watch_backoff{std::chrono::milliseconds(1000), std::chrono::milliseconds(30000), 2,
                              BackoffPolicy::Jitter::kFull, std::nullopt};
  // While no watch stream is held: LatestModel every poll_interval x U(0.5, 1.5),
  // the first within U(0, poll_interval) of losing the stream.
  std::chrono::milliseconds poll_interval{10000};
  // A stream open this long without ending counts as held (polling stops).
  std::chrono::milliseconds watch_held_after{2000};
  std::uint64_t seed = 0;  // the jitter's; 0: random
};

class ModelFollower {
 public:
  using Clock = std::chrono::steady_clock;
  using LogFunction = ModelFollowerOptions::LogFunction;
  using RefusedFunction = ModelFollowerOptions::RefusedFunction;
  using SkippedFunction = ModelFollowerOptions::SkippedFunction;
  struct Pending {
    Model model;
    Clock::time_point ready_at;  // when ready() was raised
  };

  // Starts the threads: the first thing the loader does is ask for the
  // latest version once.
  explicit ModelFollower(ModelFollowerOptions options);
  ModelFollower(rpc::ClientOptions registry, nn::TorchBackendOptions torch, LogFunction log,
                RefusedFunction on_refused = {}, SkippedFunction on_skipped = {});
  ~ModelFollower();  // stops and joins the threads (a download in flight ends first)
  // Starts no download from now on and ends the watch, without waiting: a download in
  // flight still runs to its end or its deadline, which the destructor then waits for.
  void request_stop();
  ModelFollower(const ModelFollower&) = delete;
  ModelFollower& operator=(const ModelFollower&) = delete;

  // Waits up to `timeout` for the start-up answer: the latest model loaded
  // (take() has it), or none published, bad, or the registry unreachable.
  void wait_settled(std::chrono::milliseconds timeout);
  // True while a newer model waits in take(): pass it to GameRunner::run as
  // the drain flag.
  const std::atomic<bool>& ready() const { return ready_; }
  // The waiting model, which from now on counts as the one playing; clears ready().
  std::optional<Pending> take();
  // The versions refused so far, in order.
  std::vector<std::uint64_t> refused() const;
  // The versions skipped (not downloadable for good, or unusable) so far, in order.
  std::vector<std::uint64_t> skipped() const;

 private:
  void load_loop();
  void settle();
  void skip(std::uint64_t version, const std::string& reason);  // mutex_ held
  void announce(std::uint64_t version);                          // mutex_ held
  void log(const std::string& line) const;
  void watch_loop();
  void poll_latest();
  Clock::duration jitter(Clock::duration up_to);  // U(0, up_to); mutex_ held

  ModelFollowerOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rpc::ModelRegistryClient> client_;        // the loader's: downloads, polls
  std::unique_ptr<rpc::ModelRegistryClient> watch_client_;  // the watch thread's

  std::stop_source stop_source_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ready_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t newest_ = 0;     // the newest version the registry has shown
  std::uint64_t attempted_ = 0;  // the newest version loaded or found bad
  std::uint64_t playing_ = 0;
  std::vector<std::uint64_t> refused_;
  std::vector<std::uint64_t> skipped_;
  std::optional<Pending> pending_;
  bool settled_ = false;
  SplitMix64 rng_{0};
  Backoff download_backoff_;
  Clock::time_point load_at_{};       // no first GetModel of newest_ before this (the spread)
  std::uint64_t failed_version_ = 0;  // the version whose download failed last
  Clock::time_point retry_at_{};      // when it may be tried again
  bool polling_ = false;              // no watch stream held: LatestModel instead
  Clock::time_point poll_at_{};
  bool stream_open_ = false;
  Clock::time_point stream_opened_{};
  std::thread watch_thread_, load_thread_;
};

}  // namespace chessrl::runtime
