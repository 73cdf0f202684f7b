// The trainer service's pieces in-process: ReplaySource over a real replay
// server (in-memory stores, loopback gRPC) and TrainerMetrics.
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/train/example.h"
#include "chessrl/replay_service/replay_server.h"
#include "hanging_registry.h"
#include "replay_source.h"
#include "service_test_util.h"
#include "trainer_metrics.h"

namespace chessrl::trainer_service {
namespace {

// 1. e4 e5, then a policy over Nf3 / Nc3 for White.
v1::TrainingPosition hand_made_position() {
  v1::TrainingPosition p;
  p.set_fen(std::string(chess::kStartFen));
  p.set_game_id("hand-made");
  p.set_ply(2);
  auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
  for (const char* uci : {"e2e4", "e7e5"}) {
    const chess::Move m = chess::parse_uci(pos, uci).value_or_throw();
    p.add_history_moves(record::encode_move(m));
    pos.make_move(m);
  }
  for (const char* uci : {"g1f3", "b1c3"}) {
    p.add_policy_moves(record::encode_move(chess::parse_uci(pos, uci).value_or_throw()));
  }
  p.add_policy_probs(0.75f);
  p.add_policy_probs(0.25f);
  p.set_result(1);
  return p;
}

TEST(ReplaySourceConversion, MatchesMakeExampleOnTheReachedPosition) {
  const v1::TrainingPosition p = hand_made_position();
  auto example = to_example(p);
  ASSERT_TRUE(example.ok()) << example.error();

  auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
  std::vector<chess::Move> history;
  for (const char* uci : {"e2e4", "e7e5"}) {
    history.push_back(chess::parse_uci(pos, uci).value_or_throw());
    pos.make_move(history.back());
  }
  const std::vector<chess::Move> policy = {chess::parse_uci(pos, "g1f3").value_or_throw(),
                                           chess::parse_uci(pos, "b1c3").value_or_throw()};
  const std::vector<float> probs = {0.75f, 0.25f};
  auto expected = train::make_example(chess::kStartFen, history, policy, probs, 1);
  ASSERT_TRUE(expected.ok()) << expected.error();
  EXPECT_EQ(*example, *expected);
  EXPECT_EQ(example->result, 1);
  ASSERT_EQ(example->policy.size(), 2u);
}

TEST(ReplaySourceConversion, MalformedPositionsAreErrorsNamingGameAndPly) {
  struct Case {
    const char* what;
    v1::TrainingPosition position;
    const char* mentions;
  };
  std::vector<Case> cases;
  v1::TrainingPosition p = hand_made_position();
  p.set_fen("not a fen");
  cases.push_back({"bad fen", p, "FEN"});
  p = hand_made_position();
  p.set_history_moves(1, 0);  // a1a1
  cases.push_back({"illegal history move", p, "history move 1"});
  p = hand_made_position();
  p.set_history_moves(0, 99999999);  // out of range
  cases.push_back({"undecodable history move", p, "history move 0"});
  p = hand_made_position();
  p.set_policy_moves(0, 12 + 64 * 36);  // e2e5: not legal after 1. e4 e5
  cases.push_back({"illegal policy move", p, "policy move 0"});
  p = hand_made_position();
  p.add_policy_probs(0.5f);
  cases.push_back({"length mismatch", p, "probabilities"});
  p = hand_made_position();
  p.set_policy_probs(0, 3.0f);
  cases.push_back({"bad probability", p, ""});
  p = hand_made_position();
  p.set_result(7);
  cases.push_back({"bad result", p, "result"});
  for (const auto& c : cases) {
    auto example = to_example(c.position);
    ASSERT_FALSE(example.ok()) << c.what;
    EXPECT_NE(example.error().find("'hand-made' ply 2"), std::string::npos)
        << c.what << ": " << example.error();
    EXPECT_NE(example.error().find(c.mentions), std::string::npos)
        << c.what << ": " << example.error();
  }
}

class ReplaySourceTest : public ::testing::Test {
 protected:
  ReplaySourceTest() : games_(100000) {
    server_ = std::make_unique<replay_service::ReplayServer>(games_, models_, registry_,
                                                             testing::fast_server_options());
    client_ = std::make_shared<rpc::ReplayClient>(testing::single_try_client(server_->port()));
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<replay_service::ReplayServer> server_;
  std::shared_ptr<rpc::ReplayClient> client_;
};

TEST_F(ReplaySourceTest, FetchesInChunksAndReportsTheWindow) {
  auto pushed = client_->push_games(testing::batch(1, 6, 30));
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  auto stats = client_->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  ASSERT_GT(stats->window_positions(), 0u);

  ReplaySource source(client_, /*max_sample=*/16);
  auto status = source.status();
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->window_positions, stats->window_positions());
  EXPECT_EQ(status->positions_stored_total, stats->positions_stored_total());
  EXPECT_FALSE(status->fixed);

  auto batch = source.fetch(7, 1, 3, 40);  // step, rank and world do not matter
  ASSERT_TRUE(batch.ok()) << batch.error();
  ASSERT_EQ(batch->size(), 40u);
  for (const auto& e : *batch) {
    ASSERT_FALSE(e.policy.empty());
    double sum = 0;
    for (const auto& [index, prob] : e.policy) sum += prob;
    EXPECT_NEAR(sum, 1.0, 1e-3);
    EXPECT_TRUE(e.result >= -1 && e.result <= 1);
  }
  // 40 in chunks of at most 16: three Sample calls.
  EXPECT_NE(registry_.serialize().find("chessrl_replay_positions_sampled_total 40"),
            std::string::npos)
      << registry_.serialize();
}

TEST_F(ReplaySourceTest, FetchAndStatusRunConcurrently) {
  ASSERT_TRUE(client_->push_games(testing::batch(100, 4, 30)).ok());
  ReplaySource source(client_, 64);
  std::atomic<bool> failed{false};
  std::thread status_thread([&] {
    for (int i = 0; i < 50; ++i) {
      if (!source.status().ok()) failed = true;
    }
  });
  for (int i = 0; i < 20; ++i) {
    auto batch = source.fetch(i, 0, 1, 32);
    ASSERT_TRUE(batch.ok()) << batch.error();
    EXPECT_EQ(batch->size(), 32u);
  }
  status_thread.join();
  EXPECT_FALSE(failed);
}

TEST_F(ReplaySourceTest, AnEmptyWindowOrAStoreFailureIsAnError) {
  ReplaySource source(client_, 64);
  auto empty = source.fetch(0, 0, 1, 8);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("no positions"), std::string::npos) << empty.error();

  games_.set_failure("disk on fire");
  auto broken = source.fetch(0, 0, 1, 8);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().find("disk on fire"), std::string::npos) << broken.error();
  auto status = source.status();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("Stats"), std::string::npos) << status.error();
}

double series(const metrics::Registry& registry, const std::string& name) {
  const std::string text = registry.serialize();
  const std::string needle = "\n" + name + " ";
  const auto at = text.find(needle);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + needle.size()));
}

// cancel(): a Sample in flight to a server that never answers it (a pod gone
// quiet: here a gRPC server whose generic service never takes the call) ends
// at once with CANCELLED, not at its deadline, and later calls fail without
// going out: a stopping trainer does not wait out --rpc-deadline on a replay
// service that is gone.
TEST(ReplaySourceCancel, EndsTheCallInFlightAndEveryLaterOne) {
  testing::SilentServer silent;
  rpc::ClientOptions options;
  options.address = silent.address();
  options.deadline = std::chrono::seconds(30);
  ReplaySource source(std::make_shared<rpc::ReplayClient>(options));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    source.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = source.fetch(0, 0, 1, 4);
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("CANCELLED"), std::string::npos) << r.error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << r.error();
  const auto later = std::chrono::steady_clock::now();
  auto again = source.status();
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("CANCELLED"), std::string::npos) << again.error();
  EXPECT_LT(std::chrono::steady_clock::now() - later, std::chrono::seconds(1));
}

TEST(TrainerMetrics, StepsPausesAndPublishesUpdateTheSeries) {
  metrics::Registry registry;
  TrainerMetrics m(registry, 1, 4, 2.5);
  EXPECT_EQ(series(registry, "chessrl_trainer_rank"), 1);
  EXPECT_EQ(series(registry, "chessrl_trainer_world_size"), 4);
  EXPECT_EQ(series(registry, "chessrl_trainer_max_reuse"), 2.5);

  train::StepReport r;
  r.rank = 1;
  r.step = 11;
  r.samples = 64;
  r.policy_loss = 2.5;
  r.value_loss = 0.5;
  r.total_loss = 3.0;
  r.lr = 0.02;
  r.step_seconds = 0.25;
  r.data_wait_seconds = 0.05;
  r.allreduce_seconds = 0.1;
  r.samples_per_second = 256;
  m.on_step(r);
  m.on_step(r);
  EXPECT_EQ(series(registry, "chessrl_trainer_steps_total"), 2);
  EXPECT_EQ(series(registry, "chessrl_trainer_samples_total"), 128);
  EXPECT_EQ(series(registry, "chessrl_trainer_loss{head=\"policy\"}"), 2.5);
  EXPECT_EQ(series(registry, "chessrl_trainer_loss{head=\"value\"}"), 0.5);
  EXPECT_EQ(series(registry, "chessrl_trainer_loss{head=\"total\"}"), 3.0);
  EXPECT_EQ(series(registry, "chessrl_trainer_step_seconds"), 0.25);
  EXPECT_DOUBLE_EQ(series(registry, "chessrl_trainer_step_seconds_total"), 0.5);
  EXPECT_DOUBLE_EQ(series(registry, "chessrl_trainer_data_wait_seconds_total"), 0.1);
  EXPECT_DOUBLE_EQ(series(registry, "chessrl_trainer_allreduce_seconds_total"), 0.2);
  EXPECT_EQ(series(registry, "chessrl_trainer_samples_per_second"), 256);
  EXPECT_EQ(series(registry, "chessrl_trainer_learning_rate"), 0.02);
  EXPECT_EQ(series(registry, "chessrl_trainer_step"), 11);

  EXPECT_EQ(series(registry, "chessrl_trainer_paused"), 0);
  m.on_pause(true);
  EXPECT_EQ(series(registry, "chessrl_trainer_paused"), 1);
  m.on_pause(false);
  EXPECT_EQ(series(registry, "chessrl_trainer_paused"), 0);

  m.on_publish(7);
  EXPECT_EQ(series(registry, "chessrl_model_version"), 7);
  // The cap stays what the start set, whatever the steps report.
  EXPECT_EQ(series(registry, "chessrl_trainer_max_reuse"), 2.5);
}

// The training-only heads' losses are series only for a network with them.
TEST(TrainerMetrics, HeadLossSeriesOnlyForTheHeadsTheNetworkHas) {
  train::StepReport r;
  r.reply_loss = 4.25;
  r.moves_left_loss = 0.75;
  metrics::Registry plain_registry;
  TrainerMetrics plain(plain_registry, 0, 1, 0);
  plain.on_step(r);
  EXPECT_EQ(plain_registry.serialize().find("head=\"reply\""), std::string::npos);
  EXPECT_EQ(plain_registry.serialize().find("head=\"moves_left\""), std::string::npos);
  metrics::Registry registry;
  TrainerMetrics m(registry, 0, 1, 0, nn::parse_network_name("2x16-reply-mlh").value_or_throw());
  m.on_step(r);
  EXPECT_EQ(series(registry, "chessrl_trainer_loss{head=\"reply\"}"), 4.25);
  EXPECT_EQ(series(registry, "chessrl_trainer_loss{head=\"moves_left\"}"), 0.75);
}

TEST(TrainerMetrics, MaxReuseZeroMeansNoCapAndIsExported) {
  metrics::Registry registry;
  TrainerMetrics m(registry, 0, 1, 0);
  EXPECT_EQ(series(registry, "chessrl_trainer_max_reuse"), 0);
  const std::string text = registry.serialize();
  EXPECT_NE(text.find("# TYPE chessrl_trainer_max_reuse gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("# HELP chessrl_trainer_max_reuse The trainer's --max-reuse"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace chessrl::trainer_service
