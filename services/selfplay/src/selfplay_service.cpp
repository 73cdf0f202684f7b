#include "selfplay_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "chessrl/runtime/model.h"
#include "chessrl/runtime/model_follower.h"
#include "chessrl/core/error.h"
#include "chessrl/metrics/exposer.h"
#include "live_view.h"
#include "chessrl/metrics/gpu_sampler.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/selfplay/game_runner.h"
#include "chessrl/selfplay/version_stats.h"
#include "chessrl/record/game_conversion.h"
#include "final_scrape.h"
#include "game_pusher.h"
#include "replica.h"

namespace chessrl::selfplay_service {

namespace {

constexpr const char* kModelsSkippedName = "chessrl_selfplay_models_skipped_total";
constexpr const char* kModelsSkippedHelp =
    "Model versions skipped and never fetched again: not downloadable for good (data_loss: CRC "
    "mismatch or corrupt in the registry, not_found, too_large, invalid) or unusable (does not "
    "parse or build)";

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Counts kept beside the metrics for the progress line.
struct Totals {
  std::atomic<std::uint64_t> games{0}, positions{0}, evals{0}, batches{0};
  std::atomic<std::uint64_t> decisive{0};  // games won by either side
  std::atomic<std::uint64_t> model_version{0};
};

// The games of each model version, as selfplay::GameStats: the gauges follow
// the games of the version new games start with; a version's line is logged,
// and appended to --version-stats as one JSON line, when its games are over
// (its last game after a switch, or the end).
class VersionStatsKeeper {
 public:
  VersionStatsKeeper(const SelfplayService& service, SelfplayMetrics& metrics, std::string path)
      : service_(service), metrics_(metrics), path_(std::move(path)) {}

  // New games play with `version` from now on.
  void start(std::uint64_t version) {
    std::lock_guard lock(mutex_);
    current_ = version;
    stats_[version].version = version;
  }
  void add(const record::GameRecord& record, std::uint64_t version) {
    std::lock_guard lock(mutex_);
    selfplay::GameStats& stats = stats_[version];
    stats.version = version;
    if (auto added = stats.add(record); !added) {
      service_.log("version statistics: " + added.error());
      return;
    }
    if (version != current_) return;
    metrics_.policy_entropy.set(stats.policy_entropy());
    metrics_.value_mse.set(stats.value_mse());
  }
  // `version`'s games are over.
  void finish(std::uint64_t version) {
    std::lock_guard lock(mutex_);
    const auto it = stats_.find(version);
    if (it == stats_.end()) return;
    write(it->second);
    if (version == current_) {
      it->second = selfplay::GameStats{};
      it->second.version = version;
    } else {
      stats_.erase(it);
    }
  }
  // The end: every version's line, oldest first.
  void finish_all() {
    std::lock_guard lock(mutex_);
    for (const auto& [version, stats] : stats_) write(stats);
    stats_.clear();
  }

 private:
  void write(const selfplay::GameStats& stats) {
    if (stats.games == 0) return;
    service_.log("games with model " + selfplay::describe(stats));
    if (path_.empty()) return;
    std::ofstream out(path_, std::ios::app);
    out << selfplay::to_json(stats) << '\n';
    out.flush();
    if (!out) service_.log("--version-stats: cannot append to " + path_);
  }

  const SelfplayService& service_;
  SelfplayMetrics& metrics_;
  std::string path_;
  std::mutex mutex_;
  std::uint64_t current_ = 0;
  std::map<std::uint64_t, selfplay::GameStats> stats_;
};

// A progress line every `interval` with the rates over it.
class ProgressLogger {
 public:
  ProgressLogger(const SelfplayService& service, const Totals& totals, const GamePusher& pusher,
                 std::chrono::seconds interval)
      : service_(service), totals_(totals), pusher_(pusher), interval_(interval) {
    if (interval_.count() > 0) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressLogger() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    auto last = Clock::now();
    std::uint64_t games = 0, positions = 0, evals = 0, batches = 0, decisive = 0;
    while (!wake_.wait_for(lock, interval_, [this] { return done_; })) {
      const double t = seconds_since(last);
      last = Clock::now();
      const std::uint64_t g = totals_.games, p = totals_.positions, e = totals_.evals,
                          b = totals_.batches, d = totals_.decisive;
      char line[360];
      std::snprintf(line, sizeof line,
                    "games %llu (%.0f games/h, %.0f%% decisive), %.1f positions/s, %.0f evals/s, "
                    "mean batch %.1f, model version %llu, %zu games buffered",
                    static_cast<unsigned long long>(g), 3600.0 * double(g - games) / t,
                    g > games ? 100.0 * double(d - decisive) / double(g - games) : 0.0,
                    double(p - positions) / t, double(e - evals) / t,
                    b > batches ? double(e - evals) / double(b - batches) : 0.0,
                    static_cast<unsigned long long>(totals_.model_version.load()),
                    pusher_.buffered());
      service_.log(line);
      games = g, positions = p, evals = e, batches = b, decisive = d;
    }
  }

  const SelfplayService& service_;
  const Totals& totals_;
  const GamePusher& pusher_;
  std::chrono::seconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

PushFunction replay_push(const Settings& s) {
  rpc::ClientOptions options;
  options.address = s.replay;
  options.deadline = std::chrono::seconds(s.rpc_deadline_s);
  options.security = s.security;
  // One attempt per call: the GamePusher owns the retry (docs/architecture.md,
  // "Who retries what"). A retry inside the client after a lost reply would
  // answer DUPLICATE for games the pusher does not yet know it sent: kept
  // explicit, whatever ClientOptions' default.
  options.attempts = 1;
  auto channel = rpc::make_channel(options);  // bounded reconnect backoff, keepalive
  return [options, channel](const v1::PushGamesRequest& request,
                            Clock::time_point deadline) -> rpc::RpcResult<v1::PushGamesReply> {
    rpc::ClientOptions call = options;
    if (deadline != Clock::time_point::max()) {
      // Flushing: no call runs past the flush's deadline.
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        return rpc::RpcFailure{"no time left to push", grpc::StatusCode::DEADLINE_EXCEEDED};
      }
      call.deadline = std::min(call.deadline, left);
    }
    return rpc::ReplayClient(call, channel).push_games(request);
  };
}


SelfplayMetrics::SelfplayMetrics(metrics::Registry& r)
    : games(r.counter("chessrl_selfplay_games_total", "Self-play games finished")),
      positions(r.counter("chessrl_selfplay_positions_total", "Moves played in finished games")),
      batch_size(r.histogram("chessrl_inference_batch_size", "Positions per forward pass",
                             metrics::exponential_buckets(1, 2, 11))),
      evals(r.counter("chessrl_inference_evals_total", "Positions through the network")),
      forward_seconds(r.counter("chessrl_inference_forward_seconds_total",
                                "Seconds spent in forward passes (summed over evaluator workers)")),
      model_version(r.gauge("chessrl_model_version",
                            "Registry version of the model playing (0: a bootstrap, none)")),
      model_swaps(r.counter("chessrl_selfplay_model_swaps_total",
                            "Times self-play switched to a newer model")),
      models_refused(r.counter("chessrl_selfplay_models_refused_total",
                               "Model versions refused before loading: over --max-model-params, "
                               "or weights that do not match the architecture they name")),
      drain_seconds(r.counter("chessrl_selfplay_drain_seconds_total",
                              "Seconds no new game started while the games in progress finished "
                              "before a switch (--model-switch drain; 0 with overlap)")),
      overlap_seconds(r.counter(
          "chessrl_selfplay_model_overlap_seconds_total",
          "Seconds from each switch to the end of the last game of the model it replaced: the "
          "games in progress finishing on the old network while new games play on the new one")),
      networks_in_play(r.gauge("chessrl_selfplay_models_in_play",
                               "Model versions with games in progress or taking new ones (2 "
                               "while a replaced model's games finish)")),
      games_abandoned(r.counter("chessrl_selfplay_games_abandoned_total",
                                "Games in progress dropped unfinished when a stop (SIGTERM, "
                                "SIGINT) began: never recorded, never pushed")),
      lookups(r.counter("chessrl_inference_requests_total",
                        "Positions asked of the evaluator, cache hits included")),
      cache_hits(r.counter("chessrl_inference_cache_hits_total",
                           "Positions answered from the position cache")),
      search_threads(r.gauge("chessrl_selfplay_search_threads", "Threads running searches")),
      busy_seconds(r.counter("chessrl_selfplay_search_busy_seconds_total",
                             "Seconds search threads spent searching rather than waiting for the "
                             "network (summed over threads)")),
      game_plies(r.histogram("chessrl_selfplay_game_plies", "Plies per finished self-play game",
                             metrics::exponential_buckets(8, 2, 8))),
      policy_entropy(r.gauge("chessrl_selfplay_policy_entropy",
                             "Mean entropy (nats) of the recorded policy targets in the games of "
                             "the model version playing")),
      value_mse(r.gauge("chessrl_selfplay_value_mse",
                        "Mean squared error of the search's root value against the game result "
                        "(side to move), in the games of the model version playing")),
      registry_(r) {
  const char* help = "Self-play games finished, by result (draws include the move limit)";
  results_[0] = &r.counter("chessrl_selfplay_game_results_total", help, {{"result", "white"}});
  results_[1] = &r.counter("chessrl_selfplay_game_results_total", help, {{"result", "black"}});
  results_[2] = &r.counter("chessrl_selfplay_game_results_total", help, {{"result", "draw"}});
  using chess::Termination;
  for (const Termination t :
       {Termination::kCheckmate, Termination::kStalemate, Termination::kFiftyMoveRule,
        Termination::kThreefoldRepetition, Termination::kInsufficientMaterial,
        Termination::kResignation, Termination::kAdjudication, Termination::kMoveLimit})
    termination(t);  // export zeros
}

metrics::Counter& SelfplayMetrics::termination(chess::Termination reason) {
  // "threefold repetition" -> "threefold_repetition": a label value without spaces.
  return registry_.counter("chessrl_selfplay_game_terminations_total",
                           "Self-play games finished, by how they ended",
                           {{"reason", selfplay::termination_label(reason)}});
}

metrics::Counter& SelfplayMetrics::result(chess::Outcome outcome) {
  switch (outcome) {
    case chess::Outcome::kWhiteWins:
      return *results_[0];
    case chess::Outcome::kBlackWins:
      return *results_[1];
    default:
      return *results_[2];
  }
}

SelfplayService::SelfplayService(Settings settings, const std::atomic<bool>& stop)
    : settings_(std::move(settings)),
      stop_(stop),
      prefix_("chessrl-selfplay[" + settings_.replica + "]: ") {}

void SelfplayService::log(const std::string& line) const {
  std::fprintf(stderr, "%s%s\n", prefix_.c_str(), line.c_str());
}

int SelfplayService::run() {
  const Settings& s = settings_;
  const std::uint64_t seed = choose_seed(s.replica, s.fixed_seed);
  log("replica " + s.replica + ", seed " + hex(seed) +
      (s.fixed_seed ? " (from --seed)" : " (fresh at this start)"));

  metrics::Registry registry;
  metrics::add_build_info(registry);
  SelfplayMetrics metrics(registry);
  metrics::GpuSampler gpus(registry, std::chrono::seconds(5));
  Totals totals;

  std::mutex failure_mutex;
  std::string failure;
  auto log_fn = [this](const std::string& line) { log(line); };
  GamePusher pusher(replay_push(s), s.push, registry, log_fn);

  LiveView live(s.replica);
  std::unique_ptr<metrics::Exposer> exposer;
  if (s.metrics_on()) {
    exposer = std::make_unique<metrics::Exposer>(registry, s.metrics_listen, [&]() -> std::string {
      {
        std::lock_guard lock(failure_mutex);
        if (!failure.empty()) return "self-play failed: " + failure;
      }
      const std::size_t held = pusher.buffered();
      if (held * 10 > pusher.capacity() * 9) {
        return "push buffer " + std::to_string(held) + "/" + std::to_string(pusher.capacity()) +
               " games full: the replay service at " + s.replay + " is not taking games";
      }
      return "";
    }, s.probe_listen);
    exposer->handle("/live", [&live, &totals](const std::string&) {
      return metrics::HttpResponse{200, "application/json", live.json(totals.games.load())};
    });
    metrics_port_ = exposer->port();
    log("metrics on port " + std::to_string(exposer->port()));
    if (exposer->probe_port() != 0) log("probes on port " + std::to_string(exposer->probe_port()));
  }
  if (on_listening_) {
    runtime::ListeningPorts ports;
    if (exposer) {
      ports.emplace_back("metrics", exposer->port());
      if (exposer->probe_port() != 0) ports.emplace_back("probe", exposer->probe_port());
    }
    on_listening_(ports);
  }

  // The first model: pinned, the registry's latest, or a bootstrap.
  std::unique_ptr<runtime::ModelFollower> follower;
  std::optional<runtime::Model> model;
  if (!s.model.empty()) {
    auto pinned = runtime::model_from_file(s.model, s.torch);
    if (!pinned.ok()) throw Error("--model " + pinned.error());
    model = std::move(pinned).value();
    log("playing with the pinned model " + model->description + "; not following the registry");
  } else {
    rpc::ClientOptions registry_options;
    registry_options.address = s.registry;
    registry_options.deadline = std::chrono::seconds(s.rpc_deadline_s);
    registry_options.security = s.security;
    // One attempt per call (the default): the follower owns the retry.
    log("following the model registry at " + s.registry);
    for (const char* reason : {"data_loss", "not_found", "too_large", "invalid", "unusable"}) {
      registry.counter(kModelsSkippedName, kModelsSkippedHelp, {{"reason", reason}});
    }
    follower = std::make_unique<runtime::ModelFollower>(
        registry_options, s.torch, log_fn,
        [&metrics](std::uint64_t) { metrics.models_refused.inc(); },
        [&registry](std::uint64_t, const std::string& reason) {
          registry.counter(kModelsSkippedName, kModelsSkippedHelp, {{"reason", reason}}).inc();
        });
    follower->wait_settled(std::chrono::seconds(s.rpc_deadline_s) + std::chrono::seconds(5));
    if (auto pending = follower->take()) model = std::move(pending->model);
  }
  if (!model) {
    model = s.bootstrap_net ? runtime::fresh_model(*s.bootstrap_net, seed, s.torch).value_or_throw()
                            : runtime::uniform_model();
  }

  nn::BatchEvaluatorOptions evaluator_options = s.evaluator;
  evaluator_options.on_batch = [&metrics, &totals](int batch, double seconds) {
    metrics.batch_size.observe(batch);
    metrics.evals.inc(batch);
    metrics.forward_seconds.inc(seconds);
    totals.evals.fetch_add(static_cast<std::uint64_t>(batch), std::memory_order_relaxed);
    totals.batches.fetch_add(1, std::memory_order_relaxed);
  };
  evaluator_options.on_lookup = [&metrics](std::size_t requests, std::size_t hits) {
    metrics.lookups.inc(static_cast<double>(requests));
    if (hits > 0) metrics.cache_hits.inc(static_cast<double>(hits));
  };
  metrics.search_threads.set(std::min(s.runner.threads, s.runner.concurrent_games));
  const selfplay::GameRunnerOptions& r = s.runner;
  log(std::to_string(r.concurrent_games) + " games at once on " + std::to_string(r.threads) +
      " threads, " + std::to_string(r.leaves_per_search) + " leaves per search, " +
      std::to_string(r.config.playouts.full_visits) + "/" +
      std::to_string(r.config.playouts.reduced_visits) + " visits, " + std::to_string(s.workers) +
      " evaluator worker(s), batches up to " + std::to_string(s.evaluator.max_batch) +
      "; pushing to " + s.replay +
      (s.push.acked_log ? ", answered games appended to " + s.push.acked_log->path() : ""));

  int code = 0;
  VersionStatsKeeper version_stats(*this, metrics, s.version_stats);
  {
    ProgressLogger progress(*this, totals, pusher, std::chrono::seconds(s.progress_interval_s));
    const auto network_of = [&evaluator_options](const runtime::Model& m) {
      return selfplay::Network{std::make_shared<nn::BatchEvaluator>(m.backend, evaluator_options),
                               m.version};
    };
    // One runner for the whole run: game indices (and so seeds and ids) go on
    // across models.
    selfplay::GameRunnerOptions options = s.runner;
    options.seed = seed;
    options.max_games = s.games;
    options.on_round = [&metrics](double busy, double) { metrics.busy_seconds.inc(busy); };
    selfplay::GameRunner* runner_ptr = nullptr;
    options.on_retired = [&](std::uint64_t version, double overlap) {
      metrics.overlap_seconds.inc(overlap);
      if (runner_ptr) metrics.networks_in_play.set(runner_ptr->networks_in_play());
      version_stats.finish(version);
      if (overlap > 0) {
        char line[160];
        std::snprintf(line, sizeof line,
                      "the last game of model version %llu ended %.2f s after the switch",
                      static_cast<unsigned long long>(version), overlap);
        log(line);
      }
    };
    selfplay::GameRunner runner(network_of(*model), options);
    runner_ptr = &runner;
    metrics.model_version.set(static_cast<double>(model->version));
    metrics.networks_in_play.set(1);
    totals.model_version = model->version;
    log("playing with model " + model->description);
    live.attach(runner, model->version);
    // Before the runner goes, whichever way this ends.
    struct Detach {
      LiveView& view;
      ~Detach() { view.detach(); }
    } detach_live{live};
    version_stats.start(model->version);

    // To the newer model: new games start on it; in overlap mode the games in
    // progress finish on the old one (in drain mode there are none).
    const auto switch_model = [&](runtime::ModelFollower::Pending pending) {
      const std::uint64_t from = runner.version();
      const double waited = seconds_since(pending.ready_at);
      selfplay::Network network = network_of(pending.model);
      version_stats.start(pending.model.version);
      runner.switch_to(std::move(network));
      metrics.model_swaps.inc();
      metrics.model_version.set(static_cast<double>(pending.model.version));
      metrics.networks_in_play.set(runner.networks_in_play());
      totals.model_version = pending.model.version;
      live.attach(runner, pending.model.version);
      char line[200];
      std::snprintf(line, sizeof line, "switched from version %llu, %.2f s after it was ready",
                    static_cast<unsigned long long>(from), waited);
      log("playing with model " + pending.model.description + "; " + line +
          (runner.networks_in_play() > 1 ? "; the games in progress finish on version " +
                                               std::to_string(from)
                                         : ""));
    };
    auto on_game = [&](record::GameRecord&& record, std::uint64_t version) {
      metrics.games.inc();
      metrics.game_plies.observe(static_cast<double>(record.moves.size()));
      version_stats.add(record, version);
      metrics.positions.inc(static_cast<double>(record.moves.size()));
      metrics.result(record.result.outcome).inc();
      metrics.termination(record.result.reason).inc();
      if (record.result.outcome != chess::Outcome::kDraw) totals.decisive.fetch_add(1);
      totals.games.fetch_add(1);
      totals.positions.fetch_add(record.moves.size());
      pusher.add(to_wire_game(record, version, s.replica));
    };

    // Overlap: a thread takes each newer model as soon as it is ready while at
    // most one model is in play (one that arrives while a replaced model's games
    // finish waits for them: at most two networks at once).
    const bool overlap = follower && s.model_switch == "overlap";
    std::mutex switcher_mutex;
    std::condition_variable switcher_wake;
    bool played = false;
    std::thread switcher;
    if (overlap) {
      switcher = std::thread([&] {
        std::unique_lock lock(switcher_mutex);
        while (!switcher_wake.wait_for(lock, std::chrono::milliseconds(20),
                                       [&] { return played; })) {
          if (!follower->ready().load() || runner.networks_in_play() > 1) continue;
          std::optional<runtime::ModelFollower::Pending> pending = follower->take();
          if (!pending) continue;
          lock.unlock();
          try {
            switch_model(std::move(*pending));
          } catch (const std::exception& e) {
            log(std::string("cannot switch to the newer model: ") + e.what());
          }
          lock.lock();
        }
      });
    }
    struct JoinSwitcher {
      std::mutex& mutex;
      std::condition_variable& wake;
      bool& played;
      std::thread& thread;
      ~JoinSwitcher() {
        {
          std::lock_guard lock(mutex);
          played = true;
        }
        wake.notify_all();
        if (thread.joinable()) thread.join();
      }
    } join_switcher{switcher_mutex, switcher_wake, played, switcher};

    for (;;) {
      try {
        runner.play(on_game, &stop_, follower && !overlap ? &follower->ready() : nullptr);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(failure_mutex);
          failure = e.what();
        }
        log(std::string("self-play failed: ") + e.what());
        code = 1;
        break;
      }
      if (stop_.load()) {
        const std::uint64_t abandoned = runner.stats().abandoned;
        metrics.games_abandoned.inc(static_cast<double>(abandoned));
        log("stopping: " + std::to_string(abandoned) + " games in progress abandoned");
        break;
      }
      if (s.games > 0 && totals.games.load() >= s.games) {
        log("played the " + std::to_string(s.games) + " games asked for");
        break;
      }
      // Drain mode: the games in progress are over; switch.
      if (follower && !overlap) {
        if (auto pending = follower->take()) {
          const double drained = seconds_since(pending->ready_at);
          metrics.drain_seconds.inc(drained);
          char line[160];
          std::snprintf(line, sizeof line, "finished the games in progress in %.2f s", drained);
          log(line);
          switch_model(std::move(*pending));
        }
      }
    }
  }
  version_stats.finish_all();
  // No new model download; one in flight (to a replay that may not answer) runs to its
  // deadline while the buffer is pushed, not before it: the stop's time is the longer of
  // the two, not their sum. The follower is joined at the end.
  if (follower) follower->request_stop();

  const std::size_t buffered = pusher.buffered();
  if (buffered > 0) {
    log("pushing the " + std::to_string(buffered) + " buffered games (up to " +
        std::to_string(s.flush_timeout_s) + " s)");
  }
  const std::size_t left = pusher.flush(std::chrono::seconds(s.flush_timeout_s));
  const GamePusherStats stats = pusher.stats();
  log("done: " + std::to_string(totals.games.load()) + " games played, " +
      std::to_string(stats.pushed()) + " pushed, " + std::to_string(stats.rejected) +
      " rejected, " + std::to_string(stats.shed) + " shed, " + std::to_string(left) +
      " could not be pushed" + (left > 0 ? " (lost)" : "") +
      (stats.dropped > 0 ? ", " + std::to_string(stats.dropped) + " refused alone (dropped)" : "") +
      (stats.unexpected_duplicates > 0
           ? ", " + std::to_string(stats.unexpected_duplicates) +
                 " answered DUPLICATE though never pushed before (not stored)"
           : ""));
  wait_for_final_scrape(exposer.get(), left, std::chrono::seconds(s.final_scrape_wait_s), log_fn);
  follower.reset();
  return code;
}

}  // namespace chessrl::selfplay_service
