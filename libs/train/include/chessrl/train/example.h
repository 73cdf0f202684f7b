// Training examples: one position's network input with its targets, built from
// self-play records (chessrl selfplay's JSON Lines) or from the replay
// service's TrainingPosition fields. No LibTorch; value types; thread-safe for
// distinct objects.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/record/game_record.h"

namespace chessrl::train {

struct Example {
  nn::InputPlanes planes;
  // The search's visit distribution: (policy index, probability), summing to 1.
  std::vector<std::pair<std::uint16_t, float>> policy;
  std::int8_t result = 0;  // the game's result for the side to move: 1 win, 0 draw, -1 loss
  // The search's evaluation of the position for the side to move: expected
  // score in [-1, 1] and draw probability (for value targets that mix it in).
  float root_value = 0;
  float root_draw = 0;
  // The policy indices of every legal move (the policy loss is taken over
  // these only); empty: treat every index as legal.
  std::vector<std::uint16_t> legal;
  // The side to move's material lead (pawns: P 1, N 3, B 3, R 5, Q 9)
  // chess::kMaterialHorizonPlies plies later, or at the game's end if sooner: the
  // material head's target. has_material false: unknown (no loss).
  std::int16_t material = 0;
  bool has_material = false;
  // The reply head's target: the move the opponent played next (the game's
  // move after the side to move's), as a policy index from the opponent's
  // point of view, nn::policy_index(reply, opponent). -1: none (the game
  // ended with the side to move's move) or unknown (no loss).
  std::int16_t reply = -1;
  // The moves-left head's target: plies from this position to the game's
  // recorded end (its last move, whatever ended it). -1: unknown (no loss).
  std::int16_t plies_left = -1;
  bool operator==(const Example&) const = default;
};

// The position reached by playing `history` from `fen`, encoded with that
// history, with the policy target (moves legal in that position, probabilities
// in [0, 1] summing to 1 within 1e-3; renormalised) and the result. Errors name
// the problem: a bad FEN, an illegal history or policy move, a bad probability.
Result<Example> make_example(std::string_view fen, std::span<const chess::Move> history,
                             std::span<const chess::Move> policy_moves,
                             std::span<const float> policy_probs, int result);

// The same for `reached`, the position trained on with its history already
// played, and `legal`, every legal move of it in generation order
// (chess::legal_moves), as record::decode_position leaves them: no FEN, no
// replay, no move generation. `reached` is left as it was (encoding unmakes
// and remakes its history). Precondition: `legal` is `reached`'s list.
Result<Example> make_example_at(chess::Position& reached, const chess::MoveList& legal,
                                std::span<const chess::Move> policy_moves,
                                std::span<const float> policy_probs, int result);

// Every recorded position of a game (one per MoveTarget), encoded with the
// game's real history, with every target the record gives (material, the
// opponent's reply, plies left). A game without a decided result gives draws.
Result<std::vector<Example>> examples_from_record(const record::GameRecord& record);

// Reads records (one JSON object per line, as `chessrl selfplay --out` writes
// them) from a file, or from every *.jsonl file in a directory (sorted by
// name). Errors name the file and line.
Result<std::vector<Example>> load_examples(const std::string& path);

}  // namespace chessrl::train
