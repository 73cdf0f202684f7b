#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "assets.h"
#include "chessrl/config/config.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/http_client.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/runtime/service_process.h"
#include "chessrl/web_service/main.h"
#include "resolve.h"
#include "viewer_state.h"
#include "web_options.h"

namespace chessrl::web_service {
namespace {

void log(const std::string& line) {
  std::fprintf(stderr, "chessrl-web: %s\n", line.c_str());
  std::fflush(stderr);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The page may load only what this server serves: a script, style or image
// from anywhere else is refused by the browser, whatever the page says.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'none'";

constexpr std::chrono::milliseconds kResponseTimeout{2000};
constexpr std::size_t kMaxLiveBytes = 1 << 20;
constexpr std::size_t kMaxMatchesBytes = 8 << 20;

struct WebMetrics {
  explicit WebMetrics(metrics::Registry& r)
      : boards(r.gauge("chessrl_web_boards", "self-play boards shown (pods answering or stale)")),
        snapshot_bytes(r.gauge("chessrl_web_snapshot_bytes", "size of the api/state snapshot")),
        registry(r) {}
  metrics::Counter& polls(const char* source, const char* result) {
    return registry.counter("chessrl_web_polls_total",
                            "polls of the viewer's sources, by source and result",
                            {{"source", source}, {"result", result}});
  }
  metrics::Counter& requests(const char* kind) {
    return registry.counter("chessrl_web_requests_total",
                            "requests served, by kind (page, state, asset, missing)",
                            {{"kind", kind}});
  }
  metrics::Gauge& boards;
  metrics::Gauge& snapshot_bytes;
  metrics::Registry& registry;
};

// The body of a 200 reply to GET `path`, or an error naming the URL and status.
Result<std::string> fetch(const std::string& host, int port, const std::string& path,
                          std::size_t max_bytes) {
  auto reply = metrics::http_get(host, port, path, kResponseTimeout, max_bytes);
  if (!reply.ok()) return fail(reply.error());
  if (reply->status != 200)
    return fail("http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                std::to_string(port) + path + ": HTTP " + std::to_string(reply->status));
  return std::move(reply->body);
}

// Every self-play address to poll: each name's addresses, sorted, at most `max`.
std::vector<std::pair<std::string, int>> selfplay_targets(const WebOptions& o, std::string* error) {
  std::vector<std::pair<std::string, int>> targets;
  for (const Endpoint& e : o.selfplay_endpoints) {
    auto addresses = resolve_all(e.host);
    if (!addresses.ok()) {
      if (error->empty()) *error = "resolving --selfplay " + addresses.error();
      continue;
    }
    for (const std::string& a : addresses.value()) targets.emplace_back(a, e.port);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  if (targets.size() > std::size_t(o.max_boards)) targets.resize(std::size_t(o.max_boards));
  return targets;
}

PollRound poll_once(const WebOptions& o, WebMetrics& m) {
  PollRound round;
  round.now_ms = now_ms();
  const auto targets = selfplay_targets(o, &round.resolve_error);
  std::vector<std::future<Result<std::string>>> answers;
  for (const auto& [host, port] : targets)
    answers.push_back(std::async(std::launch::async, [host, port] {
      return fetch(host, port, "/live", kMaxLiveBytes);
    }));
  std::future<Result<std::string>> evaluator;
  if (!o.evaluator_endpoint.empty()) {
    const Endpoint e = o.evaluator_endpoint.front();
    evaluator = std::async(std::launch::async, [e] {
      return fetch(e.host, e.port, "/matches", kMaxMatchesBytes);
    });
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    Result<std::string> answer = answers[i].get();
    m.polls("selfplay", answer.ok() ? "ok" : "error").inc();
    const std::string address = (targets[i].first.find(':') != std::string::npos
                                     ? "[" + targets[i].first + "]"
                                     : targets[i].first) +
                                ":" + std::to_string(targets[i].second);
    round.selfplay.emplace_back(address, std::move(answer));
  }
  if (evaluator.valid()) {
    round.evaluator = evaluator.get();
    m.polls("evaluator", round.evaluator->ok() ? "ok" : "error").inc();
  }
  return round;
}

int run(const WebOptions& o, runtime::ServiceProcess& process) {
  const StopSignals& signals = process.signals();
  metrics::Registry registry;
  metrics::add_build_info(registry);
  WebMetrics m(registry);
  const auto interval = std::chrono::milliseconds(std::int64_t(o.poll_interval_s * 1000));
  ViewerState state({.selfplay_configured = !o.selfplay_endpoints.empty(),
                     .evaluator_configured = !o.evaluator_endpoint.empty(),
                     .max_boards = o.max_boards,
                     .stale_after_ms = std::int64_t(o.stale_after_s) * 1000,
                     .poll_interval_ms = interval.count()});
  // Serving the page is all its health: an unreachable source is shown on the
  // page, and restarting the viewer would not bring it back.
  metrics::Exposer server(registry, o.listen, [] { return std::string(); }, o.probe_listen);
  server.handle("/api/state", [&state, &m](const std::string&) {
    m.requests("state").inc();
    return metrics::HttpResponse{200, "application/json", *state.snapshot()};
  });
  const auto files = [&m](const std::string& path) {
    const std::string relative = path == "/" ? "index.html" : path.substr(1);
    const Asset* asset = find_asset(relative);
    if (asset == nullptr) {
      m.requests("missing").inc();
      return metrics::HttpResponse{404, "text/plain", "not found: " + path + "\n"};
    }
    metrics::HttpResponse response{200, std::string(asset->content_type), std::string(asset->body)};
    if (relative == "index.html") {
      m.requests("page").inc();
      response.cache_control = "no-cache";
      response.headers = {{"Content-Security-Policy", kContentSecurityPolicy},
                          {"Referrer-Policy", "no-referrer"},
                          {"X-Frame-Options", "DENY"}};
    } else {
      m.requests("asset").inc();
      response.cache_control = "max-age=300";
    }
    return response;
  };
  server.handle("/", files);
  log("the page on port " + std::to_string(server.port()) + "; polling " +
      std::to_string(o.selfplay_endpoints.size()) + " self-play address(es)" +
      (o.evaluator_endpoint.empty() ? "" : " and the evaluator at " + o.evaluator) + " every " +
      std::to_string(interval.count()) + " ms");
  if (server.probe_port() != 0) log("probes on port " + std::to_string(server.probe_port()));
  // The page and /metrics share one listener.
  runtime::ListeningPorts ports = {{"http", server.port()}, {"metrics", server.port()}};
  if (server.probe_port() != 0) ports.emplace_back("probe", server.probe_port());
  process.ready(ports);

  std::string last_problem;
  while (!signals.requested()) {
    const auto started = std::chrono::steady_clock::now();
    const PollRound round = poll_once(o, m);
    state.apply(round);
    m.boards.set(double(state.boards()));
    m.snapshot_bytes.set(double(state.snapshot()->size()));
    // A source that goes away or comes back is logged once, not every round.
    std::string problem = round.resolve_error;
    for (const auto& [address, answer] : round.selfplay)
      if (problem.empty() && !answer.ok()) problem = answer.error();
    if (problem.empty() && round.evaluator && !round.evaluator->ok())
      problem = round.evaluator->error();
    if (problem != last_problem) log(problem.empty() ? "every source answers" : problem);
    last_problem = problem;
    const auto elapsed = std::chrono::steady_clock::now() - started;
    if (elapsed < interval &&
        signals.wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(interval - elapsed)))
      break;
  }
  log("stopped");
  return 0;
}

}  // namespace

int web_main(int argc, char** argv) {
  runtime::ServiceProcess process("chessrl-web");
  process.install_stop_signals("stopping");
  CLI::App app{
      "chessrl-web: the game viewer, a read-only web page of the live self-play games, the "
      "evaluator's matches and the Elo curve"};
  WebOptions options;
  add_options(app, options);
  process.add_options(app);
  config::finish(app);
  if (auto status = process.parse(app, argc, argv)) return *status;
  if (auto valid = options.validate(); !valid.ok()) {
    log(valid.error());
    return runtime::kExitBadOptions;
  }
  return process.run([&] { return run(options, process); });
}

}  // namespace chessrl::web_service
