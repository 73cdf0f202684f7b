// `chessrl local` (behind `make run`): the whole loop on one machine as child
// processes — a private redis-server, chessrl-replay, the trainer (one rank,
// or two over Gloo), self-play processes and the evaluator — with a live
// status line. Ctrl-C stops them in order (self-play and evaluator, then the
// trainer, which checkpoints, then replay and Redis, which persists); a second
// run in the same directory resumes. Everything lives under --dir. A
// Prometheus (Debian's `prometheus`) scrapes every child with the chart's
// recording rules and alerts, its data under --dir too (--no-prometheus: none),
// and chessrl-web serves the game viewer's page (--no-web: none).
// A child that dies is restarted with backoff (local/supervisor.h); one that
// keeps dying stops the run. A trainer rank whose /healthz keeps failing (no
// progress) is stopped and restarted too. The options are in local/options.h;
// the run's parts (ports, Redis, Prometheus, the viewer) in local/run.h; its
// secrets in local/secrets.h. This file: the order of the start, the watch, the stop.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "commands.h"
#include "local/devices.h"
#include "local/options.h"
#include "local/run.h"
#include "local/secrets.h"
#include "local/settings.h"
#include "local/status.h"

namespace chessrl::tool {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// `argv`, then `more`, then the words of `extra`.
std::vector<std::string> with_words(std::vector<std::string> argv,
                                    const std::vector<std::string>& more,
                                    const std::string& extra) {
  argv.insert(argv.end(), more.begin(), more.end());
  return tool::with_words(std::move(argv), extra);
}

// `argv`, then `more`, then `last`.
std::vector<std::string> joined(std::vector<std::string> argv, const std::vector<std::string>& more,
                                const std::vector<std::string>& last) {
  argv.insert(argv.end(), more.begin(), more.end());
  argv.insert(argv.end(), last.begin(), last.end());
  return argv;
}

}  // namespace

int LocalRun::run(const StopSignals& signals) {
  if (!start(signals)) {
    // A start that cannot go on (said): everything stopped, no local.json left.
    supervisor_.stop_all();
    fs::remove(root_ / "local.json");
    return signals.requested() ? 0 : 1;
  }
  const int exit_code = watch(signals);
  stop(exit_code);
  return exit_code;
}

bool LocalRun::start(const StopSignals& signals) {
  make_dirs();
  started_at_ = Clock::now();
  // Its own /metrics (the restarts per child) on a port the kernel picks.
  metrics::add_build_info(registry_);
  exposer_ = std::make_unique<metrics::Exposer>(registry_, "127.0.0.1:0");
  const std::string password = kept_secret(root_ / "redis" / "password");
  if (!o_.no_auth) make_run_tokens(root_ / "auth");
  say("run directory " + root_.string() + " (logs in " + (root_ / "logs").string() + ")");

  // Redis, with its data kept in run/redis (AOF: a second run resumes).
  const auto redis_program = find_program("redis-server");
  if (!redis_program) throw Error("redis-server not found: install it (scripts/install-deps.sh)");
  for (int shard = 0; shard < o_.redis_shards; ++shard)
    start_redis(*redis_program, password, shard);
  // One Redis: --redis-port, as always; several: --redis-shards, all on loopback.
  std::vector<std::string> redis_args = {"--redis-port", std::to_string(ports_.redis.front())};
  if (o_.redis_shards > 1) {
    std::string list;
    for (const int port : ports_.redis) list += (list.empty() ? "" : ",") + loopback(port);
    redis_args = {"--redis-shards", list};
  }
  if (!start_replay(redis_args, signals) || !start_trainers(signals)) return false;
  start_players();
  write_state();  // the children's pids; their metrics ports once they say them
  if (!await_metrics_ports(signals)) return false;
  if (!o_.no_web) start_web(signals);
  if (!o_.no_prometheus) start_prometheus(signals);
  ready_ = true;
  write_state();
  for (const auto& [name, port] : metrics_ports_)
    say(name + ": http://127.0.0.1:" + std::to_string(port) + "/metrics");
  say("chessrl local (restarts per child): http://127.0.0.1:" + std::to_string(exposer_->port()) +
      "/metrics");
  if (prometheus_started_)
    say("Prometheus: http://127.0.0.1:" + std::to_string(ports_.prometheus) +
        " (graphs and alerts; Grafana: docs/monitoring.md)");
  if (web_started_)
    say("Game viewer: http://127.0.0.1:" + std::to_string(ports_.web) +
        "/ (the live games, the matches, the Elo curve)");
  say("Ctrl-C stops everything (a second run resumes from the checkpoint)");
  return true;
}

// The replay service over Redis; it reads the password from the run's file.
bool LocalRun::start_replay(const std::vector<std::string>& redis_args,
                            const StopSignals& signals) {
  launch("replay",
         with_words({binary("chessrl-replay"), "--listen", loopback(o_.port), "--metrics-listen",
                     loopback(0), "--redis-password-file", (root_ / "redis" / "password").string()},
                    joined(redis_args, replay_settings(o_),
                           o_.no_auth ? std::vector<std::string>{}
                                      : std::vector<std::string>{"--auth-dir",
                                                                 (root_ / "auth").string()}),
                    ""))
      .value_or_throw();
  // Its ready file names both (written once both listen).
  const auto replay_port = await_port("replay", "grpc", std::chrono::seconds(60), signals);
  const auto replay_metrics =
      replay_port ? await_port("replay", "metrics", std::chrono::seconds(5), signals)
                  : std::nullopt;
  if (!replay_port || !replay_metrics) return false;
  ports_.replay = *replay_port;
  ports_.replay_metrics = *replay_metrics;
  pin_port("replay", "--listen", ports_.replay);
  pin_port("replay", "--metrics-listen", ports_.replay_metrics);
  metrics_ports_.push_back({"replay", ports_.replay_metrics});
  if (!wait_healthy("replay", ports_.replay_metrics, signals)) return false;
  std::string redis_ports;
  for (const int port : ports_.redis)
    redis_ports += (redis_ports.empty() ? "" : ", ") + std::to_string(port);
  say("replay service on " + loopback(ports_.replay) + ", Redis on port" +
      (ports_.redis.size() > 1 ? "s " : " ") + redis_ports);
  return true;
}

// The trainer: one rank, or several over Gloo on loopback.
bool LocalRun::start_trainers(const StopSignals& signals) {
  for (int r = 0; r < o_.trainers; ++r) {
    const std::string name = "trainer-" + std::to_string(r);
    std::vector<std::pair<std::string, std::string>> env = {
        {"RANK", std::to_string(r)},
        {"WORLD_SIZE", std::to_string(o_.trainers)},
        {"MASTER_ADDR", "127.0.0.1"},
        // Rank 0 serves the rendezvous on a port the kernel picks and names it
        // in its ready file; the other ranks are started with it once it has.
        {"MASTER_PORT", std::to_string(r == 0 ? 0 : ports_.master)},
        {"GLOO_SOCKET_IFNAME", "lo"}};
    launch(name,
           joined({binary("chessrl-trainer"), "--replay", loopback(ports_.replay),
                   "--metrics-listen", loopback(0), "--checkpoint-dir",
                   (root_ / "checkpoints").string()},
                  trainer_settings(o_), token("trainer")),
           env, false, devices_.trainers[std::size_t(r)])
        .value_or_throw();
    if (r == 0 && o_.trainers > 1) {
      const auto port = await_port(name, "rendezvous", std::chrono::seconds(120), signals);
      if (!port) return false;
      ports_.master = *port;
      for (auto& [key, value] : env)  // kept by its restarts
        if (key == "MASTER_PORT") value = std::to_string(*port);
      add_device_env(devices_.trainers[0], env);  // as launch() added it
      supervisor_.set_env(name, env);
    }
  }
  return true;
}

// Self-play (each replica its own name, so their seeds differ) and the evaluator.
void LocalRun::start_players() {
  for (int i = 0; i < o_.selfplay; ++i) {
    const std::string name = "selfplay-" + std::to_string(i);
    launch(name,
           joined({binary("chessrl-selfplay"), "--replay", loopback(ports_.replay),
                   "--metrics-listen", loopback(0), "--replica", name, "--version-stats",
                   (root_ / "stats" / (name + ".jsonl")).string(), "--acked-log",
                   (root_ / "stats" / (name + ".acked")).string()},
                  selfplay_settings(o_), token("selfplay")),
           {}, false, devices_.selfplay[std::size_t(i)], o_.selfplay_nice)
        .value_or_throw();
  }
  launch("evaluator",
         joined({binary("chessrl-evaluator"), "--registry", loopback(ports_.replay),
                 "--metrics-listen", loopback(0), "--state-dir", (root_ / "evaluator").string()},
                evaluator_settings(o_), token("evaluator")),
         {}, false, devices_.evaluator)
      .value_or_throw();
}

// Each names its metrics port in its ready file once its /metrics listens (on
// port 0 at this first start); its restarts keep that port.
bool LocalRun::await_metrics_ports(const StopSignals& signals) {
  for (const std::string& name : supervisor_.names()) {
    if (name.rfind("redis", 0) == 0 || name == "replay") continue;
    const auto port = await_port(name, "metrics", std::chrono::seconds(60), signals);
    if (!port) return false;
    pin_port(name, "--metrics-listen", *port);
    metrics_ports_.push_back({name, *port});
    // A trainer rank's /healthz turns 503 once it makes no progress (a write
    // on a wedged disk, a collective that never returns): restarted, as the
    // chart's liveness probe does. The others' /healthz reports what a restart
    // would not mend (replay or the registry unreachable): only their exit is.
    if (name.rfind("trainer-", 0) == 0) {
      const int health_port = *port;
      supervisor_.set_liveness(name, [health_port]() -> std::string {
        auto reply = http_get(health_port, "/healthz", std::chrono::milliseconds(2000));
        if (!reply.ok()) return reply.error();
        if (reply->status == 200) return "";
        std::string body = reply->body;
        while (!body.empty() && body.back() == '\n') body.pop_back();
        return "HTTP " + std::to_string(reply->status) + ": " + body;
      });
    }
  }
  return true;
}

// The supervisor restarts a child that dies (a crash loop stops the run); the
// status line every --status-every.
int LocalRun::watch(const StopSignals& signals) {
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  StatusLine status;
  auto last_printed = Clock::now() - std::chrono::hours(1);
  auto next_status = Clock::now();
  int exit_code = 0;
  while (!signals.requested()) {
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "\nchessrl local: %s", polled.stop_reason->c_str());
      exit_code = 1;
      break;
    }
    if (polled.restarted) write_state();  // the new pids
    if (prometheus_started_ && supervisor_.gave_up("prometheus")) prometheus_started_ = false;
    if (web_started_ && supervisor_.gave_up("web")) web_started_ = false;
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_at_);
    if (o_.duration > 0 && elapsed.count() >= o_.duration) {
      say("--duration " + std::to_string(o_.duration) + " s reached");
      break;
    }
    if (Clock::now() >= next_status) {
      status.add(scrape());
      const std::string line = with_restarts(status.format(elapsed));
      if (tty && !o_.quiet) {
        std::printf("\r%s\033[K", line.c_str());
        std::fflush(stdout);
      } else if (Clock::now() - last_printed >= std::chrono::seconds(30)) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        last_printed = Clock::now();
      }
      next_status = Clock::now() + std::chrono::milliseconds(int(o_.status_every * 1000));
    }
    signals.wait_for(std::chrono::milliseconds(200));  // how soon a dead child is seen
  }
  status.add(scrape());
  const std::string final_line = with_restarts(
      status.format(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_at_)));
  std::printf("%s%s\n", tty && !o_.quiet ? "\r" : "", final_line.c_str());
  if (const std::string games = status.games_summary(); !games.empty())
    std::printf("%s\n", games.c_str());
  std::fflush(stdout);
  return exit_code;
}

void LocalRun::stop(int exit_code) {
  say("stopping: self-play and evaluator, then the trainer (checkpoint), replay and Redis");
  supervisor_.stop_all();
  if (exit_code == 0)
    for (const std::string& unclean : supervisor_.unclean_exits())
      std::fprintf(stderr, "chessrl local: %s\n", unclean.c_str());
  fs::remove(root_ / "local.json");
  std::error_code ignored;
  fs::remove_all(root_ / "ready", ignored);  // the children's, all gone
  say("stopped; run again with the same --dir to resume");
}

void add_local_command(CLI::App& app) {
  auto o = std::make_shared<LocalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "local",
      "The whole loop on this machine: redis-server, chessrl-replay, chessrl-trainer, self-play "
      "and the evaluator as child processes, with a live status line (make run)");
  add_local_options(*cmd, *o);
  cmd->callback([o, cmd] {
    // GPU lists set how many self-play processes and trainer ranks there are.
    auto devices = plan_devices(*o, cmd->count("--selfplay") > 0, cmd->count("--trainers") > 0);
    if (!devices.ok()) throw CLI::ValidationError(devices.error());
    o->selfplay = int(devices->selfplay.size());
    o->trainers = int(devices->trainers.size());
    if (o->selfplay_threads == 0) o->selfplay_threads = auto_selfplay_threads(o->selfplay);
    if (o->batch_size && *o->batch_size % o->trainers != 0)
      throw CLI::ValidationError("--batch-size", std::to_string(*o->batch_size) +
                                                     " is not divisible by --trainers " +
                                                     std::to_string(o->trainers));
    if (o->print_settings) {
      const nlohmann::json settings = {{"selfplay", selfplay_settings(*o)},
                                       {"trainer", trainer_settings(*o)},
                                       {"evaluator", evaluator_settings(*o)},
                                       {"replay", replay_settings(*o)}};
      std::printf("%s\n", settings.dump(2).c_str());
      return;
    }
    StopSignals stop("chessrl local", "stopping everything");
    LocalRun run(*o, std::move(devices).value());
    const int code = run.run(stop);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace chessrl::tool
