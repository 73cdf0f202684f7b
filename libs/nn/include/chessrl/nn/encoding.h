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
//
// A network with input_features 1 (network_config.h) takes kFeaturePlanes more,
// planes 112..131, facts a chess player sees at a glance, in the same frame:
//   112 / 113      squares the mover attacks at least once / at least twice
//   114 / 115      the same for the opponent
//   116 / 117      the mover's / the opponent's pieces en prise: attacked, and
//                  either undefended or attacked by a piece of lower value
//                  (P 1 < N = B 3 < R 5 < Q 9; kings are never en prise)
//   118            the opponent's pieces giving check
//   119 / 120      the mover's / the opponent's pieces pinned to their king
//   121..125       the mover's pawns / 8, knights / 2, bishops / 2, rooks / 2,
//                  queens on every square (zero when none)
//   126..130       the same for the opponent
//   131            material difference, mover minus opponent (P 1, N 3, B 3,
//                  R 5, Q 9) / 10, on every square
// Attacks are direct (no x-rays through a piece): a pawn attacks its two
// diagonals, a slider up to and including the first piece in each direction.
// They depend only on the board now (planes 0..11), so they are not stored:
// chess_features() derives them from the 112 planes, and expand() writes them
// when asked for kMaxInputPlanes planes. InputPlanes, the cache key and
// everything that carries planes are the same whatever the network takes.
#pragma once

#include <array>
#include <cstdint>

#include "chessrl/chess/position.h"
#include "chessrl/nn/network_config.h"

namespace chessrl::nn {

inline constexpr int kHistorySteps = 8;
inline constexpr int kPlanesPerStep = 13;
inline constexpr int kInputPlanes = 112;
inline constexpr int kCastlingPlane = kHistorySteps * kPlanesPerStep;  // 104
inline constexpr int kBlackToMovePlane = 108;
inline constexpr int kRule50Plane = 109;
inline constexpr int kZerosPlane = 110;
inline constexpr int kOnesPlane = 111;

inline constexpr int kFeaturePlanes = 20;
inline constexpr int kMaxInputPlanes = kInputPlanes + kFeaturePlanes;  // 132
inline constexpr int kAttacksPlane = 112;  // mover +0, +1 (twice); opponent +2, +3
inline constexpr int kEnPrisePlane = 116;  // mover +0, opponent +1
inline constexpr int kCheckersPlane = 118;
inline constexpr int kPinnedPlane = 119;      // mover +0, opponent +1
inline constexpr int kPieceCountPlane = 121;  // mover +0..4, opponent +5..9 (P N B R Q)
inline constexpr int kMaterialDifferencePlane = 131;

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

// The input planes a network of `config` takes: kInputPlanes, or
// kMaxInputPlanes with input_features.
int input_planes(const NetworkConfig& config);

// The feature planes (112..131 above) of the position whose planes `in` are,
// compact as InputPlanes are: plane kInputPlanes + i is values[i] on masks[i].
// About as cheap as encode(): a few attack-table lookups per piece.
struct FeaturePlanes {
  std::array<std::uint64_t, kFeaturePlanes> masks;
  std::array<float, kFeaturePlanes> values;
  bool operator==(const FeaturePlanes&) const = default;
};
FeaturePlanes chess_features(const InputPlanes& in);

// Writes the first `planes` planes as planes * 64 floats, plane-major (NCHW
// order for one position): kInputPlanes, or kMaxInputPlanes to add the
// feature planes (computed here). `out` must hold planes * 64 floats.
void expand(const InputPlanes& in, float* out, int planes = kInputPlanes);

}  // namespace chessrl::nn
