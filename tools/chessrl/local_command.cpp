// `chessrl local` (behind `make run`): the whole loop on one machine as child
// processes — a private redis-server, chessrl-replay, the trainer (one rank,
// or two over Gloo), self-play processes and the evaluator — with a live
// status line. Ctrl-C stops them in order (self-play and evaluator, then the
// trainer, which checkpoints, then replay and Redis, which persists); a second
// run in the same directory resumes. Everything lives under --dir. A
// Prometheus (Debian's `prometheus`) scrapes every child with the chart's
// recording rules and alerts, its data under --dir too (--no-prometheus: none).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "chessrl/core/error.h"
#include "chessrl/core/files.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/replay/redis_server.h"
#include "commands.h"
#include "local_children.h"
#include "local_defaults.h"
#include "local_status.h"

namespace chessrl::tool {
namespace {

namespace fs = std::filesystem;
namespace d = local_defaults;
using Clock = std::chrono::steady_clock;

// `argv` with the words of `extra` (split at whitespace) appended.
std::vector<std::string> with_words(std::vector<std::string> argv, const std::string& extra) {
  std::istringstream words(extra);
  for (std::string word; words >> word;) argv.push_back(word);
  return argv;
}
// `argv`, then `more`, then the words of `extra`.
std::vector<std::string> with_words(std::vector<std::string> argv,
                                    const std::vector<std::string>& more,
                                    const std::string& extra) {
  argv.insert(argv.end(), more.begin(), more.end());
  return with_words(std::move(argv), extra);
}

struct LocalOptions {
  std::string dir = "run";
  std::string bin_dir;
  int selfplay = 1;
  int trainers = 1;
  // The network and self-play.
  std::string net = d::kNet;
  int visits = d::kFullVisits;
  int reduced_visits = d::kReducedVisits;
  float full_fraction = d::kFullFraction;
  int concurrent = d::kConcurrentGames;
  int max_plies = d::kMaxPlies;
  int adjudicate_material = d::kAdjudicateMaterial;
  float final_temperature = d::kFinalTemperature;
  double value_q_ratio = d::kValueQRatio;
  // Replay and training.
  std::uint64_t window = 50000;
  int batch_size = d::kBatchSize;
  std::string optimizer = "adamw";
  double lr = 1e-3;
  int publish_every = d::kPublishEvery;
  int checkpoint_every = 100;
  std::uint64_t min_window = 4000;
  double max_reuse = 4;
  // Evaluation.
  int eval_visits = d::kEvalVisits;
  int eval_pairs = 4;
  int anchor_pairs = 4;
  std::string anchors = "random,greedy";
  std::vector<std::string> engines;
  // More options for the children, as words (split at spaces).
  std::string selfplay_args, trainer_args, evaluator_args;
  // The run itself.
  int duration = 0;  // seconds; 0: until Ctrl-C
  double status_every = 2;
  bool quiet = false;
  // Prometheus: scrapes every child; the chart's rules (helm/rules) by default.
  bool no_prometheus = false;
  // Bearer tokens on the replay service and registry (run/auth, one per role).
  bool no_auth = false;
  std::string prometheus_rules = std::string(CHESSRL_SOURCE_DIR) + "/helm/rules/chess-rl.yaml";
};

struct Ports {
  int redis = 0, replay = 0, replay_metrics = 0, master = 0, evaluator_metrics = 0, prometheus = 0;
  std::vector<int> trainer_metrics, selfplay_metrics;
};

std::string random_password() {
  std::random_device rd;
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 32; ++i) out += kChars[rd() % (sizeof kChars - 1)];
  return out;
}

// A secret of the run directory (the Redis password, a token) in `file`, made
// on the first run and kept, so a second run opens the same data. Created 0600
// (write_private_file), never readable by others, not even for a moment.
std::string kept_secret(const fs::path& file) {
  if (fs::exists(file)) {
    if (auto secret = read_secret_file(file.string()); secret.ok()) {
      fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);  // an older run's
      return *secret;
    }
  }
  const std::string secret = random_password();
  write_private_file(file.string(), secret + "\n").value_or_throw();
  return secret;
}

// A directory for secrets: created 0700 by mkdir itself; one left by an older
// run is narrowed to 0700.
void make_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Error(dir.string() + ": cannot create: " + std::strerror(errno));
  }
  fs::permissions(dir, fs::perms::owner_all);
}

std::string listen(int port) { return "127.0.0.1:" + std::to_string(port); }

// The run's bearer tokens, one file per caller role in `dir` (0700; each file
// 0600 from creation), made on the first run and kept. The replay service
// reads the directory (--auth-dir); each client its own file (--token-file).
void make_run_tokens(const fs::path& dir) {
  make_private_dir(dir);
  for (const char* role : {"selfplay", "trainer", "evaluator"}) kept_secret(dir / role);
}

class LocalRun {
 public:
  explicit LocalRun(const LocalOptions& o) : o_(o) {}
  int run(const StopSignals& stop);

 private:
  void make_dirs();
  void plan_ports();
  void write_state() const;
  Result<Child*> launch(const std::string& name, std::vector<std::string> argv,
                        std::vector<std::pair<std::string, std::string>> env = {});
  bool wait_healthy(Child& child, int port, const StopSignals& stop);
  void start_prometheus();
  Scrape scrape() const;
  void stop_all();
  std::string log_path(const std::string& name) const {
    return (root_ / "logs" / (name + ".log")).string();
  }
  std::string binary(const std::string& name) const {
    return find_service_binary(name, o_.bin_dir).value_or_throw();
  }

  LocalOptions o_;
  fs::path root_;
  Ports ports_;
  std::vector<std::unique_ptr<Child>> children_;
  std::vector<std::pair<std::string, int>> metrics_ports_;  // child name -> port
  bool prometheus_started_ = false;
  std::int64_t started_ms_ = 0;  // unix ms when training in this directory began
};

// run/prometheus/prometheus.yml: every child a target, labelled as the chart's
// scrape configs label a pod (instance = its name), with the chart's rules.
void LocalRun::start_prometheus() {
  const auto program = find_program("prometheus");
  if (!program) {
    std::fprintf(stderr,
                 "chessrl local: prometheus not found (apt-get install prometheus): no graphs "
                 "this run; --no-prometheus silences this\n");
    return;
  }
  const fs::path dir = root_ / "prometheus";
  std::ofstream conf(dir / "prometheus.yml");
  conf << "# Written by chessrl local at every start: the children's /metrics ports change.\n"
          "global:\n  scrape_interval: 5s\n  evaluation_interval: 5s\n";
  if (fs::exists(o_.prometheus_rules)) {
    conf << "rule_files:\n  - " << nlohmann::json(fs::absolute(o_.prometheus_rules).string()).dump()
         << "\n";
  } else if (!o_.quiet) {
    std::fprintf(stderr, "chessrl local: no rules file at %s (--prometheus-rules): no recording rules\n",
                 o_.prometheus_rules.c_str());
  }
  conf << "scrape_configs:\n  - job_name: chessrl-local\n    static_configs:\n";
  for (const auto& [name, port] : metrics_ports_) {
    const std::string component = name.substr(0, name.find('-'));
    conf << "      - targets: [\"127.0.0.1:" << port << "\"]\n        labels: {instance: "
         << nlohmann::json(name).dump() << ", component: " << nlohmann::json(component).dump()
         << "}\n";
  }
  conf.close();
  auto child = launch("prometheus", {*program, "--config.file=" + (dir / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir / "data").string(),
                                     "--web.listen-address=" + listen(ports_.prometheus)});
  if (!child.ok()) {
    std::fprintf(stderr, "chessrl local: prometheus did not start (%s): no graphs this run\n",
                 child.error().c_str());
    return;
  }
  prometheus_started_ = true;
}

void LocalRun::make_dirs() {
  root_ = fs::absolute(o_.dir);
  for (const char* sub : {"logs", "checkpoints", "evaluator", "prometheus", "stats"})
    fs::create_directories(root_ / sub);
  make_private_dir(root_ / "redis");  // its password, redis.conf and the data
  fs::remove(root_ / "local.json");  // the last run's ports and pids; written anew once started
  // When training in this directory began: the first run's start, kept across
  // resumed runs, so `chessrl curve` measures training time from it.
  const fs::path first = root_ / "stats" / "started_ms";
  std::ifstream in(first);
  if (!(in >> started_ms_) || started_ms_ <= 0) {
    started_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    std::ofstream(first) << started_ms_ << "\n";
  }
}

void LocalRun::plan_ports() {
  ports_.redis = replay::free_port();
  ports_.replay = replay::free_port();
  ports_.replay_metrics = replay::free_port();
  ports_.master = replay::free_port();
  ports_.evaluator_metrics = replay::free_port();
  if (!o_.no_prometheus) ports_.prometheus = replay::free_port();
  for (int r = 0; r < o_.trainers; ++r) ports_.trainer_metrics.push_back(replay::free_port());
  for (int i = 0; i < o_.selfplay; ++i) ports_.selfplay_metrics.push_back(replay::free_port());
}

// run/local.json: where everything is, for people and the e2e test.
void LocalRun::write_state() const {
  nlohmann::json state;
  state["dir"] = root_.string();
  state["replay"] = listen(ports_.replay);
  state["redis_port"] = ports_.redis;
  state["started_ms"] = started_ms_;
  if (prometheus_started_) state["prometheus"] = "http://127.0.0.1:" + std::to_string(ports_.prometheus);
  nlohmann::json children = nlohmann::json::array();
  for (const auto& c : children_) {
    nlohmann::json child{{"name", c->name()}, {"pid", c->pid()}, {"log", c->spec().log_path}};
    for (const auto& [name, port] : metrics_ports_)
      if (name == c->name()) child["metrics_port"] = port;
    children.push_back(child);
  }
  state["children"] = children;
  std::ofstream(root_ / "local.json") << state.dump(2) << "\n";
}

Result<Child*> LocalRun::launch(const std::string& name, std::vector<std::string> argv,
                                std::vector<std::pair<std::string, std::string>> env) {
  ChildSpec spec{name, std::move(argv), std::move(env), log_path(name)};
  {
    std::ofstream log(spec.log_path, std::ios::app);
    log << "==== chessrl local: starting " << name << ":";
    for (const auto& a : spec.argv) log << " " << a;
    log << "\n";
  }
  auto child = Child::start(spec);
  if (!child.ok()) return fail(child.error());
  children_.push_back(std::move(child).value());
  return children_.back().get();
}

bool LocalRun::wait_healthy(Child& child, int port, const StopSignals& stop) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && !stop.requested()) {
    if (child.exited()) return false;
    auto reply = http_get(port, "/healthz", std::chrono::milliseconds(500));
    if (reply.ok() && reply->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

Scrape LocalRun::scrape() const {
  Scrape s;
  s.when = Clock::now();
  for (const auto& [name, port] : metrics_ports_) {
    auto reply = http_get(port, "/metrics", std::chrono::milliseconds(1000));
    if (reply.ok() && reply->status == 200) s.by_child[name] = parse_samples(reply->body);
  }
  return s;
}

void LocalRun::stop_all() {
  // Producers first, then the trainer (it checkpoints on SIGTERM), then the
  // service everyone talks to, then Redis (it persists on SIGTERM).
  auto stop_group = [&](const std::string& prefix, std::chrono::seconds grace) {
    std::vector<Child*> group;
    for (auto& c : children_)
      if (c->name().rfind(prefix, 0) == 0 && !c->exited()) group.push_back(c.get());
    for (Child* c : group) c->terminate();
    for (Child* c : group) {
      if (!c->stop(grace)) std::fprintf(stderr, "chessrl local: %s did not stop in %lld s: killed\n",
                                        c->name().c_str(), static_cast<long long>(grace.count()));
    }
  };
  stop_group("selfplay", std::chrono::seconds(30));
  stop_group("evaluator", std::chrono::seconds(30));
  stop_group("trainer", std::chrono::seconds(60));
  stop_group("replay", std::chrono::seconds(20));
  stop_group("redis", std::chrono::seconds(20));
  stop_group("prometheus", std::chrono::seconds(20));  // last: it saw everything stop
}

int LocalRun::run(const StopSignals& stop) {
  make_dirs();
  plan_ports();
  const std::string password = kept_secret(root_ / "redis" / "password");
  const fs::path auth = root_ / "auth";
  if (!o_.no_auth) make_run_tokens(auth);
  // A client's --token-file, or nothing when tokens are off.
  const auto token = [&](const char* role) {
    return o_.no_auth ? std::vector<std::string>{}
                      : std::vector<std::string>{"--token-file", (auth / role).string()};
  };
  const auto started = Clock::now();
  auto say = [&](const std::string& text) {
    if (!o_.quiet) std::fprintf(stderr, "chessrl local: %s\n", text.c_str());
  };
  say("run directory " + root_.string() + " (logs in " + (root_ / "logs").string() + ")");

  // Redis, with its data kept in run/redis (AOF: a second run resumes).
  const auto redis_program = find_program("redis-server");
  if (!redis_program) throw Error("redis-server not found: install it (scripts/install-deps.sh)");
  // redis.conf holds the password (requirepass): created 0600, and redis-server
  // gets only its path, so ps shows no password.
  {
    std::ostringstream conf;
    conf << "port " << ports_.redis << "\nbind 127.0.0.1\ndir " << (root_ / "redis").string()
         << "\nrequirepass " << password
         << "\nappendonly yes\nappendfsync everysec\nsave \"\"\ndaemonize no\n"
            "protected-mode yes\nlogfile \"\"\n";
    write_private_file((root_ / "redis" / "redis.conf").string(), conf.str()).value_or_throw();
  }
  launch("redis", {*redis_program, (root_ / "redis" / "redis.conf").string()}).value_or_throw();

  // The replay service over it; it reads the password from the run's file.
  Child* replay = launch("replay",
                         with_words({binary("chessrl-replay"), "--listen", listen(ports_.replay),
                          "--metrics-listen", listen(ports_.replay_metrics), "--store", "redis",
                          "--redis-port", std::to_string(ports_.redis), "--redis-password-file",
                          (root_ / "redis" / "password").string(), "--window-positions",
                          std::to_string(o_.window)},
                         o_.no_auth ? std::vector<std::string>{}
                                    : std::vector<std::string>{"--auth-dir", auth.string()},
                         ""))
                      .value_or_throw();
  metrics_ports_.push_back({"replay", ports_.replay_metrics});
  if (!wait_healthy(*replay, ports_.replay_metrics, stop)) {
    if (stop.requested()) {
      stop_all();
      return 0;
    }
    std::fprintf(stderr, "chessrl local: the replay service did not become healthy (%s); its log:\n%s",
                 replay->status().c_str(), replay->log_tail(20).c_str());
    stop_all();
    return 1;
  }
  say("replay service on " + listen(ports_.replay) + ", Redis on port " +
      std::to_string(ports_.redis));

  // The trainer: one rank, or several over Gloo on loopback.
  for (int r = 0; r < o_.trainers; ++r) {
    const std::string name = "trainer-" + std::to_string(r);
    std::vector<std::pair<std::string, std::string>> env = {
        {"RANK", std::to_string(r)},
        {"WORLD_SIZE", std::to_string(o_.trainers)},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(ports_.master)},
        {"GLOO_SOCKET_IFNAME", "lo"}};
    launch(name,
           with_words({binary("chessrl-trainer"), "--replay", listen(ports_.replay), "--metrics-listen",
            listen(ports_.trainer_metrics[std::size_t(r)]), "--net", o_.net, "--batch-size",
            std::to_string(o_.batch_size / o_.trainers), "--optimizer", o_.optimizer, "--lr",
            std::to_string(o_.lr), "--checkpoint-dir", (root_ / "checkpoints").string(),
            "--checkpoint-every", std::to_string(o_.checkpoint_every), "--publish-every",
            std::to_string(o_.publish_every), "--min-window", std::to_string(o_.min_window),
            "--max-reuse", std::to_string(o_.max_reuse), "--value-q-ratio",
            std::to_string(o_.value_q_ratio), "--threads", "1", "--log-every", "50"},
           token("trainer"), o_.trainer_args),
           env)
        .value_or_throw();
    metrics_ports_.push_back({name, ports_.trainer_metrics[std::size_t(r)]});
  }

  // Self-play: each replica its own name, so their seeds differ.
  for (int i = 0; i < o_.selfplay; ++i) {
    const std::string name = "selfplay-" + std::to_string(i);
    launch(name, with_words({binary("chessrl-selfplay"), "--replay", listen(ports_.replay), "--metrics-listen",
                  listen(ports_.selfplay_metrics[std::size_t(i)]), "--replica", name, "--net",
                  o_.net, "--visits", std::to_string(o_.visits), "--reduced-visits",
                  std::to_string(o_.reduced_visits), "--full-fraction",
                  std::to_string(o_.full_fraction), "--concurrent", std::to_string(o_.concurrent),
                  "--max-plies", std::to_string(o_.max_plies), "--adjudicate-material",
                  std::to_string(o_.adjudicate_material), "--final-temperature",
                  std::to_string(o_.final_temperature), "--threads", "1", "--workers", "1",
                  "--nn-threads", "1", "--version-stats",
                  (root_ / "stats" / (name + ".jsonl")).string()}, token("selfplay"), o_.selfplay_args))
        .value_or_throw();
    metrics_ports_.push_back({name, ports_.selfplay_metrics[std::size_t(i)]});
  }

  // The evaluator.
  std::vector<std::string> evaluator = {
      binary("chessrl-evaluator"), "--registry", listen(ports_.replay), "--metrics-listen",
      listen(ports_.evaluator_metrics), "--state-dir", (root_ / "evaluator").string(), "--visits",
      std::to_string(o_.eval_visits), "--leaves", std::to_string(std::min(o_.eval_visits, 8)),
      "--pairs", std::to_string(o_.eval_pairs), "--anchor-pairs",
      std::to_string(o_.anchor_pairs), "--anchors", o_.anchors, "--max-plies",
      std::to_string(d::kEvalMaxPlies), "--threads", "1", "--nn-threads", "1"};
  for (const auto& e : o_.engines) {
    evaluator.push_back("--engine");
    evaluator.push_back(e);
  }
  for (auto& word : token("evaluator")) evaluator.push_back(std::move(word));
  launch("evaluator", with_words(std::move(evaluator), o_.evaluator_args)).value_or_throw();
  metrics_ports_.push_back({"evaluator", ports_.evaluator_metrics});
  if (!o_.no_prometheus) start_prometheus();
  write_state();
  for (const auto& [name, port] : metrics_ports_)
    say(name + ": http://127.0.0.1:" + std::to_string(port) + "/metrics");
  if (prometheus_started_)
    say("Prometheus: http://127.0.0.1:" + std::to_string(ports_.prometheus) +
        " (graphs and alerts; Grafana: docs/monitoring.md)");
  say("Ctrl-C stops everything (a second run resumes from the checkpoint)");

  // Watch: the status line, and any child that dies.
  StatusLine status;
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  auto last_printed = Clock::now() - std::chrono::hours(1);
  int exit_code = 0;
  while (!stop.requested()) {
    for (auto& c : children_) {
      if (c->exited() && c->name() == "prometheus") {
        if (prometheus_started_)
          std::fprintf(stderr, "\nchessrl local: prometheus stopped (%s; log %s); training goes on\n",
                       c->status().c_str(), c->spec().log_path.c_str());
        prometheus_started_ = false;
        continue;
      }
      if (c->exited()) {
        std::fprintf(stderr, "\nchessrl local: %s stopped unexpectedly (%s); the end of %s:\n%s",
                     c->name().c_str(), c->status().c_str(), c->spec().log_path.c_str(),
                     c->log_tail(15).c_str());
        exit_code = 1;
      }
    }
    if (exit_code != 0) break;
    const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
    if (o_.duration > 0 && elapsed.count() >= o_.duration) {
      say("--duration " + std::to_string(o_.duration) + " s reached");
      break;
    }
    status.add(scrape());
    const std::string line = status.format(elapsed);
    if (tty && !o_.quiet) {
      std::printf("\r%s\033[K", line.c_str());
      std::fflush(stdout);
    } else if (Clock::now() - last_printed >= std::chrono::seconds(30)) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      last_printed = Clock::now();
    }
    stop.wait_for(std::chrono::milliseconds(int(o_.status_every * 1000)));
  }
  status.add(scrape());
  const std::string final_line =
      status.format(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started));
  std::printf("%s%s\n", tty && !o_.quiet ? "\r" : "", final_line.c_str());
  if (const std::string games = status.games_summary(); !games.empty())
    std::printf("%s\n", games.c_str());
  std::fflush(stdout);
  say("stopping: self-play and evaluator, then the trainer (checkpoint), replay and Redis");
  stop_all();
  for (auto& c : children_)
    if (!c->clean_exit() && exit_code == 0) {
      std::fprintf(stderr, "chessrl local: %s ended with %s (log %s)\n", c->name().c_str(),
                   c->status().c_str(), c->spec().log_path.c_str());
    }
  fs::remove(root_ / "local.json");
  say("stopped; run again with the same --dir to resume");
  return exit_code;
}

}  // namespace

void add_local_command(CLI::App& app) {
  auto o = std::make_shared<LocalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "local",
      "The whole loop on this machine: redis-server, chessrl-replay, chessrl-trainer, self-play "
      "and the evaluator as child processes, with a live status line (make run)");
  cmd->add_option("--dir", o->dir, "Everything the run writes goes here; a second run resumes")
      ->capture_default_str();
  cmd->add_option("--bin-dir", o->bin_dir, "Where the chessrl-* binaries are (default: found)");
  cmd->add_option("--selfplay", o->selfplay, "Self-play processes")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--trainers", o->trainers, "Trainer ranks (2: data parallel over Gloo)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  cmd->add_option("--net", o->net, "Network (BLOCKSxFILTERS)")->capture_default_str();
  cmd->add_option("--visits", o->visits, "Self-play visits of a full (recorded) search")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--reduced-visits", o->reduced_visits, "Visits of the other moves")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--full-fraction", o->full_fraction, "Share of full searches")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--concurrent", o->concurrent, "Games at once per self-play process")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--max-plies", o->max_plies,
                  "Plies after which a self-play game ends (a draw, or won on material)")
      ->check(CLI::Range(10, 2000))
      ->capture_default_str();
  cmd->add_option("--adjudicate-material", o->adjudicate_material,
                  "At --max-plies, a side this many pawns ahead wins the self-play game (0: a "
                  "draw)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--final-temperature", o->final_temperature,
                  "Self-play move temperature after the first 30 plies (0: the most visited "
                  "move)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--value-q-ratio", o->value_q_ratio,
                  "Share of the search's root value in the trainer's value target (0: the game "
                  "result alone)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--window", o->window, "Replay window (positions)")->capture_default_str();
  cmd->add_option("--batch-size", o->batch_size, "Trainer batch (over all ranks)")
      ->check(CLI::Range(2, 65536))
      ->capture_default_str();
  cmd->add_option("--optimizer", o->optimizer, "sgd or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  cmd->add_option("--lr", o->lr, "Learning rate")->capture_default_str();
  cmd->add_option("--publish-every", o->publish_every, "Trainer steps between model versions")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "Trainer steps between checkpoints")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--min-window", o->min_window, "Positions stored before training starts")
      ->capture_default_str();
  cmd->add_option("--max-reuse", o->max_reuse,
                  "Training pauses while samples trained / positions stored exceeds this")
      ->capture_default_str();
  cmd->add_option("--eval-visits", o->eval_visits, "Evaluator visits per move")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--eval-pairs", o->eval_pairs, "Game pairs of each new version against the best")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--anchor-pairs", o->anchor_pairs, "Game pairs against each anchor")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--anchors", o->anchors, "Fixed anchors (random, greedy)")->capture_default_str();
  cmd->add_option("--engine", o->engines,
                  "A UCI engine anchor, e.g. \"uci:stockfish;Skill Level=0;movetime=50\" "
                  "(repeatable)");
  cmd->add_option("--selfplay-args", o->selfplay_args,
                  "More chessrl-selfplay options, e.g. \"--temperature-plies 20\" (none that "
                  "chessrl local sets itself)");
  cmd->add_option("--trainer-args", o->trainer_args, "More chessrl-trainer options");
  cmd->add_option("--evaluator-args", o->evaluator_args, "More chessrl-evaluator options");
  cmd->add_option("--duration", o->duration, "Stop after this many seconds (0: at Ctrl-C)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--status-every", o->status_every, "Seconds between status updates")
      ->check(CLI::Range(0.2, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "Only the status line");
  cmd->add_flag("--no-auth", o->no_auth,
                "no bearer tokens on the replay service (by default each process gets its "
                "role's token from run/auth)");
  cmd->add_flag("--no-prometheus", o->no_prometheus,
                "Start no Prometheus (by default one scrapes every child, data under --dir)");
  cmd->add_option("--prometheus-rules", o->prometheus_rules,
                  "Recording rules and alerts for that Prometheus")
      ->capture_default_str();
  cmd->callback([o] {
    if (o->batch_size % o->trainers != 0)
      throw CLI::ValidationError("--batch-size", std::to_string(o->batch_size) +
                                                     " is not divisible by --trainers " +
                                                     std::to_string(o->trainers));
    StopSignals stop("chessrl local", "stopping everything");
    LocalRun run(*o);
    const int code = run.run(stop);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace chessrl::tool
