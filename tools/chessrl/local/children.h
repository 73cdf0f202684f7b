// The child processes of `chessrl local`: each runs in its own process group
// (so a terminal's Ctrl-C reaches only `chessrl local`, which then stops them
// in order), with stdout and stderr appended to its log file, stdin from
// /dev/null, and SIGTERM from the kernel if `chessrl local` dies. Not
// thread-safe; one supervising thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::tool {

struct ChildSpec {
  std::string name;               // "replay", "selfplay-0", ... (logs, messages)
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing) ours
  std::string log_path;
  int nice = 0;  // the child's niceness (setpriority), 0..19
};

class Child {
 public:
  // Fails, naming the program, when it cannot be started (not executable,
  // log file not writable).
  static Result<std::unique_ptr<Child>> start(const ChildSpec& spec);
  ~Child();  // a child still running is killed (SIGKILL) and reaped
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  const std::string& name() const { return spec_.name; }
  const ChildSpec& spec() const { return spec_; }
  int pid() const { return pid_; }

  // Reaps the child if it has exited; true once it has.
  bool exited();
  // "exit status 1", "killed by SIGKILL", or "running".
  std::string status() const;
  bool clean_exit() const;  // exited with status 0

  // Sends SIGTERM (if it is still running) and returns.
  void terminate();
  // Sends SIGKILL (if it is still running) and returns.
  void kill();
  // SIGTERM, then up to `grace` for it to exit, then SIGKILL. True when it
  // exited by itself within the grace period.
  bool stop(std::chrono::milliseconds grace);
  // The last `lines` lines of its log.
  std::string log_tail(int lines) const;

 private:
  explicit Child(ChildSpec spec) : spec_(std::move(spec)) {}
  ChildSpec spec_;
  int pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// The directory of the running executable (/proc/self/exe).
std::string executable_dir();
// Where a chess-rl binary (chessrl-replay, ...) is: `bin_dir` when given,
// else next to this executable, else in the build tree beside it
// (<exe dir>/../../services/<short name>/), else PATH. Errors say where it looked.
Result<std::string> find_service_binary(const std::string& name, const std::string& bin_dir);

}  // namespace chessrl::tool
