// The child processes of `chessrl local`: core's Process (the one spawner)
// with a name and a log. Each runs in its own process group (so a terminal's
// Ctrl-C reaches only `chessrl local`, which then stops them in order), with
// stdout and stderr appended to its log file, stdin from /dev/null, and
// SIGTERM from the kernel if `chessrl local` dies. Not thread-safe; one
// supervising thread (the Supervisor restarts them).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/core/subprocess.h"

namespace chessrl::tool {

struct ChildSpec {
  std::string name;               // "replay", "selfplay-0", ... (logs, messages)
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing) ours
  std::string log_path;
  int nice = 0;  // the child's niceness (setpriority), 0..19
  // The file the child writes once it listens (--ready-file, given in argv):
  // removed before every start, so what is there is this start's.
  std::string ready_file = {};  // (an initializer: aggregates may leave it out)
};

class Child {
 public:
  // Fails, naming the child and the program, when it cannot be started (not
  // executable, log file not writable).
  static Result<std::unique_ptr<Child>> start(const ChildSpec& spec);
  // A child still running is killed (SIGKILL) and reaped.

  const std::string& name() const { return spec_.name; }
  const ChildSpec& spec() const { return spec_; }
  int pid() const { return process_.pid(); }

  // Reaps the child if it has exited; true once it has.
  bool exited() { return process_.exited(); }
  // "exit status 1", "killed by SIGKILL", or "running".
  std::string status() const { return process_.status(); }
  bool clean_exit() const { return process_.clean_exit(); }

  void terminate() { process_.terminate(); }  // SIGTERM if still running
  void kill() { process_.kill(); }            // SIGKILL if still running
  // SIGTERM, then up to `grace` for it to exit, then SIGKILL. True when it
  // exited by itself within the grace period.
  bool stop(std::chrono::milliseconds grace) { return process_.stop(grace); }
  // The last `lines` lines of its log.
  std::string log_tail(int lines) const { return chessrl::log_tail(spec_.log_path, lines); }

 private:
  Child(ChildSpec spec, Process process) : spec_(std::move(spec)), process_(std::move(process)) {}
  ChildSpec spec_;
  Process process_;
};

}  // namespace chessrl::tool
