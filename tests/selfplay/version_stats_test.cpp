#include "chessrl/selfplay/version_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/position.h"

namespace chessrl::selfplay {
namespace {

using chess::testing::uci_moves;

// Fool's mate, Black wins; targets at ply 0 (White to move, value +0.5, two
// moves at 1/2) and ply 3 (Black to move, value +1, one move).
record::GameRecord fools_mate(const std::string& start_fen = chess::Position().fen()) {
  record::GameRecord r;
  r.id = "test-0";
  r.start_fen = start_fen;
  r.moves = uci_moves("", "f2f3 e7e5 g2g4 d8h4");
  r.result = {chess::Outcome::kBlackWins, chess::Termination::kCheckmate};
  record::MoveTarget t0;
  t0.ply = 0;
  t0.root_value = 0.5f;
  t0.policy = {{r.moves[0], 0.5f}, {uci_moves("", "e2e4")[0], 0.5f}};
  record::MoveTarget t3;
  t3.ply = 3;
  t3.root_value = 1.0f;
  t3.policy = {{r.moves[3], 1.0f}};
  r.targets = {t0, t3};
  return r;
}

record::GameRecord drawn(int plies) {
  record::GameRecord r;
  r.id = "test-1";
  r.moves = uci_moves("", "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8");
  r.moves.resize(std::size_t(plies));
  r.result = {chess::Outcome::kDraw, chess::Termination::kThreefoldRepetition};
  record::MoveTarget t;
  t.ply = 1;
  t.root_value = -0.2f;
  t.policy = {{r.moves[1], 1.0f}};
  r.targets = {t};
  return r;
}

TEST(GameStats, CountsGamesAndScoresTargetsFromTheMoversSide) {
  GameStats s;
  ASSERT_TRUE(s.add(fools_mate()));
  ASSERT_TRUE(s.add(drawn(8)));
  EXPECT_EQ(s.games, 2u);
  EXPECT_EQ(s.decisive, 1u);
  EXPECT_EQ(s.plies, 12u);
  EXPECT_EQ(s.positions, 3u);
  EXPECT_DOUBLE_EQ(s.decisive_share(), 0.5);
  EXPECT_DOUBLE_EQ(s.mean_plies(), 6.0);
  // Ply 0: White to move, White lost: (0.5 - -1)^2 = 2.25. Ply 3: Black to
  // move, Black won: (1 - 1)^2 = 0. The draw: (-0.2 - 0)^2 = 0.04.
  EXPECT_NEAR(s.value_mse(), (2.25 + 0 + 0.04) / 3, 1e-6);
  EXPECT_NEAR(s.policy_entropy(), std::log(2.0) / 3, 1e-6);
  EXPECT_EQ(s.terminations.at("checkmate"), 1u);
  EXPECT_EQ(s.terminations.at("threefold_repetition"), 1u);
}

TEST(GameStats, StartPositionWithBlackToMoveFlipsTheSides) {
  // The same targets from a start where Black moves first: ply 0 is Black's.
  GameStats s;
  record::GameRecord r = fools_mate();
  r.start_fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1";
  r.moves.clear();  // the stats do not replay moves; only the start's side matters
  ASSERT_TRUE(s.add(r));
  // Ply 0 is Black's (won): (0.5 - 1)^2; ply 3 White's (lost): (1 - -1)^2.
  EXPECT_NEAR(s.value_mse(), (0.25 + 4.0) / 2, 1e-6);
}

TEST(GameStats, BadStartFenIsAnErrorNamingTheGame) {
  GameStats s;
  auto added = s.add(fools_mate("not a fen"));
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().find("test-0"), std::string::npos) << added.error();
  EXPECT_EQ(s.games, 0u);
}

TEST(GameStats, JsonRoundTripAndMerge) {
  GameStats s;
  s.version = 7;
  ASSERT_TRUE(s.add(fools_mate()));
  ASSERT_TRUE(s.add(drawn(8)));
  auto back = parse_game_stats(to_json(s));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->version, 7u);
  EXPECT_EQ(back->games, 2u);
  EXPECT_EQ(back->terminations, s.terminations);
  EXPECT_NEAR(back->value_mse(), s.value_mse(), 1e-9);
  EXPECT_NEAR(back->policy_entropy(), s.policy_entropy(), 1e-9);

  GameStats other;
  ASSERT_TRUE(other.add(drawn(4)));
  back->merge(other);
  EXPECT_EQ(back->games, 3u);
  EXPECT_EQ(back->positions, 4u);
  EXPECT_EQ(back->terminations.at("threefold_repetition"), 2u);
  EXPECT_NEAR(back->value_mse(), (2.25 + 0 + 0.04 + 0.04) / 4, 1e-6);
  EXPECT_NE(describe(*back).find("v7: 3 games, 33% decisive (threefold_repetition 67%"),
            std::string::npos)
      << describe(*back);
}

TEST(GameStats, ParseErrorsNameTheField) {
  EXPECT_FALSE(parse_game_stats("[1]"));
  auto missing = parse_game_stats(R"({"version":1,"games":2})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("'decisive'"), std::string::npos) << missing.error();
  auto too_many = parse_game_stats(
      R"({"version":1,"games":2,"decisive":3,"plies":1,"positions":1,"policy_entropy":0,"value_mse":0,"terminations":{}})");
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().find("decisive"), std::string::npos);
  auto bad_mse = parse_game_stats(
      R"({"version":1,"games":2,"decisive":1,"plies":1,"positions":1,"policy_entropy":0,"value_mse":-1,"terminations":{}})");
  ASSERT_FALSE(bad_mse);
  EXPECT_NE(bad_mse.error().find("'value_mse'"), std::string::npos);
  auto bad_end = parse_game_stats(
      R"({"version":1,"games":2,"decisive":1,"plies":1,"positions":1,"policy_entropy":0,"value_mse":0,"terminations":{"checkmate":"x"}})");
  ASSERT_FALSE(bad_end);
  EXPECT_NE(bad_end.error().find("terminations.checkmate"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::selfplay
