// ServiceProcess: the process side every service binary shares (chessrl-replay,
// -selfplay, -trainer, -evaluator, -web): the command line parsed with one exit
// status per outcome, SIGTERM and SIGINT installed once and waited for, a bound
// on how long a stop may take, failures caught and mapped to an exit status,
// and the ready file that says which ports the process listens on.
//
// The exit status of every service (docs/architecture.md):
//   0  done, or stopped by SIGTERM / SIGINT (and --help)
//   1  a failure at run time (logged as "<program>: <error>")
//   2  options it cannot run with: a flag CLI11 refuses (its message names the
//      flag), or a combination or file found wrong after parsing (BadOptions)
//
// The ready file (--ready-file PATH, none by default): once every listener the
// process opens is bound, PATH is written atomically (a temporary beside it,
// then renamed) with one JSON object
//   {"pid": 1234, "ports": {"grpc": 50051, "metrics": 9102}}
// holding the ports actually bound (so port 0 works), by name: "grpc", "metrics",
// "http", "probe", "rendezvous", only those the binary has. The log lines that
// name the ports are written as before.
//
// Use it from main() only, on the main thread; one per process.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "chessrl/core/error.h"
#include "chessrl/core/result.h"
#include "chessrl/core/stop_signals.h"

namespace chessrl::runtime {

inline constexpr int kExitDone = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadOptions = 2;

// Options the process cannot run with, found after parsing (a combination of
// flags, a file an option names): ServiceProcess::run logs it and returns 2.
// The message names the option.
class BadOptions : public Error {
 public:
  using Error::Error;
};

// The ports a process listens on, by name, in the order they are written.
using ListeningPorts = std::vector<std::pair<std::string, int>>;

// {"pid": <pid>, "ports": {<name>: <port>, ...}} on one line.
std::string ready_json(int pid, const ListeningPorts& ports);

// Writes ready_json(pid, ports) to `path` atomically; an error starting
// "<path>: " when it cannot.
Result<void> write_ready_file(const std::string& path, int pid, const ListeningPorts& ports);

class ServiceProcess {
 public:
  // `program` starts every log line: "<program>: <line>".
  explicit ServiceProcess(std::string program);
  // Ends the stop bound's watch, then uninstalls the stop signals.
  ~ServiceProcess();
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  // Renames the program in later log lines (self-play adds its replica once
  // the options are parsed). Before install_stop_signals.
  void set_program(std::string program) { program_ = std::move(program); }
  const std::string& program() const { return program_; }

  // Adds --ready-file PATH to `app`. Call before config::finish, so that
  // CHESSRL_READY_FILE and a config key `ready-file` set it too.
  void add_options(CLI::App& app);
  // --ready-file's path; "" when none was given.
  const std::string& ready_file() const { return ready_file_; }

  // Parses the command line (flags, CHESSRL_* variables, --config). nullopt:
  // go on; otherwise the status to exit with: 0 after --help, 2 after an error,
  // with CLI11's message (which names the flag) on stderr.
  std::optional<int> parse(CLI::App& app, int argc, char** argv) const;

  // SIGTERM and SIGINT become a stop request (StopSignals, which logs
  // "<program>: SIGTERM: <what>"). Call once, before any thread starts.
  StopSignals& install_stop_signals(const std::string& what);
  // The installed signals; throws chessrl::Error before install_stop_signals.
  StopSignals& signals() const;
  // Blocks until SIGTERM, SIGINT or signals().request().
  void wait_for_stop() const;

  // Once a stop is requested, exits the process at once with status 0 if run()
  // has not returned `bound` later, logging "<program>: still busy N s after
  // the stop request (<why>): exiting now; <lost>". For a process whose stop
  // can be held by a call in flight (a registry download) that it cannot
  // cancel; what it writes must be complete at every moment. After
  // install_stop_signals; at most once.
  void bound_stop(std::chrono::seconds bound, std::string why, std::string lost);

  // Writes --ready-file's file (nothing without one) with this process's pid
  // and `ports`: call once every listener is bound. Throws chessrl::Error (an
  // exit status of 1 through run()) when it cannot be written.
  void ready(const ListeningPorts& ports) const;

  // Runs `body` and returns its status; BadOptions is logged and returns 2,
  // any other exception is logged and returns 1. The stop bound ends with it.
  int run(const std::function<int()>& body);

  // "<program>: <line>" on stderr, flushed. Any thread.
  void log(const std::string& line) const;

 private:
  std::string program_;
  std::string ready_file_;
  std::unique_ptr<StopSignals> signals_;
  std::atomic<bool> body_done_{false};
  std::thread bound_watch_;
};

}  // namespace chessrl::runtime
