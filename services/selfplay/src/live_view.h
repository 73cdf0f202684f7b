// LiveView: what GET /live on self-play's metrics address serves, for people
// to watch (the game viewer, chessrl-web): the game this process plays in its
// first slot (in progress, or the last one finished), the one before it, the
// model version playing and the pod's name, as JSON. Nothing secret: moves,
// versions, counts. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "chessrl/selfplay/game_runner.h"

namespace chessrl::selfplay_service {

class LiveView {
 public:
  explicit LiveView(std::string pod) : pod_(std::move(pod)) {}

  // The runner playing now, with `version`; it must stay alive until detach().
  void attach(const selfplay::GameRunner& runner, std::uint64_t version);
  // Before the runner is destroyed: its games are kept and shown until the
  // next runner has its own.
  void detach();

  // {"pod":..., "model_version":7, "games_finished":N, "updated_ms":...,
  //  "game":{"id","start_fen","moves":[UCI...],"in_progress","result","termination","max_plies"} or null,
  //  "previous":{...} or null}
  std::string json(std::uint64_t games_finished) const;

 private:
  mutable std::mutex mutex_;
  std::string pod_;
  const selfplay::GameRunner* runner_ = nullptr;
  std::uint64_t version_ = 0;
  selfplay::WatchedGames kept_;  // the last runner's, after detach()
};

// One watched game as the JSON object above (exposed for tests).
std::string watched_game_json(const selfplay::WatchedGame& game);

}  // namespace chessrl::selfplay_service
