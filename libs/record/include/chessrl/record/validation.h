// Validation of pushed games: every game is replayed with the chess library
// before anything of it is stored, and turned into the training positions the
// store keeps. Free functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "chessrl/record/game_limits.h"
#include "chessrl/record/result_rule.h"
#include "chessrl/v1/game.pb.h"

namespace chessrl::record {

// Why a game was refused. The labels are the `reason` of
// chessrl_replay_games_rejected_total, so the set is fixed and small.
enum class RejectReason : std::uint8_t {
  kMalformed,    // a field out of range: unspecified outcome, bad target ply, NaN, ...
  kBadId,        // empty, too long, or characters outside [A-Za-z0-9._:-]
  kOversized,    // serialized game or move count over the limits
  kBadFen,       // start_fen does not parse
  kIllegalMove,  // a move that is not legal where it is played
  kBadPolicy,    // a policy move that is not legal there, a duplicate, a
                 // probability outside [0, 1], or a sum not 1 (within 1e-3)
  kBadResult,    // outcome/termination contradicts the final position, or
                 // moves continue after the rules ended the game
};
inline constexpr std::array kAllRejectReasons = {
    RejectReason::kMalformed,   RejectReason::kBadId,     RejectReason::kOversized,
    RejectReason::kBadFen,      RejectReason::kIllegalMove, RejectReason::kBadPolicy,
    RejectReason::kBadResult};

// "malformed", "bad_id", "oversized", "bad_fen", "illegal_move", "bad_policy", "bad_result".
std::string_view reason_label(RejectReason reason);

struct Rejection {
  RejectReason reason = RejectReason::kMalformed;
  std::string detail;  // names the field and ply, e.g. "ply 12: e2e5 is not legal"
};

struct ValidationLimits {
  std::size_t max_game_bytes = 1 << 20;  // serialized size of one Game
  std::size_t max_plies = kMaxGamePlies;  // self-play's --max-plies stays within it
  std::size_t max_id_length = 128;
  std::size_t max_producer_length = 128;
};

// A validated game in the form a ReplayStore keeps it.
struct StoredGame {
  std::string id;
  // One serialized chessrl.v1.TrainingPosition per target, by increasing ply.
  // Each holds the FEN of the position k plies earlier and the k moves from
  // there, with k = min(ply, 7 + halfmove clock seven plies earlier): enough
  // history for the input planes' seven past positions and their repetition
  // flags, and no more.
  std::vector<std::string> positions;
};

using Validation = std::variant<StoredGame, Rejection>;

// Replays `game` and checks everything listed in RejectReason; returns the
// training positions or the first problem found. The result obeys
// result_rule.h (result_problem), as the trainer's --data records do: a
// result the final position's rules decide must be that one; otherwise
// RESIGNATION by the side to move, ADJUDICATION for the side at least
// kMinAdjudicationLead pawns ahead, or a MOVE_LIMIT draw. No move may follow
// the position where the rules ended the game.
Validation validate_game(const v1::Game& game, const ValidationLimits& limits = {});

}  // namespace chessrl::record
