// Helpers shared by the nn tests: positions from seeded random play and
// colour-mirrored positions and moves.
#pragma once

#include <cctype>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"

namespace chessrl::nn::testing {

// Positions met along seeded random games, each a Position with its full
// history from the start, one from each game, after a random number of plies.
inline std::vector<chess::Position> random_positions(std::uint32_t seed, int count,
                                                     int max_plies = 160) {
  std::mt19937 rng(seed);
  std::vector<chess::Position> out;
  while (int(out.size()) < count) {
    chess::Position pos;
    const int plies = std::uniform_int_distribution<int>(1, max_plies)(rng);
    for (int ply = 0; ply < plies; ++ply) {
      const chess::MoveList moves = chess::legal_moves(pos);
      if (moves.empty() || chess::game_result(pos).reason != chess::Termination::kNone) break;
      pos.make_move(moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)]);
    }
    if (!chess::legal_moves(pos).empty()) out.push_back(pos);
  }
  return out;
}

// The FEN of the same position with colours swapped and the board flipped
// vertically: white's pieces become black's on the mirrored squares.
inline std::string mirror_fen(const std::string& fen) {
  std::istringstream in(fen);
  std::string board, side, castling, ep, half, full;
  in >> board >> side >> castling >> ep >> half >> full;
  std::vector<std::string> ranks;
  std::stringstream rs(board);
  for (std::string r; std::getline(rs, r, '/');) ranks.push_back(r);
  std::string out;
  for (int i = int(ranks.size()) - 1; i >= 0; --i) {
    for (char c : ranks[i])
      out += std::isalpha(static_cast<unsigned char>(c))
                 ? char(std::isupper(static_cast<unsigned char>(c)) ? std::tolower(c)
                                                                    : std::toupper(c))
                 : c;
    if (i) out += '/';
  }
  std::string cast;
  for (char c : std::string("KQkq")) {
    const char want =
        std::isupper(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : char(std::toupper(c));
    if (castling.find(want) != std::string::npos) cast += c;
  }
  if (cast.empty()) cast = "-";
  if (ep != "-") ep[1] = ep[1] == '3' ? '6' : '3';
  return out + " " + (side == "w" ? "b" : "w") + " " + cast + " " + ep + " " + half + " " + full;
}

inline chess::Square mirror(chess::Square s) { return chess::Square(s ^ 56); }
inline chess::Move mirror(chess::Move m) {
  return chess::Move(mirror(m.from()), mirror(m.to()), m.kind(),
                     m.kind() == chess::MoveKind::kPromotion ? m.promotion() : chess::kKnight);
}

}  // namespace chessrl::nn::testing
