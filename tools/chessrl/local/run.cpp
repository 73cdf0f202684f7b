// The parts of a `chessrl local` run (local/run.h): the run directory, Redis,
// a child's start and the ports in its ready file, Prometheus and the viewer,
// run/local.json, the scrapes for the status line.
#include "local/run.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "chessrl/core/error.h"
#include "chessrl/core/files.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/ports.h"
#include "chessrl/harness/service_binary.h"
#include "local/secrets.h"

namespace chessrl::tool {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string redis_name(int shard) {
  return shard == 0 ? "redis" : "redis-" + std::to_string(shard);
}

void LocalRun::say(const std::string& text) const {
  if (!o_.quiet) std::fprintf(stderr, "chessrl local: %s\n", text.c_str());
}

std::string LocalRun::binary(const std::string& name) const {
  return harness::find_service_binary(name, o_.bin_dir).value_or_throw();
}

std::vector<std::string> LocalRun::token(const char* role) const {
  return o_.no_auth ? std::vector<std::string>{}
                    : std::vector<std::string>{"--token-file", (root_ / "auth" / role).string()};
}

std::string LocalRun::with_restarts(const std::string& line) const {
  const std::string restarts = supervisor_.restarts_summary();
  return restarts.empty() ? line : line + " | restarts " + restarts;
}

void LocalRun::pin_port(const std::string& name, const std::string& flag, int port) {
  argv_[name] = harness::with_port(argv_[name], flag, port);
  supervisor_.set_argv(name, argv_[name]);
}

// chessrl-web, the game viewer, polling every self-play process's /live and
// the evaluator's /matches on their metrics ports; an optional child.
void LocalRun::start_web(const StopSignals& signals) {
  const auto program = harness::find_service_binary("chessrl-web", o_.bin_dir);
  if (!program.ok()) {
    std::fprintf(stderr, "chessrl local: %s: no game viewer this run; --no-web silences this\n",
                 program.error().c_str());
    return;
  }
  std::string selfplay, evaluator;
  for (const auto& [name, port] : metrics_ports_) {
    if (name.rfind("selfplay-", 0) == 0) selfplay += (selfplay.empty() ? "" : ",") + loopback(port);
    if (name == "evaluator") evaluator = loopback(port);
  }
  auto child = launch(
      "web", {*program, "--listen", loopback(0), "--selfplay", selfplay, "--evaluator", evaluator},
      {}, /*optional=*/true);
  if (!child.ok()) {
    std::fprintf(stderr, "chessrl local: chessrl-web did not start (%s): no game viewer\n",
                 child.error().c_str());
    return;
  }
  const auto port = await_port("web", "http", std::chrono::seconds(30), signals);
  if (!port) return;
  ports_.web = *port;
  pin_port("web", "--listen", *port);
  metrics_ports_.push_back({"web", *port});
  web_started_ = true;
}

// run/prometheus/prometheus.yml: every child a target, labelled as the chart's
// scrape configs label a pod (instance = its name), with the chart's rules.
void LocalRun::start_prometheus(const StopSignals& signals) {
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
       "--storage.tsdb.path=" + (dir / "data").string(), "--web.listen-address=" + loopback(0)},
      {}, /*optional=*/true, {}, 0, /*ready_file=*/false);
  if (!child.ok()) {
    std::fprintf(stderr, "chessrl local: prometheus did not start (%s): no graphs this run\n",
                 child.error().c_str());
    return;
  }
  // Its web server's log line names the address it bound.
  const auto port = await_logged_port("prometheus", "msg=\"Listening on\" address=127.0.0.1:",
                                      std::chrono::seconds(30), signals);
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
  for (const char* sub : {"logs", "ready", "checkpoints", "evaluator", "prometheus", "stats"})
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
    write_file_atomically(first.string(), std::to_string(started_ms_) + "\n").value_or_throw();
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
    port = harness::pick_port();
    // redis.conf holds the password (requirepass): created 0600, and
    // redis-server gets only its path, so ps shows no password.
    std::ostringstream conf;
    conf << "port " << port << "\nbind 127.0.0.1\ndir " << (root_ / name).string()
         << "\nrequirepass " << password
         << "\nappendonly yes\nappendfsync always\nsave \"\"\ndaemonize no\n"
            "protected-mode yes\nlogfile \"\"\n";
    write_private_file(conf_path, conf.str()).value_or_throw();
    const std::uintmax_t from = harness::log_size(log);
    Child* child = attempt == 1 ? launch(name, {program, conf_path}, {}, false, {}, 0, /*ready_file=*/false).value_or_throw()
                                : supervisor_.start_again(name).value_or_throw();
    // Loading a large AOF on a second run takes a while.
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    for (;;) {
      const std::string said = harness::log_since(log, from);
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
  state["replay"] = loopback(ports_.replay);
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
  write_file_atomically((root_ / "local.json").string(), state.dump(2) + "\n").value_or_throw();
}

Result<Child*> LocalRun::launch(const std::string& name, std::vector<std::string> argv,
                                std::vector<std::pair<std::string, std::string>> env, bool optional,
                                const DeviceAssignment& device, int nice, bool ready_file) {
  for (auto& word : device_args(device)) argv.push_back(std::move(word));
  add_device_env(device, env);
  if (ready_file) argv.insert(argv.end(), {"--ready-file", ready_path(name)});
  argv_[name] = argv;
  log_from_[name] = harness::log_size(log_path(name));
  ChildSpec spec{name, std::move(argv), std::move(env), log_path(name), nice};
  if (ready_file) spec.ready_file = ready_path(name);  // removed before every start
  return supervisor_.launch(std::move(spec), optional);
}

std::optional<int> LocalRun::await_port(const std::string& name, const std::string& key,
                                        std::chrono::seconds patience, const StopSignals& signals,
                                        bool quiet_timeout) {
  return await(name, "its " + key + " port in " + ready_path(name), patience, signals,
               quiet_timeout, [&]() -> std::optional<int> {
                 // This start's file: its pid (a restart's file is new too).
                 const Child* child = supervisor_.child(name);
                 const auto ready = harness::read_ready_file(ready_path(name));
                 if (!ready || !child || ready->pid != child->pid() || ready->port(key) <= 0)
                   return std::nullopt;
                 return ready->port(key);
               });
}

std::optional<int> LocalRun::await_logged_port(const std::string& name, const std::string& key,
                                               std::chrono::seconds patience,
                                               const StopSignals& signals) {
  return await(name, "", patience, signals, /*quiet_timeout=*/true, [&] {
    return harness::logged_port(log_path(name), log_from_[name], key);
  });
}

std::optional<int> LocalRun::await(const std::string& name, const std::string& what,
                                   std::chrono::seconds patience, const StopSignals& signals,
                                   bool quiet_timeout,
                                   const std::function<std::optional<int>()>& find) {
  const auto deadline = Clock::now() + patience;
  while (Clock::now() < deadline && !signals.requested()) {
    if (auto port = find()) return port;
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "chessrl local: %s", polled.stop_reason->c_str());
      return std::nullopt;
    }
    signals.wait_for(std::chrono::milliseconds(50));
  }
  if (!signals.requested() && !quiet_timeout)
    std::fprintf(stderr, "chessrl local: %s did not write %s in %lld s; see %s\n", name.c_str(),
                 what.c_str(), static_cast<long long>(patience.count()), log_path(name).c_str());
  return std::nullopt;
}

// Until `name` answers /healthz on `port` (60 s at most), supervising all the
// while: a child that dies now is restarted as later. False on a crash loop
// (said here), at the deadline or when a stop is asked.
bool LocalRun::wait_healthy(const std::string& name, int port, const StopSignals& signals) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && !signals.requested()) {
    const auto polled = supervisor_.poll();
    if (polled.stop_reason) {
      std::fprintf(stderr, "chessrl local: %s", polled.stop_reason->c_str());
      return false;
    }
    auto reply = http_get(port, "/healthz", std::chrono::milliseconds(500));
    if (reply.ok() && reply->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!signals.requested())
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

}  // namespace chessrl::tool
