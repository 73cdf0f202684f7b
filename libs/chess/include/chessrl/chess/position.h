// Position: a chess position as bitboards plus a mailbox, with make/unmake and
// an incrementally updated Zobrist key. A Position owns its move history (the
// states needed to unmake moves and to detect repetitions). Not thread-safe:
// give each thread its own copy; copying is cheap for short histories.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chessrl/chess/bitboard.h"
#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"

namespace chessrl::chess {

inline constexpr std::string_view kStartFen =
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

// What make_move must remember to unmake a move, and the key for repetitions.
struct StateInfo {
  Key key = 0;
  Move move;                  // the move that led to this state (none at the root)
  Piece captured = kNoPiece;  // the piece that move captured
  std::uint8_t castling = kNoCastling;
  Square ep_square = kNoSquare;
  int halfmove_clock = 0;  // plies since the last capture or pawn move
};

class Position {
 public:
  // The start position.
  Position();

  // Parses a FEN. Accepts 4 to 6 fields (the move counters default to "0 1").
  // Rejects, naming the problem: malformed fields, a count of squares per rank
  // other than 8, kings missing or doubled, pawns on the first or last rank,
  // material no game can reach (more than 8 pawns, or more pieces beyond the
  // starting set than pawns missing to have promoted), castling rights without
  // the king and rook at home, an impossible en-passant square, and the side
  // not to move being in check. An en-passant square is kept only when the
  // side to move can legally capture there (as the key and fen() reflect), so
  // "e3" after 1.e4 becomes "-".
  static Result<Position> from_fen(std::string_view fen);
  // Move counters above 999999, the most from_fen reads, are written as 999999,
  // so the FEN of every position played from a parsed one parses too.
  std::string fen() const;

  // --- Board queries --------------------------------------------------------
  Color side_to_move() const { return side_; }
  Piece piece_on(Square s) const { return board_[s]; }
  bool empty(Square s) const { return board_[s] == kNoPiece; }
  Bitboard pieces() const { return by_color_[kWhite] | by_color_[kBlack]; }
  Bitboard pieces(Color c) const { return by_color_[c]; }
  Bitboard pieces(PieceType pt) const { return by_type_[pt]; }
  Bitboard pieces(PieceType a, PieceType b) const { return by_type_[a] | by_type_[b]; }
  Bitboard pieces(Color c, PieceType pt) const { return by_color_[c] & by_type_[pt]; }
  Bitboard pieces(Color c, PieceType a, PieceType b) const {
    return by_color_[c] & (by_type_[a] | by_type_[b]);
  }
  Square king_square(Color c) const { return lsb(pieces(c, kKing)); }

  std::uint8_t castling_rights() const { return st().castling; }
  bool can_castle(CastlingRights r) const { return st().castling & r; }
  Square ep_square() const { return st().ep_square; }
  int halfmove_clock() const { return st().halfmove_clock; }
  int fullmove_number() const { return 1 + (game_ply_ - (side_ == kBlack)) / 2; }
  // Plies from the start of the game (derived from the FEN's move number).
  int game_ply() const { return game_ply_; }
  Key key() const { return st().key; }

  // Pieces of either colour attacking s, with the given occupancy.
  Bitboard attackers_to(Square s, Bitboard occupied) const;
  Bitboard checkers() const { return attackers_to(king_square(side_), pieces()) & pieces(~side_); }
  bool in_check() const { return checkers() != 0; }
  // Whether the side to move's pawn on `from` may take en passant on `ep`
  // without exposing its king. Precondition: that pawn attacks ep and the
  // opposing pawn that just moved two squares stands behind ep.
  bool en_passant_is_legal(Square from, Square ep) const;

  // --- Moves ------------------------------------------------------------------
  // Precondition: m is legal here (from the move generator or parse_uci).
  void make_move(Move m);
  // Precondition: a move was made (plies_played() > 0).
  void unmake_move();
  // Moves made on this object since it was set up.
  int plies_played() const { return int(states_.size()) - 1; }
  Move last_move() const { return st().move; }
  Piece last_captured() const { return st().captured; }

  // How many times the current position has occurred (1 = only now), counting
  // same side to move, same pieces, castling rights and en-passant square, back
  // to the last capture or pawn move. Only positions this object has seen count.
  int repetition_count() const;

  // Recomputes the Zobrist key from scratch (checks the incremental update).
  Key compute_key() const;

 private:
  struct PrivateTag {};
  explicit Position(PrivateTag) {}
  const StateInfo& st() const { return states_.back(); }
  StateInfo& st() { return states_.back(); }
  void put_piece(Piece p, Square s);
  void remove_piece(Square s);
  void move_piece(Square from, Square to);
  void set_ep_if_legal(Square ep);
  void clear();

  Bitboard by_type_[6] = {};
  Bitboard by_color_[2] = {};
  Piece board_[64] = {};
  Color side_ = kWhite;
  int game_ply_ = 0;
  std::vector<StateInfo> states_;
};

// Zobrist keys (fixed seed, so keys are the same in every process).
namespace zobrist {
Key piece_square(Piece p, Square s);
Key castling(std::uint8_t rights);
Key ep_file(int file);
Key side();
}  // namespace zobrist

}  // namespace chessrl::chess
