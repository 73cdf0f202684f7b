// Policy map: a fixed index for every chess move, AlphaZero's 8x8x73 layout.
// index = plane * 64 + from, with squares from the mover's point of view
// (flipped vertically for black, as in encoding.h). Planes:
//    0..55  queen-like moves: direction d * 7 + (distance - 1), directions
//           N, NE, E, SE, S, SW, W, NW ("N" is towards the opponent); includes
//           king moves, castling (the king's two-square move), pawn moves and
//           promotions to a queen
//   56..63  knight moves: (+1,+2) (+2,+1) (+2,-1) (+1,-2) (-1,-2) (-2,-1) (-2,+1) (-1,+2)
//   64..72  underpromotions: 64 + 3 * (file step + 1) + (piece - knight),
//           file step -1, 0, +1 and piece knight, bishop, rook
// constexpr tables, no state: thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "chessrl/chess/position.h"

namespace chessrl::nn {

inline constexpr int kPolicyPlanes = 73;
inline constexpr int kPolicySize = kPolicyPlanes * 64;  // 4672

// The index of move m played by `mover`. Precondition: m is a move a piece can
// make on an empty board (every legal move is).
int policy_index(chess::Move m, chess::Color mover);

// What an index means, in absolute squares for `mover`: from, to, and the
// underpromotion piece (kNoPieceType for all other moves, queen promotions
// included). nullopt when the index points off the board.
struct PolicyMove {
  chess::Square from;
  chess::Square to;
  chess::PieceType underpromotion;
};
std::optional<PolicyMove> decode_policy_index(int index, chess::Color mover);

// The legal move of `pos` with this index, or nullopt if there is none.
std::optional<chess::Move> move_from_policy_index(const chess::Position& pos, int index);

}  // namespace chessrl::nn
