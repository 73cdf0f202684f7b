#include "chessrl/eval/match_endings.h"

#include <algorithm>
#include <cstdio>

#include "chessrl/chess/position.h"

namespace chessrl::eval {
namespace {

int piece_value(chess::Piece p) {
  static constexpr int kValues[] = {1, 3, 3, 5, 9, 0};
  return p == chess::kNoPiece ? 0 : kValues[chess::type_of(p)];
}

template <class T>
double median(std::vector<T> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? double(v[n / 2]) : (double(v[n / 2 - 1]) + double(v[n / 2])) / 2;
}

}  // namespace

LostGameMaterial lost_game_material(const chess::PgnGame& game, chess::Color loser) {
  LostGameMaterial out;
  auto start = game.start_fen.empty() ? chess::Position::from_fen(chess::kStartFen)
                                      : chess::Position::from_fen(game.start_fen);
  if (!start) return out;
  chess::Position pos = *start;
  const int sign = loser == chess::kWhite ? 1 : -1;
  int behind_from = -1;  // the ply since which the loser has been 3+ pawns behind
  for (const chess::Move m : game.moves) {
    const chess::Color mover = pos.side_to_move();
    pos.make_move(m);
    ++out.plies;
    const chess::Piece taken = pos.last_captured();
    if (mover != loser && taken != chess::kNoPiece) {
      // Could the loser take back on that square? Undefended: the piece hung.
      const chess::Square to = m.to();
      const bool defended = (pos.attackers_to(to, pos.pieces()) & pos.pieces(loser)) != 0;
      (defended ? out.exchange_pawns : out.hung_pawns) += piece_value(taken);
    }
    if (sign * chess::material_balance(pos) > -3)
      behind_from = -1;
    else if (behind_from < 0)
      behind_from = out.plies;
  }
  out.behind_ply = behind_from;
  out.final_balance = sign * chess::material_balance(pos);
  return out;
}

void MatchEndings::add(const MatchGame& game) {
  const int result = game.first_score == 1.0 ? 0 : game.first_score == 0.5 ? 1 : 2;
  const int reason = std::clamp(int(game.result.reason), 0, kTerminations - 1);
  ++counts_[std::size_t(result)][std::size_t(reason)];
  if (result == 2 && game.forfeit.empty()) {
    const chess::Color first = game.first_is_white ? chess::kWhite : chess::kBlack;
    lost_.push_back(lost_game_material(game.pgn, first));
  }
}

int MatchEndings::count(int first_result, chess::Termination reason) const {
  if (first_result < 0 || first_result > 2 || int(reason) >= kTerminations) return 0;
  return counts_[std::size_t(first_result)][std::size_t(reason)];
}

std::string MatchEndings::format(const std::string& first_name) const {
  std::string out;
  char line[512];
  static const char* const kResults[] = {"wins", "draws", "losses"};
  for (int r = 0; r < 3; ++r) {
    std::string parts;
    for (int t = 0; t < kTerminations; ++t) {
      const int n = counts_[std::size_t(r)][std::size_t(t)];
      if (n == 0) continue;
      std::snprintf(line, sizeof line, "%s%s %d", parts.empty() ? "" : ", ",
                    chess::termination_name(chess::Termination(t)), n);
      parts += line;
    }
    if (parts.empty()) continue;
    std::snprintf(line, sizeof line, "  %s %s: %s\n", first_name.c_str(), kResults[r],
                  parts.c_str());
    out += line;
  }
  if (!lost_.empty()) {
    std::vector<int> behind, final_balance, plies;
    int never = 0, hung = 0, exchanged = 0;
    for (const LostGameMaterial& g : lost_) {
      if (g.behind_ply >= 0)
        behind.push_back(g.behind_ply);
      else
        ++never;
      final_balance.push_back(g.final_balance);
      plies.push_back(g.plies);
      hung += g.hung_pawns;
      exchanged += g.exchange_pawns;
    }
    std::snprintf(line, sizeof line,
                  "  %s's %zu lost games: median %.0f plies; 3+ pawns behind for good from ply %.0f (median "
                  "of %zu; %d never), final material %+.1f (median); material taken: %d pawns "
                  "hung (undefended), %d in exchanges\n",
                  first_name.c_str(), lost_.size(), median(plies), median(behind), behind.size(),
                  never, median(final_balance), hung, exchanged);
    out += line;
  }
  return out;
}

}  // namespace chessrl::eval
