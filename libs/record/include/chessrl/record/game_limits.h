// How long a game may be, one fact for every part that plays or keeps games:
// the replay service refuses a longer one by default (ValidationLimits::
// max_plies, chessrl-replay --max-plies) and self-play refuses a --max-plies
// above it (selfplay::add_game_options, SelfPlayConfig::validate), so that
// self-play never plays a game replay would throw away. Constants only.
#pragma once

namespace chessrl::record {

// Plies (moves) of the longest game: a game's move count, not its targets'.
inline constexpr int kMaxGamePlies = 1024;

}  // namespace chessrl::record
