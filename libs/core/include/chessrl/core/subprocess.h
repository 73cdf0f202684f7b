// Subprocess: a child program with pipes to its stdin and stdout, for talking
// to line-based engines (UCI). Owns the child: the destructor closes its stdin
// and reaps it (killing it if it does not exit within a second). Not
// thread-safe; use from one thread. Starting one sets SIGPIPE to ignored for
// the whole process, so writing to a child that has exited fails instead of
// killing the caller.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl {

class Subprocess {
 public:
  // Starts argv[0] (looked up in PATH) with the given arguments; stderr is
  // inherited. Fails with a message when the program cannot be started.
  static Result<Subprocess> start(const std::vector<std::string>& argv);
  // The same with `env` added to (or replacing) this process's environment:
  // the way to hand a child a secret (REDISCLI_AUTH), which on its command
  // line every user could read with ps.
  static Result<Subprocess> start(const std::vector<std::string>& argv,
                                  const std::vector<std::pair<std::string, std::string>>& env);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  // Writes `line` and a newline. False when the child has closed its stdin.
  bool write_line(const std::string& line);
  // The next line of output without its newline; nullopt on end of output or
  // when `timeout` passes first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  int pid() const { return pid_; }

 private:
  Subprocess() = default;
  void close_all();

  int pid_ = -1;
  int in_fd_ = -1;   // child's stdin (we write)
  int out_fd_ = -1;  // child's stdout (we read)
  std::string buffer_;
};

// Finds an executable by name in PATH (and /usr/games, where Debian puts
// stockfish); nullopt when absent.
std::optional<std::string> find_program(const std::string& name);

}  // namespace chessrl
