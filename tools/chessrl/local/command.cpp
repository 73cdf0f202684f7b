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
// progress) is stopped and restarted too. The options are in local/options.h.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/core/files.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/ports.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/harness/service_binary.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/registry.h"
#include "commands.h"
#include "local/children.h"
#include "local/defaults.h"
#include "local/devices.h"
#include "local/options.h"
#include "local/settings.h"
#include "local/status.h"
#include "local/supervisor.h"

namespace chessrl::tool {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using harness::find_service_binary;
using harness::log_since;
using harness::log_size;
using harness::logged_port;
using harness::pick_port;
using harness::with_port;

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

// The ports of the run. The replay service, the metrics endpoints and
// Prometheus listen on port 0 at their first start (replay on --port when
// given) and say in their logs which port the kernel chose; restarts keep that
// number; so does trainer rank 0's Gloo rendezvous (MASTER_PORT 0, "rendezvous:
// listening on port N"). Redis takes a number from pick_port(), one per shard.
struct Ports {
  std::vector<int> redis;
  int replay = 0, replay_metrics = 0, master = 0, prometheus = 0, web = 0;
};

// Redis shard i's child name and data directory: "redis" (run/redis) for the
// first, as a run without shards has it, then "redis-1", "redis-2", ...
std::string redis_name(int shard) {
  return shard == 0 ? "redis" : "redis-" + std::to_string(shard);
}

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
  LocalRun(const LocalOptions& o, DevicePlan devices)
      : o_(o), devices_(std::move(devices)), supervisor_(RestartPolicy{}, registry_) {}
  int run(const StopSignals& stop);

 private:
  void make_dirs();
  void start_redis(const std::string& program, const std::string& password, int shard);
  void write_state() const;
  // `device`: its --device and CUDA_VISIBLE_DEVICES (local/devices.h).
  Result<Child*> launch(const std::string& name, std::vector<std::string> argv,
                        std::vector<std::pair<std::string, std::string>> env = {},
                        bool optional = false, const DeviceAssignment& device = {},
                        int nice = 0);
  // The port `name` names after `key` in its log since its launch, waiting up
  // to `patience` while supervising. nullopt on a crash loop (said), at the
  // deadline (said unless `quiet_timeout`) or when a stop is asked.
  std::optional<int> await_port(const std::string& name, const std::string& key,
                                std::chrono::seconds patience, const StopSignals& stop,
                                bool quiet_timeout = false);
  // Keeps `port` for `name`'s restarts: its command line's `flag` address.
  void pin_port(const std::string& name, const std::string& flag, int port) {
    argv_[name] = with_port(argv_[name], flag, port);
    supervisor_.set_argv(name, argv_[name]);
  }
  bool wait_healthy(const std::string& name, int port, const StopSignals& stop);
  void start_prometheus(const StopSignals& stop);
  void start_web(const StopSignals& stop);
  Scrape scrape() const;
  // The status line with the restarts so far, e.g. "... | restarts redis ↻1".
  std::string with_restarts(const std::string& line) const {
    const std::string restarts = supervisor_.restarts_summary();
    return restarts.empty() ? line : line + " | restarts " + restarts;
  }
  std::string log_path(const std::string& name) const {
    return (root_ / "logs" / (name + ".log")).string();
  }
  std::string binary(const std::string& name) const {
    return find_service_binary(name, o_.bin_dir).value_or_throw();
  }

  LocalOptions o_;
  DevicePlan devices_;
  fs::path root_;
  Ports ports_;
  metrics::Registry registry_;  // chessrl local's own /metrics (restarts per child)
  Supervisor supervisor_;
  std::unique_ptr<metrics::Exposer> exposer_;
  std::vector<std::pair<std::string, int>> metrics_ports_;  // child name -> port
  std::map<std::string, std::vector<std::string>> argv_;    // child name -> its command line
  std::map<std::string, std::uintmax_t> log_from_;  // child name -> its log's size at launch
  bool prometheus_started_ = false;
  bool web_started_ = false;
  bool ready_ = false;           // every child launched and its ports known
  std::int64_t started_ms_ = 0;  // unix ms when training in this directory began
};

// chessrl-web, the game viewer, polling every self-play process's /live and
// the evaluator's /matches on their metrics ports; an optional child.
void LocalRun::start_web(const StopSignals& stop) {
  const auto program = find_service_binary("chessrl-web", o_.bin_dir);
  if (!program.ok()) {
    std::fprintf(stderr, "chessrl local: %s: no game viewer this run; --no-web silences this\n",
                 program.error().c_str());
    return;
  }
  std::string selfplay, evaluator;
  for (const auto& [name, port] : metrics_ports_) {
    if (name.rfind("selfplay-", 0) == 0) selfplay += (selfplay.empty() ? "" : ",") + listen(port);
    if (name == "evaluator") evaluator = listen(port);
  }
  auto child = launch(
      "web", {*program, "--listen", listen(0), "--selfplay", selfplay, "--evaluator", evaluator},
      {}, /*optional=*/true);
  if (!child.ok()) {
    std::fprintf(stderr, "chessrl local: chessrl-web did not start (%s): no game viewer\n",
                 child.error().c_str());
    return;
  }
  const auto port = await_port("web", "the page on port ", std::chrono::seconds(30), stop);
  if (!port) return;
  ports_.web = *port;
  pin_port("web", "--listen", *port);
  metrics_ports_.push_back({"web", *port});
  web_started_ = true;
}

// run/prometheus/prometheus.yml: every child a target, labelled as the chart's
// scrape configs label a pod (instance = its name), with the chart's rules.
void LocalRun::start_prometheus(const StopSignals& stop) {
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
    std::fprintf(stderr,
                 "chessrl local: no rules file at %s (--prometheus-rules): no recording rules\n",
                 o_.prometheus_rules.c_str());
  }
  conf << "scrape_configs:\n  - job_name: chessrl-local\n    static_configs:\n";
  if (exposer_)
    conf << "      - targets: [\"127.0.0.1:" << exposer_->port()
         << "\"]\n        labels: {instance: \"local\", component: \"local\"}\n";
  for (const auto& [name, port] : metrics_ports_) {
    const std::string component = name.substr(0, name.find('-'));
    conf << "      - targets: [\"127.0.0.1:" << port
         << "\"]\n        labels: {instance: " << nlohmann::json(name).dump()
         << ", component: " << nlohmann::json(component).dump() << "}\n";
  }
  conf.close();
  auto child = launch(
      "prometheus",
      {*program, "--config.file=" + (dir / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir / "data").string(), "--web.listen-address=" + listen(0)},
      {}, /*optional=*/true);
  if (!child.ok()) {
    std::fprintf(stderr, "chessrl local: prometheus did not start (%s): no graphs this run\n",
                 child.error().c_str());
    return;
  }
  // Its web server's log line names the address it bound.
  const auto port =
      await_port("prometheus", "msg=\"Listening on\" address=127.0.0.1:", std::chrono::seconds(30),
                 stop, /*quiet_timeout=*/true);
  if (!port) {
    std::fprintf(stderr,
                 "chessrl local: prometheus did not say its port within 30 s (log %s): "
                 "no graphs this run\n",
                 log_path("prometheus").c_str());
    return;
  }
  ports_.prometheus = *port;
  pin_port("prometheus", "--web.listen-address", *port);
  prometheus_started_ = true;
}

void LocalRun::make_dirs() {
  root_ = fs::absolute(o_.dir);
  for (const char* sub : {"logs", "checkpoints", "evaluator", "prometheus", "stats"})
    fs::create_directories(root_ / sub);
  make_private_dir(root_ / "redis");  // the password, redis.conf and the data
  for (int shard = 1; shard < o_.redis_shards; ++shard) make_private_dir(root_ / redis_name(shard));
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

// redis-server for `shard` on a port from pick_port(), with its data in
// run/redis (run/redis-<shard>; AOF: a second run resumes), until it accepts
// connections. It cannot listen on port
// 0 and say which port it got, so when another process holds the number it
// exits ("Address already in use") and starts again on another one. The
// supervisor's restarts then keep that number (redis.conf).
void LocalRun::start_redis(const std::string& program, const std::string& password, int shard) {
  const std::string name = redis_name(shard);
  const std::string conf_path = (root_ / name / "redis.conf").string();
  const std::string log = log_path(name);
  constexpr int kAttempts = 5;
  ports_.redis.resize(static_cast<std::size_t>(shard) + 1);
  int& port = ports_.redis[static_cast<std::size_t>(shard)];
  for (int attempt = 1;; ++attempt) {
    port = pick_port();
    // redis.conf holds the password (requirepass): created 0600, and
    // redis-server gets only its path, so ps shows no password.
    std::ostringstream conf;
    conf << "port " << port << "\nbind 127.0.0.1\ndir " << (root_ / name).string()
         << "\nrequirepass " << password
         << "\nappendonly yes\nappendfsync always\nsave \"\"\ndaemonize no\n"
            "protected-mode yes\nlogfile \"\"\n";
    write_private_file(conf_path, conf.str()).value_or_throw();
    const std::uintmax_t from = log_size(log);
    Child* child = attempt == 1 ? launch(name, {program, conf_path}).value_or_throw()
                                : supervisor_.start_again(name).value_or_throw();
    // Loading a large AOF on a second run takes a while.
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    for (;;) {
      const std::string said = log_since(log, from);
      if (said.find("Ready to accept connections") != std::string::npos) return;
      if (child->exited()) {
        if (attempt < kAttempts && said.find("Address already in use") != std::string::npos) break;
        throw Error("redis-server exited at start (" + child->status() + "); the end of " + log +
                    ":\n" + child->log_tail(20));
      }
      if (Clock::now() > deadline)
        throw Error("redis-server did not accept connections within 120 s; see " + log);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!o_.quiet)
      std::fprintf(stderr, "chessrl local: port %d was taken; starting %s on another\n", port,
                   name.c_str());
  }
}

// run/local.json: where everything is, for people and the e2e test.
void LocalRun::write_state() const {
  nlohmann::json state;
  state["dir"] = root_.string();
  state["replay"] = listen(ports_.replay);
  state["redis_port"] = ports_.redis.front();
  state["redis_ports"] = ports_.redis;
  state["started_ms"] = started_ms_;
  // Every child started and its metrics port known (each child's metrics_port).
  state["ready"] = ready_;
  if (prometheus_started_)
    state["prometheus"] = "http://127.0.0.1:" + std::to_string(ports_.prometheus);
  if (web_started_) state["web"] = "http://127.0.0.1:" + std::to_string(ports_.web) + "/";
  if (exposer_) state["metrics_port"] = exposer_->port();  // chessrl local's own /metrics
  nlohmann::json children = nlohmann::json::array();
  for (const std::string& name : supervisor_.names()) {
    const Child* c = supervisor_.child(name);
    nlohmann::json child{{"name", name},
                         {"pid", c ? c->pid() : 0},
                         {"log", log_path(name)},
                         {"restarts", supervisor_.restarts(name)}};
    for (const auto& [child_name, port] : metrics_ports_)
      if (child_name == name) child["metrics_port"] = port;
    children.push_back(child);
  }
  state["children"] = children;
  // Written whole, then renamed: a reader never sees half a file.
  const fs::path tmp = root_ / "local.json.tmp";
  std::ofstream(tmp) << state.dump(2) << "\n";
  fs::rename(tmp, root_ / "local.json");
}

Result<Child*> LocalRun::launch(const std::string& name, std::vector<std::string> argv,
                                std::vector<std::pair<std::string, std::string>> env, bool optional,
                                const DeviceAssignment& device, int nice) {
  for (auto& word : device_args(device)) argv.push_back(std::move(word));
  add_device_env(device, env);
  argv_[name] = argv;
  log_from_[name] = log_size(log_path(name));
  return supervisor_.launch(
      ChildSpec{name, std::move(argv), std::move(env), log_path(name), nice}, optional);
}

std::optional<int> LocalRun::await_port(const std::string& name, const std::string& key,
                                        std::chrono::seconds patience, const StopSignals& stop,
                                        bool quiet_timeout) {
  const auto deadline = Clock::now() + patience;
  while (Clock::now() < deadline && !stop.requested()) {
    if (auto port = logged_port(log_path(name), log_from_[name], key)) return port;
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "chessrl local: %s", polled.stop_reason->c_str());
      return std::nullopt;
    }
    stop.wait_for(std::chrono::milliseconds(50));
  }
  if (!stop.requested() && !quiet_timeout)
    std::fprintf(stderr, "chessrl local: %s did not say its port (\"%s\") in %lld s; see %s\n",
                 name.c_str(), key.c_str(), static_cast<long long>(patience.count()),
                 log_path(name).c_str());
  return std::nullopt;
}

// Until `name` answers /healthz on `port` (60 s at most), supervising all the
// while: a child that dies now is restarted as later. False on a crash loop
// (said here), at the deadline or when a stop is asked.
bool LocalRun::wait_healthy(const std::string& name, int port, const StopSignals& stop) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && !stop.requested()) {
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "chessrl local: %s", polled.stop_reason->c_str());
      return false;
    }
    auto reply = http_get(port, "/healthz", std::chrono::milliseconds(500));
    if (reply.ok() && reply->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!stop.requested())
    std::fprintf(stderr, "chessrl local: %s did not become healthy in 60 s; see %s\n", name.c_str(),
                 log_path(name).c_str());
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

int LocalRun::run(const StopSignals& stop) {
  make_dirs();
  // Its own /metrics (the restarts per child) on a port the kernel picks.
  metrics::add_build_info(registry_);
  exposer_ = std::make_unique<metrics::Exposer>(registry_, "127.0.0.1:0");
  const std::string password = kept_secret(root_ / "redis" / "password");
  const fs::path auth = root_ / "auth";
  if (!o_.no_auth) make_run_tokens(auth);
  // A client's --token-file, or nothing when tokens are off.
  const auto token = [&](const char* role) {
    return o_.no_auth ? std::vector<std::string>{}
                      : std::vector<std::string>{"--token-file", (auth / role).string()};
  };
  // A start that cannot go on (said): everything stopped, no local.json left.
  const auto abandon = [&] {
    supervisor_.stop_all();
    fs::remove(root_ / "local.json");
    return stop.requested() ? 0 : 1;
  };
  const auto started = Clock::now();
  auto say = [&](const std::string& text) {
    if (!o_.quiet) std::fprintf(stderr, "chessrl local: %s\n", text.c_str());
  };
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
    for (const int port : ports_.redis) list += (list.empty() ? "" : ",") + listen(port);
    redis_args = {"--redis-shards", list};
  }

  // The replay service over it; it reads the password from the run's file.
  launch("replay",
         with_words(
             {binary("chessrl-replay"), "--listen", listen(o_.port), "--metrics-listen", listen(0),
              "--store", "redis", "--redis-password-file", (root_ / "redis" / "password").string(),
              "--window-positions", std::to_string(o_.window)},
             joined(redis_args, {},
                    o_.no_auth ? std::vector<std::string>{}
                               : std::vector<std::string>{"--auth-dir", auth.string()}),
             ""))
      .value_or_throw();
  // Its line "serving gRPC on port N (...), metrics on port M" names both.
  const auto replay_port =
      await_port("replay", "serving gRPC on port ", std::chrono::seconds(60), stop);
  const auto replay_metrics =
      replay_port ? await_port("replay", "metrics on port ", std::chrono::seconds(5), stop)
                  : std::nullopt;
  if (!replay_port || !replay_metrics) return abandon();
  ports_.replay = *replay_port;
  ports_.replay_metrics = *replay_metrics;
  pin_port("replay", "--listen", ports_.replay);
  pin_port("replay", "--metrics-listen", ports_.replay_metrics);
  metrics_ports_.push_back({"replay", ports_.replay_metrics});
  if (!wait_healthy("replay", ports_.replay_metrics, stop)) return abandon();
  std::string redis_ports;
  for (const int port : ports_.redis)
    redis_ports += (redis_ports.empty() ? "" : ", ") + std::to_string(port);
  say("replay service on " + listen(ports_.replay) + ", Redis on port" +
      (ports_.redis.size() > 1 ? "s " : " ") + redis_ports);

  // The trainer: one rank, or several over Gloo on loopback.
  for (int r = 0; r < o_.trainers; ++r) {
    const std::string name = "trainer-" + std::to_string(r);
    std::vector<std::pair<std::string, std::string>> env = {
        {"RANK", std::to_string(r)},
        {"WORLD_SIZE", std::to_string(o_.trainers)},
        {"MASTER_ADDR", "127.0.0.1"},
        // Rank 0 serves the rendezvous on a port the kernel picks and says
        // which; the other ranks are started with it once it has.
        {"MASTER_PORT", std::to_string(r == 0 ? 0 : ports_.master)},
        {"GLOO_SOCKET_IFNAME", "lo"}};
    launch(name,
           joined({binary("chessrl-trainer"), "--replay", listen(ports_.replay), "--metrics-listen",
                   listen(0), "--checkpoint-dir", (root_ / "checkpoints").string()},
                  trainer_settings(o_), token("trainer")),
           env, false, devices_.trainers[std::size_t(r)])
        .value_or_throw();
    if (r == 0 && o_.trainers > 1) {
      const auto port =
          await_port(name, "rendezvous: listening on port ", std::chrono::seconds(120), stop);
      if (!port) return abandon();
      ports_.master = *port;
      for (auto& [key, value] : env)  // kept by its restarts
        if (key == "MASTER_PORT") value = std::to_string(*port);
      add_device_env(devices_.trainers[0], env);  // as launch() added it
      supervisor_.set_env(name, env);
    }
  }

  // Self-play: each replica its own name, so their seeds differ.
  for (int i = 0; i < o_.selfplay; ++i) {
    const std::string name = "selfplay-" + std::to_string(i);
    launch(name,
           joined({binary("chessrl-selfplay"), "--replay", listen(ports_.replay),
                   "--metrics-listen", listen(0), "--replica", name, "--version-stats",
                   (root_ / "stats" / (name + ".jsonl")).string(), "--acked-log",
                   (root_ / "stats" / (name + ".acked")).string()},
                  selfplay_settings(o_), token("selfplay")),
           {}, false, devices_.selfplay[std::size_t(i)], o_.selfplay_nice)
        .value_or_throw();
  }

  // The evaluator.
  launch("evaluator",
         joined({binary("chessrl-evaluator"), "--registry", listen(ports_.replay),
                 "--metrics-listen", listen(0), "--state-dir", (root_ / "evaluator").string()},
                evaluator_settings(o_), token("evaluator")),
         {}, false, devices_.evaluator)
      .value_or_throw();
  write_state();  // the children's pids; their metrics ports once they say them
  // Each says "metrics on port N" once its /metrics listens (on port 0 at this
  // first start); its restarts keep that port.
  for (const std::string& name : supervisor_.names()) {
    if (name.rfind("redis", 0) == 0 || name == "replay") continue;
    const auto port = await_port(name, "metrics on port ", std::chrono::seconds(60), stop);
    if (!port) return abandon();
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
  if (!o_.no_web) start_web(stop);
  if (!o_.no_prometheus) start_prometheus(stop);
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

  // Watch: the supervisor restarts a child that dies (a crash loop stops the
  // run); the status line every --status-every.
  StatusLine status;
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  auto last_printed = Clock::now() - std::chrono::hours(1);
  auto next_status = Clock::now();
  int exit_code = 0;
  while (!stop.requested()) {
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "\nchessrl local: %s", polled.stop_reason->c_str());
      exit_code = 1;
      break;
    }
    if (polled.restarted) write_state();  // the new pids
    if (prometheus_started_ && supervisor_.gave_up("prometheus")) prometheus_started_ = false;
    if (web_started_ && supervisor_.gave_up("web")) web_started_ = false;
    const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
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
    stop.wait_for(std::chrono::milliseconds(200));  // how soon a dead child is seen
  }
  status.add(scrape());
  const std::string final_line = with_restarts(
      status.format(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started)));
  std::printf("%s%s\n", tty && !o_.quiet ? "\r" : "", final_line.c_str());
  if (const std::string games = status.games_summary(); !games.empty())
    std::printf("%s\n", games.c_str());
  std::fflush(stdout);
  say("stopping: self-play and evaluator, then the trainer (checkpoint), replay and Redis");
  supervisor_.stop_all();
  if (exit_code == 0)
    for (const std::string& unclean : supervisor_.unclean_exits())
      std::fprintf(stderr, "chessrl local: %s\n", unclean.c_str());
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
                                       {"evaluator", evaluator_settings(*o)}};
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
