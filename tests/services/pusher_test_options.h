// The GamePusher options of the pusher tests (selfplay_pusher_test and
// selfplay_push_rpc_test): a small buffer and millisecond intervals and backoff,
// so a test sees several rounds and retries in well under a second.
#pragma once

#include <chrono>

#include "game_pusher.h"

namespace chessrl::selfplay_service {

inline GamePusherOptions fast_pusher_options() {
  using namespace std::chrono_literals;
  GamePusherOptions o;
  o.buffer_games = 64;
  o.batch_games = 4;
  o.interval = 10ms;
  o.backoff_min = 2ms;
  o.backoff_max = 20ms;
  return o;
}

}  // namespace chessrl::selfplay_service
