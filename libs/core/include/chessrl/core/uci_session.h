// UciSession: the line protocol of a UCI engine process (uci/uciok, isready/
// readyok, and reading replies), without chess knowledge. Used by the perft
// benchmark, the stockfish differential test and, later, the evaluator's
// external-engine client. Not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/core/subprocess.h"

namespace chessrl {

class UciSession {
 public:
  // Starts `program` (name or path) and completes the uci/uciok handshake.
  static Result<UciSession> start(const std::string& program,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // The engine's "id name" line, e.g. "Stockfish 15.1".
  const std::string& name() const { return name_; }
  bool send(const std::string& line) { return proc_.write_line(line); }
  // Sends isready and waits for readyok.
  bool sync(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Reads lines until `done(line)` holds, returning every line read including
  // that one; nullopt when the engine stops answering within `timeout`.
  std::optional<std::vector<std::string>> read_until(
      const std::function<bool(const std::string&)>& done, std::chrono::milliseconds timeout);

 private:
  explicit UciSession(Subprocess proc) : proc_(std::move(proc)) {}
  Subprocess proc_;
  std::string name_;
};

}  // namespace chessrl
