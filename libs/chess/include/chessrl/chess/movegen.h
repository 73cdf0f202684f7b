// Legal move generation and perft. The generator produces only legal moves:
// pins, check evasions, en-passant discovered checks and castling through
// attacked squares are handled in the generator, not by make-and-test.
// All functions are thread-safe for distinct Position objects.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "chessrl/chess/position.h"

namespace chessrl::chess {

// A fixed-capacity list of moves. No legal chess position has more than 218
// legal moves, but Position::from_fen also accepts positions no game reaches.
// Its material check leaves a side at most a king, 9 queens, 2 rooks, 2
// bishops and 2 knights (a pawn in place of a promoted queen has at most 12
// moves, not 27), so any position it accepts, and any played from one, has at
// most 8 + 2 (castling) + 9*27 + 2*14 + 2*13 + 2*8 = 323 legal moves.
class MoveList {
 public:
  static constexpr int kCapacity = 336;
  void push(Move m) { moves_[size_++] = m; }
  void clear() { size_ = 0; }
  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Move operator[](int i) const { return moves_[i]; }
  const Move* begin() const { return moves_; }
  const Move* end() const { return moves_ + size_; }
  bool contains(Move m) const;

 private:
  Move moves_[kCapacity];
  int size_ = 0;
};

// Appends every legal move of the side to move to `list`. Promotions come queen
// first.
void generate_legal(const Position& pos, MoveList& list);
MoveList legal_moves(const Position& pos);
// The number of legal moves, without building the list (used at perft leaves).
int count_legal(const Position& pos);
bool is_legal(const Position& pos, Move m);

// Leaf nodes at `depth` plies (perft(pos, 0) == 1). `pos` is left unchanged.
std::uint64_t perft(Position& pos, int depth);

struct PerftDivide {
  Move move;
  std::uint64_t nodes;
};
// perft of each legal move at depth - 1, in generation order; `on_move`, when
// given, is called as each move's count is known (for streaming output and
// progress). Precondition: depth >= 1.
std::vector<PerftDivide> perft_divide(Position& pos, int depth,
                                      const std::function<void(const PerftDivide&)>& on_move = {});

}  // namespace chessrl::chess
