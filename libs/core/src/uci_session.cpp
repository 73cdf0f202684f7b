#include "chessrl/core/uci_session.h"

namespace chessrl {

Result<UciSession> UciSession::start(const std::string& program,
                                     std::chrono::milliseconds timeout) {
  auto proc = Subprocess::start({program});
  if (!proc) return fail(proc.error());
  UciSession session(std::move(proc).value());
  const std::string not_engine = "'" + program + "' is not a UCI engine: ";
  if (!session.send("uci")) return fail(not_engine + "it exited before 'uci' was sent");
  auto lines = session.read_until([](const std::string& l) { return l == "uciok"; }, timeout);
  if (!lines) return fail(not_engine + "it did not answer 'uci' with 'uciok'");
  for (const auto& l : *lines)
    if (l.rfind("id name ", 0) == 0) session.name_ = l.substr(8);
  if (!session.sync(timeout))
    return fail(not_engine + "it did not answer 'isready' with 'readyok'");
  return session;
}

bool UciSession::sync(std::chrono::milliseconds timeout) {
  return send("isready") &&
         read_until([](const std::string& l) { return l == "readyok"; }, timeout).has_value();
}

std::optional<std::vector<std::string>> UciSession::read_until(
    const std::function<bool(const std::string&)>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> lines;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto line = proc_.read_line(left);
    if (!line) return std::nullopt;
    lines.push_back(*line);
    if (done(lines.back())) return lines;
  }
}

}  // namespace chessrl
