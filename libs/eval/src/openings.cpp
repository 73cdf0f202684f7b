// The built-in opening set. Each opening is a move sequence from the start
// position, turned into a FEN on first use, so every one is legal by
// construction (a typo here fails loudly at start-up and in the tests).
#include <string_view>

#include "chessrl/chess/notation.h"
#include "chessrl/core/error.h"
#include "chessrl/eval/match.h"

namespace chessrl::eval {
namespace {

struct Opening {
  std::string_view name;
  std::string_view moves;  // UCI, from the start position
};

// Main lines of common openings, balanced for both sides, 4 to 10 plies deep.
constexpr Opening kOpenings[] = {
    {"Ruy Lopez", "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6"},
    {"Italian Game", "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5"},
    {"Scotch Game", "e2e4 e7e5 g1f3 b8c6 d2d4 e5d4 f3d4"},
    {"Petrov Defence", "e2e4 e7e5 g1f3 g8f6"},
    {"Sicilian Najdorf", "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6 b1c3 a7a6"},
    {"Open Sicilian", "e2e4 c7c5 g1f3 b8c6 d2d4 c5d4 f3d4 g8f6"},
    {"French Defence", "e2e4 e7e6 d2d4 d7d5 b1c3 g8f6"},
    {"Caro-Kann Defence", "e2e4 c7c6 d2d4 d7d5 b1c3 d5e4 c3e4"},
    {"Scandinavian Defence", "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5"},
    {"Pirc Defence", "e2e4 d7d6 d2d4 g8f6 b1c3 g7g6"},
    {"Queen's Gambit Declined", "d2d4 d7d5 c2c4 e7e6 b1c3 g8f6"},
    {"Queen's Gambit Accepted", "d2d4 d7d5 c2c4 d5c4 g1f3 g8f6"},
    {"Slav Defence", "d2d4 d7d5 c2c4 c7c6 g1f3 g8f6"},
    {"King's Indian Defence", "d2d4 g8f6 c2c4 g7g6 b1c3 f8g7 e2e4 d7d6"},
    {"Nimzo-Indian Defence", "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4"},
    {"Queen's Indian Defence", "d2d4 g8f6 c2c4 e7e6 g1f3 b7b6"},
    {"Gruenfeld Defence", "d2d4 g8f6 c2c4 g7g6 b1c3 d7d5"},
    {"Catalan Opening", "d2d4 g8f6 c2c4 e7e6 g2g3 d7d5 f1g2 f8e7"},
    {"London System", "d2d4 d7d5 c1f4 g8f6 e2e3 c7c5"},
    {"Dutch Defence", "d2d4 f7f5 g2g3 g8f6 f1g2 e7e6"},
    {"English Opening", "c2c4 e7e5 b1c3 g8f6 g2g3 d7d5"},
    {"Reti Opening", "g1f3 d7d5 c2c4 e7e6 g2g3 g8f6"},
};

std::string fen_after(const Opening& opening) {
  chess::Position pos;
  std::string_view rest = opening.moves;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    auto move = chess::parse_uci(pos, word);
    if (!move)
      throw Error("opening " + std::string(opening.name) + ": " + std::string(word) + ": " +
                  move.error());
    pos.make_move(*move);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return pos.fen();
}

}  // namespace

const std::vector<std::string>& opening_fens() {
  static const std::vector<std::string> fens = [] {
    std::vector<std::string> out;
    for (const Opening& o : kOpenings) out.push_back(fen_after(o));
    return out;
  }();
  return fens;
}

std::string opening_name(std::size_t index) {
  return index < std::size(kOpenings) ? std::string(kOpenings[index].name) : "?";
}

}  // namespace chessrl::eval
