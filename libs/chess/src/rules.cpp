#include "chessrl/chess/rules.h"

#include <utility>

#include "chessrl/chess/movegen.h"

namespace chessrl::chess {

std::string GameResult::pgn_result() const {
  switch (outcome) {
    case Outcome::kWhiteWins:
      return "1-0";
    case Outcome::kBlackWins:
      return "0-1";
    case Outcome::kDraw:
      return "1/2-1/2";
    case Outcome::kOngoing:
      break;
  }
  return "*";
}

std::string GameResult::to_string() const {
  std::string s = pgn_result();
  if (reason != Termination::kNone) s += std::string(" (") + termination_name(reason) + ")";
  return s;
}

bool insufficient_material(const Position& pos) {
  if (pos.pieces(kPawn) | pos.pieces(kRook, kQueen)) return false;
  const Bitboard minors = pos.pieces(kKnight, kBishop);
  if (!more_than_one(minors)) return true;
  if (pos.pieces(kKnight)) return false;
  // Bishops that all stand on one colour can never attack the other colour,
  // so a king on it can never be mated.
  const Bitboard bishops = pos.pieces(kBishop);
  return !(bishops & kDarkSquares) || !(bishops & kLightSquares);
}

GameResult game_result(const Position& pos) {
  if (count_legal(pos) == 0) {
    if (pos.in_check())
      return {pos.side_to_move() == kWhite ? Outcome::kBlackWins : Outcome::kWhiteWins,
              Termination::kCheckmate};
    return {Outcome::kDraw, Termination::kStalemate};
  }
  if (insufficient_material(pos)) return {Outcome::kDraw, Termination::kInsufficientMaterial};
  if (pos.halfmove_clock() >= 100) return {Outcome::kDraw, Termination::kFiftyMoveRule};
  if (pos.repetition_count() >= 3) return {Outcome::kDraw, Termination::kThreefoldRepetition};
  return {};
}

const char* termination_name(Termination t) {
  switch (t) {
    case Termination::kNone:
      return "none";
    case Termination::kCheckmate:
      return "checkmate";
    case Termination::kStalemate:
      return "stalemate";
    case Termination::kFiftyMoveRule:
      return "fifty-move rule";
    case Termination::kThreefoldRepetition:
      return "threefold repetition";
    case Termination::kInsufficientMaterial:
      return "insufficient material";
    case Termination::kResignation:
      return "resignation";
    case Termination::kAdjudication:
      return "adjudication";
    case Termination::kMoveLimit:
      return "move limit";
  }
  return "unknown";
}

int material_balance(const Position& pos) {
  static constexpr std::pair<PieceType, int> kValues[] = {
      {kPawn, 1}, {kKnight, 3}, {kBishop, 3}, {kRook, 5}, {kQueen, 9}};
  int balance = 0;
  for (const auto& [type, value] : kValues)
    balance += value * (popcount(pos.pieces(kWhite, type)) - popcount(pos.pieces(kBlack, type)));
  return balance;
}

GameResult move_limit_result(const Position& pos, int threshold) {
  const int balance = material_balance(pos);
  if (threshold > 0 && (balance >= threshold || -balance >= threshold))
    return {balance > 0 ? Outcome::kWhiteWins : Outcome::kBlackWins, Termination::kAdjudication};
  return {Outcome::kDraw, Termination::kMoveLimit};
}

}  // namespace chessrl::chess
