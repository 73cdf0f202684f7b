#include "selfplay_settings.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "chessrl/runtime/layout.h"
#include "chessrl/selfplay/game_options.h"
#include "replica.h"

namespace chessrl::selfplay_service {

void add_options(CLI::App& app, Settings& s) {
  selfplay::GameRunnerOptions& o = s.runner;
  selfplay::SelfPlayConfig& c = o.config;
  o.threads = 0;
  o.concurrent_games = 0;

  // Who and where.
  app.add_option("--replica", s.replica,
                 "this replica's name: the games' producer and part of the seed (default: the "
                 "host name, i.e. the pod name)");
  app.add_option("--replay", s.replay, "replay service address (host:port)")->capture_default_str();
  app.add_option("--registry", s.registry, "model registry address (host:port); default: --replay");
  app.add_option("--metrics-listen", s.metrics_listen,
                 "/metrics and /healthz address; \"\" or \"off\" disables")
      ->capture_default_str();
  app.add_option("--probe-listen", s.probe_listen, "address of /healthz and /livez alone, for the kubelet's probes (a port no NetworkPolicy rule opens); \"off\": none")
      ->capture_default_str();
  app.add_option("--rpc-deadline", s.rpc_deadline_s, "seconds one replay or registry call may take")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  rpc::add_client_security_options(app, s.security_flags);

  // Models.
  app.add_option("--model", s.model,
                 "play with this checkpoint file only (no following of the registry)");
  app.add_option("--bootstrap", s.bootstrap,
                 "before the registry has a model: uniform (no network: uniform priors, even "
                 "values) or net (a fresh random network of --net); model version 0")
      ->check(CLI::IsMember({"uniform", "net"}))
      ->capture_default_str();
  app.add_option("--net", s.net, "--bootstrap net: BLOCKSxFILTERS[-seR][-gpN][-feat][-reply][-mlh] (docs/nn.md)")
      ->capture_default_str();
  app.add_option("--device", s.device, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--precision", s.precision, "fp32, fp16 or bf16 (fp16/bf16 need CUDA)")
      ->capture_default_str();
  app.add_option("--nn-threads", s.nn_threads,
                 "LibTorch CPU threads per forward pass (0: the cores over the evaluator workers)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-model-params", s.max_model_params,
                 "refuse a model (from the registry or --model) whose architecture has more "
                 "parameters than this, before allocating it; the version is skipped and counted "
                 "(0: no ceiling)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--model-switch", s.model_switch,
                 "how a newer model takes over: overlap (new games start on it at once while "
                 "the games in progress finish on the old one: two networks in memory for a "
                 "while) or drain (no game starts until the games in progress have finished: "
                 "one network at a time, the batch shrinking meanwhile)")
      ->check(CLI::IsMember({"overlap", "drain"}))
      ->capture_default_str();

  // Play: the names and meanings of `chessrl selfplay`.
  selfplay::add_game_options(app, c);
  app.add_option("--concurrent", o.concurrent_games,
                 "Games played at once (0: threads x batch / leaves)")
      ->check(CLI::Range(0, 65536));
  app.add_option("--threads", o.threads, "Search threads (0: twice the evaluator workers)")
      ->check(CLI::Range(0, 256));
  app.add_option("--leaves", o.leaves_per_search, "Leaves gathered from each game per round")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--batch", s.batch,
                 "Positions per forward pass aimed at (0: 64 on CPU, 256 on CUDA)")
      ->check(CLI::Range(0, 8192));
  app.add_option("--workers", s.workers, "Evaluator workers (0: what the device prefers)")
      ->check(CLI::Range(0, 64));
  app.add_option("--cache", s.cache, "Evaluator position cache entries (0: off)")
      ->check(CLI::Range(0, 100000000));
  app.add_option("--seed", s.seed,
                 "a fixed seed (mixed with --replica) instead of a fresh one at every start");
  app.add_flag("--no-tree-reuse", s.no_tree_reuse, "Start every search from an empty tree");
  app.add_option("--start-fen", o.start_fen, "Start position (default: the standard one)");
  app.add_option("--games", s.games, "stop after this many games (0: until stopped)")
      ->capture_default_str();

  // Pushing.
  app.add_option("--buffer-games", s.push.buffer_games,
                 "finished games held while the replay service is unreachable; beyond it the "
                 "oldest are shed (counted)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--push-batch", s.push.batch_games,
                 "games per push at most (the replay service takes 256 per call by default: "
                 "its --max-push-games)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  app.add_option("--push-interval-ms", s.push_interval_ms,
                 "a smaller batch is pushed after this many milliseconds")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  app.add_option("--flush-timeout", s.flush_timeout_s,
                 "seconds to push what is buffered when stopping")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  app.add_option("--final-scrape-wait", s.final_scrape_wait_s,
                 "when a stop's flush lost games: seconds to wait for one more scrape of "
                 "/metrics, so that chessrl_selfplay_games_lost_total reaches Prometheus before "
                 "the process exits (0: no wait; never waits when nothing was lost)")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  app.add_option("--acked-log", s.acked_log,
                 "append one line per game the replay service answered (`<id> "
                 "stored|duplicate|rejected <reason>`): an audit trail of acknowledged games; "
                 "empty: none");
  app.add_option("--version-stats", s.version_stats,
                 "append one JSON line per model version played (games, decisive share, how "
                 "they ended, plies, policy entropy, value error), at each switch and at the "
                 "end; `chessrl curve` reads it; empty: none");
  app.add_option("--progress-interval", s.progress_interval_s,
                 "seconds between progress lines (0: none)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
}

Result<void> resolve(Settings& s, const CLI::App& app) {
  if (s.replica.empty()) s.replica = default_replica_name();
  if (s.replica.size() > 128) return fail("--replica: at most 128 characters");
  if (s.registry.empty()) s.registry = s.replay;
  auto security = rpc::load_client_security(s.security_flags);
  if (!security.ok()) return fail(security.error());
  s.security = std::move(security).value();
  if (app.get_option("--seed")->count() > 0) s.fixed_seed = s.seed;

  // The backend.
  s.torch.device = s.device;
  auto precision = nn::parse_precision(s.precision);
  if (!precision.ok()) return fail("--precision: " + precision.error());
  s.torch.precision = *precision;
  s.torch.threads = s.nn_threads;
  s.torch.limits.max_parameters = s.max_model_params;
  if (s.bootstrap == "net") {
    auto net = nn::parse_network_name(s.net);
    if (!net.ok()) return fail("--net " + s.net + ": " + net.error());
    s.bootstrap_net = *net;
  }

  // The layout, as `chessrl selfplay` chooses it, once for every network
  // the run will play with.
  selfplay::GameRunnerOptions& r = s.runner;
  runtime::SearchLayout layout{s.workers, r.threads, s.batch, r.concurrent_games};
  layout = runtime::fill_layout(layout, s.device, s.nn_threads, r.leaves_per_search, s.games);
  s.workers = layout.workers;
  s.batch = layout.batch;
  r.threads = layout.threads;
  r.concurrent_games = layout.concurrent_games;
  r.config.tree_reuse = !s.no_tree_reuse;
  r.max_games = s.games;
  if (auto valid = r.validate(); !valid.ok()) return valid;
  s.evaluator = runtime::evaluator_options(layout, r.leaves_per_search, s.cache);

  s.push.interval = std::chrono::milliseconds(s.push_interval_ms);
  if (auto valid = s.push.validate(); !valid.ok()) return valid;

  // Last: nothing is created when another option is wrong.
  if (!s.version_stats.empty()) {
    std::ofstream probe(s.version_stats, std::ios::app);
    if (!probe)
      return fail("--version-stats: cannot open " + s.version_stats + " for appending: " +
                  std::strerror(errno));
  }
  if (!s.acked_log.empty()) {
    auto acked_log = AckedLog::open(s.acked_log);
    if (!acked_log.ok()) return fail(acked_log.error());
    s.push.acked_log = std::move(*acked_log);
  }
  return {};
}

}  // namespace chessrl::selfplay_service
