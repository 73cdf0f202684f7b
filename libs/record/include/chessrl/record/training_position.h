// A sampled TrainingPosition decoded back into chess terms: the moves of its
// history and policy as legal moves of the positions they are played in. The
// trainer turns the result into an Example (train::make_example, which applies
// the policy rule of policy_rule.h); nothing replay established on ingest
// (validation.h) is checked again here beyond what decoding needs. Free
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"
#include "chessrl/v1/game.pb.h"

namespace chessrl::record {

struct DecodedPosition {
  std::string fen;                        // the position `history` starts from
  std::vector<chess::Move> history;       // played from `fen` to the position trained on
  std::vector<chess::Move> policy_moves;  // legal in the position trained on
  std::vector<float> policy_probs;        // one per policy move
  int result = 0;                         // for the side to move: 1, 0 or -1
  float root_value = 0;
  float root_draw = 0;
  std::optional<int> material_later;  // unset in positions stored before it existed
  // The move played in the position trained on and the opponent's reply
  // (legal where each is played); fewer at the game's end, none in positions
  // stored before they existed.
  std::vector<chess::Move> next_moves;
  std::optional<int> plies_left;  // unset in positions stored before it existed
};

// Fails, naming the game, ply and what is wrong, on a FEN that does not parse,
// a history or policy move code that is not legal where it stands, policy
// lists of different lengths, more than two next moves or one not legal where
// it is played, or a value outside its range (result, root value and draw,
// material, plies left): a store whose data does not match what replay
// validated, which must not become a training example.
// With `reached`, also the position trained on, with its history, and with
// `legal` that position's legal moves in generation order (chess::legal_moves:
// the list the policy and next moves were decoded against); both are what
// train::make_example_at takes: no second replay from the FEN, no second move
// generation. Either is written only on success.
Result<DecodedPosition> decode_position(const v1::TrainingPosition& position,
                                        chess::Position* reached = nullptr,
                                        chess::MoveList* legal = nullptr);

}  // namespace chessrl::record
