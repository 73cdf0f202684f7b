// GameRecord: one finished self-play game as training data: where it started,
// every move, and for each recorded move the search's visit distribution and
// root value, with the result and how the game ended. Stored one JSON object
// per line (JSON Lines); written as PGN for people. Value types; thread-safe
// to read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/chess/pgn.h"
#include "chessrl/chess/rules.h"
#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"

namespace chessrl::record {

struct PolicyEntry {
  chess::Move move;
  float probability = 0;
  bool operator==(const PolicyEntry&) const = default;
};

// The training target of one recorded move (a full search, see PlayoutCap).
struct MoveTarget {
  int ply = 0;                      // index into GameRecord::moves of the move played here
  float root_value = 0;             // search's expected score for the side to move, [-1, 1]
  float root_draw = 0;              // search's draw probability
  std::uint32_t visits = 0;         // root visits behind the distribution
  std::vector<PolicyEntry> policy;  // visited moves (Gumbel: every legal move); sums to 1
  bool operator==(const MoveTarget&) const = default;
};

struct GameRecord {
  std::string id;           // unique per game: runner seed, id nonce and game index
  std::uint64_t index = 0;  // the game's number in its run
  std::uint64_t seed = 0;   // the game's own seed
  std::string start_fen;    // FEN of the first position
  std::vector<chess::Move> moves;
  std::vector<MoveTarget> targets;  // by increasing ply
  chess::GameResult result;
  // Resignation bookkeeping (ResignPolicy): in a game played with resignation
  // disabled, the ply and side at which a side would first have resigned.
  bool resign_disabled = false;
  int would_resign_ply = -1;
  chess::Color would_resign_side = chess::kWhite;

  // The side that would have resigned did not lose.
  bool resign_false_positive() const;
  bool operator==(const GameRecord&) const = default;
};

// One line of JSON (no newline), e.g.
// {"id":"…","index":3,"seed":…,"start":"<fen>","moves":["e2e4",…],
//  "result":"1-0","termination":"checkmate",
//  "targets":[{"ply":0,"value":0.1,"draw":0.3,"visits":400,"policy":[["e2e4",0.4],…]}],
//  "resign":{"disabled":true,"would_ply":57,"would_side":"b"}}
std::string to_json(const GameRecord& record);
// Parses and checks a line written by to_json: the moves replay legally from
// the start position and none follows the position where the rules ended the
// game, every policy move is legal where it is, each policy sums to 1 (within
// 1e-3), and the result obeys result_rule.h, the rule replay's validation
// applies (so a record the trainer's --data reads is one replay accepts).
// Errors name the field and the ply.
Result<GameRecord> parse_record(std::string_view json);

// The game as PGN (tags Event, Round = index + 1, Result, Termination, and the
// given players).
chess::PgnGame to_pgn(const GameRecord& record, const std::string& white = "chessrl",
                      const std::string& black = "chessrl");

}  // namespace chessrl::record
