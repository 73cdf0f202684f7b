#include "chessrl/chess/position.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <sstream>

#include "chessrl/core/splitmix64.h"

namespace chessrl::chess {

namespace {

struct ZobristTables {
  Key psq[16][64] = {};
  Key castling[16] = {};
  Key ep_file[8] = {};
  Key side = 0;
};

ZobristTables make_zobrist() {
  ZobristTables z;
  SplitMix64 rng(0x2545F4914F6CDD1DULL);  // fixed seed: the same keys everywhere
  auto next = [&rng] { return rng.next(); };
  for (auto& row : z.psq)
    for (auto& k : row) k = next();
  // Castling keys are XORs of one key per right, so a lost right flips one key.
  Key right_keys[4] = {next(), next(), next(), next()};
  for (int r = 0; r < 16; ++r)
    for (int bit = 0; bit < 4; ++bit)
      if (r & (1 << bit)) z.castling[r] ^= right_keys[bit];
  for (auto& k : z.ep_file) k = next();
  z.side = next();
  return z;
}

const ZobristTables kZobrist = make_zobrist();

// Castling rights that survive a move touching each square.
constexpr std::array<std::uint8_t, 64> make_castling_mask() {
  std::array<std::uint8_t, 64> m{};
  for (auto& v : m) v = kAllCastling;
  m[kE1] = kAllCastling & ~(kWhiteOO | kWhiteOOO);
  m[kH1] = kAllCastling & ~kWhiteOO;
  m[kA1] = kAllCastling & ~kWhiteOOO;
  m[kE8] = kAllCastling & ~(kBlackOO | kBlackOOO);
  m[kH8] = kAllCastling & ~kBlackOO;
  m[kA8] = kAllCastling & ~kBlackOOO;
  return m;
}
constexpr std::array<std::uint8_t, 64> kCastlingMask = make_castling_mask();

constexpr std::string_view kPieceChars = "PNBRQK  pnbrqk";

std::string square_str(Square s) { return {char('a' + file_of(s)), char('1' + rank_of(s))}; }

// The largest move counter a FEN may give (six digits). fen() writes no more,
// so what it writes parses however long a game from such a FEN goes on.
constexpr int kMaxFenCounter = 999999;

// Parses a non-negative decimal integer field of a FEN, at most kMaxFenCounter.
bool parse_counter(std::string_view text, int& out) {
  if (text.empty() || text.size() > 6) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= 0;
}

}  // namespace

namespace zobrist {
Key piece_square(Piece p, Square s) { return kZobrist.psq[p][s]; }
Key castling(std::uint8_t rights) { return kZobrist.castling[rights & 15]; }
Key ep_file(int file) { return kZobrist.ep_file[file]; }
Key side() { return kZobrist.side; }
}  // namespace zobrist

Position::Position() {
  auto parsed = from_fen(kStartFen);
  assert(parsed.ok());
  *this = std::move(parsed).value();
}

void Position::clear() {
  for (auto& b : by_type_) b = 0;
  by_color_[kWhite] = by_color_[kBlack] = 0;
  for (auto& p : board_) p = kNoPiece;
  side_ = kWhite;
  game_ply_ = 0;
  states_.clear();
  states_.reserve(256);
  states_.emplace_back();
}

void Position::put_piece(Piece p, Square s) {
  board_[s] = p;
  by_type_[type_of(p)] |= square_bb(s);
  by_color_[color_of(p)] |= square_bb(s);
}

void Position::remove_piece(Square s) {
  Piece p = board_[s];
  by_type_[type_of(p)] ^= square_bb(s);
  by_color_[color_of(p)] ^= square_bb(s);
  board_[s] = kNoPiece;
}

void Position::move_piece(Square from, Square to) {
  Piece p = board_[from];
  Bitboard both = square_bb(from) | square_bb(to);
  by_type_[type_of(p)] ^= both;
  by_color_[color_of(p)] ^= both;
  board_[from] = kNoPiece;
  board_[to] = p;
}

// Records ep as the en-passant square only if the side to move can legally
// capture there: FIDE counts positions as equal when the same moves are
// possible, so keys (and repetitions) must not depend on a dead ep square.
void Position::set_ep_if_legal(Square ep) {
  Bitboard capturers = pawn_attacks(~side_, ep) & pieces(side_, kPawn);
  while (capturers) {
    if (en_passant_is_legal(pop_lsb(capturers), ep)) {
      st().ep_square = ep;
      st().key ^= kZobrist.ep_file[file_of(ep)];
      return;
    }
  }
}

bool Position::en_passant_is_legal(Square from, Square ep) const {
  const Color us = side_;
  const Square ksq = king_square(us);
  const Square captured = Square(us == kWhite ? ep - 8 : ep + 8);
  const Bitboard after = (pieces() ^ square_bb(from) ^ square_bb(captured)) | square_bb(ep);
  return !((bishop_attacks(ksq, after) & pieces(~us, kBishop, kQueen)) ||
           (rook_attacks(ksq, after) & pieces(~us, kRook, kQueen)) ||
           (knight_attacks(ksq) & pieces(~us, kKnight)) ||
           (pawn_attacks(us, ksq) & pieces(~us, kPawn) & ~square_bb(captured)));
}

Bitboard Position::attackers_to(Square s, Bitboard occupied) const {
  return (pawn_attacks(kBlack, s) & pieces(kWhite, kPawn)) |
         (pawn_attacks(kWhite, s) & pieces(kBlack, kPawn)) | (knight_attacks(s) & pieces(kKnight)) |
         (bishop_attacks(s, occupied) & pieces(kBishop, kQueen)) |
         (rook_attacks(s, occupied) & pieces(kRook, kQueen)) | (king_attacks(s) & pieces(kKing));
}

Key Position::compute_key() const {
  Key k = 0;
  for (int s = 0; s < 64; ++s)
    if (board_[s] != kNoPiece) k ^= kZobrist.psq[board_[s]][s];
  k ^= kZobrist.castling[st().castling];
  if (st().ep_square != kNoSquare) k ^= kZobrist.ep_file[file_of(st().ep_square)];
  if (side_ == kBlack) k ^= kZobrist.side;
  return k;
}

Result<Position> Position::from_fen(std::string_view fen) {
  std::vector<std::string_view> fields;
  for (size_t i = 0; i < fen.size();) {
    while (i < fen.size() && std::isspace(static_cast<unsigned char>(fen[i]))) ++i;
    size_t j = i;
    while (j < fen.size() && !std::isspace(static_cast<unsigned char>(fen[j]))) ++j;
    if (j > i) fields.push_back(fen.substr(i, j - i));
    i = j;
  }
  if (fields.size() < 4 || fields.size() > 6)
    return fail("FEN must have 4 to 6 space-separated fields, got " +
                std::to_string(fields.size()));

  Position pos(PrivateTag{});
  pos.clear();

  // 1. Piece placement, rank 8 first.
  int rank = 7, file = 0;
  for (char c : fields[0]) {
    if (c == '/') {
      if (file != 8)
        return fail("FEN rank " + std::to_string(rank + 1) + " has " + std::to_string(file) +
                    " squares, expected 8");
      if (--rank < 0) return fail("FEN board has more than 8 ranks");
      file = 0;
    } else if (c >= '1' && c <= '8') {
      file += c - '0';
      if (file > 8)
        return fail("FEN rank " + std::to_string(rank + 1) + " has more than 8 squares");
    } else {
      size_t idx = kPieceChars.find(c);
      if (idx == std::string_view::npos || c == ' ')
        return fail(std::string("FEN board has an invalid character '") + c + "'");
      if (file > 7)
        return fail("FEN rank " + std::to_string(rank + 1) + " has more than 8 squares");
      pos.put_piece(Piece(idx), make_square(file, rank));
      ++file;
    }
  }
  if (rank != 0) return fail("FEN board has " + std::to_string(8 - rank) + " ranks, expected 8");
  if (file != 8) return fail("FEN rank 1 has " + std::to_string(file) + " squares, expected 8");
  for (Color c : {kWhite, kBlack}) {
    int kings = popcount(pos.pieces(c, kKing));
    if (kings != 1)
      return fail(std::string("FEN has ") + std::to_string(kings) + " " +
                  (c == kWhite ? "white" : "black") + " kings, expected 1");
  }
  if (pos.pieces(kPawn) & (kRank1 | kRank8))
    return fail("FEN has a pawn on the first or last rank");
  // Material no game can reach: more than 8 pawns, or more pieces beyond the
  // starting set (queen, 2 rooks, 2 bishops, 2 knights) than pawns gone to
  // promote. Besides the rules, this bounds the legal moves of this position and
  // of every one played from it by MoveList::kCapacity.
  for (Color c : {kWhite, kBlack}) {
    const int pawns = popcount(pos.pieces(c, kPawn));
    int promoted = 0;
    for (const auto& [type, at_start] :
         {std::pair{kKnight, 2}, std::pair{kBishop, 2}, std::pair{kRook, 2}, std::pair{kQueen, 1}})
      promoted += std::max(0, popcount(pos.pieces(c, type)) - at_start);
    const char* side = c == kWhite ? "white" : "black";
    if (pawns > 8)
      return fail("FEN has " + std::to_string(pawns) + " " + side + " pawns, more than 8");
    if (promoted > 8 - pawns)
      return fail("FEN has " + std::to_string(promoted) + " " + side +
                  " pieces beyond the starting set but only " + std::to_string(8 - pawns) + " " +
                  side + " pawns missing to have promoted");
  }

  // 2. Side to move.
  if (fields[1] == "w")
    pos.side_ = kWhite;
  else if (fields[1] == "b")
    pos.side_ = kBlack;
  else
    return fail("FEN side to move must be 'w' or 'b', got '" + std::string(fields[1]) + "'");

  // 3. Castling rights, each backed by the king and rook on their home squares.
  std::uint8_t rights = kNoCastling;
  if (fields[2] != "-") {
    for (char c : fields[2]) {
      struct Spec {
        char ch;
        CastlingRights right;
        Piece king;
        Square ksq;
        Piece rook;
        Square rsq;
      };
      static constexpr Spec kSpecs[] = {{'K', kWhiteOO, kWhiteKing, kE1, kWhiteRook, kH1},
                                        {'Q', kWhiteOOO, kWhiteKing, kE1, kWhiteRook, kA1},
                                        {'k', kBlackOO, kBlackKing, kE8, kBlackRook, kH8},
                                        {'q', kBlackOOO, kBlackKing, kE8, kBlackRook, kA8}};
      const Spec* spec = nullptr;
      for (const auto& s : kSpecs)
        if (s.ch == c) spec = &s;
      if (!spec)
        return fail("FEN castling field '" + std::string(fields[2]) +
                    "' has an invalid character '" + c + "'");
      if (rights & spec->right) return fail(std::string("FEN castling field repeats '") + c + "'");
      if (pos.board_[spec->ksq] != spec->king || pos.board_[spec->rsq] != spec->rook)
        return fail(std::string("FEN castling right '") + c + "' needs the king on " +
                    square_str(spec->ksq) + " and a rook on " + square_str(spec->rsq));
      rights |= spec->right;
    }
  }
  pos.st().castling = rights;

  // 4. En passant.
  Square ep = kNoSquare;
  if (fields[3] != "-") {
    std::string_view f = fields[3];
    if (f.size() != 2 || f[0] < 'a' || f[0] > 'h' || f[1] < '1' || f[1] > '8')
      return fail("FEN en-passant field must be a square like 'e3' or '-', got '" + std::string(f) +
                  "'");
    ep = make_square(f[0] - 'a', f[1] - '1');
    Color us = pos.side_;
    int expected_rank = us == kWhite ? 5 : 2;
    Square pawn_sq = Square(us == kWhite ? ep - 8 : ep + 8);
    Square origin = Square(us == kWhite ? ep + 8 : ep - 8);
    if (rank_of(ep) != expected_rank)
      return fail("FEN en-passant square " + std::string(f) + " is not on rank " +
                  std::to_string(expected_rank + 1) + " for the side to move");
    if (pos.board_[pawn_sq] != make_piece(~us, kPawn) || !pos.empty(ep) || !pos.empty(origin))
      return fail("FEN en-passant square " + std::string(f) +
                  " does not follow a two-square pawn move");
  }

  // 5-6. Move counters.
  int halfmove = 0, fullmove = 1;
  if (fields.size() >= 5 && !parse_counter(fields[4], halfmove))
    return fail("FEN halfmove clock must be a non-negative integer, got '" +
                std::string(fields[4]) + "'");
  if (fields.size() == 6 && (!parse_counter(fields[5], fullmove) || fullmove < 1)) {
    if (fields[5] == "0")
      fullmove = 1;  // common in the wild; treated as move 1
    else
      return fail("FEN fullmove number must be a positive integer, got '" + std::string(fields[5]) +
                  "'");
  }
  pos.st().halfmove_clock = halfmove;
  pos.game_ply_ = 2 * (fullmove - 1) + (pos.side_ == kBlack);

  pos.st().key = 0;
  if (ep != kNoSquare) pos.set_ep_if_legal(ep);
  pos.st().key = pos.compute_key();

  // The side that just moved may not be in check.
  Square their_king = pos.king_square(~pos.side_);
  if (pos.attackers_to(their_king, pos.pieces()) & pos.pieces(pos.side_))
    return fail(std::string("FEN position is illegal: ") +
                (pos.side_ == kWhite ? "black" : "white") +
                " is in check but it is not their move");
  return pos;
}

std::string Position::fen() const {
  std::ostringstream out;
  for (int rank = 7; rank >= 0; --rank) {
    int empty_run = 0;
    for (int file = 0; file < 8; ++file) {
      Piece p = board_[make_square(file, rank)];
      if (p == kNoPiece) {
        ++empty_run;
        continue;
      }
      if (empty_run) out << empty_run;
      empty_run = 0;
      out << kPieceChars[p];
    }
    if (empty_run) out << empty_run;
    if (rank) out << '/';
  }
  out << (side_ == kWhite ? " w " : " b ");
  std::uint8_t cr = st().castling;
  if (!cr) out << '-';
  if (cr & kWhiteOO) out << 'K';
  if (cr & kWhiteOOO) out << 'Q';
  if (cr & kBlackOO) out << 'k';
  if (cr & kBlackOOO) out << 'q';
  out << ' ' << (st().ep_square == kNoSquare ? "-" : square_str(st().ep_square));
  out << ' ' << std::min(st().halfmove_clock, kMaxFenCounter) << ' '
      << std::min(fullmove_number(), kMaxFenCounter);
  return out.str();
}

void Position::make_move(Move m) {
  const StateInfo& prev = st();
  StateInfo next;
  next.key = prev.key ^ kZobrist.side;
  next.move = m;
  next.castling = prev.castling;
  next.halfmove_clock = prev.halfmove_clock + 1;
  if (prev.ep_square != kNoSquare) next.key ^= kZobrist.ep_file[file_of(prev.ep_square)];
  states_.push_back(next);
  StateInfo& s = st();

  const Color us = side_;
  const Square from = m.from(), to = m.to();
  const Piece piece = board_[from];

  if (m.kind() == MoveKind::kCastling) {
    const bool king_side = to > from;
    const Square rook_from = relative_square(us, king_side ? kH1 : kA1);
    const Square rook_to = relative_square(us, king_side ? kF1 : kD1);
    const Piece rook = board_[rook_from];
    move_piece(from, to);
    move_piece(rook_from, rook_to);
    s.key ^= kZobrist.psq[piece][from] ^ kZobrist.psq[piece][to] ^ kZobrist.psq[rook][rook_from] ^
             kZobrist.psq[rook][rook_to];
  } else {
    Square cap_sq = to;
    if (m.kind() == MoveKind::kEnPassant) cap_sq = Square(us == kWhite ? to - 8 : to + 8);
    const Piece captured = board_[cap_sq];
    if (captured != kNoPiece) {
      remove_piece(cap_sq);
      s.key ^= kZobrist.psq[captured][cap_sq];
      s.captured = captured;
      s.halfmove_clock = 0;
    }
    move_piece(from, to);
    s.key ^= kZobrist.psq[piece][from] ^ kZobrist.psq[piece][to];
    if (type_of(piece) == kPawn) {
      s.halfmove_clock = 0;
      if (m.kind() == MoveKind::kPromotion) {
        const Piece promoted = make_piece(us, m.promotion());
        remove_piece(to);
        put_piece(promoted, to);
        s.key ^= kZobrist.psq[piece][to] ^ kZobrist.psq[promoted][to];
      } else if ((int(to) ^ int(from)) == 16) {
        side_ = ~us;  // set_ep_if_legal looks from the opponent's side
        set_ep_if_legal(Square((from + to) / 2));
      }
    }
  }

  const std::uint8_t cr = s.castling & kCastlingMask[from] & kCastlingMask[to];
  if (cr != s.castling) {
    s.key ^= kZobrist.castling[s.castling] ^ kZobrist.castling[cr];
    s.castling = cr;
  }
  side_ = ~us;
  ++game_ply_;
}

void Position::unmake_move() {
  assert(states_.size() > 1);
  const StateInfo s = st();
  states_.pop_back();
  side_ = ~side_;
  --game_ply_;
  const Color us = side_;
  const Move m = s.move;
  const Square from = m.from(), to = m.to();

  if (m.kind() == MoveKind::kCastling) {
    const bool king_side = to > from;
    move_piece(to, from);
    move_piece(relative_square(us, king_side ? kF1 : kD1),
               relative_square(us, king_side ? kH1 : kA1));
    return;
  }
  if (m.kind() == MoveKind::kPromotion) {
    remove_piece(to);
    put_piece(make_piece(us, kPawn), to);
  }
  move_piece(to, from);
  if (s.captured != kNoPiece) {
    Square cap_sq = to;
    if (m.kind() == MoveKind::kEnPassant) cap_sq = Square(us == kWhite ? to - 8 : to + 8);
    put_piece(s.captured, cap_sq);
  }
}

int Position::repetition_count() const {
  const int n = int(states_.size());
  const int reach = std::min(st().halfmove_clock, n - 1);
  int count = 1;
  for (int back = 4; back <= reach; back += 2)
    if (states_[n - 1 - back].key == st().key) ++count;
  return count;
}

}  // namespace chessrl::chess
