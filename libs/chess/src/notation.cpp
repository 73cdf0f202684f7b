#include "chessrl/chess/notation.h"

namespace chessrl::chess {

std::string square_name(Square s) { return {char('a' + file_of(s)), char('1' + rank_of(s))}; }

std::string to_uci(Move m) {
  if (m.is_none()) return "0000";
  std::string s = square_name(m.from()) + square_name(m.to());
  if (m.kind() == MoveKind::kPromotion) s += "nbrq"[m.promotion() - kKnight];
  return s;
}

}  // namespace chessrl::chess
