#include "chessrl/eval/match_endings.h"

#include <gtest/gtest.h>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"

namespace chessrl::eval {
namespace {

chess::PgnGame game_of(std::initializer_list<const char*> uci) {
  chess::PgnGame g;
  chess::Position pos;
  for (const char* text : uci) {
    const chess::Move m = chess::parse_uci(pos, text).value_or_throw();
    g.moves.push_back(m);
    pos.make_move(m);
  }
  return g;
}

TEST(LostGameMaterial, AHungQueenAndWhenTheLoserFellBehind) {
  // 1.e4 e5 2.Qh5 Nc6 3.Qxe5+ Nxe5: White's queen is taken and nothing of
  // White's can take back on e5.
  const chess::PgnGame g = game_of({"e2e4", "e7e5", "d1h5", "b8c6", "h5e5", "c6e5"});
  const LostGameMaterial white = lost_game_material(g, chess::kWhite);
  EXPECT_EQ(white.plies, 6);
  EXPECT_EQ(white.hung_pawns, 9);
  EXPECT_EQ(white.exchange_pawns, 0);
  EXPECT_EQ(white.behind_ply, 6);
  EXPECT_EQ(white.final_balance, -8);
  // Seen from Black: its e5 pawn was taken while the knight defended it.
  const LostGameMaterial black = lost_game_material(g, chess::kBlack);
  EXPECT_EQ(black.exchange_pawns, 1);
  EXPECT_EQ(black.hung_pawns, 0);
  EXPECT_EQ(black.behind_ply, -1);
  EXPECT_EQ(black.final_balance, 8);
}

TEST(LostGameMaterial, AnEvenExchangeIsNotHungMaterial) {
  // 1.e4 e5 2.Nf3 Nc6 3.d4 exd4 4.Nxd4 Nxd4 5.Qxd4: every capture of White's
  // material could be (and was) answered.
  const chess::PgnGame g = game_of(
      {"e2e4", "e7e5", "g1f3", "b8c6", "d2d4", "e5d4", "f3d4", "c6d4", "d1d4"});
  const LostGameMaterial white = lost_game_material(g, chess::kWhite);
  EXPECT_EQ(white.hung_pawns, 0);
  EXPECT_EQ(white.exchange_pawns, 4);  // the d-pawn and the knight
  EXPECT_EQ(white.final_balance, 0);
  EXPECT_EQ(white.behind_ply, -1) << "a knight down for one ply, mid-exchange, is not behind";
}

MatchGame ended(bool first_white, chess::Outcome outcome, chess::Termination reason,
                chess::PgnGame pgn = {}) {
  MatchGame g;
  g.first_is_white = first_white;
  g.result = {outcome, reason};
  const bool first_won =
      outcome == (first_white ? chess::Outcome::kWhiteWins : chess::Outcome::kBlackWins);
  g.first_score = outcome == chess::Outcome::kDraw ? 0.5 : first_won ? 1.0 : 0.0;
  g.pgn = std::move(pgn);
  return g;
}

TEST(MatchEndings, CountsByResultAndTerminationAndTracesTheLostGames) {
  using chess::Outcome;
  using chess::Termination;
  MatchEndings endings;
  endings.add(ended(true, Outcome::kWhiteWins, Termination::kCheckmate));
  endings.add(ended(false, Outcome::kDraw, Termination::kThreefoldRepetition));
  endings.add(ended(false, Outcome::kDraw, Termination::kMoveLimit));
  endings.add(ended(true, Outcome::kBlackWins, Termination::kCheckmate,
                    game_of({"e2e4", "e7e5", "d1h5", "b8c6", "h5e5", "c6e5"})));
  EXPECT_EQ(endings.count(0, Termination::kCheckmate), 1);
  EXPECT_EQ(endings.count(1, Termination::kThreefoldRepetition), 1);
  EXPECT_EQ(endings.count(1, Termination::kMoveLimit), 1);
  EXPECT_EQ(endings.count(2, Termination::kCheckmate), 1);
  EXPECT_EQ(endings.count(2, Termination::kMoveLimit), 0);
  ASSERT_EQ(endings.lost().size(), 1u);
  EXPECT_EQ(endings.lost()[0].hung_pawns, 9);
  const std::string text = endings.format("net");
  EXPECT_NE(text.find("net wins: checkmate 1"), std::string::npos) << text;
  EXPECT_NE(text.find("net losses: checkmate 1"), std::string::npos) << text;
  EXPECT_NE(text.find("9 pawns hung"), std::string::npos) << text;
}

}  // namespace
}  // namespace chessrl::eval
