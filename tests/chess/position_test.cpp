// Position: FEN parsing and printing (round trips, defaults, every error path),
// make/unmake over random play, Zobrist keys, and a seeded FEN fuzz test.
#include "chessrl/chess/position.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "perft_data.h"

namespace chessrl::chess {
namespace {

using testing::from_fen;
using testing::play;

std::vector<std::string> sample_fens() {
  std::vector<std::string> fens;
  for (const auto& c : testing::perft_cases()) fens.push_back(c.fen);
  const char* more[] = {
      "8/8/8/8/8/8/8/K6k w - - 0 1",
      "8/8/8/8/8/8/8/K6k b - - 99 500",
      "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
      "r3k3/8/8/8/8/8/8/4K3 b q - 12 40",
      "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 17",
      // En-passant squares a pawn of the side to move can use are kept.
      "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
      "rnbqkbnr/pppp1ppp/8/8/P2Pp3/8/1PP1PPPP/RNBQKBNR b KQkq d3 0 3",
      "4k3/8/8/8/6pP/8/8/4K3 b - h3 0 40",
      "4k3/8/8/pP6/8/8/8/4K3 w - a6 0 40",
      // Side to move in check (legal), promoted pieces, a crowded board.
      "QQQQQQQQ/8/8/8/8/8/8/K6k b - - 0 1",
      "4k3/8/8/8/8/8/8/4K2r w - - 5 60",
      "1nbqkbn1/rppppppr/p6p/8/8/P6P/RPPPPPPR/1NBQKBN1 w - - 4 5",
      "8/1P6/8/8/8/8/6p1/K6k w - - 0 70",
  };
  for (const char* f : more) fens.push_back(f);
  return fens;
}

// --- FEN round trips and defaults ---------------------------------------------------

TEST(PositionFen, RoundTripsExactly) {
  for (const std::string& fen : sample_fens()) {
    auto parsed = Position::from_fen(fen);
    ASSERT_TRUE(parsed.ok()) << fen << ": " << parsed.error();
    EXPECT_EQ(parsed->fen(), fen);
    EXPECT_EQ(parsed->key(), parsed->compute_key()) << fen;
    EXPECT_EQ(from_fen(parsed->fen()).key(), parsed->key()) << fen;
  }
}

TEST(PositionFen, DefaultConstructorIsTheStartPosition) {
  Position pos;
  EXPECT_EQ(pos.fen(), kStartFen);
  EXPECT_EQ(pos.side_to_move(), kWhite);
  EXPECT_EQ(pos.castling_rights(), kAllCastling);
  EXPECT_EQ(pos.ep_square(), kNoSquare);
  EXPECT_EQ(pos.halfmove_clock(), 0);
  EXPECT_EQ(pos.fullmove_number(), 1);
  EXPECT_EQ(pos.game_ply(), 0);
  EXPECT_EQ(pos.plies_played(), 0);
  EXPECT_EQ(pos.piece_on(kE1), kWhiteKing);
  EXPECT_EQ(pos.piece_on(kD8), kBlackQueen);
  EXPECT_TRUE(pos.empty(kE4));
  EXPECT_EQ(popcount(pos.pieces()), 32);
  EXPECT_EQ(pos.pieces(kWhite, kPawn), kRank2);
  EXPECT_EQ(pos.king_square(kBlack), kE8);
  EXPECT_FALSE(pos.in_check());
}

TEST(PositionFen, MissingMoveCountersDefaultToZeroAndOne) {
  Position pos = from_fen("8/8/8/8/8/8/8/K6k w - -");
  EXPECT_EQ(pos.halfmove_clock(), 0);
  EXPECT_EQ(pos.fullmove_number(), 1);
  EXPECT_EQ(pos.fen(), "8/8/8/8/8/8/8/K6k w - - 0 1");

  pos = from_fen("8/8/8/8/8/8/8/K6k b - - 7");
  EXPECT_EQ(pos.halfmove_clock(), 7);
  EXPECT_EQ(pos.fullmove_number(), 1);
  EXPECT_EQ(pos.game_ply(), 1);
  EXPECT_EQ(pos.fen(), "8/8/8/8/8/8/8/K6k b - - 7 1");

  // A fullmove number of 0, common in the wild, reads as 1.
  EXPECT_EQ(from_fen("8/8/8/8/8/8/8/K6k w - - 0 0").fen(), "8/8/8/8/8/8/8/K6k w - - 0 1");
}

TEST(PositionFen, MoveNumberGivesGamePly) {
  EXPECT_EQ(from_fen("8/8/8/8/8/8/8/K6k w - - 0 10").game_ply(), 18);
  EXPECT_EQ(from_fen("8/8/8/8/8/8/8/K6k b - - 0 10").game_ply(), 19);
  Position pos = from_fen("4k3/8/8/8/8/8/8/R3K3 b - - 0 10");
  ASSERT_TRUE(play(pos, "e8d8"));
  EXPECT_EQ(pos.fullmove_number(), 11);
  EXPECT_EQ(pos.game_ply(), 20);
}

TEST(PositionFen, ExtraWhitespaceIsAccepted) {
  EXPECT_EQ(from_fen("  8/8/8/8/8/8/8/K6k   w\t-  -  3 9 \n").fen(), "8/8/8/8/8/8/8/K6k w - - 3 9");
}

TEST(PositionFen, UnusableEnPassantSquareIsDropped) {
  // After 1.e4 no black pawn can take on e3: the FEN and key show no square.
  Position pos;
  ASSERT_TRUE(play(pos, "e2e4"));
  EXPECT_EQ(pos.ep_square(), kNoSquare);
  EXPECT_EQ(pos.fen(), "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1");

  Position parsed = from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1");
  EXPECT_EQ(parsed.ep_square(), kNoSquare);
  EXPECT_EQ(parsed.fen(), pos.fen());
  EXPECT_EQ(parsed.key(), pos.key());

  // A black pawn beside the target square, not beside the pawn, cannot use it either.
  EXPECT_EQ(from_fen("4k3/8/8/8/4P3/3p4/8/4K3 b - e3 0 1").ep_square(), kNoSquare);
}

TEST(PositionFen, UsableEnPassantSquareIsKept) {
  Position pos;
  ASSERT_TRUE(play(pos, "e2e4 a7a6 e4e5 d7d5"));
  EXPECT_EQ(pos.ep_square(), kD6);
  EXPECT_EQ(pos.fen(), "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3");
  EXPECT_EQ(from_fen(pos.fen()).key(), pos.key());
  // Any move clears it.
  ASSERT_TRUE(play(pos, "g1f3"));
  EXPECT_EQ(pos.ep_square(), kNoSquare);
}

TEST(PositionFen, EnPassantSquareIsDroppedWhenTheOnlyCaptureIsIllegal) {
  // exd6 would expose the white king on a5 to the rook on h5 along the fifth rank.
  Position pinned = from_fen("4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 1");
  EXPECT_EQ(pinned.ep_square(), kNoSquare);
  EXPECT_EQ(pinned.key(), from_fen("4k3/8/8/K2pP2r/8/8/8/8 w - - 0 1").key());
  // The same pair of pawns without the rook: the capture is legal, so the square stays.
  EXPECT_EQ(from_fen("4k3/8/8/K2pP3/8/8/8/8 w - d6 0 1").ep_square(), kD6);
  // Reached by play: ...d7d5 beside the pinned pawn leaves no en-passant square.
  Position played = from_fen("4k3/3p4/8/K3P2r/8/8/8/8 b - - 0 1");
  ASSERT_TRUE(play(played, "d7d5"));
  EXPECT_EQ(played.ep_square(), kNoSquare);
  EXPECT_EQ(played.fen(), "4k3/8/8/K2pP2r/8/8/8/8 w - - 0 2");
}

// --- FEN errors ---------------------------------------------------------------------

struct BadFen {
  const char* fen;
  const char* keyword;  // the error message must contain this
};

TEST(PositionFen, EveryErrorIsReportedWithItsCause) {
  const BadFen cases[] = {
      // Field count.
      {"", "fields"},
      {"   ", "fields"},
      {"8/8/8/8/8/8/8/K6k w -", "fields"},
      {"8/8/8/8/8/8/8/K6k w - - 0 1 extra", "fields"},
      // Board shape.
      {"8/8/8/8/8/8/8/K6k1 w - - 0 1", "rank"},  // a digit takes rank 1 past 8 squares
      {"8/8/8/8/8/8/8/K6kk w - - 0 1", "rank"},  // a piece does
      {"8/8/8/8/8/8/8/K5k w - - 0 1", "rank"},   // rank 1 too short
      {"7/8/8/8/8/8/8/K6k w - - 0 1", "rank"},   // rank 8 too short
      {"9/8/8/8/8/8/8/K6k w - - 0 1", "character"},
      {"8/8/8/8/8/8/8/8/K6k w - - 0 1", "ranks"},
      {"8/8/8/8/8/8/K6k w - - 0 1", "ranks"},
      {"8/8/8/8/8/8/8/K6k/ w - - 0 1", "ranks"},
      {"8/8/8/8/8/8/8/K6x w - - 0 1", "invalid character"},
      {"8/8/8/8/8/8/8/K60k w - - 0 1", "invalid character"},
      // Kings and pawns.
      {"8/8/8/8/8/8/8/7k w - - 0 1", "kings"},
      {"8/8/8/8/8/8/8/K7 w - - 0 1", "kings"},
      {"k7/8/8/8/8/8/8/K6k w - - 0 1", "kings"},
      {"8/8/8/8/8/8/8/KK5k w - - 0 1", "kings"},
      {"8/8/8/8/8/8/8/KP5k w - - 0 1", "pawn"},
      {"p7/8/8/8/8/8/8/K6k w - - 0 1", "pawn"},
      // Side to move.
      {"8/8/8/8/8/8/8/K6k x - - 0 1", "side to move"},
      {"8/8/8/8/8/8/8/K6k W - - 0 1", "side to move"},
      {"8/8/8/8/8/8/8/K6k wb - - 0 1", "side to move"},
      // Castling.
      {"r3k2r/8/8/8/8/8/8/R3K2R w KQkX - 0 1", "castling"},
      {"r3k2r/8/8/8/8/8/8/R3K2R w KK - 0 1", "castling"},
      {"r3k2r/8/8/8/8/8/8/R3K2R w K- - 0 1", "castling"},
      {"r3k2r/8/8/8/8/8/8/R3K1R1 w K - 0 1", "castling"},  // no rook on h1
      {"r3k2r/8/8/8/8/8/8/R2K3R w Q - 0 1", "castling"},   // king not on e1
      {"1r2k2r/8/8/8/8/8/8/R3K2R w q - 0 1", "castling"},  // no rook on a8
      {"r4k1r/8/8/8/8/8/8/R3K2R w k - 0 1", "castling"},   // king not on e8
      // En passant.
      {"4k3/8/8/3pP3/8/8/8/4K3 w - d9 0 1", "en-passant"},
      {"4k3/8/8/3pP3/8/8/8/4K3 w - i6 0 1", "en-passant"},
      {"4k3/8/8/3pP3/8/8/8/4K3 w - d 0 1", "en-passant"},
      {"4k3/8/8/3pP3/8/8/8/4K3 w - d6d 0 1", "en-passant"},
      {"4k3/8/8/3pP3/8/8/8/4K3 w - D6 0 1", "en-passant"},
      {"4k3/8/8/3pP3/8/8/8/4K3 w - d3 0 1", "en-passant"},    // wrong rank for white
      {"4k3/8/8/8/3Pp3/8/8/4K3 b - d6 0 1", "en-passant"},    // wrong rank for black
      {"4k3/8/8/4P3/8/8/8/4K3 w - d6 0 1", "en-passant"},     // no pawn that just moved
      {"4k3/8/8/3PP3/8/8/8/4K3 w - d6 0 1", "en-passant"},    // own pawn there
      {"4k3/8/3n4/3pP3/8/8/8/4K3 w - d6 0 1", "en-passant"},  // square occupied
      {"4k3/3n4/8/3pP3/8/8/8/4K3 w - d6 0 1", "en-passant"},  // origin occupied
      // The side that just moved left its king in check.
      {"8/8/8/8/8/8/8/K5Rk w - - 0 1", "in check"},
      {"8/8/8/8/8/8/8/K5rk b - - 0 1", "in check"},
      {"8/8/8/8/8/8/8/Kk6 w - - 0 1", "in check"},
      {"4k3/3P4/8/8/8/8/8/4K3 w - - 0 1", "in check"},
      // Move counters.
      {"8/8/8/8/8/8/8/K6k w - - -1 1", "halfmove"},
      {"8/8/8/8/8/8/8/K6k w - - x 1", "halfmove"},
      {"8/8/8/8/8/8/8/K6k w - - 1.5 1", "halfmove"},
      {"8/8/8/8/8/8/8/K6k w - - +3 1", "halfmove"},
      {"8/8/8/8/8/8/8/K6k w - - 12345678 1", "halfmove"},
      {"8/8/8/8/8/8/8/K6k w - - 0 -1", "fullmove"},
      {"8/8/8/8/8/8/8/K6k w - - 0 x", "fullmove"},
      {"8/8/8/8/8/8/8/K6k w - - 0 1e3", "fullmove"},
      {"8/8/8/8/8/8/8/K6k w - - 0 99999999", "fullmove"},
  };
  for (const auto& c : cases) {
    auto parsed = Position::from_fen(c.fen);
    ASSERT_FALSE(parsed.ok()) << "accepted: " << c.fen;
    EXPECT_NE(parsed.error().find(c.keyword), std::string::npos)
        << "'" << c.fen << "' gave '" << parsed.error() << "', expected it to mention '"
        << c.keyword << "'";
  }
}

// --- Make and unmake ------------------------------------------------------------------

TEST(PositionMakeMove, SpecialMovesAndUnmake) {
  // Castling moves the rook; unmake puts both back.
  Position pos = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  const std::string before = pos.fen();
  ASSERT_TRUE(play(pos, "e1g1"));
  EXPECT_EQ(pos.piece_on(kG1), kWhiteKing);
  EXPECT_EQ(pos.piece_on(kF1), kWhiteRook);
  EXPECT_TRUE(pos.empty(kH1));
  EXPECT_EQ(pos.castling_rights(), kBlackOO | kBlackOOO);
  ASSERT_TRUE(play(pos, "e8c8"));
  EXPECT_EQ(pos.piece_on(kC8), kBlackKing);
  EXPECT_EQ(pos.piece_on(kD8), kBlackRook);
  EXPECT_EQ(pos.castling_rights(), kNoCastling);
  EXPECT_EQ(pos.fen(), "2kr3r/8/8/8/8/8/8/R4RK1 w - - 2 2");
  pos.unmake_move();
  pos.unmake_move();
  EXPECT_EQ(pos.fen(), before);

  // En passant removes the pawn behind the target square.
  pos = from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3");
  ASSERT_TRUE(play(pos, "e5d6"));
  EXPECT_TRUE(pos.empty(kD5));
  EXPECT_EQ(pos.piece_on(kD6), kWhitePawn);
  EXPECT_EQ(pos.last_captured(), kBlackPawn);
  pos.unmake_move();
  EXPECT_EQ(pos.piece_on(kD5), kBlackPawn);
  EXPECT_EQ(pos.fen(), "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3");

  // Promotion with capture of a rook takes away that side's castling right.
  pos = from_fen("r3k2r/1P6/8/8/8/8/8/4K3 w kq - 0 1");
  ASSERT_TRUE(play(pos, "b7a8n"));
  EXPECT_EQ(pos.piece_on(kA8), kWhiteKnight);
  EXPECT_EQ(pos.castling_rights(), kBlackOO);
  EXPECT_EQ(pos.halfmove_clock(), 0);
  EXPECT_EQ(pos.key(), pos.compute_key());
  pos.unmake_move();
  EXPECT_EQ(pos.fen(), "r3k2r/1P6/8/8/8/8/8/4K3 w kq - 0 1");
}

// Random legal games from several start positions: after every move the
// incremental key equals the recomputed one and the FEN parses back to the same
// key; unmaking every move retraces each FEN and key back to the start.
TEST(PositionMakeMove, RandomPlayRestoresFenAndKey) {
  std::mt19937 rng(20240607);
  const std::vector<std::string> starts = sample_fens();
  for (int game = 0; game < 2000; ++game) {
    Position pos = from_fen(starts[std::size_t(game) % starts.size()]);
    const std::string root_fen = pos.fen();
    const Key root_key = pos.key();
    std::vector<std::string> fens;
    std::vector<Key> keys;
    for (int ply = 0; ply < 120; ++ply) {
      const MoveList moves = legal_moves(pos);
      if (moves.empty()) break;
      fens.push_back(pos.fen());
      keys.push_back(pos.key());
      const Move m = moves[int(rng() % std::uint32_t(moves.size()))];
      pos.make_move(m);
      ASSERT_EQ(pos.key(), pos.compute_key()) << fens.back() << " " << to_uci(m);
      ASSERT_EQ(pos.last_move(), m);
      auto reparsed = Position::from_fen(pos.fen());
      ASSERT_TRUE(reparsed.ok()) << pos.fen() << ": " << reparsed.error();
      ASSERT_EQ(reparsed->key(), pos.key()) << fens.back() << " " << to_uci(m);
    }
    ASSERT_EQ(pos.plies_played(), int(fens.size()));
    while (pos.plies_played() > 0) {
      pos.unmake_move();
      ASSERT_EQ(pos.fen(), fens.back());
      ASSERT_EQ(pos.key(), keys.back());
      fens.pop_back();
      keys.pop_back();
    }
    ASSERT_EQ(pos.fen(), root_fen);
    ASSERT_EQ(pos.key(), root_key);
  }
}

// --- Zobrist keys ---------------------------------------------------------------------

TEST(PositionZobrist, TranspositionsReachEqualKeys) {
  Position a, b;
  ASSERT_TRUE(play(a, "g1f3 g8f6 b1c3"));
  ASSERT_TRUE(play(b, "b1c3 g8f6 g1f3"));
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.fen(), b.fen());

  // A position reached by play has the key of its FEN.
  Position c;
  ASSERT_TRUE(play(c, "e2e4 e7e5"));
  EXPECT_EQ(c.key(),
            from_fen("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").key());
}

TEST(PositionZobrist, StateDifferencesGiveDifferentKeys) {
  const Key white = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").key();
  const Key black = from_fen("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1").key();
  EXPECT_NE(white, black);
  EXPECT_EQ(white ^ black, zobrist::side());

  std::set<Key> by_rights;
  for (const char* rights : {"KQkq", "KQk", "KQq", "Kkq", "Qkq", "KQ", "kq", "K", "q", "-"})
    by_rights.insert(from_fen(std::string("r3k2r/8/8/8/8/8/8/R3K2R w ") + rights + " - 0 1").key());
  EXPECT_EQ(by_rights.size(), 10u);

  // A usable en-passant square changes the key.
  EXPECT_NE(from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3").key(),
            from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq - 0 3").key());
  // Move counters do not.
  EXPECT_EQ(from_fen("8/8/8/8/8/8/8/K6k w - - 0 1").key(),
            from_fen("8/8/8/8/8/8/8/K6k w - - 37 90").key());
}

TEST(PositionZobrist, KeysAreDistinct) {
  std::set<Key> keys;
  for (Color c : {kWhite, kBlack})
    for (PieceType pt : {kPawn, kKnight, kBishop, kRook, kQueen, kKing})
      for (int s = 0; s < 64; ++s) keys.insert(zobrist::piece_square(make_piece(c, pt), Square(s)));
  for (int f = 0; f < 8; ++f) keys.insert(zobrist::ep_file(f));
  keys.insert(zobrist::side());
  EXPECT_EQ(keys.size(), 12u * 64u + 8u + 1u);
  EXPECT_EQ(keys.count(0), 0u);
  std::set<Key> rights;
  for (int r = 0; r < 16; ++r) rights.insert(zobrist::castling(std::uint8_t(r)));
  EXPECT_EQ(rights.size(), 16u);
}

TEST(PositionZobrist, KingMovingOutAndBackChangesTheKey) {
  Position pos = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  const Key before = pos.key();
  ASSERT_TRUE(play(pos, "e1f1 e8f8 f1e1 f8e8"));
  EXPECT_NE(pos.key(), before);
  EXPECT_EQ(pos.key(), from_fen("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1").key());
}

// --- FEN fuzzing ------------------------------------------------------------------------

// An accepted FEN must describe a position whose own FEN parses back to itself,
// whose key is consistent, and on which every legal move makes and unmakes cleanly.
void check_fen_input(const std::string& input, int& accepted) {
  auto parsed = Position::from_fen(input);
  if (!parsed.ok()) {
    ASSERT_FALSE(parsed.error().empty()) << input;
    return;
  }
  ++accepted;
  Position& pos = *parsed;
  const std::string fen = pos.fen();
  auto again = Position::from_fen(fen);
  ASSERT_TRUE(again.ok()) << "input '" << input << "' printed as '" << fen
                          << "' which fails: " << again.error();
  ASSERT_EQ(again->fen(), fen) << input;
  ASSERT_EQ(again->key(), pos.key()) << input;
  ASSERT_EQ(pos.key(), pos.compute_key()) << input;
  const MoveList moves = legal_moves(pos);
  ASSERT_EQ(count_legal(pos), moves.size()) << fen;
  for (Move m : moves) {
    pos.make_move(m);
    ASSERT_EQ(pos.key(), pos.compute_key()) << fen << " " << to_uci(m);
    pos.unmake_move();
    ASSERT_EQ(pos.fen(), fen) << to_uci(m);
  }
}

TEST(FenFuzz, RandomGarbageNeverCrashes) {
  std::mt19937 rng(777);
  const std::string_view alphabet = "pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh09x\t.";
  int accepted = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string s;
    const int len = int(rng() % 90);
    for (int j = 0; j < len; ++j) {
      if (rng() % 16 == 0)
        s += char(rng() % 256);  // any byte, NUL included
      else
        s += alphabet[rng() % alphabet.size()];
    }
    ASSERT_NO_FATAL_FAILURE(check_fen_input(s, accepted));
  }
}

TEST(FenFuzz, MutatedValidFensNeverCrash) {
  std::mt19937 rng(4242);
  const std::vector<std::string> bases = sample_fens();
  const std::string_view alphabet = "pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh09";
  auto pick = [&] { return alphabet[rng() % alphabet.size()]; };
  int accepted = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string s = bases[rng() % bases.size()];
    const int mutations = 1 + int(rng() % 3);
    for (int k = 0; k < mutations; ++k) {
      const std::size_t at = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 6) {
        case 0:
          if (!s.empty()) s[at] = pick();
          break;
        case 1:
          if (!s.empty()) s.erase(at, 1);
          break;
        case 2:
          s.insert(s.begin() + std::ptrdiff_t(at), pick());
          break;
        case 3:
          if (!s.empty()) std::swap(s[at], s[rng() % s.size()]);
          break;
        case 4:
          s = s.substr(0, at);
          break;
        default:
          s.insert(at, s.substr(at, rng() % 6));
          break;
      }
    }
    ASSERT_NO_FATAL_FAILURE(check_fen_input(s, accepted));
  }
  // Many single-character changes keep a FEN valid; the check must not be vacuous.
  EXPECT_GT(accepted, 1000);
}

}  // namespace
}  // namespace chessrl::chess
