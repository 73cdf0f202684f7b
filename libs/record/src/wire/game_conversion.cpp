#include "chessrl/record/game_conversion.h"

#include "chessrl/chess/position.h"
#include "chessrl/record/move_codec.h"

namespace chessrl::record {

v1::Game to_wire_game(const record::GameRecord& record, std::uint64_t model_version,
                      const std::string& producer) {
  v1::Game game;
  game.set_id(record.id);
  game.set_model_version(model_version);
  game.set_producer(producer);
  if (record.start_fen != chess::kStartFen) game.set_start_fen(record.start_fen);
  game.mutable_moves()->Reserve(static_cast<int>(record.moves.size()));
  for (const chess::Move move : record.moves) game.add_moves(encode_move(move));
  for (const record::MoveTarget& t : record.targets) {
    v1::MoveTarget* target = game.add_targets();
    target->set_ply(static_cast<std::uint32_t>(t.ply));
    target->set_root_value(t.root_value);
    target->set_root_draw(t.root_draw);
    target->set_visits(t.visits);
    for (const record::PolicyEntry& entry : t.policy) {
      target->add_policy_moves(encode_move(entry.move));
      target->add_policy_probs(entry.probability);
    }
  }
  game.set_outcome(to_wire(record.result.outcome));
  game.set_termination(to_wire(record.result.reason));
  return game;
}

}  // namespace chessrl::record
