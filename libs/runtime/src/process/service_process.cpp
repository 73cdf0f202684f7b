#include "chessrl/runtime/service_process.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "chessrl/core/files.h"

namespace chessrl::runtime {

std::string ready_json(int pid, const ListeningPorts& ports) {
  // The names are fixed identifiers and the values integers: nothing to escape.
  std::string out = "{\"pid\": " + std::to_string(pid) + ", \"ports\": {";
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (i > 0) out += ", ";
    out += "\"" + ports[i].first + "\": " + std::to_string(ports[i].second);
  }
  return out + "}}\n";
}

Result<void> write_ready_file(const std::string& path, int pid, const ListeningPorts& ports) {
  return write_file_atomically(path, ready_json(pid, ports));
}

ServiceProcess::ServiceProcess(std::string program) : program_(std::move(program)) {}

ServiceProcess::~ServiceProcess() {
  body_done_ = true;
  if (bound_watch_.joinable()) bound_watch_.join();
  signals_.reset();
}

void ServiceProcess::add_options(CLI::App& app) {
  app.add_option("--ready-file", ready_file_,
                 "once every port is bound, write this file (atomically) with one JSON object: "
                 "{\"pid\": N, \"ports\": {\"grpc\": N, \"metrics\": N, ...}}, the ports this "
                 "process listens on, by name; \"\": none");
}

std::optional<int> ServiceProcess::parse(CLI::App& app, int argc, char** argv) const {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help) and returns its own status:
    // 0 for --help, one per kind of error otherwise, which become 2 here.
    const int status = app.exit(e);
    return status == static_cast<int>(CLI::ExitCodes::Success) ? kExitDone : kExitBadOptions;
  }
  return std::nullopt;
}

StopSignals& ServiceProcess::install_stop_signals(const std::string& what) {
  if (signals_) throw Error(program_ + ": the stop signals are installed twice");
  signals_ = std::make_unique<StopSignals>(program_, what);
  return *signals_;
}

StopSignals& ServiceProcess::signals() const {
  if (!signals_) throw Error(program_ + ": the stop signals are not installed");
  return *signals_;
}

void ServiceProcess::wait_for_stop() const {
  const StopSignals& stop = signals();
  while (!stop.wait_for(std::chrono::hours(1))) {
  }
}

void ServiceProcess::bound_stop(std::chrono::seconds bound, std::string why, std::string lost) {
  const StopSignals& stop = signals();
  if (bound_watch_.joinable()) throw Error(program_ + ": bound_stop is called twice");
  bound_watch_ = std::thread([this, &stop, bound, why = std::move(why), lost = std::move(lost)] {
    while (!stop.wait_for(std::chrono::milliseconds(200)))
      if (body_done_.load()) return;
    const auto until = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < until) {
      if (body_done_.load()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    log("still busy " + std::to_string(bound.count()) + " s after the stop request (" + why +
        "): exiting now; " + lost);
    std::_Exit(kExitDone);
  });
}

void ServiceProcess::ready(const ListeningPorts& ports) const {
  if (ready_file_.empty()) return;
  if (auto written = write_ready_file(ready_file_, static_cast<int>(::getpid()), ports);
      !written.ok()) {
    throw Error("--ready-file " + written.error());
  }
}

int ServiceProcess::run(const std::function<int()>& body) {
  int status = kExitFailed;
  try {
    status = body();
  } catch (const BadOptions& e) {
    log(e.what());
    status = kExitBadOptions;
  } catch (const std::exception& e) {
    log(e.what());
    status = kExitFailed;
  }
  body_done_ = true;
  return status;
}

void ServiceProcess::log(const std::string& line) const {
  std::fprintf(stderr, "%s: %s\n", program_.c_str(), line.c_str());
  std::fflush(stderr);
}

}  // namespace chessrl::runtime
