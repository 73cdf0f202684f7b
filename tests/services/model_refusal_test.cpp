// A "model bomb" in the registry (a few hundred bytes whose header names a
// 64x1024 network, 4.8 GB) against the services that load models, each over
// an in-process model registry (the replay service on in-memory stores):
//   - self-play's ModelFollower refuses it before allocating anything, logs
//     it once, counts it in chessrl_selfplay_models_refused_total, keeps the
//     model playing, never downloads it again, and takes up the next good
//     version;
//   - the evaluator's loop skips it (saved as evaluated, so a restart does not
//     fetch it again), counts it in chessrl_eval_models_refused_total, keeps
//     no copy of it, and evaluates the next good version.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../nn/model_bomb.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/rpc/clients.h"
#include "evaluator.h"
#include "chessrl/runtime/model_follower.h"
#include "chessrl/runtime/registry.h"
#include "model_registry_fixture.h"
#include "selfplay_service.h"

namespace chessrl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::eventually;
using testing::tiny_model;

std::string bomb(std::uint64_t version) { return nn::testing::model_bomb_bytes(version); }

// The value of an unlabelled series in a /metrics text; -1 when absent.
double value_of(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = text.find(key);
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + key.size());
}

class ModelRefusalTest : public testing::InProcessRegistryTest {};

TEST_F(ModelRefusalTest, SelfplaySkipsABombCountsItAndTakesUpTheNextGoodVersion) {
  publish(1, tiny_model(1));
  metrics::Registry registry;
  selfplay_service::SelfplayMetrics metrics(registry);
  nn::TorchBackendOptions torch;
  torch.threads = 1;
  rpc::ClientOptions client = testing::single_try_client(port());
  runtime::ModelFollower follower(
      client, torch, [this](const std::string& line) { log(line); },
      [&metrics](std::uint64_t) { metrics.models_refused.inc(); });
  follower.wait_settled(20s);
  auto first = follower.take();
  ASSERT_TRUE(first.has_value()) << logged();
  EXPECT_EQ(first->model.version, 1u);
  EXPECT_EQ(value_of(registry.serialize(), "chessrl_selfplay_models_refused_total"), 0.0);

  publish(2, bomb(2));
  const auto published = Clock::now();
  ASSERT_TRUE(eventually([&] { return !follower.refused().empty(); })) << logged();
  const double seconds = std::chrono::duration<double>(Clock::now() - published).count();
  EXPECT_EQ(follower.refused(), std::vector<std::uint64_t>{2});
  EXPECT_EQ(value_of(registry.serialize(), "chessrl_selfplay_models_refused_total"), 1.0);
  EXPECT_FALSE(follower.ready().load());
  EXPECT_FALSE(follower.take().has_value()) << "self-play must stay on version 1";
  const std::string log_after_bomb = logged();
  EXPECT_NE(log_after_bomb.find("model version 2 refused, not fetched again (self-play stays on "
                                "version 1): model v2 asks for a 64x1024 network = 1,219,332,048 "
                                "parameters"),
            std::string::npos)
      << log_after_bomb;
  std::printf("self-play: the bomb refused %.3f s after it was published (the watch included)\n",
              seconds);

  // The next good version is taken up; the bomb is not downloaded again.
  publish(3, tiny_model(3));
  std::optional<runtime::ModelFollower::Pending> third;
  ASSERT_TRUE(eventually([&] { return (third = follower.take()).has_value(); })) << logged();
  EXPECT_EQ(third->model.version, 3u);
  std::this_thread::sleep_for(300ms);  // a few watch polls
  EXPECT_EQ(downloads(), 3.0) << "versions 1, 2 and 3, once each";
  EXPECT_EQ(value_of(registry.serialize(), "chessrl_selfplay_models_refused_total"), 1.0);
  const std::string log = logged();
  EXPECT_EQ(log.find("model version 2 refused"), log.rfind("model version 2 refused"))
      << "logged once:\n"
      << log;
}

TEST_F(ModelRefusalTest, TheEvaluatorSkipsABombCountsItAndEvaluatesTheNextGoodVersion) {
  char pattern[] = "/tmp/chessrl-model-refusal-test-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  ASSERT_NE(made, nullptr);
  const std::string dir = made;
  evaluator_service::EvaluatorOptions options;
  options.registry = "127.0.0.1:" + std::to_string(port());
  options.metrics_listen = "off";
  options.visits = 8;
  options.leaves = 4;
  options.nn_threads = 1;
  options.poll_s = 1;
  options.anchors = "";
  options.gauntlet_every = 0;  // no matches: the first good version is promoted alone
  options.state_dir = dir + "/state";
  metrics::Registry metrics;
  auto made_evaluator = evaluator_service::Evaluator::create(
      options, metrics, [this](const std::string& line) { log(line); });
  ASSERT_TRUE(made_evaluator.ok()) << made_evaluator.error();
  evaluator_service::Evaluator& evaluator = **made_evaluator;

  std::atomic<bool> stop{false};
  Result<void> ran;
  std::thread loop([&] { ran = evaluator.run(stop); });
  struct Stop {
    std::atomic<bool>& flag;
    std::thread& thread;
    ~Stop() {
      flag = true;
      if (thread.joinable()) thread.join();
    }
  } stopper{stop, loop};

  publish(1, bomb(1));
  ASSERT_TRUE(eventually([&] { return evaluator.last_evaluated() == 1; })) << logged();
  EXPECT_EQ(value_of(metrics.serialize(), "chessrl_eval_models_refused_total"), 1.0);
  EXPECT_NE(logged().find("v1: model v1 asks for a 64x1024 network"), std::string::npos)
      << logged();
  EXPECT_FALSE(fs::exists(dir + "/state/models/model-v1.chrl")) << "a refused model is not kept";

  publish(2, tiny_model(2));
  ASSERT_TRUE(eventually([&] { return evaluator.last_evaluated() == 2; })) << logged();
  auto best = client_->best();
  ASSERT_TRUE(best.ok()) << best.error();
  ASSERT_TRUE(best->has_value());
  EXPECT_EQ((*best)->version(), 2u);
  EXPECT_TRUE(fs::exists(dir + "/state/models/model-v2.chrl"));
  EXPECT_EQ(value_of(metrics.serialize(), "chessrl_eval_models_refused_total"), 1.0);
  EXPECT_EQ(downloads(), 2.0) << "v1 and v2, once each";

  stop = true;
  loop.join();
  EXPECT_TRUE(ran.ok()) << ran.error();

  // A restart on the same state does not fetch the bomb again.
  metrics::Registry metrics2;
  auto restarted = evaluator_service::Evaluator::create(options, metrics2, [](const std::string&) {});
  ASSERT_TRUE(restarted.ok()) << restarted.error();
  EXPECT_EQ((*restarted)->last_evaluated(), 2u);
  std::error_code ignored;
  if (!HasFailure()) fs::remove_all(dir, ignored);
}

// A version past 2^53 - 1 (Redis's Lua compares versions as doubles, exact
// to 2^53) is refused; the largest one leaves no next version, and a trainer
// publishing after it says so instead of wrapping latest + 1 around to 0.
TEST_F(ModelRefusalTest, VersionsPastTheLargestAreRefusedAndTheNextPublishSaysWhy) {
  v1::ModelInfo info;
  info.set_version(rpc::kMaxModelVersion + 1);
  auto refused = client_->publish(info, tiny_model(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error();
  EXPECT_NE(refused.error().find("2^53 - 1"), std::string::npos) << refused.error();
  publish(rpc::kMaxModelVersion);
  auto checkpoint = nn::parse_checkpoint(tiny_model(1));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error();
  auto next = runtime::publish_model(*client_, *checkpoint, "1x8", "test");
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.error().find("leaves no next version"), std::string::npos) << next.error();
}

// A trainer that starts over (its checkpoints lost) or redoes the steps since
// its last checkpoint must not send self-play back to an older model: a model
// of the same network trained less far than the registry's latest is not
// published, saying why; at the same step or beyond, or of another network,
// it is.
TEST_F(ModelRefusalTest, AModelTrainedLessFarThanTheLatestIsNotPublished) {
  auto checkpoint = nn::parse_checkpoint(tiny_model(1));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error();
  checkpoint->info.step = 500;
  auto first = runtime::publish_model(*client_, *checkpoint, "1x8", "test");
  ASSERT_TRUE(first.ok()) << first.error();
  checkpoint->info.step = 20;
  auto older = runtime::publish_model(*client_, *checkpoint, "1x8", "test");
  ASSERT_FALSE(older.ok());
  EXPECT_NE(older.error().find("trained to step 500, beyond this model's step 20"),
            std::string::npos)
      << older.error();
  auto latest = client_->latest();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->version(), *first);  // nothing published
  auto other_network = runtime::publish_model(*client_, *checkpoint, "2x16", "test");
  EXPECT_TRUE(other_network.ok()) << other_network.error();
  checkpoint->info.step = 600;
  auto ahead = runtime::publish_model(*client_, *checkpoint, "2x16", "test");
  EXPECT_TRUE(ahead.ok()) << ahead.error();
}

}  // namespace
}  // namespace chessrl
