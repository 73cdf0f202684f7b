#include "chessrl/eval/player.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"
#include "chessrl/mcts/random.h"
#include "chessrl/nn/backend.h"

namespace chessrl::eval {
namespace {

GameState state_of(const std::string& fen) {
  GameState s;
  s.start_fen = fen;
  s.position = chess::Position::from_fen(fen).value_or_throw();
  return s;
}

std::string choose_uci(Player& player, const GameState& state) {
  auto m = player.choose(state);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
  return m.ok() ? chess::to_uci(*m) : "";
}

// Positions from seeded random play, some deep into the game.
std::vector<GameState> random_positions(int count, std::uint64_t seed) {
  std::vector<GameState> out;
  mcts::Rng rng(seed);
  while (int(out.size()) < count) {
    GameState s = state_of(std::string(chess::kStartFen));
    const int plies = int(rng.below(120));
    for (int i = 0; i < plies && !chess::game_result(s.position).is_over(); ++i) {
      const chess::MoveList moves = chess::legal_moves(s.position);
      const chess::Move m = moves[int(rng.below(std::uint64_t(moves.size())))];
      s.position.make_move(m);
      s.moves.push_back(m);
    }
    if (!chess::game_result(s.position).is_over()) out.push_back(s);
  }
  return out;
}

TEST(RandomPlayer, LegalAndReproducible) {
  auto a = make_random_player(7), b = make_random_player(7), c = make_random_player(8);
  EXPECT_EQ(a->name(), "random");
  int differ = 0;
  for (const GameState& s : random_positions(200, 1)) {
    auto ma = a->choose(s), mb = b->choose(s), mc = c->choose(s);
    ASSERT_TRUE(ma.ok() && mb.ok() && mc.ok());
    EXPECT_TRUE(chess::is_legal(s.position, *ma));
    EXPECT_EQ(*ma, *mb);
    differ += *ma != *mc;
  }
  EXPECT_GT(differ, 50);  // another seed plays other moves
}

TEST(GreedyPlayer, TakesAHangingQueen) {
  // White's queen takes the undefended black queen; nothing else wins material.
  auto greedy = make_greedy_player(1);
  EXPECT_EQ(greedy->name(), "greedy");
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto g = make_greedy_player(seed);
    EXPECT_EQ(choose_uci(*g, state_of("4k3/8/8/3q4/8/8/5P2/3QK3 w - - 0 1")), "d1d5");
  }
  // A knight takes a queen rather than a pawn.
  EXPECT_EQ(choose_uci(*greedy, state_of("4k3/8/8/3q1p2/8/4N3/8/4K3 w - - 0 1")), "e3d5");
}

TEST(GreedyPlayer, PlaysMateInOneBeforeMaterial) {
  // Scholar's mate: Qxf7# wins a pawn, but so do Qxe5+ and Qxh7; only the
  // mate may be chosen, whatever the tie-break seed.
  const GameState s =
      state_of("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4");
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    auto g = make_greedy_player(seed);
    EXPECT_EQ(choose_uci(*g, s), "h5f7") << "seed " << seed;
  }
  // A back-rank mate with a rook, preferred to taking a knight.
  auto g = make_greedy_player(3);
  EXPECT_EQ(choose_uci(*g, state_of("6k1/5ppp/8/8/8/8/8/R1n3K1 w - - 0 1")), "a1a8");
}

TEST(GreedyPlayer, BreaksTiesAtRandomAndStaysLegal) {
  std::set<std::string> first_moves;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto g = make_greedy_player(seed);
    first_moves.insert(choose_uci(*g, state_of(std::string(chess::kStartFen))));
  }
  EXPECT_GT(first_moves.size(), 5u);  // all 20 moves tie at the start
  auto greedy = make_greedy_player(5);
  for (const GameState& s : random_positions(300, 2)) {
    auto m = greedy->choose(s);
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_TRUE(chess::is_legal(s.position, *m)) << s.position.fen();
  }
}

class MctsPlayerTest : public ::testing::Test {
 protected:
  nn::BatchEvaluator evaluator_{std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kUniform),
                                nn::BatchEvaluatorOptions{.max_batch = 16, .workers = 1}};
};

TEST_F(MctsPlayerTest, FindsMateInOne) {
  MctsPlayerOptions o;
  o.visits = 64;
  auto player = make_mcts_player(evaluator_, o, "uniform");
  EXPECT_EQ(player->name(), "uniform");
  EXPECT_EQ(choose_uci(*player, state_of("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")), "a1a8");
  EXPECT_EQ(choose_uci(*player, state_of("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w "
                                         "KQkq - 4 4")),
            "h5f7");
}

TEST_F(MctsPlayerTest, LegalMovesAndRandomOpeningPlies) {
  MctsPlayerOptions o;
  o.visits = 16;
  auto player = make_mcts_player(evaluator_, o, "uniform");
  for (const GameState& s : random_positions(20, 3)) {
    auto m = player->choose(s);
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_TRUE(chess::is_legal(s.position, *m));
  }
  // Without random plies the choice is fixed; with them it varies by seed.
  const GameState start = state_of(std::string(chess::kStartFen));
  std::set<std::string> fixed, sampled;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    o.seed = seed;
    o.random_plies = 0;
    fixed.insert(choose_uci(*make_mcts_player(evaluator_, o, "a"), start));
    o.random_plies = 2;
    sampled.insert(choose_uci(*make_mcts_player(evaluator_, o, "b"), start));
  }
  EXPECT_EQ(fixed.size(), 1u);
  EXPECT_GT(sampled.size(), 1u);
}

TEST_F(MctsPlayerTest, FailsWhenTheGameIsOver) {
  auto player = make_mcts_player(evaluator_, {}, "uniform");
  // Fool's mate: White is mated.
  auto m =
      player->choose(state_of("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("over"), std::string::npos) << m.error();
}

}  // namespace
}  // namespace chessrl::eval
