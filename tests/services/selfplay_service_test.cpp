// The self-play service's pieces in-process: games from a real GameRunner
// converted to the wire format pass the replay service's validator; replica
// seeds and game ids; loading models (and refusing bad ones). The GamePusher's
// tests are in selfplay_pusher_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/record/validation.h"
#include "chessrl/selfplay/game_runner.h"
#include "chessrl/record/game_conversion.h"
#include "replica.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

std::vector<record::GameRecord> play(
    std::uint64_t seed, int games, const std::string& fen = "",
    nn::FakeBackend::Mode mode = nn::FakeBackend::Mode::kRandom) {
  selfplay::GameRunnerOptions o;
  o.concurrent_games = 4;
  o.threads = 1;
  o.leaves_per_search = 4;
  o.seed = seed;
  o.max_games = std::uint64_t(games);
  o.start_fen = fen;
  o.config.playouts = {.full_visits = 16, .reduced_visits = 8, .full_fraction = 0.5f};
  o.config.max_plies = 80;
  nn::BatchEvaluator evaluator(std::make_shared<nn::FakeBackend>(mode, 7),
                               {.max_batch = 64, .batch_timeout = 100us});
  selfplay::GameRunner runner(evaluator, o);
  std::vector<record::GameRecord> records;
  runner.run([&](record::GameRecord&& r) { records.push_back(std::move(r)); });
  return records;
}

void expect_valid(const record::GameRecord& record, const v1::Game& game) {
  const record::Validation checked = record::validate_game(game);
  if (const auto* rejection = std::get_if<record::Rejection>(&checked)) {
    FAIL() << record.id << ": " << record::reason_label(rejection->reason) << ": "
           << rejection->detail;
  }
  const auto& stored = std::get<record::StoredGame>(checked);
  EXPECT_EQ(stored.id, record.id);
  EXPECT_EQ(stored.positions.size(), record.targets.size());
}

TEST(GameConversion, RunnerGamesPassTheReplayValidator) {
  const auto records = play(11, 8);
  ASSERT_EQ(records.size(), 8u);
  std::set<v1::Termination> terminations;
  for (const auto& record : records) {
    const v1::Game game = to_wire_game(record, 42, "selfplay-7");
    expect_valid(record, game);
    EXPECT_EQ(game.id(), record.id);
    EXPECT_EQ(game.model_version(), 42u);
    EXPECT_EQ(game.producer(), "selfplay-7");
    EXPECT_TRUE(game.start_fen().empty());  // the standard start position
    ASSERT_EQ(game.moves_size(), int(record.moves.size()));
    ASSERT_EQ(game.targets_size(), int(record.targets.size()));
    EXPECT_NE(game.outcome(), v1::OUTCOME_UNSPECIFIED);
    terminations.insert(game.termination());

    // Every packed move decodes back to the move played.
    auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
    for (int i = 0; i < game.moves_size(); ++i) {
      const auto decoded = record::decode_move(pos, game.moves(i));
      ASSERT_TRUE(decoded.has_value()) << record.id << " ply " << i;
      EXPECT_EQ(*decoded, record.moves[std::size_t(i)]);
      pos.make_move(*decoded);
    }
    for (int i = 0; i < game.targets_size(); ++i) {
      const auto& t = game.targets(i);
      const auto& r = record.targets[std::size_t(i)];
      EXPECT_EQ(t.ply(), std::uint32_t(r.ply));
      EXPECT_EQ(t.visits(), r.visits);
      EXPECT_FLOAT_EQ(t.root_value(), r.root_value);
      ASSERT_EQ(t.policy_moves_size(), int(r.policy.size()));
      ASSERT_EQ(t.policy_probs_size(), int(r.policy.size()));
    }
  }
  EXPECT_FALSE(terminations.empty());
}

TEST(GameConversion, PromotionsAndAnotherStartPositionPassTheValidator) {
  const std::string fen = "7k/PP6/8/8/8/8/6pp/K7 w - - 0 1";
  const auto records = play(5, 6, fen);
  ASSERT_EQ(records.size(), 6u);
  int promotions = 0;
  for (const auto& record : records) {
    const v1::Game game = to_wire_game(record, 0, "p");
    EXPECT_EQ(game.start_fen(), record.start_fen);
    expect_valid(record, game);
    for (const std::uint32_t code : game.moves()) promotions += code >= 4096 ? 1 : 0;
  }
  EXPECT_GT(promotions, 0);
}

TEST(ReplicaSeed, DiffersByReplicaAndRepeatsWithAFixedSeed) {
  EXPECT_NE(replica_seed("chess-rl-selfplay-0", 1), replica_seed("chess-rl-selfplay-1", 1));
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-1", 9));
  EXPECT_EQ(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-0", 9));
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", 9), choose_seed("chess-rl-selfplay-0", 10));
  // Without --seed every start draws a fresh nonce.
  EXPECT_NE(choose_seed("chess-rl-selfplay-0", std::nullopt),
            choose_seed("chess-rl-selfplay-0", std::nullopt));
  // Each network generation of a run plays under its own runner seed.
  std::set<std::uint64_t> generations;
  for (std::uint64_t g = 0; g < 100; ++g) generations.insert(generation_seed(12345, g));
  EXPECT_EQ(generations.size(), 100u);
  EXPECT_EQ(generation_seed(12345, 0), 12345u);
}

TEST(ReplicaSeed, TwoReplicasPlayDifferentGamesWithDifferentIds) {
  const auto a = play(choose_seed("replica-a", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  const auto b = play(choose_seed("replica-b", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  std::set<std::string> ids;
  std::set<std::string> games;  // the moves, packed
  for (const auto* run : {&a, &b}) {
    for (const auto& r : *run) {
      ids.insert(r.id);
      std::string moves;
      for (const chess::Move m : r.moves) moves += std::to_string(record::encode_move(m)) + " ";
      games.insert(moves);
    }
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(games.size(), 8u);
  // The same replica and seed (a restart with --seed) replays the same games,
  // under new ids.
  const auto again = play(choose_seed("replica-a", 1), 4, "", nn::FakeBackend::Mode::kUniform);
  ASSERT_EQ(again.size(), a.size());
  std::map<std::uint64_t, std::vector<chess::Move>> by_index;
  for (const auto& r : a) by_index[r.index] = r.moves;
  for (const auto& r : again) {
    EXPECT_EQ(by_index[r.index], r.moves) << r.id;
    EXPECT_EQ(ids.count(r.id), 0u) << r.id;
  }
}

}  // namespace
}  // namespace chessrl::selfplay_service
