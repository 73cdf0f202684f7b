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
  // Who and where.
  s.runtime::StatusListenOptions::add_to(app);
  s.runtime::ClientOptions::add_to(app);
  app.add_option("--replica", s.replica,
                 "this replica's name: the games' producer and part of the seed (default: the "
                 "host name, i.e. the pod name)");

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
  s.runtime::DeviceOptions::add_to(app);
  app.add_option("--model-switch", s.model_switch,
                 "how a newer model takes over: overlap (new games start on it at once while "
                 "the games in progress finish on the old one: two networks in memory for a "
                 "while) or drain (no game starts until the games in progress have finished: "
                 "one network at a time, the batch shrinking meanwhile)")
      ->check(CLI::IsMember({"overlap", "drain"}))
      ->capture_default_str();

  // Play: the names and meanings of `chessrl selfplay`.
  selfplay::add_game_options(app, c);
  s.runtime::LayoutOptions::add_to(app, o.leaves_per_search);
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
  if (auto loaded = s.load_security(); !loaded.ok()) return loaded;
  if (app.get_option("--seed")->count() > 0) s.fixed_seed = s.seed;

  // The backend.
  auto torch = s.torch_options();
  if (!torch.ok()) return fail(torch.error());
  s.torch = *torch;
  if (s.bootstrap == "net") {
    auto net = nn::parse_network_name(s.net);
    if (!net.ok()) return fail("--net " + s.net + ": " + net.error());
    s.bootstrap_net = *net;
  }

  // The layout, as `chessrl selfplay` chooses it, once for every network
  // the run will play with.
  selfplay::GameRunnerOptions& r = s.runner;
  const runtime::SearchLayout layout = s.fill(s.device, s.nn_threads, r.leaves_per_search, s.games);
  r.threads = layout.threads;
  r.concurrent_games = layout.concurrent_games;
  r.config.tree_reuse = !s.no_tree_reuse;
  r.max_games = s.games;
  if (auto valid = r.validate(); !valid.ok()) return valid;
  s.evaluator = s.evaluator_options(r.leaves_per_search);

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
