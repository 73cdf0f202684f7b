// Network input: a position with its history as 112 planes of 8x8, always from
// the side to move's point of view (lc0's classic layout). Free functions, no
// state: thread-safe for distinct Position objects.
//
// Planes, squares flipped vertically when black is to move (rank 1 is always
// the mover's back rank):
//   13 per history step t = 0 (now) .. 7 (seven plies ago):
//     13t + 0..5   the mover's pawns, knights, bishops, rooks, queens, king
//     13t + 6..11  the opponent's pieces, same order
//     13t + 12     ones when that position had occurred before (a repetition)
//   104 / 105      ones when the mover may castle queenside / kingside
//   106 / 107      the same for the opponent
//   108            ones when black is to move
//   109            the fifty-move counter: halfmove clock / 100 on every square
//   110            zeros (kept for lc0's layout)
//   111            ones (lets convolutions see the board's edge)
// "Mover" and "opponent" refer to the side to move now, in every history step.
// History steps before the first position the Position object has seen are zero.
#pragma once

#include <array>
#include <cstdint>

#include "chessrl/chess/position.h"

namespace chessrl::nn {

inline constexpr int kHistorySteps = 8;
inline constexpr int kPlanesPerStep = 13;
inline constexpr int kInputPlanes = 112;
inline constexpr int kCastlingPlane = kHistorySteps * kPlanesPerStep;  // 104
inline constexpr int kBlackToMovePlane = 108;
inline constexpr int kRule50Plane = 109;
inline constexpr int kZerosPlane = 110;
inline constexpr int kOnesPlane = 111;

// One position's input, compact: plane p is values[p] on the squares set in
// masks[p] and 0 elsewhere. Square index = rank * 8 + file, mover's view.
// 1.3 KB; backends expand it to floats themselves (on the GPU for CUDA).
struct InputPlanes {
  std::array<std::uint64_t, kInputPlanes> masks;
  std::array<float, kInputPlanes> values;
  bool operator==(const InputPlanes&) const = default;
};

// Encodes `pos` with up to 7 earlier positions of its history. `pos` is left
// exactly as it was (moves are unmade and made again). Also returns, through
// `key`, a 64-bit hash of everything the planes depend on (the Zobrist keys of
// the history positions, repetitions and the halfmove clock): equal keys mean
// equal planes, barring hash collisions. Fast: a few hundred nanoseconds.
InputPlanes encode(chess::Position& pos, std::uint64_t* key = nullptr);
// The same for a const position (copies it first).
InputPlanes encode_copy(const chess::Position& pos, std::uint64_t* key = nullptr);

// Writes the planes as kInputPlanes * 64 floats, plane-major (NCHW order for
// one position). `out` must hold kInputPlanes * 64 floats.
void expand(const InputPlanes& in, float* out);

}  // namespace chessrl::nn
