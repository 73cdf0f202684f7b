#include "chessrl/record/training_position.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/record/move_codec.h"

namespace chessrl::record {

namespace {

std::string where(const v1::TrainingPosition& p) {
  return "sampled position of game '" + p.game_id() + "' ply " + std::to_string(p.ply());
}

}  // namespace

Result<DecodedPosition> decode_position(const v1::TrainingPosition& p, chess::Position* reached,
                                        chess::MoveList* legal_out) {
  auto start = chess::Position::from_fen(p.fen());
  if (!start.ok()) return fail(where(p) + ": bad FEN '" + p.fen() + "': " + start.error());
  chess::Position pos = std::move(start).value();

  DecodedPosition out;
  out.fen = p.fen();
  out.history.reserve(static_cast<std::size_t>(p.history_moves_size()));
  for (int i = 0; i < p.history_moves_size(); ++i) {
    const std::uint32_t code = p.history_moves(i);
    const auto move = decode_move(pos, code);
    if (!move) {
      return fail(where(p) + ": history move " + std::to_string(i) + " (code " +
                  std::to_string(code) + ") is not legal in " + pos.fen());
    }
    out.history.push_back(*move);
    pos.make_move(*move);
  }

  if (p.policy_moves_size() != p.policy_probs_size()) {
    return fail(where(p) + ": " + std::to_string(p.policy_moves_size()) + " policy moves but " +
                std::to_string(p.policy_probs_size()) + " probabilities");
  }
  out.policy_moves.reserve(static_cast<std::size_t>(p.policy_moves_size()));
  // Every policy move is one of the same position's: one move generation.
  const chess::MoveList legal = chess::legal_moves(pos);
  for (int i = 0; i < p.policy_moves_size(); ++i) {
    const std::uint32_t code = p.policy_moves(i);
    const auto move = decode_move(legal, code);
    if (!move) {
      return fail(where(p) + ": policy move " + std::to_string(i) + " (code " +
                  std::to_string(code) + ") is not legal in " + pos.fen());
    }
    out.policy_moves.push_back(*move);
  }
  out.policy_probs.assign(p.policy_probs().begin(), p.policy_probs().end());

  if (p.result() < -1 || p.result() > 1)
    return fail(where(p) + ": result " + std::to_string(p.result()) + " is not -1, 0 or 1");
  out.result = p.result();
  if (!std::isfinite(p.root_value()) || p.root_value() < -1 || p.root_value() > 1 ||
      !std::isfinite(p.root_draw()) || p.root_draw() < 0 || p.root_draw() > 1) {
    return fail(where(p) + ": root value " + std::to_string(p.root_value()) + " / draw " +
                std::to_string(p.root_draw()) + " is outside [-1, 1] / [0, 1]");
  }
  out.root_value = p.root_value();
  out.root_draw = p.root_draw();
  if (p.has_material_later()) {
    // More than all of one side's material (39 pawns' worth) cannot be.
    if (p.material_later() < -39 || p.material_later() > 39)
      return fail(where(p) + ": material_later " + std::to_string(p.material_later()) +
                  " is outside [-39, 39]");
    out.material_later = p.material_later();
  }
  if (p.next_moves_size() > 2)
    return fail(where(p) + ": " + std::to_string(p.next_moves_size()) +
                " next moves (at most 2: the move played and the reply)");
  if (p.next_moves_size() > 0) {
    const auto played = decode_move(legal, p.next_moves(0));
    if (!played)
      return fail(where(p) + ": next move 0 (code " + std::to_string(p.next_moves(0)) +
                  ") is not legal in " + pos.fen());
    out.next_moves.push_back(*played);
    if (p.next_moves_size() > 1) {
      chess::Position after = pos;
      after.make_move(*played);
      const auto reply = decode_move(after, p.next_moves(1));
      if (!reply)
        return fail(where(p) + ": next move 1 (code " + std::to_string(p.next_moves(1)) +
                    ") is not legal in " + after.fen());
      out.next_moves.push_back(*reply);
    }
  }
  if (p.has_plies_left()) {
    // At least the move played here; a reply needs one more.
    const auto least = std::uint32_t(std::max(1, p.next_moves_size()));
    if (p.plies_left() < least)
      return fail(where(p) + ": plies_left " + std::to_string(p.plies_left()) + " is below " +
                  std::to_string(least) + " (the next moves it has)");
    out.plies_left = int(p.plies_left());
  }
  if (reached) *reached = std::move(pos);
  if (legal_out) *legal_out = legal;
  return out;
}

}  // namespace chessrl::record
