// ViewerState: what the viewer knows of its sources, and the one JSON snapshot
// (GET api/state) every viewer is served. The poller applies each round's
// answers; the HTTP threads only read the snapshot, so the cost of a viewer
// is one copy of it, whatever their number. What a source sends is checked
// and copied field by field (types, lengths, counts): a malformed or hostile
// answer costs that source its board, never the page. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::web_service {

struct ViewerConfig {
  bool selfplay_configured = false;
  bool evaluator_configured = false;
  int max_boards = 16;
  std::int64_t stale_after_ms = 30'000;
  std::int64_t poll_interval_ms = 1'000;
};

// One poll round: each self-play address polled with its answer (the /live
// body) or error, an error resolving the self-play names (if any), and the
// evaluator's /matches answer when it was polled this round.
struct PollRound {
  std::int64_t now_ms = 0;
  std::vector<std::pair<std::string, Result<std::string>>> selfplay;
  std::string resolve_error;
  std::optional<Result<std::string>> evaluator;
};

class ViewerState {
 public:
  explicit ViewerState(ViewerConfig config);

  void apply(const PollRound& round);
  // The api/state JSON; never null (an empty state before the first round).
  std::shared_ptr<const std::string> snapshot() const;
  std::size_t boards() const;

 private:
  struct Board;
  void rebuild(std::int64_t now_ms);

  ViewerConfig config_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Board>> boards_;  // by address
  int answered_ = 0, unreachable_ = 0;
  std::string selfplay_error_;
  std::shared_ptr<const nlohmann::json> evaluator_;  // the checked /matches answer
  bool evaluator_ok_ = false;
  std::int64_t evaluator_ok_ms_ = 0;
  std::string evaluator_error_;
  std::shared_ptr<const std::string> snapshot_;
};

// The checks applied to a source's answer, exposed for tests: the cleaned
// JSON text, or an error naming what is wrong.
Result<std::string> clean_live(const std::string& body);
Result<std::string> clean_matches(const std::string& body);

}  // namespace chessrl::web_service
