#include "chessrl/chess/notation.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/rules.h"

namespace chessrl::chess {
namespace {

using testing::from_fen;

// SAN of the legal move written `uci` in `fen`.
std::string san(const std::string& fen, const std::string& uci) {
  Position pos = from_fen(fen);
  auto m = parse_uci(pos, uci);
  EXPECT_TRUE(m.ok()) << uci << ": " << (m.ok() ? "" : m.error());
  return m.ok() ? to_san(pos, *m) : "";
}

const char* const kKiwipete =
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";

// Positions full of castling, promotions, en passant and ambiguity.
const std::vector<std::string> kRoundTripFens = {
    std::string(kStartFen),
    kKiwipete,
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    "6k1/8/8/8/8/Q7/8/Q1Q4K w - - 0 1",
    "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
};

TEST(NotationSquare, NamesAndParsing) {
  EXPECT_EQ(square_name(kA1), "a1");
  EXPECT_EQ(square_name(kH8), "h8");
  EXPECT_EQ(parse_square("e4").value(), kE4);
  for (const char* bad : {"", "e", "e44", "i1", "a9", "E4", "4e"}) {
    auto r = parse_square(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("malformed square"), std::string::npos) << r.error();
  }
}

TEST(Uci, PrintsMovesAndNone) {
  EXPECT_EQ(to_uci(Move(kE2, kE4)), "e2e4");
  EXPECT_EQ(to_uci(Move(kE7, kE8, MoveKind::kPromotion, kQueen)), "e7e8q");
  EXPECT_EQ(to_uci(Move(kA2, kA1, MoveKind::kPromotion, kKnight)), "a2a1n");
  EXPECT_EQ(to_uci(Move(kE1, kG1, MoveKind::kCastling)), "e1g1");
  EXPECT_EQ(to_uci(Move::none()), "0000");
}

TEST(Uci, ParsesSpecialMoves) {
  Position kiwi = from_fen(kKiwipete);
  EXPECT_EQ(parse_uci(kiwi, "e1g1").value(), Move(kE1, kG1, MoveKind::kCastling));
  EXPECT_EQ(parse_uci(kiwi, "e1c1").value(), Move(kE1, kC1, MoveKind::kCastling));
  Position ep = from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3");
  EXPECT_EQ(parse_uci(ep, "e5d6").value(), Move(kE5, kD6, MoveKind::kEnPassant));
  Position promo = from_fen("8/P1k5/K7/8/8/8/8/8 w - - 0 1");
  EXPECT_EQ(parse_uci(promo, "a7a8r").value(), Move(kA7, kA8, MoveKind::kPromotion, kRook));
}

TEST(Uci, ErrorsNameTheProblem) {
  Position start;
  struct Case {
    const char* text;
    std::string keyword;
  } cases[] = {
      {"", "4 or 5 characters"},
      {"e2e", "4 or 5 characters"},
      {"e2e4qq", "4 or 5 characters"},
      {"e2e9", "malformed UCI move 'e2e9': squares must be"},
      {"E2E4", "squares must be"},
      {"e2e4k", "promotion piece must be one of n, b, r, q"},
      {"e2e4Q", "promotion piece must be one of n, b, r, q"},
      {"0000", "malformed UCI move '0000': the null move"},
      {"e3e4", "no piece of the side to move on e3"},
      {"e7e5", "no piece of the side to move on e7"},
      {"e2e5", "illegal move 'e2e5' in position " + std::string(kStartFen)},
      {"e1g1", "illegal move 'e1g1' in position"},
      {"e2e4q", "illegal move 'e2e4q': e2e4 is not a promotion"},
      {"g1e2q", "illegal move 'g1e2q' in position"},
  };
  for (const auto& c : cases) {
    auto r = parse_uci(start, c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.keyword), std::string::npos) << c.text << " -> " << r.error();
  }
  Position promo = from_fen("8/P1k5/K7/8/8/8/8/8 w - - 0 1");
  auto r = parse_uci(promo, "a7a8");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("move a7a8 needs a promotion piece"), std::string::npos) << r.error();
}

TEST(Uci, RoundTripsEveryLegalMove) {
  for (const auto& fen : kRoundTripFens) {
    Position pos = from_fen(fen);
    for (Move m : legal_moves(pos)) {
      auto parsed = parse_uci(pos, to_uci(m));
      ASSERT_TRUE(parsed.ok()) << fen << " " << to_uci(m) << ": " << parsed.error();
      EXPECT_EQ(*parsed, m) << fen << " " << to_uci(m);
    }
  }
}

TEST(San, Castling) {
  const char* both = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
  EXPECT_EQ(san(both, "e1g1"), "O-O");
  EXPECT_EQ(san(both, "e1c1"), "O-O-O");
  const char* black = "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1";
  EXPECT_EQ(san(black, "e8g8"), "O-O");
  EXPECT_EQ(san(black, "e8c8"), "O-O-O");
  // Castling that gives check: the rook lands on f1 facing the king on f8.
  EXPECT_EQ(san("5k2/8/8/8/8/8/8/4K2R w K - 0 1", "e1g1"), "O-O+");
}

TEST(San, PawnMovesCapturesAndEnPassant) {
  EXPECT_EQ(san(std::string(kStartFen), "e2e4"), "e4");
  EXPECT_EQ(san("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2", "e4d5"), "exd5");
  EXPECT_EQ(san("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3", "e5d6"), "exd6");
}

TEST(San, Promotions) {
  EXPECT_EQ(san("8/P1k5/K7/8/8/8/8/8 w - - 0 1", "a7a8q"), "a8=Q");
  EXPECT_EQ(san("8/P1k5/K7/8/8/8/8/8 w - - 0 1", "a7a8n"), "a8=N+");
  EXPECT_EQ(san("8/P1k5/K7/8/8/8/8/8 w - - 0 1", "a7a8r"), "a8=R");
  // Capture-promotion with check, for black.
  EXPECT_EQ(san("4k3/8/8/8/8/8/1p6/R3K3 b - - 0 1", "b2a1q"), "bxa1=Q+");
  EXPECT_EQ(san("4k3/8/8/8/8/8/1p6/R3K3 b - - 0 1", "b2a1b"), "bxa1=B");
}

TEST(San, Disambiguation) {
  // Knights on b1 and f3 both reach d2: the file decides.
  EXPECT_EQ(san("4k3/8/8/8/8/5N2/8/1N2K3 w - - 0 1", "b1d2"), "Nbd2");
  // Rooks on a1 and a5 share the file: the rank decides.
  EXPECT_EQ(san("4k3/8/8/R7/8/8/8/R3K3 w - - 0 1", "a1a3"), "R1a3");
  EXPECT_EQ(san("4k3/8/8/R7/8/8/8/R3K3 w - - 0 1", "a5a3"), "R5a3");
  // Queens on a1, c1 and a3 all reach b2: a1 shares a rank with c1 and a file with
  // a3, so it needs both; c1 needs its file, a3 its rank.
  const char* three = "6k1/8/8/8/8/Q7/8/Q1Q4K w - - 0 1";
  EXPECT_EQ(san(three, "a1b2"), "Qa1b2");
  EXPECT_EQ(san(three, "c1b2"), "Qcb2");
  EXPECT_EQ(san(three, "a3b2"), "Q3b2");
  EXPECT_EQ(san(three, "c1d2"), "Qd2") << "only one queen reaches d2";
  // A pinned knight does not count as a rival.
  EXPECT_EQ(san("4k3/4r3/8/8/8/2N5/4N3/4K3 w - - 0 1", "c3d5"), "Nd5");
}

TEST(San, DoubleDisambiguation) {
  // Queens on h4, h1 and e4 all reach e1: h4 shares its file with h1 and its rank
  // with e4, so only the full square names it.
  const char* fen = "2k5/8/K7/8/4Q2Q/8/8/7Q w - - 0 1";
  EXPECT_EQ(san(fen, "h4e1"), "Qh4e1");
  EXPECT_EQ(san(fen, "h1e1"), "Q1e1");
  EXPECT_EQ(san(fen, "e4e1"), "Qee1");
  Position pos = from_fen(fen);
  EXPECT_EQ(parse_san(pos, "Qh4e1").value(), Move(kH4, kE1));
  EXPECT_EQ(parse_san(pos, "Q1e1").value(), Move(kH1, kE1));
  EXPECT_EQ(parse_san(pos, "Qee1").value(), Move(kE4, kE1));
  // A file or rank alone that two queens share stays ambiguous.
  for (const char* text : {"Qe1", "Qhe1", "Q4e1"}) {
    auto r = parse_san(pos, text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().find("ambiguous SAN '" + std::string(text) + "': matches "),
              std::string::npos)
        << r.error();
  }
  auto r = parse_san(pos, "Qhe1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("Qh4e1"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("Q1e1"), std::string::npos) << r.error();
  EXPECT_EQ(r.error().find("Qee1"), std::string::npos) << r.error();
}

TEST(San, ChecksAndMates) {
  EXPECT_EQ(san("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4"), "Qh4#");
  EXPECT_EQ(san("4k3/8/8/8/8/8/8/4K2R w K - 0 1", "h1h8"), "Rh8+");
  EXPECT_EQ(san("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"), "Ra8#");
}

TEST(San, RoundTripsEveryLegalMove) {
  for (const auto& fen : kRoundTripFens) {
    Position pos = from_fen(fen);
    for (Move m : legal_moves(pos)) {
      const std::string text = to_san(pos, m);
      auto parsed = parse_san(pos, text);
      ASSERT_TRUE(parsed.ok()) << fen << " " << text << ": " << parsed.error();
      EXPECT_EQ(*parsed, m) << fen << " " << text;
    }
  }
}

TEST(San, AcceptsCommonVariants) {
  Position start;
  EXPECT_EQ(parse_san(start, "Nf3!?").value(), Move(kG1, kF3));
  EXPECT_EQ(parse_san(start, "e4!").value(), Move(kE2, kE4));
  EXPECT_EQ(parse_san(start, "Ngf3").value(), Move(kG1, kF3)) << "redundant disambiguation";
  EXPECT_EQ(parse_san(start, "Ng1f3").value(), Move(kG1, kF3));
  Position castle = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  EXPECT_EQ(parse_san(castle, "0-0").value(), Move(kE1, kG1, MoveKind::kCastling));
  EXPECT_EQ(parse_san(castle, "0-0-0+").value(), Move(kE1, kC1, MoveKind::kCastling));
  Position promo = from_fen("8/P1k5/K7/8/8/8/8/8 w - - 0 1");
  EXPECT_EQ(parse_san(promo, "a8Q").value(), Move(kA7, kA8, MoveKind::kPromotion, kQueen));
  EXPECT_EQ(parse_san(promo, "a8=N+").value(), Move(kA7, kA8, MoveKind::kPromotion, kKnight));
}

TEST(San, ParsesSpecialMovesBothWays) {
  Position ep = from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3");
  EXPECT_EQ(parse_san(ep, "exd6").value(), Move(kE5, kD6, MoveKind::kEnPassant));
  EXPECT_EQ(parse_san(ep, "ed6").value(), Move(kE5, kD6, MoveKind::kEnPassant));
  Position rooks = from_fen("4k3/8/8/R7/8/8/8/R3K3 w - - 0 1");
  EXPECT_EQ(parse_san(rooks, "R1a3").value(), Move(kA1, kA3));
  EXPECT_EQ(parse_san(rooks, "R5a3").value(), Move(kA5, kA3));
  EXPECT_EQ(parse_san(rooks, "Ra1a3").value(), Move(kA1, kA3));
  EXPECT_FALSE(parse_san(rooks, "Raa3").ok()) << "both rooks are on the a-file";
  Position black = from_fen("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1");
  EXPECT_EQ(parse_san(black, "O-O").value(), Move(kE8, kG8, MoveKind::kCastling));
  EXPECT_EQ(parse_san(black, "O-O-O").value(), Move(kE8, kC8, MoveKind::kCastling));
  EXPECT_EQ(parse_san(black, "0-0-0").value(), Move(kE8, kC8, MoveKind::kCastling));
  EXPECT_FALSE(parse_san(black, "Kg8").ok()) << "castling is written O-O, not as a king move";
  Position promo = from_fen("1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1");
  EXPECT_EQ(san("1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7b8q"), "axb8=Q+");
  EXPECT_EQ(parse_san(promo, "axb8=Q+").value(), Move(kA7, kB8, MoveKind::kPromotion, kQueen));
  EXPECT_EQ(parse_san(promo, "axb8N").value(), Move(kA7, kB8, MoveKind::kPromotion, kKnight));
  EXPECT_EQ(parse_san(promo, "a8=R").value(), Move(kA7, kA8, MoveKind::kPromotion, kRook));
}

TEST(San, SuffixesAndAnnotations) {
  Position start;
  for (const char* text :
       {"e4", "e4+", "e4#", "e4!", "e4?", "e4!!", "e4??", "e4!?", "e4?!", "e4+!", "e4#??"}) {
    auto r = parse_san(start, text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error();
    EXPECT_EQ(*r, Move(kE2, kE4)) << text;
  }
  for (const char* text : {"e4++", "e4!!!", "e4!+", "e4 ", " e4", "e4?!?", "+e4"}) {
    auto r = parse_san(start, text);
    EXPECT_FALSE(r.ok()) << text;
  }
}

TEST(San, ErrorsNameTheProblem) {
  Position knights = from_fen("4k3/8/8/8/8/5N2/8/1N2K3 w - - 0 1");
  auto ambiguous = parse_san(knights, "Nd2");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.error().find("ambiguous SAN 'Nd2': matches Nbd2, Nfd2"), std::string::npos)
      << ambiguous.error();
  Position start;
  struct Case {
    const char* text;
    const char* keyword;
  } cases[] = {
      {"", "malformed SAN"},     {"Nf9", "malformed SAN"}, {"Zf3", "malformed SAN"},
      {"Ke2", "illegal SAN"},    {"e5", "illegal SAN"},    {"O-O", "castling is not allowed"},
      {"Nf3e", "malformed SAN"}, {"Nxf3", "illegal SAN"},  {"exd3", "illegal SAN"},
      {"Qe8=Q", "only pawns"},   {"++", "malformed SAN"},
  };
  for (const auto& c : cases) {
    auto r = parse_san(start, c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.keyword), std::string::npos) << c.text << " -> " << r.error();
  }
  Position promo = from_fen("8/P1k5/K7/8/8/8/8/8 w - - 0 1");
  auto no_piece = parse_san(promo, "a8");
  ASSERT_FALSE(no_piece.ok());
  EXPECT_NE(no_piece.error().find("needs a promotion piece"), std::string::npos);
}

// Random bytes and random edits of valid moves: every parser answers with an
// error or a legal move, never a crash.
TEST(NotationFuzz, GarbageNeverCrashes) {
  std::mt19937 rng(7);
  const std::vector<std::string> seeds = {"e2e4",  "e7e8q", "Nf3",  "exd5", "O-O-O",
                                          "a8=Q+", "Qa4d1", "e1g1", "0000", "Nbd2"};
  const std::string alphabet = "abcdefgh12345678xX=+#!?-O0NBRQKPnbrqk :\t";
  std::vector<Position> positions;
  for (const auto& fen : kRoundTripFens) positions.push_back(from_fen(fen));
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    if (i % 2 == 0) {
      const int len = std::uniform_int_distribution<int>(0, 12)(rng);
      for (int k = 0; k < len; ++k)
        text += (i % 4 == 0) ? char(std::uniform_int_distribution<int>(0, 255)(rng))
                             : alphabet[rng() % alphabet.size()];
    } else {
      text = seeds[rng() % seeds.size()];
      const int edits = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int k = 0; k < edits; ++k) {
        const size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
        switch (rng() % 3) {
          case 0:
            text.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
          case 1:
            if (at < text.size()) text.erase(at, 1);
            break;
          default:
            if (at < text.size()) text[at] = alphabet[rng() % alphabet.size()];
        }
      }
    }
    const Position& pos = positions[rng() % positions.size()];
    for (auto result : {parse_uci(pos, text), parse_san(pos, text)}) {
      if (result.ok()) {
        ++accepted;
        EXPECT_TRUE(is_legal(pos, *result)) << text;
      } else {
        EXPECT_FALSE(result.error().empty());
      }
    }
    auto sq = parse_square(text);
    if (sq.ok()) {
      EXPECT_EQ(square_name(*sq), text);
    }
  }
  EXPECT_GT(accepted, 100) << "the mutations should hit some valid moves";
}

TEST(NotationFuzz, LongAndBinaryInputsAreErrors) {
  Position start;
  const std::string inputs[] = {
      std::string(100000, 'e'), "Nf3" + std::string(1000, '!'), std::string("e2\0e4", 5),
      std::string("e4\0", 3),   std::string("\0\0\0\0", 4),     std::string("\xff\xfe\x80\x01", 4),
      std::string(5, '\0'),
  };
  for (const std::string& text : inputs) {
    auto uci = parse_uci(start, text);
    auto san_move = parse_san(start, text);
    auto sq = parse_square(text);
    ASSERT_FALSE(uci.ok());
    ASSERT_FALSE(san_move.ok());
    ASSERT_FALSE(sq.ok());
    // Messages quote a bounded, printable excerpt of the input.
    for (const std::string* message : {&uci.error(), &san_move.error(), &sq.error()}) {
      EXPECT_LT(message->size(), 200u) << *message;
      for (char c : *message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << *message;
    }
  }
}

// Along seeded random games: every legal move's SAN is unique in its position,
// parses back to the move, and ends in '#' exactly when the move mates; every
// UCI string parses back too.
TEST(San, RoundTripsAlongRandomGames) {
  std::mt19937 rng(2024);
  int checked = 0, mates = 0, promotions = 0;
  for (int game = 0; game < 40; ++game) {
    Position pos;
    for (int ply = 0; ply < 300; ++ply) {
      const MoveList moves = legal_moves(pos);
      if (moves.empty()) break;
      std::set<std::string> seen;
      for (Move m : moves) {
        const std::string text = to_san(pos, m);
        EXPECT_TRUE(seen.insert(text).second) << pos.fen() << ": " << text << " twice";
        auto parsed = parse_san(pos, text);
        ASSERT_TRUE(parsed.ok()) << pos.fen() << " " << text << ": " << parsed.error();
        EXPECT_EQ(*parsed, m) << pos.fen() << " " << text;
        auto uci = parse_uci(pos, to_uci(m));
        ASSERT_TRUE(uci.ok()) << pos.fen() << " " << to_uci(m) << ": " << uci.error();
        EXPECT_EQ(*uci, m);
        Position after = pos;
        after.make_move(m);
        const bool mate = game_result(after).reason == Termination::kCheckmate;
        EXPECT_EQ(text.back() == '#', mate) << pos.fen() << " " << text;
        EXPECT_EQ(text.back() == '+', after.in_check() && !mate) << pos.fen() << " " << text;
        mates += mate;
        promotions += m.kind() == MoveKind::kPromotion;
        ++checked;
      }
      pos.make_move(moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)]);
    }
  }
  EXPECT_GT(checked, 100000);
  EXPECT_GT(mates, 0);
  EXPECT_GT(promotions, 0);
}

}  // namespace
}  // namespace chessrl::chess
