#include "chessrl/chess/movegen.h"

#include <algorithm>

namespace chessrl::chess {

namespace {

// Sinks receive legal moves in batches. The generator is written once and
// instantiated for both: counting at perft leaves never materialises a move.
struct MoveCounter {
  int n = 0;
  void add(Square, Bitboard to) { n += popcount(to); }
  template <Direction D>
  void pawn_moves(Bitboard to) {
    n += popcount(to);
  }
  template <Direction D>
  void promotions(Bitboard to) {
    n += 4 * popcount(to);
  }
  void add_move(Move) { ++n; }
};

struct MoveCollector {
  MoveList& list;
  void add(Square from, Bitboard to) {
    while (to) list.push(Move(from, pop_lsb(to)));
  }
  template <Direction D>
  void pawn_moves(Bitboard to) {
    while (to) {
      Square t = pop_lsb(to);
      list.push(Move(Square(int(t) - int(D)), t));
    }
  }
  template <Direction D>
  void promotions(Bitboard to) {
    while (to) {
      Square t = pop_lsb(to);
      Square f = Square(int(t) - int(D));
      for (PieceType pt : {kQueen, kRook, kBishop, kKnight})
        list.push(Move(f, t, MoveKind::kPromotion, pt));
    }
  }
  void add_move(Move m) { list.push(m); }
};

// Whether `s` is attacked by colour Them, given occupancy `occ`.
template <Color Them>
inline bool attacked(const Position& pos, Square s, Bitboard occ) {
  return (pawn_attacks(~Them, s) & pos.pieces(Them, kPawn)) ||
         (knight_attacks(s) & pos.pieces(Them, kKnight)) ||
         (king_attacks(s) & pos.pieces(Them, kKing)) ||
         (bishop_attacks(s, occ) & pos.pieces(Them, kBishop, kQueen)) ||
         (rook_attacks(s, occ) & pos.pieces(Them, kRook, kQueen));
}

// Pawn moves of unpinned pawns, set-wise: one shift per direction.
template <Color Us, class Sink>
inline void pawn_moves(Bitboard pawns, Bitboard empty, Bitboard enemy, Bitboard checkmask,
                       Sink& sink) {
  constexpr Direction Up = Us == kWhite ? kNorth : kSouth;
  constexpr Direction UpLeft = Us == kWhite ? kNorthWest : kSouthEast;
  constexpr Direction UpRight = Us == kWhite ? kNorthEast : kSouthWest;
  constexpr Bitboard kRank3Rel = Us == kWhite ? kRank3 : kRank6;
  constexpr Bitboard kPromoRank = Us == kWhite ? kRank8 : kRank1;

  const Bitboard single = shift<Up>(pawns) & empty;
  const Bitboard dbl = shift<Up>(single & kRank3Rel) & empty & checkmask;
  const Bitboard push = single & checkmask;
  const Bitboard left = shift<UpLeft>(pawns) & enemy & checkmask;
  const Bitboard right = shift<UpRight>(pawns) & enemy & checkmask;

  sink.template pawn_moves<Up>(push & ~kPromoRank);
  sink.template pawn_moves<Direction(2 * Up)>(dbl);
  sink.template pawn_moves<UpLeft>(left & ~kPromoRank);
  sink.template pawn_moves<UpRight>(right & ~kPromoRank);
  if ((push | left | right) & kPromoRank) {
    sink.template promotions<Up>(push & kPromoRank);
    sink.template promotions<UpLeft>(left & kPromoRank);
    sink.template promotions<UpRight>(right & kPromoRank);
  }
}

template <Color Us, class Sink>
void generate(const Position& pos, Sink& sink) {
  constexpr Color Them = ~Us;
  const Bitboard own = pos.pieces(Us);
  const Bitboard enemy = pos.pieces(Them);
  const Bitboard occ = own | enemy;
  const Square ksq = pos.king_square(Us);

  // Enemy sliders that see the king through at most our own pieces: with no
  // piece between they give check; with exactly one of ours between, it is pinned.
  const Bitboard enemy_bq = pos.pieces(Them, kBishop, kQueen);
  const Bitboard enemy_rq = pos.pieces(Them, kRook, kQueen);
  Bitboard snipers =
      (bishop_attacks(ksq, enemy) & enemy_bq) | (rook_attacks(ksq, enemy) & enemy_rq);
  Bitboard checkers = (pawn_attacks(Us, ksq) & pos.pieces(Them, kPawn)) |
                      (knight_attacks(ksq) & pos.pieces(Them, kKnight));
  Bitboard pinned = 0;
  while (snipers) {
    const Square s = pop_lsb(snipers);
    const Bitboard blockers = between(ksq, s) & occ;
    if (!blockers)
      checkers |= square_bb(s);
    else if (!more_than_one(blockers))
      pinned |= blockers & own;
  }

  // King moves: each target tested with the king lifted off the board, so
  // it cannot hide from a slider behind itself.
  {
    Bitboard targets = king_attacks(ksq) & ~own;
    Bitboard legal = 0;
    const Bitboard occ_without_king = occ ^ square_bb(ksq);
    while (targets) {
      const Square t = pop_lsb(targets);
      if (!attacked<Them>(pos, t, occ_without_king)) legal |= square_bb(t);
    }
    sink.add(ksq, legal);
  }
  if (more_than_one(checkers)) return;  // double check: only the king moves

  const Bitboard checkmask = checkers ? between(ksq, lsb(checkers)) | checkers : ~Bitboard{0};
  const Bitboard targets = ~own & checkmask;

  // Pinned pieces can never answer a check, so in check only unpinned ones move.
  Bitboard knights = pos.pieces(Us, kKnight) & ~pinned;
  while (knights) {
    const Square s = pop_lsb(knights);
    sink.add(s, knight_attacks(s) & targets);
  }
  Bitboard diagonal = pos.pieces(Us, kBishop, kQueen) & ~(checkers ? pinned : 0);
  while (diagonal) {
    const Square s = pop_lsb(diagonal);
    Bitboard to = bishop_attacks(s, occ) & targets;
    if (pinned & square_bb(s)) to &= line(ksq, s);
    sink.add(s, to);
  }
  Bitboard straight = pos.pieces(Us, kRook, kQueen) & ~(checkers ? pinned : 0);
  while (straight) {
    const Square s = pop_lsb(straight);
    Bitboard to = rook_attacks(s, occ) & targets;
    if (pinned & square_bb(s)) to &= line(ksq, s);
    sink.add(s, to);
  }

  // Pawns: unpinned ones set-wise; pinned ones one by one along their pin line.
  const Bitboard pawns = pos.pieces(Us, kPawn);
  pawn_moves<Us>(pawns & ~pinned, ~occ, enemy, checkmask, sink);
  if (Bitboard pinned_pawns = pawns & pinned; pinned_pawns && !checkers) {
    while (pinned_pawns) {
      const Square s = pop_lsb(pinned_pawns);
      pawn_moves<Us>(square_bb(s), ~occ, enemy, line(ksq, s), sink);
    }
  }

  // En passant: Position keeps an ep square only when some capture there is
  // legal; each capturer is still tested exactly (two may attack the square,
  // and one of them may be pinned).
  if (const Square ep = pos.ep_square(); ep != kNoSquare) {
    Bitboard capturers = pawn_attacks(Them, ep) & pawns;
    while (capturers) {
      const Square from = pop_lsb(capturers);
      if (pos.en_passant_is_legal(from, ep)) sink.add_move(Move(from, ep, MoveKind::kEnPassant));
    }
  }

  // Castling: never out of check; the squares between king and rook empty and
  // the squares the king crosses not attacked.
  if (!checkers &&
      (pos.castling_rights() & (Us == kWhite ? kWhiteOO | kWhiteOOO : kBlackOO | kBlackOOO))) {
    constexpr CastlingRights kOO = Us == kWhite ? kWhiteOO : kBlackOO;
    constexpr CastlingRights kOOO = Us == kWhite ? kWhiteOOO : kBlackOOO;
    constexpr Square kE = relative_square(Us, kE1);
    if (pos.can_castle(kOO) &&
        !(occ & (square_bb(relative_square(Us, kF1)) | square_bb(relative_square(Us, kG1)))) &&
        !attacked<Them>(pos, relative_square(Us, kF1), occ) &&
        !attacked<Them>(pos, relative_square(Us, kG1), occ))
      sink.add_move(Move(kE, relative_square(Us, kG1), MoveKind::kCastling));
    if (pos.can_castle(kOOO) &&
        !(occ & (square_bb(relative_square(Us, kB1)) | square_bb(relative_square(Us, kC1)) |
                 square_bb(relative_square(Us, kD1)))) &&
        !attacked<Them>(pos, relative_square(Us, kD1), occ) &&
        !attacked<Them>(pos, relative_square(Us, kC1), occ))
      sink.add_move(Move(kE, relative_square(Us, kC1), MoveKind::kCastling));
  }
}

template <class Sink>
inline void generate_for_side(const Position& pos, Sink& sink) {
  if (pos.side_to_move() == kWhite)
    generate<kWhite>(pos, sink);
  else
    generate<kBlack>(pos, sink);
}

std::uint64_t perft_recursive(Position& pos, int depth) {
  if (depth == 1) return std::uint64_t(count_legal(pos));
  MoveList list;
  generate_legal(pos, list);
  std::uint64_t nodes = 0;
  for (Move m : list) {
    pos.make_move(m);
    nodes += perft_recursive(pos, depth - 1);
    pos.unmake_move();
  }
  return nodes;
}

}  // namespace

bool MoveList::contains(Move m) const { return std::find(begin(), end(), m) != end(); }

void generate_legal(const Position& pos, MoveList& list) {
  MoveCollector sink{list};
  generate_for_side(pos, sink);
}

MoveList legal_moves(const Position& pos) {
  MoveList list;
  generate_legal(pos, list);
  return list;
}

int count_legal(const Position& pos) {
  MoveCounter sink;
  generate_for_side(pos, sink);
  return sink.n;
}

bool is_legal(const Position& pos, Move m) { return legal_moves(pos).contains(m); }

std::uint64_t perft(Position& pos, int depth) {
  if (depth <= 0) return 1;
  return perft_recursive(pos, depth);
}

std::vector<PerftDivide> perft_divide(Position& pos, int depth,
                                      const std::function<void(const PerftDivide&)>& on_move) {
  std::vector<PerftDivide> result;
  for (Move m : legal_moves(pos)) {
    pos.make_move(m);
    result.push_back({m, perft(pos, depth - 1)});
    pos.unmake_move();
    if (on_move) on_move(result.back());
  }
  return result;
}

}  // namespace chessrl::chess
