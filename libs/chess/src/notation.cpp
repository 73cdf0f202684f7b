#include "chessrl/chess/notation.h"

#include <algorithm>

#include "chessrl/chess/movegen.h"

namespace chessrl::chess {

namespace {

constexpr std::string_view kPieceLetters = "PNBRQK";

bool is_file(char c) { return c >= 'a' && c <= 'h'; }
bool is_rank(char c) { return c >= '1' && c <= '8'; }

// Quotes text for an error message, shortened and with control bytes escaped,
// so garbage input cannot produce a garbage message.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < 24; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > 24) out += "...";
  return out + "'";
}

// '+' or '#' when the move gives check or mate.
std::string check_suffix(const Position& pos, Move m) {
  Position after = pos;
  after.make_move(m);
  if (!after.in_check()) return "";
  return count_legal(after) == 0 ? "#" : "+";
}

}  // namespace

std::string square_name(Square s) { return {char('a' + file_of(s)), char('1' + rank_of(s))}; }

Result<Square> parse_square(std::string_view text) {
  if (text.size() != 2 || !is_file(text[0]) || !is_rank(text[1]))
    return fail("malformed square " + quoted(text) + ": expected a file a-h and a rank 1-8");
  return make_square(text[0] - 'a', text[1] - '1');
}

std::string to_uci(Move m) {
  if (m.is_none()) return "0000";
  std::string s = square_name(m.from()) + square_name(m.to());
  if (m.kind() == MoveKind::kPromotion) s += "nbrq"[m.promotion() - kKnight];
  return s;
}

Result<Move> parse_uci(const Position& pos, std::string_view text) {
  auto malformed = [&](const char* why) {
    return fail("malformed UCI move " + quoted(text) + ": " + why);
  };
  if (text.size() < 4 || text.size() > 5)
    return malformed("expected 4 or 5 characters like e2e4 or e7e8q");
  if (text == "0000") return malformed("the null move 0000 is not a move on the board");
  auto from = parse_square(text.substr(0, 2));
  auto to = parse_square(text.substr(2, 2));
  if (!from || !to) return malformed("squares must be a file a-h followed by a rank 1-8");
  PieceType promotion = kNoPieceType;
  if (text.size() == 5) {
    const auto idx = std::string_view("nbrq").find(text[4]);
    if (idx == std::string_view::npos)
      return malformed("the promotion piece must be one of n, b, r, q");
    promotion = PieceType(kKnight + idx);
  }
  const Piece piece = pos.piece_on(*from);
  if (piece == kNoPiece || color_of(piece) != pos.side_to_move())
    return fail("illegal move " + quoted(text) + ": no piece of the side to move on " +
                square_name(*from));
  bool promotes = false, plain = false;
  for (Move m : legal_moves(pos)) {
    if (m.from() != *from || m.to() != *to) continue;
    if (m.kind() == MoveKind::kPromotion) {
      if (m.promotion() == promotion) return m;
      promotes = true;
    } else {
      if (promotion == kNoPieceType) return m;
      plain = true;
    }
  }
  const std::string squares = square_name(*from) + square_name(*to);
  if (promotes) return fail("move " + squares + " needs a promotion piece (one of n, b, r, q)");
  if (plain) return fail("illegal move " + quoted(text) + ": " + squares + " is not a promotion");
  return fail("illegal move " + quoted(text) + " in position " + pos.fen());
}

std::string to_san(const Position& pos, Move m) {
  if (m.kind() == MoveKind::kCastling)
    return (file_of(m.to()) > file_of(m.from()) ? "O-O" : "O-O-O") + check_suffix(pos, m);

  const Square from = m.from(), to = m.to();
  const PieceType pt = type_of(pos.piece_on(from));
  const bool capture = !pos.empty(to) || m.kind() == MoveKind::kEnPassant;
  std::string san;
  if (pt == kPawn) {
    if (capture) san += char('a' + file_of(from));
  } else {
    san += kPieceLetters[pt];
    // Disambiguate among other pieces of the same type that can reach `to`.
    bool others = false, same_file = false, same_rank = false;
    for (Move other : legal_moves(pos)) {
      if (other.to() != to || other.from() == from || type_of(pos.piece_on(other.from())) != pt)
        continue;
      others = true;
      same_file |= file_of(other.from()) == file_of(from);
      same_rank |= rank_of(other.from()) == rank_of(from);
    }
    if (others) {
      if (!same_file)
        san += char('a' + file_of(from));
      else if (!same_rank)
        san += char('1' + rank_of(from));
      else
        san += square_name(from);
    }
  }
  if (capture) san += 'x';
  san += square_name(to);
  if (m.kind() == MoveKind::kPromotion) {
    san += '=';
    san += kPieceLetters[m.promotion()];
  }
  return san + check_suffix(pos, m);
}

Result<Move> parse_san(const Position& pos, std::string_view text) {
  auto malformed = [&](const char* why) {
    return fail("malformed SAN " + quoted(text) + ": " + why);
  };
  if (text.empty() || text.size() > 16)
    return malformed("expected a move like Nf3, exd5, O-O, e8=Q");
  std::string_view s = text;
  // An annotation ("!", "?", "!!", "??", "!?", "?!") and then a check or mate mark
  // may follow the move; neither is checked against it.
  for (std::string_view note : {"!!", "??", "!?", "?!", "!", "?"}) {
    if (s.ends_with(note)) {
      s.remove_suffix(note.size());
      break;
    }
  }
  if (!s.empty() && (s.back() == '+' || s.back() == '#')) s.remove_suffix(1);

  const MoveList legal = legal_moves(pos);
  if (s == "O-O" || s == "0-0" || s == "O-O-O" || s == "0-0-0") {
    const bool king_side = s.size() == 3;
    for (Move m : legal)
      if (m.kind() == MoveKind::kCastling && (file_of(m.to()) > file_of(m.from())) == king_side)
        return m;
    return fail("illegal SAN " + quoted(text) + ": castling is not allowed in position " +
                pos.fen());
  }

  // Piece letter, optional origin file/rank, optional 'x', destination, optional promotion.
  PieceType piece = kPawn;
  if (!s.empty() && kPieceLetters.find(s.front()) != std::string_view::npos && s.front() != 'P') {
    piece = PieceType(kPieceLetters.find(s.front()));
    s.remove_prefix(1);
  }
  PieceType promotion = kNoPieceType;
  if (s.size() >= 2 && std::string_view("NBRQ").find(s.back()) != std::string_view::npos) {
    promotion = PieceType(kPieceLetters.find(s.back()));
    s.remove_suffix(1);
    if (!s.empty() && s.back() == '=') s.remove_suffix(1);
    if (piece != kPawn) return malformed("only pawns promote");
  }
  if (s.size() < 2 || !is_file(s[s.size() - 2]) || !is_rank(s.back()))
    return malformed("expected a destination square like e4");
  const Square to = make_square(s[s.size() - 2] - 'a', s.back() - '1');
  s.remove_suffix(2);
  // An 'x' must be a capture; a capture without one is accepted.
  bool says_capture = false;
  if (!s.empty() && (s.back() == 'x' || s.back() == ':')) {
    says_capture = true;
    s.remove_suffix(1);
  }
  int from_file = -1, from_rank = -1;
  if (!s.empty() && is_file(s.front())) {
    from_file = s.front() - 'a';
    s.remove_prefix(1);
  }
  if (!s.empty() && is_rank(s.front())) {
    from_rank = s.front() - '1';
    s.remove_prefix(1);
  }
  if (!s.empty()) return malformed("unexpected characters");
  // A pawn move without an origin file is a push: captures must name the file.
  if (piece == kPawn && from_file < 0) from_file = file_of(to);

  std::vector<Move> matches;
  bool needs_promotion = false;
  for (Move m : legal) {
    if (m.to() != to || type_of(pos.piece_on(m.from())) != piece) continue;
    if (m.kind() == MoveKind::kCastling) continue;
    if (says_capture && pos.empty(m.to()) && m.kind() != MoveKind::kEnPassant) continue;
    if (from_file >= 0 && file_of(m.from()) != from_file) continue;
    if (from_rank >= 0 && rank_of(m.from()) != from_rank) continue;
    if (m.kind() == MoveKind::kPromotion) {
      if (promotion == kNoPieceType) needs_promotion = true;
      if (m.promotion() != promotion) continue;
    } else if (promotion != kNoPieceType) {
      continue;
    }
    matches.push_back(m);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    if (needs_promotion)
      return fail("illegal SAN " + quoted(text) +
                  ": a pawn reaching the last rank needs a promotion piece");
    return fail("illegal SAN " + quoted(text) + " in position " + pos.fen());
  }
  std::string names;
  for (Move m : matches) names += (names.empty() ? "" : ", ") + to_san(pos, m);
  return fail("ambiguous SAN " + quoted(text) + ": matches " + names);
}

}  // namespace chessrl::chess
