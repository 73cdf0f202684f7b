// Game-end rules: checkmate, stalemate, insufficient material, the fifty-move
// rule and threefold repetition, played out with make_move where possible.
#include "chessrl/chess/rules.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>

#include "chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"

namespace chessrl::chess {
namespace {

using testing::from_fen;
using testing::play;

GameResult result_of(std::string_view fen) { return game_result(from_fen(fen)); }

constexpr GameResult kOngoing{};
constexpr GameResult kWhiteMates{Outcome::kWhiteWins, Termination::kCheckmate};
constexpr GameResult kBlackMates{Outcome::kBlackWins, Termination::kCheckmate};
constexpr GameResult kStalemate{Outcome::kDraw, Termination::kStalemate};
constexpr GameResult kDeadDraw{Outcome::kDraw, Termination::kInsufficientMaterial};
constexpr GameResult kFiftyMoves{Outcome::kDraw, Termination::kFiftyMoveRule};
constexpr GameResult kThreefold{Outcome::kDraw, Termination::kThreefoldRepetition};

// --- GameResult formatting --------------------------------------------------

TEST(RulesResult, PgnResultAndToString) {
  EXPECT_FALSE(kOngoing.is_over());
  EXPECT_EQ(kOngoing.pgn_result(), "*");
  EXPECT_EQ(kOngoing.to_string(), "*");
  EXPECT_TRUE(kWhiteMates.is_over());
  EXPECT_EQ(kWhiteMates.pgn_result(), "1-0");
  EXPECT_EQ(kWhiteMates.to_string(), "1-0 (checkmate)");
  EXPECT_EQ(kBlackMates.pgn_result(), "0-1");
  EXPECT_EQ(kBlackMates.to_string(), "0-1 (checkmate)");
  EXPECT_EQ(kThreefold.pgn_result(), "1/2-1/2");
  EXPECT_EQ(kThreefold.to_string(), "1/2-1/2 (threefold repetition)");
  EXPECT_EQ((GameResult{Outcome::kBlackWins, Termination::kResignation}).to_string(),
            "0-1 (resignation)");
  EXPECT_EQ((GameResult{Outcome::kDraw, Termination::kNone}).to_string(), "1/2-1/2");
  EXPECT_NE(kWhiteMates, kBlackMates);
  EXPECT_EQ(kStalemate, (GameResult{Outcome::kDraw, Termination::kStalemate}));
}

TEST(RulesResult, TerminationNames) {
  EXPECT_STREQ(termination_name(Termination::kNone), "none");
  EXPECT_STREQ(termination_name(Termination::kCheckmate), "checkmate");
  EXPECT_STREQ(termination_name(Termination::kStalemate), "stalemate");
  EXPECT_STREQ(termination_name(Termination::kFiftyMoveRule), "fifty-move rule");
  EXPECT_STREQ(termination_name(Termination::kThreefoldRepetition), "threefold repetition");
  EXPECT_STREQ(termination_name(Termination::kInsufficientMaterial), "insufficient material");
  EXPECT_STREQ(termination_name(Termination::kResignation), "resignation");
  EXPECT_STREQ(termination_name(Termination::kAdjudication), "adjudication");
  EXPECT_STREQ(termination_name(Termination::kMoveLimit), "move limit");
}

// --- Checkmate and stalemate ------------------------------------------------

TEST(RulesCheckmate, StartPositionIsOngoing) { EXPECT_EQ(game_result(Position()), kOngoing); }

TEST(RulesCheckmate, FoolsMateBlackWins) {
  Position pos;
  ASSERT_TRUE(play(pos, "f2f3 e7e5 g2g4"));
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "d8h4"));
  EXPECT_EQ(game_result(pos), kBlackMates);
  EXPECT_EQ(game_result(pos).to_string(), "0-1 (checkmate)");
}

TEST(RulesCheckmate, ScholarsMateWhiteWins) {
  Position pos;
  ASSERT_TRUE(play(pos, "e2e4 e7e5 f1c4 b8c6 d1h5 g8f6"));
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "h5f7"));
  EXPECT_EQ(game_result(pos), kWhiteMates);
}

TEST(RulesCheckmate, MatesFromFen) {
  EXPECT_EQ(result_of("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"), kWhiteMates);  // back rank
  EXPECT_EQ(result_of("6rk/5Npp/8/8/8/8/8/6K1 b - - 0 1"), kWhiteMates);   // smothered
  EXPECT_EQ(result_of("8/8/8/8/8/5k2/8/5K1r w - - 0 1"), kBlackMates);     // Kf3 covers e2-g2
  EXPECT_EQ(result_of("8/8/8/8/8/6k1/8/r4K2 w - - 0 1"), kOngoing);        // Ke2
  EXPECT_EQ(result_of("k7/1Q6/1K6/8/8/8/8/8 b - - 0 1"), kWhiteMates);     // protected queen
  // Check that can be answered is not mate: by capture, block or king move.
  EXPECT_EQ(result_of("k7/1Q6/8/8/8/8/8/7K b - - 0 1"), kOngoing);        // Kxb7
  EXPECT_EQ(result_of("R5k1/5ppp/8/8/8/8/2r5/6K1 b - - 0 1"), kOngoing);  // Rc8 blocks
  EXPECT_EQ(result_of("R5k1/5pp1/8/8/8/8/8/6K1 b - - 0 1"), kOngoing);    // Kh7
}

TEST(RulesStalemate, EitherSideStalemated) {
  EXPECT_EQ(result_of("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), kStalemate);
  EXPECT_EQ(result_of("8/8/8/8/8/5k2/5p2/5K2 w - - 0 1"), kStalemate);
  // The same placements with the other side to move are ordinary positions.
  EXPECT_EQ(result_of("7k/5Q2/6K1/8/8/8/8/8 w - - 0 1"), kOngoing);
  EXPECT_EQ(result_of("8/8/8/8/8/5k2/5p2/5K2 b - - 0 1"), kOngoing);
  // A pinned piece cannot move: still stalemate.
  EXPECT_EQ(result_of("k7/1n1N4/1P6/8/4B3/8/8/7K b - - 0 1"), kStalemate);
}

TEST(RulesStalemate, StalemateIsReportedBeforeOtherDraws) {
  // K+B v K, stalemated: the reason is stalemate, not dead material.
  EXPECT_EQ(result_of("k7/8/1K6/4B3/8/8/8/8 b - - 0 1"), kStalemate);
  // Stalemate with the fifty-move count reached.
  EXPECT_EQ(result_of("7k/5Q2/6K1/8/8/8/8/8 b - - 120 90"), kStalemate);
}

// --- Insufficient material ---------------------------------------------------

TEST(RulesInsufficientMaterial, DeadPositions) {
  const char* dead[] = {
      "8/8/8/4k3/8/8/8/4K3 w - - 0 1",               // K v K
      "8/8/8/4k3/8/8/8/4KN2 w - - 0 1",              // K+N v K
      "8/8/8/4k3/8/8/8/4KB2 b - - 0 1",              // K+B v K
      "8/8/2n5/4k3/8/8/8/4K3 w - - 0 1",             // K v K+N
      "8/8/2b5/4k3/8/8/8/4K3 w - - 0 1",             // K v K+B
      "5b2/8/8/4k3/8/8/8/2B1K3 w - - 0 1",           // K+B v K+B, both bishops on dark squares
      "2b5/8/8/4k3/8/8/8/4KB2 w - - 0 1",            // both on light squares
      "8/8/8/4k3/8/4B3/8/2B1K3 w - - 0 1",           // two white bishops on dark squares
      "1b1b3b/2b5/4k3/8/8/4B3/7B/B1B2K2 w - - 0 1",  // many bishops, all on dark squares
  };
  for (const char* fen : dead) {
    Position pos = from_fen(fen);
    EXPECT_TRUE(insufficient_material(pos)) << fen;
    EXPECT_EQ(game_result(pos), kDeadDraw) << fen;
  }
}

TEST(RulesInsufficientMaterial, MateStillPossible) {
  const char* alive[] = {
      "8/8/8/4k3/8/8/8/3NKN2 w - - 0 1",    // K+N+N v K: mate exists (with help)
      "8/8/2n5/4k3/8/8/8/4KN2 w - - 0 1",   // K+N v K+N
      "8/8/2b5/4k3/8/8/8/4KN2 w - - 0 1",   // K+N v K+B
      "2b5/8/8/4k3/8/8/8/2B1K3 w - - 0 1",  // K+B v K+B on opposite colours
      "8/8/8/4k3/8/8/8/2B1KB2 w - - 0 1",   // K+B+B, opposite colours
      "8/8/8/4k3/8/4B3/8/3NK3 w - - 0 1",   // K+B+N v K
      "8/8/8/4k3/8/8/P7/4K3 w - - 0 1",     // a white pawn
      "8/p7/8/4k3/8/8/8/4K3 w - - 0 1",     // a black pawn
      "8/p7/8/4k3/8/8/8/4KB2 w - - 0 1",    // K+B v K+P
      "8/8/8/4k3/8/8/8/4KR2 w - - 0 1",     // a rook
      "8/8/8/4k3/8/8/8/4K2q w - - 0 1",     // a queen
  };
  for (const char* fen : alive) {
    Position pos = from_fen(fen);
    EXPECT_FALSE(insufficient_material(pos)) << fen;
    EXPECT_EQ(game_result(pos), kOngoing) << fen;
  }
}

TEST(RulesInsufficientMaterial, ReachedByCapture) {
  // Black captures the last white piece: K+N v K remains.
  Position pos = from_fen("8/8/8/3nk3/8/8/8/1R2K3 b - - 0 1");
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "d5c3 e1d2 c3b1"));
  EXPECT_EQ(game_result(pos), kDeadDraw);
}

// --- Fifty-move rule ------------------------------------------------------------

TEST(RulesFiftyMove, QuietMoveOnThe100thPlyDraws) {
  Position pos = from_fen("8/8/8/4k3/8/8/3R4/4K3 w - - 99 80");
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "d2a2"));
  EXPECT_EQ(pos.halfmove_clock(), 100);
  EXPECT_EQ(game_result(pos), kFiftyMoves);
  EXPECT_EQ(game_result(pos).to_string(), "1/2-1/2 (fifty-move rule)");
  EXPECT_EQ(result_of("8/8/8/4k3/8/8/3R4/4K3 b - - 100 80"), kFiftyMoves);
  EXPECT_EQ(result_of("8/8/8/4k3/8/8/3R4/4K3 b - - 150 80"), kFiftyMoves);
}

TEST(RulesFiftyMove, PawnMoveOrCaptureResetsTheClock) {
  Position pos = from_fen("8/8/8/4k3/8/8/P2R4/4K3 w - - 99 80");
  ASSERT_TRUE(play(pos, "a2a3"));
  EXPECT_EQ(pos.halfmove_clock(), 0);
  EXPECT_EQ(game_result(pos), kOngoing);

  pos = from_fen("8/8/8/4k3/8/8/n2R4/4K3 w - - 99 80");
  ASSERT_TRUE(play(pos, "d2a2"));
  EXPECT_EQ(pos.halfmove_clock(), 0);
  EXPECT_EQ(game_result(pos), kOngoing);
}

TEST(RulesFiftyMove, CheckmateOnThe100thPlyWins) {
  Position pos = from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80");
  ASSERT_TRUE(play(pos, "a1a8"));
  EXPECT_EQ(pos.halfmove_clock(), 100);
  EXPECT_EQ(game_result(pos), kWhiteMates);
}

TEST(RulesFiftyMove, CountsUpOneByOneFromTheStart) {
  // Quiet knight and king moves take the clock from 90 to 100, one ply at a time.
  Position pos = from_fen("n6k/8/8/8/8/8/8/N6K w - - 90 1");
  ASSERT_TRUE(play(pos, "a1b3 a8b6 b3c5 b6c4 c5d3 c4d6 d3e5 d6e4 h1g1"));
  EXPECT_EQ(pos.halfmove_clock(), 99);
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "h8g8"));
  EXPECT_EQ(game_result(pos), kFiftyMoves);
}

// --- Threefold repetition -------------------------------------------------------

TEST(RulesRepetition, KnightShufflesFromTheStart) {
  Position pos;
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8"));
  EXPECT_EQ(pos.repetition_count(), 2);
  EXPECT_EQ(game_result(pos), kOngoing);  // the second occurrence is not a draw
  ASSERT_TRUE(play(pos, "g1f3"));
  EXPECT_EQ(pos.repetition_count(), 2);
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "g8f6 f3g1 f6g8"));
  EXPECT_EQ(pos.repetition_count(), 3);
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, ThirdOccurrenceNeedNotBeConsecutive) {
  // The start position recurs via different knights and in between other moves.
  Position pos;
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8"));
  ASSERT_TRUE(play(pos, "b1c3 b8c6 c3b1 c6b8"));
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, SamePlacementWithOtherSideToMoveIsDifferent) {
  // The white king triangulates so that the start placement recurs with black to move.
  Position pos = from_fen("4k3/8/8/8/8/8/8/R3K3 w - - 0 1");
  ASSERT_TRUE(play(pos, "e1d1 e8d8 d1d2 d8e8 d2e1"));
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(pos.repetition_count(), 2);
}

TEST(RulesRepetition, LostCastlingRightsMakeANewPosition) {
  Position pos = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  // Kings step out and back: same placement, but all castling rights are gone.
  ASSERT_TRUE(play(pos, "e1f1 e8f8 f1e1 f8e8"));
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "e1f1 e8f8 f1e1 f8e8"));
  EXPECT_EQ(pos.repetition_count(), 2);
  EXPECT_EQ(game_result(pos), kOngoing);
  ASSERT_TRUE(play(pos, "e1f1 e8f8 f1e1 f8e8"));
  EXPECT_EQ(pos.repetition_count(), 3);
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, OneRookMoveLosesOneRight) {
  Position pos = from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  ASSERT_TRUE(play(pos, "h1h2 h8h7 h2h1 h7h8"));
  EXPECT_EQ(pos.castling_rights(), kWhiteOOO | kBlackOOO);
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "a1a2 a8a7 a2a1 a7a8"));
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "a1a2 a8a7 a2a1 a7a8 a1a2 a8a7 a2a1 a7a8"));
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, AvailableEnPassantCaptureMakesANewPosition) {
  // After e2e4 black may capture d4xe3: that position cannot recur later.
  Position pos = from_fen("4k3/8/8/8/3p4/8/4P3/4K3 w - - 0 1");
  ASSERT_TRUE(play(pos, "e2e4"));
  EXPECT_EQ(pos.ep_square(), kE3);
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(pos.ep_square(), kNoSquare);
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(pos.repetition_count(), 2);
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, EnPassantSquareNobodyCanUseDoesNotCount) {
  // No black pawn can capture on e3, so the position after e2e4 already counts.
  Position pos = from_fen("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
  ASSERT_TRUE(play(pos, "e2e4"));
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(pos.repetition_count(), 2);
  ASSERT_TRUE(play(pos, "e8d8 e1d1 d8e8 d1e1"));
  EXPECT_EQ(game_result(pos), kThreefold);
}

TEST(RulesRepetition, IrreversibleMoveStartsTheCountAfresh) {
  Position pos;
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8"));
  EXPECT_EQ(pos.repetition_count(), 2);
  ASSERT_TRUE(play(pos, "e2e4 e7e5"));
  EXPECT_EQ(pos.repetition_count(), 1);
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8"));
  EXPECT_EQ(pos.repetition_count(), 2);  // not 3: the start position does not count
  EXPECT_EQ(game_result(pos), kOngoing);
  // A capture, then the kings shuffle: positions before the capture are gone.
  pos = from_fen("4k3/8/8/3n4/8/8/8/3RK3 w - - 0 1");
  ASSERT_TRUE(play(pos, "e1e2 e8e7 e2e1 e7e8"));
  EXPECT_EQ(pos.repetition_count(), 2);
  ASSERT_TRUE(play(pos, "d1d5 e8e7 d5d1 e7e8 e1e2 e8e7 e2e1 e7e8"));
  EXPECT_EQ(pos.repetition_count(), 2);
  EXPECT_EQ(game_result(pos), kOngoing);
}

TEST(RulesRepetition, UnmakeRestoresTheCount) {
  Position pos;
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8"));
  EXPECT_EQ(game_result(pos), kThreefold);
  pos.unmake_move();
  EXPECT_EQ(game_result(pos), kOngoing);
  pos.unmake_move();
  pos.unmake_move();
  pos.unmake_move();
  EXPECT_EQ(pos.repetition_count(), 2);
}

// --- Random games -----------------------------------------------------------------

// Plays seeded random games until the rules end them, checking at every ply that
// the verdict agrees with the position, and that every game does end.
TEST(RulesRandomGames, VerdictAgreesWithThePosition) {
  std::mt19937 rng(12345);
  std::map<Termination, int> seen;
  for (int game = 0; game < 300; ++game) {
    Position pos;
    GameResult result;
    for (int ply = 0; ply < 2000 && !(result = game_result(pos)).is_over(); ++ply) {
      const MoveList moves = legal_moves(pos);
      ASSERT_FALSE(moves.empty()) << pos.fen();
      pos.make_move(moves[int(rng() % std::uint32_t(moves.size()))]);
    }
    ASSERT_TRUE(result.is_over()) << "game " << game << " did not end: " << pos.fen();
    ++seen[result.reason];
    const int legal = count_legal(pos);
    switch (result.reason) {
      case Termination::kCheckmate:
        EXPECT_EQ(legal, 0);
        EXPECT_TRUE(pos.in_check());
        EXPECT_EQ(result.outcome,
                  pos.side_to_move() == kWhite ? Outcome::kBlackWins : Outcome::kWhiteWins);
        break;
      case Termination::kStalemate:
        EXPECT_EQ(legal, 0);
        EXPECT_FALSE(pos.in_check());
        break;
      case Termination::kInsufficientMaterial:
        EXPECT_GT(legal, 0);
        EXPECT_EQ(pos.pieces(kPawn) | pos.pieces(kRook, kQueen), 0u) << pos.fen();
        break;
      case Termination::kFiftyMoveRule:
        EXPECT_GT(legal, 0);
        EXPECT_EQ(pos.halfmove_clock(), 100);
        break;
      case Termination::kThreefoldRepetition:
        EXPECT_GT(legal, 0);
        EXPECT_EQ(pos.repetition_count(), 3);
        break;
      default:
        ADD_FAILURE() << "unexpected reason " << result.to_string();
    }
    if (result.reason != Termination::kCheckmate) {
      EXPECT_EQ(result.outcome, Outcome::kDraw);
    }
  }
  EXPECT_GT(seen[Termination::kCheckmate], 0);
  EXPECT_GT(seen[Termination::kInsufficientMaterial], 0);
  EXPECT_GT(seen[Termination::kFiftyMoveRule] + seen[Termination::kThreefoldRepetition], 0);
}

TEST(RulesMaterial, BalanceAndMoveLimitAdjudication) {
  // White: K Q R P P; Black: K N B P -> (9 + 5 + 2) - (3 + 3 + 1) = 9.
  const auto ahead = Position::from_fen("4k3/3nb1p1/8/8/8/8/PP6/QR2K3 w - - 0 1").value();
  EXPECT_EQ(material_balance(ahead), 9);
  EXPECT_EQ(material_balance(Position::from_fen(kStartFen).value()), 0);
  EXPECT_EQ(move_limit_result(ahead, 9),
            (GameResult{Outcome::kWhiteWins, Termination::kAdjudication}));
  EXPECT_EQ(move_limit_result(ahead, 10), (GameResult{Outcome::kDraw, Termination::kMoveLimit}));
  EXPECT_EQ(move_limit_result(ahead, 0), (GameResult{Outcome::kDraw, Termination::kMoveLimit}));
  // Colours swapped: Black is 9 ahead.
  const auto behind = Position::from_fen("qr2k3/pp6/8/8/8/8/3NB1P1/4K3 b - - 0 1").value();
  EXPECT_EQ(material_balance(behind), -9);
  EXPECT_EQ(move_limit_result(behind, 3),
            (GameResult{Outcome::kBlackWins, Termination::kAdjudication}));
}

}  // namespace
}  // namespace chessrl::chess
