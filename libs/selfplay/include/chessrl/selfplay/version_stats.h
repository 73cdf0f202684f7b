// GameStats: what the games played with one model version looked like, the
// figures that tell whether self-play gives the network something to learn:
// the share of decisive games and how games ended, their length, how sharp
// the search's policy targets are (entropy), and how well the search's root
// value predicted the result (mean squared error). Self-play keeps one per
// model version, logs it and appends it as a JSON line (--version-stats);
// `chessrl curve` merges those lines per version. Value type; not thread-safe
// (callers lock).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "chessrl/chess/rules.h"
#include "chessrl/core/result.h"
#include "chessrl/record/game_record.h"

namespace chessrl::selfplay {

// A termination's name as a label value: "threefold_repetition".
std::string termination_label(chess::Termination reason);

struct GameStats {
  std::uint64_t version = 0;    // the model version that played the games
  std::uint64_t games = 0;
  std::uint64_t decisive = 0;   // won by either side
  std::uint64_t plies = 0;      // summed over games
  std::uint64_t positions = 0;  // recorded positions (moves with a training target)
  // Summed over recorded positions: the entropy (nats) of the policy target,
  // and the squared error of the root value (expected score for the side to
  // move, [-1, 1]) against the game's result for that side (1, 0, -1).
  double entropy_sum = 0;
  double value_sq_error_sum = 0;
  std::map<std::string, std::uint64_t> terminations;  // by termination_label

  // Adds a finished game. Fails only on a record whose start FEN does not parse.
  Result<void> add(const record::GameRecord& record);
  // Adds another's counts (same version or not; the version is left alone).
  void merge(const GameStats& other);

  double decisive_share() const { return games ? double(decisive) / double(games) : 0; }
  double mean_plies() const { return games ? double(plies) / double(games) : 0; }
  double policy_entropy() const { return positions ? entropy_sum / double(positions) : 0; }
  double value_mse() const { return positions ? value_sq_error_sum / double(positions) : 0; }
};

// One line of JSON (no newline):
// {"version":3,"games":120,"decisive":54,"plies":14400,"positions":3600,
//  "policy_entropy":2.1,"value_mse":0.42,"terminations":{"checkmate":20,…}}
std::string to_json(const GameStats& stats);
// Parses a line written by to_json; errors name the field.
Result<GameStats> parse_game_stats(std::string_view json);
// "v3: 120 games, 45% decisive (checkmate 17%, adjudication 12%, …), 120.0
// plies on average, policy entropy 2.10 nats, value MSE 0.420".
std::string describe(const GameStats& stats);

}  // namespace chessrl::selfplay
