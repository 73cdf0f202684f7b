// The self-play service in-process, following an in-process model registry
// (the replay service on in-memory stores): version 2 published while it plays
// version 1. With the default --model-switch overlap nothing drains (new games
// start on version 2 at once while the games in progress finish on version 1),
// the overlap is counted, and the games of both versions arrive carrying the
// right version; with --model-switch drain the old behaviour: a drain is
// counted and no version-1 game arrives after a version-2 one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/game.pb.h"
#include "selfplay_service.h"
#include "selfplay_settings.h"
#include "service_test_util.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

// The in-memory replay store, noting the model version of every game stored, in order.
class VersionStore final : public replay::ReplayStore {
 public:
  VersionStore() : inner_(1u << 22) {}
  Result<std::vector<replay::PushResult>> push(std::span<const record::StoredGame> games) override {
    auto statuses = inner_.push(games);
    if (!statuses.ok()) return statuses;
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < games.size(); ++i) {
      if ((*statuses)[i] != replay::PushStatus::kStored) continue;
      v1::TrainingPosition first;  // every game has targets here (--full-fraction 1)
      const bool parsed =
          !games[i].positions.empty() && first.ParseFromString(games[i].positions[0]);
      versions_.push_back(parsed ? static_cast<std::int64_t>(first.model_version()) : -1);
    }
    return statuses;
  }
  replay::StoreResult<replay::SampledPositions> sample(std::size_t count,
                                                       std::uint64_t seed) override {
    return inner_.sample(count, seed);
  }
  Result<replay::WindowStats> stats() override { return inner_.stats(); }
  std::vector<std::int64_t> versions() {
    std::lock_guard lock(mutex_);
    return versions_;
  }
  std::size_t games_of(std::int64_t version) {
    const auto v = versions();
    return static_cast<std::size_t>(std::count(v.begin(), v.end(), version));
  }

 private:
  replay::MemoryReplayStore inner_;
  std::mutex mutex_;
  std::vector<std::int64_t> versions_;
};

double metric(const std::string& page, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = page.find(key);
  return at == std::string::npos ? -1 : std::atof(page.c_str() + at + key.size());
}

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

class SelfplaySwitchTest : public ::testing::TestWithParam<std::string> {
 protected:
  SelfplaySwitchTest()
      : server_(games_, models_, server_metrics_, testing::fast_server_options()) {}

  void publish(std::uint64_t version) {
    nn::ModelInfo info;
    info.version = static_cast<std::int64_t>(version);
    const std::string blob = nn::serialize_checkpoint(nn::fresh_checkpoint({1, 8}, version, info));
    rpc::ModelRegistryClient client(testing::single_try_client(server_.port()));
    v1::ModelInfo meta;
    meta.set_version(version);
    meta.set_step(version);
    auto published = client.publish(meta, blob);
    ASSERT_TRUE(published.ok()) << published.error();
  }

  Settings settings(const std::string& mode) {
    const std::string replay = "127.0.0.1:" + std::to_string(server_.port());
    std::vector<std::string> args = {
        "--replay", replay, "--replica", "switch-test", "--visits", "8", "--reduced-visits", "8",
        "--full-fraction", "1", "--max-plies", "40", "--concurrent", "4", "--threads", "2",
        "--leaves", "4", "--workers", "1", "--nn-threads", "1", "--device", "cpu",
        "--push-batch", "1", "--push-interval-ms", "20", "--rpc-deadline", "5",
        "--progress-interval", "0", "--metrics-listen", "127.0.0.1:0", "--model-switch", mode};
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    CLI::App app;
    Settings s;
    add_options(app, s);
    app.parse(args);
    auto resolved = resolve(s, app);
    EXPECT_TRUE(resolved.ok()) << resolved.error();
    return s;
  }

  VersionStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry server_metrics_;
  replay_service::ReplayServer server_;
};

TEST_P(SelfplaySwitchTest, ANewVersionMidRun) {
  const std::string mode = GetParam();
  publish(1);
  std::atomic<bool> stop{false};
  SelfplayService service(settings(mode), stop);
  int code = -1;
  std::thread run([&] { code = service.run(); });
  const auto page = [&] {
    const int port = service.metrics_port();
    return port > 0 ? testing::http_get(port, "/metrics") : std::string();
  };

  ASSERT_TRUE(eventually([&] { return games_.games_of(1) >= 3; }, 60s));
  publish(2);
  const bool switched = eventually(
      [&] {
        const std::string p = page();
        return games_.games_of(2) >= 3 && metric(p, "chessrl_selfplay_models_in_play") == 1.0 &&
               metric(p, "chessrl_selfplay_model_swaps_total") == 1.0;
      },
      60s);
  const std::string metrics = page();
  stop = true;
  run.join();
  ASSERT_TRUE(switched) << metrics;
  EXPECT_EQ(code, 0);
  EXPECT_EQ(metric(metrics, "chessrl_model_version"), 2.0) << metrics;
  EXPECT_EQ(games_.games_of(0), 0u);
  EXPECT_EQ(games_.games_of(-1), 0u);
  const std::vector<std::int64_t> versions = games_.versions();
  const auto first_v2 = std::find(versions.begin(), versions.end(), 2);
  const auto v1_after = std::count(first_v2, versions.end(), 1);
  if (mode == "overlap") {
    EXPECT_EQ(metric(metrics, "chessrl_selfplay_drain_seconds_total"), 0.0) << metrics;
    EXPECT_GT(metric(metrics, "chessrl_selfplay_model_overlap_seconds_total"), 0.0) << metrics;
    // Only games in progress at the switch can finish on version 1 after it.
    EXPECT_LE(v1_after, 4);
  } else {
    EXPECT_GT(metric(metrics, "chessrl_selfplay_drain_seconds_total"), 0.0) << metrics;
    EXPECT_EQ(metric(metrics, "chessrl_selfplay_model_overlap_seconds_total"), 0.0) << metrics;
    EXPECT_EQ(v1_after, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SelfplaySwitchTest, ::testing::Values("overlap", "drain"));

TEST(SelfplaySettings, AnUnknownModelSwitchIsRefusedNamingTheFlag) {
  CLI::App app;
  Settings s;
  add_options(app, s);
  try {
    app.parse(std::vector<std::string>{"sideways", "--model-switch"});
    FAIL() << "accepted --model-switch sideways";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("--model-switch"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace chessrl::selfplay_service
