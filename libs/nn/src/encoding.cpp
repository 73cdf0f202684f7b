#include "chessrl/nn/encoding.h"

#include <bit>

#include "chessrl/core/splitmix64.h"

namespace chessrl::nn {
namespace {

using chess::Bitboard;
using chess::Color;

constexpr Bitboard kAll = ~Bitboard{0};

// Mirrors a bitboard vertically (rank r <-> rank 7 - r).
inline Bitboard flip(Bitboard b) { return __builtin_bswap64(b); }

// Folds v into the running hash h (splitmix64's finaliser: cheap, well mixed).
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + kSplitMix64Gamma + (h << 6) + (h >> 2);
  return splitmix64_finalize(h);
}

// The 13 planes of one history step, seen by `us` (the side to move now).
void encode_step(const chess::Position& pos, Color us, int step, bool repeated, InputPlanes& out) {
  const bool mirror = us == chess::kBlack;
  const int base = step * kPlanesPerStep;
  for (int side = 0; side < 2; ++side) {
    const Color c = side == 0 ? us : ~us;
    for (int pt = chess::kPawn; pt <= chess::kKing; ++pt) {
      const Bitboard b = pos.pieces(c, chess::PieceType(pt));
      out.masks[base + side * 6 + pt] = mirror ? flip(b) : b;
    }
  }
  out.masks[base + 12] = repeated ? kAll : 0;
}

}  // namespace

InputPlanes encode(chess::Position& pos, std::uint64_t* key) {
  InputPlanes out;
  out.masks.fill(0);
  out.values.fill(1.0f);
  const Color us = pos.side_to_move();
  const bool white = us == chess::kWhite;

  // Side and castling planes describe the position now.
  out.masks[kCastlingPlane + 0] =
      pos.can_castle(white ? chess::kWhiteOOO : chess::kBlackOOO) ? kAll : 0;
  out.masks[kCastlingPlane + 1] =
      pos.can_castle(white ? chess::kWhiteOO : chess::kBlackOO) ? kAll : 0;
  out.masks[kCastlingPlane + 2] =
      pos.can_castle(white ? chess::kBlackOOO : chess::kWhiteOOO) ? kAll : 0;
  out.masks[kCastlingPlane + 3] =
      pos.can_castle(white ? chess::kBlackOO : chess::kWhiteOO) ? kAll : 0;
  out.masks[kBlackToMovePlane] = white ? 0 : kAll;
  out.masks[kRule50Plane] = kAll;
  out.values[kRule50Plane] = float(pos.halfmove_clock()) / 100.0f;
  out.masks[kZerosPlane] = 0;
  out.masks[kOnesPlane] = kAll;

  // The Zobrist key covers pieces, side, castling and en passant; the clock and
  // repetitions are mixed in separately.
  std::uint64_t hash = mix(0x243f6a8885a308d3ULL, std::uint64_t(pos.halfmove_clock()));
  chess::Move unmade[kHistorySteps];
  int n_unmade = 0;
  for (int step = 0;; ++step) {
    const bool repeated = pos.repetition_count() > 1;
    encode_step(pos, us, step, repeated, out);
    hash = mix(hash, pos.key() + (repeated ? 1 : 0));
    if (step + 1 == kHistorySteps || pos.plies_played() == 0) break;
    unmade[n_unmade++] = pos.last_move();
    pos.unmake_move();
  }
  while (n_unmade > 0) pos.make_move(unmade[--n_unmade]);
  if (key) *key = hash;
  return out;
}

InputPlanes encode_copy(const chess::Position& pos, std::uint64_t* key) {
  chess::Position copy = pos;
  return encode(copy, key);
}

namespace {

inline void expand_plane(Bitboard m, float v, float* plane) {
  if (m == kAll) {
    for (int s = 0; s < 64; ++s) plane[s] = v;
  } else {
    for (int s = 0; s < 64; ++s) plane[s] = 0.0f;
    for (Bitboard b = m; b; b &= b - 1) plane[std::countr_zero(b)] = v;
  }
}

}  // namespace

int input_planes(const NetworkConfig& config) {
  return config.input_features ? kMaxInputPlanes : kInputPlanes;
}

void expand(const InputPlanes& in, float* out, int planes) {
  for (int p = 0; p < kInputPlanes; ++p) expand_plane(in.masks[p], in.values[p], out + p * 64);
  if (planes <= kInputPlanes) return;
  const FeaturePlanes f = chess_features(in);
  for (int p = 0; p < kFeaturePlanes; ++p)
    expand_plane(f.masks[p], f.values[p], out + (kInputPlanes + p) * 64);
}

}  // namespace chessrl::nn
