// The one way this code base starts another program. Process: a child with
// its stdout and stderr inherited or appended to a log file, optionally at a
// niceness, in its own process group, and killed by the kernel when we die;
// waited for, stopped (SIGTERM, a grace period, SIGKILL) and reaped.
// Subprocess: a child with pipes to its stdin and stdout, for line-based
// engines (UCI) and tools whose output we read. Neither is thread-safe; use
// each from one thread. Starting either is safe in a process with threads.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl {

// What to start and how.
struct ProcessSpec {
  // argv[0]: a path, or a name looked up as find_program() does.
  std::vector<std::string> argv;
  // Added to (or replacing) this process's environment: the way to hand a
  // child a secret (REDISCLI_AUTH), which on its command line every user
  // could read with ps.
  std::vector<std::pair<std::string, std::string>> env;
  // "": stdout and stderr inherited; else both appended to this file (created
  // 0644). Process only: a Subprocess's stdout is its pipe.
  std::string output_path;
  bool null_stdin = false;  // stdin from /dev/null instead of ours (Process only)
  int nice = 0;             // the child's niceness (setpriority), 0..19; 0: ours
  // In a process group of its own, so a terminal's Ctrl-C reaches only us.
  bool own_process_group = false;
  // SIGTERM from the kernel when the thread that started it exits (our death).
  bool die_with_parent = false;
};

class Process {
 public:
  // Fails, naming the program, when it cannot be started (not found, not
  // executable, log file not writable). The child starts with no signal
  // blocked or ignored, whatever ours are.
  static Result<Process> start(const ProcessSpec& spec);

  Process() = default;  // no child: exited() is true
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();  // a child still running is killed (SIGKILL) and reaped

  int pid() const { return pid_; }
  // Reaps the child if it has exited; true once it has.
  bool exited();
  // Waits up to `timeout` for it to exit; true once it has.
  bool wait_for(std::chrono::milliseconds timeout);
  // Waits until it exits; its exit_code().
  int wait();
  // "exit status 1", "killed by SIGKILL", or "running".
  std::string status() const;
  bool clean_exit() const;  // exited with status 0
  // Its exit status, 128 + the signal that killed it, or -1 while running.
  int exit_code() const;

  void signal(int sig);  // sends `sig` if it is still running
  void terminate();      // SIGTERM if it is still running, and returns
  void kill();           // SIGKILL if it is still running, and returns
  // SIGTERM, then up to `grace` for it to exit, then SIGKILL. True when it
  // exited by itself within the grace period.
  bool stop(std::chrono::milliseconds grace);

 private:
  friend class Subprocess;
  // `stdin_fd`/`stdout_fd` >= 0: dup'ed onto the child's stdin/stdout.
  static Result<Process> launch(const ProcessSpec& spec, int stdin_fd, int stdout_fd,
                                bool stderr_to_stdout);
  void reap_now();  // SIGKILL and wait, if it has not been reaped

  int pid_ = -1;
  bool reaped_ = true;
  bool lost_ = false;  // reaped, but not by us: its status is unknown (never a clean exit)
  int wait_status_ = 0;
};

class Subprocess {
 public:
  // Starts argv[0] (looked up in PATH) with the given arguments; stderr is
  // inherited. Fails with a message when the program cannot be started.
  static Result<Subprocess> start(const std::vector<std::string>& argv);
  // The same with `env` added to (or replacing) this process's environment.
  static Result<Subprocess> start(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& env);
  // The same from a spec (its output_path and null_stdin are not used); with
  // `merge_stderr` the child's stderr goes to the pipe as well.
  static Result<Subprocess> start(const ProcessSpec& spec, bool merge_stderr);
  // Starting one sets SIGPIPE to ignored for the whole process, so writing to
  // a child that has exited fails instead of killing the caller.

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Closes its stdin and reaps it, killing it if it does not exit within a second.
  ~Subprocess();

  // Writes `line` and a newline. False when the child has closed its stdin.
  bool write_line(const std::string& line);
  // Closes the child's stdin: it reads end of input.
  void close_stdin();
  // The next line of output without its newline; nullopt on end of output or
  // when `timeout` passes first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  int pid() const { return process_.pid(); }
  Process& process() { return process_; }

 private:
  Subprocess() = default;
  void close_all();

  Process process_;
  int in_fd_ = -1;   // child's stdin (we write)
  int out_fd_ = -1;  // child's stdout (we read)
  std::string buffer_;
};

// Finds an executable by name in PATH (and /usr/games, where Debian puts
// stockfish); a name with a '/' is taken as a path. nullopt when absent.
std::optional<std::string> find_program(const std::string& name);

// The last `lines` lines of the text file at `path`, each indented by four
// spaces and ended by a newline ("" when unreadable): a child's log in an error.
std::string log_tail(const std::string& path, int lines);

}  // namespace chessrl
