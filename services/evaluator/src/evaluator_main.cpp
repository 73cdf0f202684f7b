// chessrl-evaluator's entry point (services/evaluator/main.cpp calls it): the options, then the run.
#include "chessrl/evaluator_service/main.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "chessrl/config/config.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/gpu_sampler.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/runtime/service_process.h"
#include "evaluator.h"
#include "matches_view.h"

namespace chessrl::evaluator_service {

namespace {

namespace ev = chessrl::evaluator_service;

// How long a stop may take. A match in progress stops within a move, but a
// registry call in flight (a model download, or a connection to a replay
// service that is itself going away) can block for its whole deadline and its
// retries. Past this bound the process exits at once (ServiceProcess::bound_stop):
// what it has written is complete (state files are renamed into place), and
// the match in progress is dropped either way. Under the chart's 30 s grace period.
constexpr auto kStopBound = std::chrono::seconds(20);

int run(ev::EvaluatorOptions options, chessrl::runtime::ServiceProcess& process) {
  const chessrl::StopSignals& signals = process.signals();
  process.bound_stop(kStopBound, "a registry call in flight",
                     "nothing of a match in progress is written");
  chessrl::metrics::Registry registry;
  chessrl::metrics::add_build_info(registry);
  auto evaluator = ev::Evaluator::create(std::move(options), registry);
  if (!evaluator.ok()) {
    ev::log_to_stderr(evaluator.error());
    return chessrl::runtime::kExitBadOptions;
  }
  ev::Evaluator& e = **evaluator;
  const std::string& listen = e.options().metrics_listen;
  std::unique_ptr<chessrl::metrics::GpuSampler> gpu;
  std::unique_ptr<chessrl::metrics::Exposer> exposer;
  if (e.options().metrics_on()) {
    gpu = std::make_unique<chessrl::metrics::GpuSampler>(registry, std::chrono::seconds(5));
    exposer =
        std::make_unique<chessrl::metrics::Exposer>(registry, listen, [&e] { return e.health(); },
                                                    e.options().probe_listen);
    exposer->handle("/matches", [view = std::make_shared<ev::MatchesView>(e.options().state_dir)](
                                    const std::string&) {
      return chessrl::metrics::HttpResponse{200, "application/json", view->json()};
    });
    ev::log_to_stderr("metrics on port " + std::to_string(exposer->port()));
    if (exposer->probe_port() != 0)
      ev::log_to_stderr("probes on port " + std::to_string(exposer->probe_port()));
  }
  chessrl::runtime::ListeningPorts ports;
  if (exposer) {
    ports.emplace_back("metrics", exposer->port());
    if (exposer->probe_port() != 0) ports.emplace_back("probe", exposer->probe_port());
  }
  process.ready(ports);

  if (e.options().once) {
    ev::Evaluation evaluation = e.evaluate_latest(signals.flag());
    switch (evaluation.outcome) {
      case ev::Evaluation::Outcome::kDone:
        if (!evaluation.report.evaluated) ev::log_to_stderr(evaluation.report.note);
        std::printf("%s\n", ev::to_json_line(evaluation.report).c_str());
        std::fflush(stdout);
        return 0;
      case ev::Evaluation::Outcome::kStopped:
        ev::log_to_stderr("stopped; nothing of this evaluation was written");
        return 0;
      case ev::Evaluation::Outcome::kRetry:
      case ev::Evaluation::Outcome::kFatal:
        ev::log_to_stderr(evaluation.error);
        return 1;
    }
  }
  if (auto done = e.run(signals.flag()); !done.ok()) {
    ev::log_to_stderr(done.error());
    return 1;
  }
  ev::log_to_stderr("stopped");
  return 0;
}

}  // namespace

int evaluator_main(int argc, char** argv) {
  chessrl::runtime::ServiceProcess process("chessrl-evaluator");
  process.install_stop_signals("stopping (a match in progress is dropped: nothing of it is written)");
  CLI::App app{
      "chessrl-evaluator: plays each new model version against the best (promoting "
      "winners) and against fixed anchors; Elo to /metrics, games to PGN"};
  ev::EvaluatorOptions options;
  ev::add_options(app, options);
  process.add_options(app);
  chessrl::config::finish(app);
  if (auto status = process.parse(app, argc, argv)) return *status;
  if (auto valid = options.validate(); !valid.ok()) {
    ev::log_to_stderr(valid.error());
    return chessrl::runtime::kExitBadOptions;
  }
  if (auto security = chessrl::rpc::load_client_security(options.security_flags); security.ok()) {
    options.security = std::move(security).value();
  } else {
    ev::log_to_stderr(security.error());
    return chessrl::runtime::kExitBadOptions;
  }
  return process.run([&] { return run(std::move(options), process); });
}

}  // namespace chessrl::evaluator_service
