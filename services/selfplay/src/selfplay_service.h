// SelfplayService: the chessrl-selfplay process minus its main(). Plays games
// with the GameRunner on the newest model from the registry (switching
// without a drain: new games start on the new model's evaluator while the
// games in progress finish on the old one; or, with --model-switch drain,
// between games), or on a pinned --model; pushes every finished game to the
// replay service through a GamePusher; serves /metrics and /healthz; logs a
// progress line now and then. One run() per object.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "chessrl/chess/rules.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/runtime/service_process.h"
#include "game_pusher.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {

// The service's metrics besides the pusher's and the GPU sampler's.
struct SelfplayMetrics {
  explicit SelfplayMetrics(metrics::Registry& registry);
  metrics::Counter& games;
  metrics::Counter& positions;
  metrics::Histogram& batch_size;
  metrics::Counter& evals;
  metrics::Counter& forward_seconds;
  metrics::Gauge& model_version;
  metrics::Counter& model_swaps;
  metrics::Counter& models_refused;  // versions check_model() refused (never fetched again)
  metrics::Counter& drain_seconds;    // --model-switch drain only
  metrics::Counter& overlap_seconds;  // switch to the replaced model's last game
  metrics::Gauge& networks_in_play;
  metrics::Counter& games_abandoned;  // in progress when a stop began
  metrics::Counter& lookups;      // positions asked of the evaluator, cache hits included
  metrics::Counter& cache_hits;   // ... answered from the position cache
  metrics::Gauge& search_threads;
  metrics::Counter& busy_seconds;  // runner threads searching, not waiting for the network
  metrics::Histogram& game_plies;
  metrics::Gauge& policy_entropy;  // the playing version's games so far
  metrics::Gauge& value_mse;
  metrics::Counter& result(chess::Outcome outcome);
  metrics::Counter& termination(chess::Termination reason);

 private:
  metrics::Registry& registry_;
  metrics::Counter* results_[3];
};

// The GamePusher's push function: ReplayClient::push_games to s.replay with
// one attempt per call (the pusher retries); while flushing, no call runs past
// the flush's deadline.
PushFunction replay_push(const Settings& s);

class SelfplayService {
 public:
  // `settings` must have been through resolve(). `stop` (StopSignals::flag())
  // ends self-play; it must outlive run().
  SelfplayService(Settings settings, const std::atomic<bool>& stop);

  // Plays until `stop`, --games games or a failure of the runner; then pushes
  // what is buffered for up to --flush-timeout, and when games were lost waits
  // up to --final-scrape-wait for a scrape of /metrics (final_scrape.h).
  // Returns the exit code: 0, or 1
  // when self-play failed. Throws chessrl::Error for what stops it starting
  // (a bad --model, a metrics address in use).
  int run();

  // Lines on stderr, "chessrl-selfplay[<replica>]: <line>".
  void log(const std::string& line) const;
  // The port /metrics is served on once run() has started serving it; 0
  // before, or with --metrics-listen off. Any thread.
  int metrics_port() const { return metrics_port_.load(); }
  // Called once by run(), on its thread, when every port it listens on is
  // bound (before the first model): "metrics" and "probe" when they are on,
  // none with --metrics-listen off. Set it before run().
  void on_listening(std::function<void(const runtime::ListeningPorts&)> f) {
    on_listening_ = std::move(f);
  }

 private:
  Settings settings_;
  std::function<void(const runtime::ListeningPorts&)> on_listening_;
  const std::atomic<bool>& stop_;
  std::string prefix_;
  std::atomic<int> metrics_port_{0};
};

}  // namespace chessrl::selfplay_service
