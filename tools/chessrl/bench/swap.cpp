// `chessrl bench swap`: what new model versions cost self-play. The
// chessrl-selfplay service in-process (its SelfplayService: follower, runner,
// pusher, /metrics) on CPU against an in-process replay service and model
// registry (in-memory stores, a loopback port). Per run: a warm-up, then a
// phase with no publishes (games/s, and from it the mean game duration
// G = concurrent games / games per second), then a phase of the same length
// with a new version published every G/4 (the same tiny weights under a new
// version number, so that game lengths do not change with the network). The
// runs alternate between --model-switch overlap and drain; medians per mode.
// The warm-up lasts --warmup seconds and until as many games finished as are
// played at once.
//
// The pass: games/s while versions arrive is at least 0.95 of the rate without
// publishes, and drains take at most 2% of the time. Games per CPU second of
// this process are printed beside games/s: on a shared machine whose load
// drifts between the phases they are the steadier ratio (though they miss
// what a drain costs in idle hardware: only its smaller batches). Lines, or with
// --json one JSON document of the same figures.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/metrics/http_client.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "commands.h"
#include "selfplay_service.h"
#include "selfplay_settings.h"

namespace chessrl::tool {
namespace {

struct SwapBenchOptions {
  std::string mode = "both";  // overlap, drain or both
  int repeat = 3;
  double seconds = 180;  // each phase
  double warmup = 20;
  double publish_every = 0;  // 0: a quarter of the mean game duration measured
  std::string net = "1x8";
  int concurrent = 64;
  int threads = 2;
  int workers = 1;
  int visits = 32;
  int reduced_visits = 8;
  std::vector<std::string> selfplay_args;  // more chessrl-selfplay options
  bool json = false;                       // one JSON document on stdout instead of the lines
};

// The self-play counters the bench reads from /metrics.
struct Counters {
  double games = 0, positions = 0, evals = 0, batches = 0, drain = 0, overlap = 0, swaps = 0;
  Clock::time_point at;
  double cpu_seconds = 0;  // this process's (self-play, the registry, the publisher)
};

double process_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double metric(const std::string& page, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto found = page.find(key);
  if (found == std::string::npos) throw Error("bench swap: /metrics has no " + name);
  return std::atof(page.c_str() + found + key.size());
}

Counters scrape(int port) {
  auto reply = metrics::http_get("127.0.0.1", port, "/metrics", std::chrono::seconds(10));
  if (!reply.ok()) throw Error("bench swap: " + reply.error());
  const std::string& page = reply->body;
  Counters c;
  c.at = Clock::now();
  c.cpu_seconds = process_cpu_seconds();
  c.games = metric(page, "chessrl_selfplay_games_total");
  c.positions = metric(page, "chessrl_selfplay_positions_total");
  c.evals = metric(page, "chessrl_inference_batch_size_sum");
  c.batches = metric(page, "chessrl_inference_batch_size_count");
  c.drain = metric(page, "chessrl_selfplay_drain_seconds_total");
  c.overlap = metric(page, "chessrl_selfplay_model_overlap_seconds_total");
  c.swaps = metric(page, "chessrl_selfplay_model_swaps_total");
  return c;
}

struct Phase {
  double seconds = 0, games_per_s = 0, positions_per_s = 0, mean_batch = 0;
  double games_per_cpu_s = 0;  // games over the process's CPU seconds: less sensitive to load
  double drain_share = 0, overlap_share = 0, swaps = 0;
};

Phase between(const Counters& a, const Counters& b) {
  Phase p;
  p.seconds = std::chrono::duration<double>(b.at - a.at).count();
  p.games_per_s = (b.games - a.games) / p.seconds;
  p.positions_per_s = (b.positions - a.positions) / p.seconds;
  p.games_per_cpu_s =
      b.cpu_seconds > a.cpu_seconds ? (b.games - a.games) / (b.cpu_seconds - a.cpu_seconds) : 0;
  p.mean_batch = b.batches > a.batches ? (b.evals - a.evals) / (b.batches - a.batches) : 0;
  p.drain_share = (b.drain - a.drain) / p.seconds;
  p.overlap_share = (b.overlap - a.overlap) / p.seconds;
  p.swaps = b.swaps - a.swaps;
  return p;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", one, five, fifteen);
  return text;
}

// The bench's registry: an in-process replay service over in-memory stores,
// and the same weights published under each new version.
class Registry {
 public:
  explicit Registry(const std::string& net)
      : games_(1u << 22),
        // The weights made once: each publish only renames them.
        checkpoint_(nn::fresh_checkpoint(nn::parse_network_name(net).value_or_throw(),
                                         /*seed=*/1, {})) {
    replay_service::ReplayServerOptions options;
    options.listen = "127.0.0.1:0";
    // Every version kept (one pruning log line per publish otherwise); a
    // 1x8 checkpoint is about 1 MB.
    options.models.keep_models = 0;
    server_ = std::make_unique<replay_service::ReplayServer>(games_, models_, metrics_, options);
  }
  int port() const { return server_->port(); }
  std::uint64_t publish() {
    const std::uint64_t version = ++version_;
    checkpoint_.info.version = static_cast<std::int64_t>(version);
    const std::string blob = nn::serialize_checkpoint(checkpoint_);
    rpc::ClientOptions client;
    client.address = "127.0.0.1:" + std::to_string(port());
    client.deadline = std::chrono::seconds(30);
    v1::ModelInfo meta;
    meta.set_version(version);
    meta.set_step(version);
    auto published = rpc::ModelRegistryClient(client).publish(meta, blob);
    if (!published.ok()) throw Error("bench swap: publishing version " +
                                     std::to_string(version) + ": " + published.error());
    return version;
  }

 private:
  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry metrics_;
  nn::Checkpoint checkpoint_;
  std::unique_ptr<replay_service::ReplayServer> server_;
  std::uint64_t version_ = 0;
};

selfplay_service::Settings service_settings(const SwapBenchOptions& o, const std::string& mode,
                                            int port) {
  std::vector<std::string> args = {"--replay", "127.0.0.1:" + std::to_string(port),
                                   "--replica", "bench-swap",
                                   "--seed", "7",
                                   "--device", "cpu",
                                   "--concurrent", std::to_string(o.concurrent),
                                   "--threads", std::to_string(o.threads),
                                   "--workers", std::to_string(o.workers),
                                   "--visits", std::to_string(o.visits),
                                   "--reduced-visits", std::to_string(o.reduced_visits),
                                   "--metrics-listen", "127.0.0.1:0",
                                   "--progress-interval", "0",
                                   "--model-switch", mode};
  args.insert(args.end(), o.selfplay_args.begin(), o.selfplay_args.end());
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last first
  CLI::App app;
  selfplay_service::Settings settings;
  selfplay_service::add_options(app, settings);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw Error(std::string("bench swap: chessrl-selfplay's options: ") + e.what());
  }
  if (auto resolved = selfplay_service::resolve(settings, app); !resolved.ok())
    throw Error("bench swap: chessrl-selfplay's options: " + resolved.error());
  return settings;
}

struct Run {
  Phase quiet, publishing;
  double game_seconds = 0, interval = 0;
};

// Sleeps until `until`, showing progress.
void wait_until(Clock::time_point until, ProgressLine& progress, const char* what, int port) {
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(),
                                                           std::chrono::seconds(1)));
    const Counters c = scrape(port);
    progress.show("%s: %.0f games, %.0f s left", what, c.games,
                  std::max(0.0, std::chrono::duration<double>(until - Clock::now()).count()));
  }
}

Run run_once(const SwapBenchOptions& o, const std::string& mode, Registry& registry) {
  ProgressLine progress;
  std::atomic<bool> stop{false};
  selfplay_service::SelfplayService service(service_settings(o, mode, registry.port()), stop);
  int code = -1;
  std::thread thread([&] { code = service.run(); });
  struct Stop {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Stop() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stopper{stop, thread};

  const Clock::time_point started = Clock::now();
  while (service.metrics_port() == 0) {
    if (seconds_since(started) > 60) throw Error("bench swap: self-play did not serve /metrics");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int port = service.metrics_port();
  // At least --warmup seconds and a game finished per slot: play is steady.
  wait_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(o.warmup)),
             progress, "warm-up", port);
  while (scrape(port).games < double(o.concurrent)) {
    if (seconds_since(started) > 3600) throw Error("bench swap: no steady play after an hour");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const auto phase = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.seconds));

  Run run;
  const Counters a = scrape(port);
  wait_until(a.at + phase, progress, "no publishes", port);
  const Counters b = scrape(port);
  run.quiet = between(a, b);
  if (run.quiet.games_per_s <= 0)
    throw Error("bench swap: no game finished in " + std::to_string(o.seconds) +
                " s without publishes: raise --seconds");
  run.game_seconds = double(o.concurrent) / run.quiet.games_per_s;
  run.interval = o.publish_every > 0 ? o.publish_every : run.game_seconds / 4;

  const Counters c = scrape(port);
  const Clock::time_point end = c.at + phase;
  const auto every = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(run.interval));
  for (Clock::time_point next = c.at + every; next < end; next += every) {
    wait_until(next, progress, "publishing", port);
    registry.publish();
  }
  wait_until(end, progress, "publishing", port);
  run.publishing = between(c, scrape(port));
  progress.clear();
  stop = true;
  thread.join();
  if (code != 0) throw Error("bench swap: self-play exited " + std::to_string(code));
  return run;
}

void print_run(const std::string& mode, int index, const Run& r) {
  std::printf(
      "%-7s run %d: no publishes %.3f games/s (G = %.1f s, mean batch %.1f); publishing every "
      "%.1f s: %.3f games/s = %.3f, positions/s %.3f, games per CPU second %.3f, drain %.2f%%, "
      "overlap %.1f%%, mean batch %.1f, %.0f switches\n",
      mode.c_str(), index, r.quiet.games_per_s, r.game_seconds, r.quiet.mean_batch, r.interval,
      r.publishing.games_per_s, r.publishing.games_per_s / r.quiet.games_per_s,
      r.publishing.positions_per_s / r.quiet.positions_per_s,
      r.publishing.games_per_cpu_s / r.quiet.games_per_cpu_s, 100 * r.publishing.drain_share,
      100 * r.publishing.overlap_share, r.publishing.mean_batch, r.publishing.swaps);
  std::fflush(stdout);
}

// --json: a run's figures, the ratios as print_run says them.
nlohmann::json run_json(int index, const Run& r) {
  return {{"run", index},
          {"quiet_games_per_second", r.quiet.games_per_s},
          {"game_seconds", r.game_seconds},
          {"quiet_mean_batch", r.quiet.mean_batch},
          {"publish_interval_s", r.interval},
          {"games_per_second", r.publishing.games_per_s},
          {"games_ratio", r.publishing.games_per_s / r.quiet.games_per_s},
          {"positions_ratio", r.publishing.positions_per_s / r.quiet.positions_per_s},
          {"games_per_cpu_second_ratio", r.publishing.games_per_cpu_s / r.quiet.games_per_cpu_s},
          {"drain_share", r.publishing.drain_share},
          {"overlap_share", r.publishing.overlap_share},
          {"mean_batch", r.publishing.mean_batch},
          {"switches", r.publishing.swaps}};
}

void run_swap_bench(const SwapBenchOptions& o) {
  char every[32] = "G/4";
  if (o.publish_every > 0) std::snprintf(every, sizeof every, "%g s", o.publish_every);
  std::vector<std::string> modes;
  if (o.mode == "both" || o.mode == "overlap") modes.push_back("overlap");
  if (o.mode == "both" || o.mode == "drain") modes.push_back("drain");
  nlohmann::json doc = {{"bench", "swap"},
                        {"net", o.net},
                        {"concurrent", o.concurrent},
                        {"threads", o.threads},
                        {"visits", o.visits},
                        {"reduced_visits", o.reduced_visits},
                        {"workers", o.workers},
                        {"seconds", o.seconds},
                        {"publish_every", every},
                        {"repeat", o.repeat},
                        {"load_average_start", load_average()},
                        {"modes", nlohmann::json::object()}};
  if (!o.json)
    std::printf(
        "bench swap: chessrl-selfplay in-process on CPU (%s network, %d games at once, %d threads, "
        "%d/%d visits, %d evaluator worker(s)); %.0f s without publishes then %.0f s publishing "
        "every %s; %d run(s) per mode; load average %s\n",
        o.net.c_str(), o.concurrent, o.threads, o.visits, o.reduced_visits, o.workers, o.seconds,
        o.seconds, every, o.repeat, load_average().c_str());
  std::fflush(stdout);
  Registry registry(o.net);
  registry.publish();
  std::vector<std::vector<Run>> runs(modes.size());
  for (int i = 1; i <= o.repeat; ++i) {
    for (std::size_t m = 0; m < modes.size(); ++m) {
      runs[m].push_back(run_once(o, modes[m], registry));
      if (!o.json) print_run(modes[m], i, runs[m].back());
    }
  }
  for (std::size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> ratio, positions, cpu, drain, overlap, batch, quiet_batch;
    for (const Run& r : runs[m]) {
      ratio.push_back(r.publishing.games_per_s / r.quiet.games_per_s);
      positions.push_back(r.publishing.positions_per_s / r.quiet.positions_per_s);
      cpu.push_back(r.publishing.games_per_cpu_s / r.quiet.games_per_cpu_s);
      drain.push_back(r.publishing.drain_share);
      overlap.push_back(r.publishing.overlap_share);
      batch.push_back(r.publishing.mean_batch);
      quiet_batch.push_back(r.quiet.mean_batch);
    }
    const bool pass = median(ratio) >= 0.95 && median(drain) <= 0.02;
    nlohmann::json& mode = doc["modes"][modes[m]];
    mode["runs"] = nlohmann::json::array();
    for (std::size_t i = 0; i < runs[m].size(); ++i)
      mode["runs"].push_back(run_json(int(i) + 1, runs[m][i]));
    mode["median"] = {{"games_ratio", median(ratio)},
                      {"positions_ratio", median(positions)},
                      {"games_per_cpu_second_ratio", median(cpu)},
                      {"drain_share", median(drain)},
                      {"overlap_share", median(overlap)},
                      {"mean_batch", median(batch)},
                      {"quiet_mean_batch", median(quiet_batch)}};
    mode["pass"] = pass;  // games/s ratio >= 0.95 and drain <= 2%
    if (o.json) continue;
    std::printf(
        "%-7s median of %zu: games/s ratio %.3f (positions/s %.3f, games per CPU second %.3f), "
        "drain %.2f%% of the time, overlap %.1f%%, mean batch %.1f publishing / %.1f without: %s "
        "(ratio >= 0.95 and drain <= 2%%)\n",
        modes[m].c_str(), ratio.size(), median(ratio), median(positions), median(cpu),
        100 * median(drain),
        100 * median(overlap), median(batch), median(quiet_batch), pass ? "pass" : "FAIL");
  }
  if (o.json) {
    doc["load_average_end"] = load_average();
    print_json_document(doc.dump(2));
    return;
  }
  std::printf("load average at the end %s\n", load_average().c_str());
}

}  // namespace

void add_bench_swap_command(CLI::App& bench) {
  auto o = std::make_shared<SwapBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "swap",
      "what new model versions cost self-play: chessrl-selfplay in-process on CPU against an "
      "in-process registry, games/s without publishes and with a new version every quarter of "
      "a game's length, with --model-switch overlap and drain");
  cmd->add_option("--mode", o->mode, "overlap, drain or both (runs alternate)")
      ->check(CLI::IsMember({"overlap", "drain", "both"}))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "runs per mode (medians reported)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "length of each phase (without and with publishes)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "seconds played before the first phase of each run")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--publish-every", o->publish_every,
                  "seconds between publishes (0: a quarter of the mean game duration measured "
                  "without publishes)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--net", o->net, "the network published (BLOCKSxFILTERS)")
      ->capture_default_str();
  cmd->add_option("--concurrent", o->concurrent, "games played at once")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "search threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--workers", o->workers, "evaluator workers")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--visits", o->visits, "visits of a full search")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--reduced-visits", o->reduced_visits, "visits of a reduced search")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option(
         "--selfplay-arg", o->selfplay_args,
         "one more chessrl-selfplay argument (repeatable), e.g. --selfplay-arg=--max-plies=60")
      ->allow_extra_args(false);
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the figures (each run, each mode's medians and "
                "pass) instead of the lines");
  cmd->callback([o] {
    if (auto net = nn::parse_network_name(o->net); !net.ok())
      throw CLI::ValidationError("--net", net.error());
    run_swap_bench(*o);
  });
}

}  // namespace chessrl::tool
