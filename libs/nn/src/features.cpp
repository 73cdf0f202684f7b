// The chess feature planes of encoding.h, from the board in the 112 planes.
#include <array>

#include "chessrl/chess/bitboard.h"
#include "chessrl/nn/encoding.h"

namespace chessrl::nn {
namespace {

using chess::Bitboard;
using chess::Square;

constexpr Bitboard kAll = ~Bitboard{0};
constexpr int kMover = 0, kOpponent = 1;

// One side's attacks: every square at least once and at least twice, and
// those of its pawns, minor pieces and rooks apart (for "attacked by a piece
// of lower value").
struct SideAttacks {
  Bitboard once = 0, twice = 0;
  Bitboard pawns = 0, minors = 0, rooks = 0;
  void add(Bitboard a) {
    twice |= once & a;
    once |= a;
  }
};

// pieces[side][type], side 0 the mover. In the planes' frame the mover's pawns
// always move up the board (towards rank 8), as white's do.
using Pieces = std::array<std::array<Bitboard, 6>, 2>;

SideAttacks attacks_of(const Pieces& pieces, int side, Bitboard occupied) {
  SideAttacks a;
  const auto& own = pieces[size_t(side)];
  // Each pawn diagonal apart, so two pawns on one square count twice.
  const Bitboard pawns = own[chess::kPawn];
  const Bitboard left = side == kMover ? chess::shift<chess::kNorthWest>(pawns)
                                       : chess::shift<chess::kSouthWest>(pawns);
  const Bitboard right = side == kMover ? chess::shift<chess::kNorthEast>(pawns)
                                        : chess::shift<chess::kSouthEast>(pawns);
  a.add(left);
  a.add(right);
  a.pawns = left | right;
  for (int pt = chess::kKnight; pt <= chess::kKing; ++pt)
    for (Bitboard b = own[size_t(pt)]; b; b &= b - 1) {
      const Bitboard hit = chess::attacks(chess::PieceType(pt), chess::lsb(b), occupied);
      a.add(hit);
      if (pt == chess::kKnight || pt == chess::kBishop) a.minors |= hit;
      if (pt == chess::kRook) a.rooks |= hit;
    }
  return a;
}

// `side`'s pieces (not the king) that the other side attacks, either
// undefended or attacked by a piece worth less.
Bitboard en_prise(const Pieces& pieces, int side, const SideAttacks& own,
                  const SideAttacks& enemy) {
  const auto& p = pieces[size_t(side)];
  const Bitboard undefended = ~own.once;
  Bitboard out = p[chess::kPawn] & undefended;
  out |= (p[chess::kKnight] | p[chess::kBishop]) & (undefended | enemy.pawns);
  out |= p[chess::kRook] & (undefended | enemy.pawns | enemy.minors);
  out |= p[chess::kQueen] & (undefended | enemy.pawns | enemy.minors | enemy.rooks);
  return out & enemy.once;
}

// `side`'s pieces that stand alone between its king and an enemy slider.
Bitboard pinned(const Pieces& pieces, int side, Bitboard occupied) {
  const auto& own = pieces[size_t(side)];
  const auto& enemy = pieces[size_t(1 - side)];
  if (!own[chess::kKing]) return 0;
  const Square king = chess::lsb(own[chess::kKing]);
  Bitboard own_all = 0;
  for (Bitboard b : own) own_all |= b;
  Bitboard snipers =
      (chess::rook_attacks(king, 0) & (enemy[chess::kRook] | enemy[chess::kQueen])) |
      (chess::bishop_attacks(king, 0) & (enemy[chess::kBishop] | enemy[chess::kQueen]));
  Bitboard out = 0;
  for (; snipers; snipers &= snipers - 1) {
    const Bitboard blockers = chess::between(king, chess::lsb(snipers)) & occupied;
    if (blockers && !chess::more_than_one(blockers)) out |= blockers & own_all;
  }
  return out;
}

// The opponent's pieces attacking the mover's king.
Bitboard checkers(const Pieces& pieces, Bitboard occupied) {
  const Bitboard king_bb = pieces[kMover][chess::kKing];
  if (!king_bb) return 0;
  const Square king = chess::lsb(king_bb);
  const auto& them = pieces[kOpponent];
  // A mover's (white-like) pawn on the king's square would attack exactly the
  // squares from which the opponent's pawns attack the king.
  return (chess::pawn_attacks(chess::kWhite, king) & them[chess::kPawn]) |
         (chess::knight_attacks(king) & them[chess::kKnight]) |
         (chess::bishop_attacks(king, occupied) & (them[chess::kBishop] | them[chess::kQueen])) |
         (chess::rook_attacks(king, occupied) & (them[chess::kRook] | them[chess::kQueen]));
}

}  // namespace

FeaturePlanes chess_features(const InputPlanes& in) {
  FeaturePlanes f;
  f.masks.fill(0);
  f.values.fill(1.0f);
  Pieces pieces;
  Bitboard occupied = 0;
  for (int side = 0; side < 2; ++side)
    for (int pt = 0; pt < 6; ++pt) {
      pieces[size_t(side)][size_t(pt)] = in.masks[size_t(side * 6 + pt)];
      occupied |= pieces[size_t(side)][size_t(pt)];
    }
  const SideAttacks mover = attacks_of(pieces, kMover, occupied);
  const SideAttacks opponent = attacks_of(pieces, kOpponent, occupied);
  auto set = [&](int plane, Bitboard mask, float value = 1.0f) {
    f.masks[size_t(plane - kInputPlanes)] = mask;
    f.values[size_t(plane - kInputPlanes)] = value;
  };
  set(kAttacksPlane + 0, mover.once);
  set(kAttacksPlane + 1, mover.twice);
  set(kAttacksPlane + 2, opponent.once);
  set(kAttacksPlane + 3, opponent.twice);
  set(kEnPrisePlane + 0, en_prise(pieces, kMover, mover, opponent));
  set(kEnPrisePlane + 1, en_prise(pieces, kOpponent, opponent, mover));
  set(kCheckersPlane, checkers(pieces, occupied));
  set(kPinnedPlane + 0, pinned(pieces, kMover, occupied));
  set(kPinnedPlane + 1, pinned(pieces, kOpponent, occupied));
  // Counts scaled to about 1 at the start: 8 pawns, 2 of each minor and rook, 1 queen.
  constexpr float kCountScale[5] = {8, 2, 2, 2, 1};
  constexpr int kValue[5] = {1, 3, 3, 5, 9};
  int difference = 0;
  for (int side = 0; side < 2; ++side)
    for (int pt = chess::kPawn; pt <= chess::kQueen; ++pt) {
      const int n = chess::popcount(pieces[size_t(side)][size_t(pt)]);
      set(kPieceCountPlane + side * 5 + pt, n ? kAll : 0, float(n) / kCountScale[pt]);
      difference += (side == kMover ? n : -n) * kValue[pt];
    }
  set(kMaterialDifferencePlane, kAll, float(difference) / 10.0f);
  return f;
}

}  // namespace chessrl::nn
