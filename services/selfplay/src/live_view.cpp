#include "live_view.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"

namespace chessrl::selfplay_service {
namespace {

using Json = nlohmann::json;

Json to_json(const selfplay::WatchedGame& game) {
  Json moves = Json::array();
  for (const chess::Move move : game.moves) moves.push_back(chess::to_uci(move));
  const bool over = game.result.is_over();
  return {{"id", game.id},
          {"start_fen", game.start_fen},
          {"moves", std::move(moves)},
          {"in_progress", !over},
          {"result", game.result.pgn_result()},
          {"termination", over ? chess::termination_name(game.result.reason) : ""},
          {"max_plies", game.max_plies}};
}

Json to_json(const std::optional<selfplay::WatchedGame>& game) {
  return game ? to_json(*game) : Json(nullptr);
}

}  // namespace

void LiveView::attach(const selfplay::GameRunner& runner, std::uint64_t version) {
  std::lock_guard lock(mutex_);
  runner_ = &runner;
  version_ = version;
}

void LiveView::detach() {
  std::lock_guard lock(mutex_);
  if (runner_ == nullptr) return;
  selfplay::WatchedGames games = runner_->watched();
  if (games.current) kept_ = std::move(games);
  runner_ = nullptr;
}

std::string LiveView::json(std::uint64_t games_finished) const {
  selfplay::WatchedGames games;
  std::uint64_t version;
  {
    std::lock_guard lock(mutex_);
    version = version_;
    if (runner_ != nullptr) games = runner_->watched();
    // A new runner shows the last one's games until it has its own; its first
    // game's predecessor is the last runner's last game.
    if (!games.current) {
      games = kept_;
    } else if (!games.previous && kept_.current && kept_.current->result.is_over()) {
      games.previous = kept_.current;
    }
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const Json j = {{"pod", pod_},
                  {"model_version", version},
                  {"games_finished", games_finished},
                  {"updated_ms", now},
                  {"game", to_json(games.current)},
                  {"previous", to_json(games.previous)}};
  return j.dump();
}

std::string watched_game_json(const selfplay::WatchedGame& game) { return to_json(game).dump(); }

}  // namespace chessrl::selfplay_service
