// The chessrl-selfplay binary as a child process against an in-process
// replay service (in-memory stores, a loopback port) with tiny random
// networks (1 block x 8 filters) and tiny games:
//   - it plays with the registry's model version 1 from the start and its
//     games arrive in the store carrying version 1;
//   - version 2 published: new games start on it while the games in
//     progress finish on version 1, no drain (/metrics says
//     chessrl_model_version 2, the overlap counted) and new games carry
//     version 2; a version 3
//     that is not a checkpoint is skipped and play goes on with version 2;
//   - the replay service stopped: games buffer (the buffered gauge rises);
//     a new server on the same port over the same store: they arrive;
//   - SIGTERM: exit 0 after pushing what is buffered;
//   - with no replay service: the uniform bootstrap (version 0) plays, the
//     full buffer sheds its oldest games (counted), /healthz says 503; on
//     SIGTERM the games in progress are counted abandoned, the buffered ones
//     lost, and it waits for a scrape that reads those counts;
//   - an unknown option: a non-zero exit naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/logged_port.h"
#include "../support/refusing_port.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/selfplay/version_stats.h"
#include "chessrl/v1/game.pb.h"
#include "child_process.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::selfplay_service {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::Child;
using testing::http_get;
using testing::RefusingPort;

// The value of the series `name` (no labels) in a /metrics page; -1 if absent.
double metric(const std::string& page, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = page.find(key);
  if (at == std::string::npos) return -1;
  return std::atof(page.c_str() + at + key.size());
}

// The in-memory replay store, noting the model version of every game stored.
class RecordingStore final : public replay::ReplayStore {
 public:
  RecordingStore() : inner_(1u << 22) {}
  Result<std::vector<replay::PushResult>> push(std::span<const record::StoredGame> games) override {
    auto statuses = inner_.push(games);
    if (!statuses.ok()) return statuses;
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < games.size(); ++i) {
      if ((*statuses)[i] != replay::PushStatus::kStored) continue;
      v1::TrainingPosition first;
      // Every game here has targets (--full-fraction 1); -1 marks one without.
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

  std::size_t games() {
    std::lock_guard lock(mutex_);
    return versions_.size();
  }
  // Games stored with `version`.
  std::size_t games_of(std::int64_t version) {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count(versions_.begin(), versions_.end(), version));
  }
  std::vector<std::int64_t> versions() {
    std::lock_guard lock(mutex_);
    return versions_;
  }

 private:
  replay::MemoryReplayStore inner_;
  std::mutex mutex_;
  std::vector<std::int64_t> versions_;  // in the order stored
};

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout, Child& child) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    if (auto code = child.wait(0ms)) {
      ADD_FAILURE() << "chessrl-selfplay exited " << *code << ":\n" << child.err();
      return false;
    }
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

class SelfplayBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/chessrl-selfplay-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    ASSERT_NE(made, nullptr);
    dir_ = made;
  }
  void TearDown() override {
    std::error_code ignored;
    if (std::getenv("CHESSRL_SELFPLAY_TEST_KEEP") == nullptr) fs::remove_all(dir_, ignored);
  }

  // The port of /metrics of the chessrl-selfplay started as Child `name`
  // with --metrics-listen 127.0.0.1:0: its "metrics on port N" line; 0 when
  // that line has not come within 30 s.
  int logged_metrics_port(const std::string& name) const {
    return testing::logged_port(dir_ + "/" + name + ".err", "metrics on port ", 30s);
  }

  // A replay service on `port` over the test's stores; 0: a port the kernel
  // picks (the server's port()).
  std::unique_ptr<replay_service::ReplayServer> serve(int port = 0) {
    auto options = testing::fast_server_options();
    options.listen = "127.0.0.1:" + std::to_string(port);
    server_metrics_.push_back(std::make_unique<metrics::Registry>());
    return std::make_unique<replay_service::ReplayServer>(games_, models_, *server_metrics_.back(),
                                                          options);
  }

  // Publishes a fresh 1x8 network as `version`.
  void publish(int port, std::uint64_t version) {
    nn::ModelInfo info;
    info.version = static_cast<std::int64_t>(version);
    publish_blob(port, version,
                 nn::serialize_checkpoint(nn::fresh_checkpoint(
                     nn::parse_network_name("1x8").value_or_throw(), version, info)));
  }
  void publish_blob(int port, std::uint64_t version, const std::string& blob) {
    rpc::ModelRegistryClient client(testing::single_try_client(port));
    v1::ModelInfo meta;
    meta.set_version(version);
    meta.set_step(version);
    auto published = client.publish(meta, blob);
    ASSERT_TRUE(published.ok()) << published.error();
  }

  RecordingStore games_;
  replay::MemoryModelStore models_;
  std::vector<std::unique_ptr<metrics::Registry>> server_metrics_;
  std::string dir_;
};

TEST_F(SelfplayBinaryTest, FollowsModelsBuffersThroughAnOutageAndStopsCleanly) {
  auto server = serve();
  const int port = server->port();
  ASSERT_GT(port, 0);
  publish(port, 1);

  Child child({CHESSRL_SELFPLAY_BINARY,
               "--replay",
               "127.0.0.1:" + std::to_string(port),
               "--replica",
               "selfplay-test-0",
               "--visits",
               "8",
               "--reduced-visits",
               "8",
               "--full-fraction",
               "1",
               "--max-plies",
               "40",
               "--concurrent",
               "4",
               "--threads",
               "2",
               "--leaves",
               "4",
               "--workers",
               "1",
               "--nn-threads",
               "1",
               "--device",
               "cpu",
               "--push-batch",
               "2",
               "--push-interval-ms",
               "100",
               "--rpc-deadline",
               "5",
               "--progress-interval",
               "5",
               "--version-stats",
               dir_ + "/versions.jsonl",
               "--metrics-listen",
               "127.0.0.1:0"},
              dir_, "selfplay");
  const int metrics_port = logged_metrics_port("selfplay");
  ASSERT_GT(metrics_port, 0) << child.err();
  auto page = [&] { return http_get(metrics_port, "/metrics"); };

  // Version 1 from the start.
  ASSERT_TRUE(eventually([&] { return games_.games_of(1) >= 3; }, 60s, child)) << child.err();
  EXPECT_EQ(games_.games_of(0), 0u) << "played with the bootstrap although version 1 was there";
  EXPECT_EQ(games_.games_of(-1), 0u);
  EXPECT_EQ(metric(page(), "chessrl_model_version"), 1.0) << page();
  EXPECT_NE(http_get(metrics_port, "/healthz").find(" 200 "), std::string::npos);

  // Version 2: a switch without a drain.
  publish(port, 2);
  ASSERT_TRUE(
      eventually([&] { return metric(page(), "chessrl_model_version") == 2.0; }, 60s, child))
      << child.err();
  ASSERT_TRUE(eventually([&] { return games_.games_of(2) >= 2; }, 60s, child)) << child.err();
  // No drain: new games start on version 2 while the games in progress
  // finish on version 1 (counted as the overlap once the last one ends).
  ASSERT_TRUE(eventually(
      [&] { return metric(page(), "chessrl_selfplay_model_overlap_seconds_total") > 0.0; }, 60s,
      child))
      << child.err();
  {
    // Once a version-2 game is stored, only games that were in progress at
    // the switch (4 at most) can still arrive with version 1.
    const std::vector<std::int64_t> versions = games_.versions();
    const auto first_v2 = std::find(versions.begin(), versions.end(), 2);
    EXPECT_LE(std::count(first_v2, versions.end(), 1), 4);
  }
  const std::string metrics2 = page();
  EXPECT_EQ(metric(metrics2, "chessrl_selfplay_model_swaps_total"), 1.0) << metrics2;
  EXPECT_EQ(metric(metrics2, "chessrl_selfplay_drain_seconds_total"), 0.0) << metrics2;
  EXPECT_EQ(metric(metrics2, "chessrl_selfplay_models_in_play"), 1.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_games_total"), 4.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_inference_evals_total"), 0.0) << metrics2;
  EXPECT_GE(metric(metrics2, "chessrl_inference_requests_total"),
            metric(metrics2, "chessrl_inference_evals_total"))
      << metrics2;
  EXPECT_GE(metric(metrics2, "chessrl_inference_cache_hits_total"), 0.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_search_threads"), 0.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_search_busy_seconds_total"), 0.0) << metrics2;
  {
    // Every finished game has one result; the three series add up to the games
    // (give or take the one game being counted while the page was read).
    double by_result = 0;
    for (const char* result : {"white", "black", "draw"}) {
      const std::string key =
          "\nchessrl_selfplay_game_results_total{result=\"" + std::string(result) + "\"} ";
      const auto at = metrics2.find(key);
      ASSERT_NE(at, std::string::npos) << result << "\n" << metrics2;
      by_result += std::atof(metrics2.c_str() + at + key.size());
    }
    EXPECT_NEAR(by_result, metric(metrics2, "chessrl_selfplay_games_total"), 1.0) << metrics2;
  }
  EXPECT_NE(metrics2.find("chessrl_inference_batch_size_bucket{le=\"1024\"}"), std::string::npos)
      << metrics2;
  EXPECT_NE(metrics2.find("chessrl_build_info"), std::string::npos);
  EXPECT_NE(metrics2.find("chessrl_selfplay_games_rejected_total{reason=\"illegal_move\"} 0"),
            std::string::npos)
      << metrics2;
  EXPECT_NE(child.err().find("switched from version 1"), std::string::npos) << child.err();
  EXPECT_NE(child.err().find("the last game of model version 1 ended"), std::string::npos)
      << child.err();
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_game_plies_count"), 4.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_policy_entropy"), 0.0) << metrics2;
  EXPECT_GT(metric(metrics2, "chessrl_selfplay_value_mse"), 0.0) << metrics2;

  // Version 3 is not a checkpoint: skipped, play goes on with version 2.
  publish_blob(port, 3, "not a checkpoint");
  ASSERT_TRUE(eventually(
      [&] { return child.err().find("model version 3 is unusable") != std::string::npos; }, 30s,
      child))
      << child.err();
  const std::size_t v2_games = games_.games_of(2);
  ASSERT_TRUE(eventually([&] { return games_.games_of(2) > v2_games; }, 30s, child));
  EXPECT_EQ(metric(page(), "chessrl_model_version"), 2.0);
  EXPECT_EQ(metric(page(), "chessrl_selfplay_model_swaps_total"), 1.0);

  // The replay service goes away: games buffer.
  server->shutdown(0ms);
  server.reset();
  const std::size_t stored_before = games_.games();
  ASSERT_TRUE(eventually(
      [&] {
        const std::string p = page();
        return metric(p, "chessrl_selfplay_games_buffered") >= 3 &&
               metric(p, "chessrl_selfplay_push_failures_total") > 0;
      },
      60s, child))
      << child.err();
  EXPECT_EQ(games_.games(), stored_before);
  EXPECT_NE(child.err().find("cannot push to the replay service"), std::string::npos);

  // A new server on the same port over the same store: the buffered games
  // arrive. (Should another process take the number meanwhile, the server
  // throws "cannot listen" and the test fails saying so.)
  const double buffered = metric(page(), "chessrl_selfplay_games_buffered");
  server = serve(port);
  ASSERT_TRUE(eventually(
      [&] { return games_.games() >= stored_before + static_cast<std::size_t>(buffered); }, 60s,
      child))
      << child.err();
  ASSERT_TRUE(eventually([&] { return child.err().find("takes games again") != std::string::npos; },
                         10s, child));
  EXPECT_EQ(metric(page(), "chessrl_selfplay_games_shed_total"), 0.0);

  // SIGTERM: the finished games are pushed, the process exits 0.
  child.signal(SIGTERM);
  const std::optional<int> code = child.wait(30s);
  ASSERT_TRUE(code.has_value()) << "still running 30 s after SIGTERM:\n" << child.err();
  EXPECT_EQ(*code, 0) << child.err();
  const std::string err = child.err();
  EXPECT_NE(err.find("games in progress abandoned"), std::string::npos) << err;
  EXPECT_NE(err.find(" 0 could not be pushed"), std::string::npos) << err;
  EXPECT_EQ(err.find("waiting up to"), std::string::npos) << "a wait with nothing lost:\n" << err;
  EXPECT_EQ(games_.games_of(0), 0u);
  EXPECT_EQ(games_.games_of(-1), 0u);
  {
    // --version-stats: a line for version 1 when its last game ended, then version 2's
    // at the end; together they count every game played (the log says which).
    std::ifstream in(dir_ + "/versions.jsonl");
    std::vector<selfplay::GameStats> lines;
    for (std::string line; std::getline(in, line);) {
      auto stats = selfplay::parse_game_stats(line);
      ASSERT_TRUE(stats) << stats.error() << ": " << line;
      lines.push_back(*stats);
    }
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines.front().version, 1u);
    EXPECT_EQ(lines.back().version, 2u);
    std::uint64_t games = 0;
    for (const auto& stats : lines) {
      EXPECT_GT(stats.games, 0u);
      EXPECT_GT(stats.positions, 0u);
      EXPECT_GT(stats.mean_plies(), 0.0);
      games += stats.games;
    }
    EXPECT_EQ(games, games_.games());
    EXPECT_NE(err.find("games with model v1: "), std::string::npos) << err;
  }
  // Every line names the replica.
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind("chessrl-selfplay[selfplay-test-0]: ", 0), 0u) << line;
  }
  std::printf("%s", err.c_str());  // the switch and overlap times, for the record
}

TEST_F(SelfplayBinaryTest, WithoutAReplayServiceItPlaysTheBootstrapShedsAndTurnsUnhealthy) {
  const RefusingPort nobody;  // no replay service: connects are refused
  Child child({CHESSRL_SELFPLAY_BINARY,
               "--replay",
               nobody.address(),
               "--replica",
               "selfplay-test-1",
               "--visits",
               "8",
               "--reduced-visits",
               "8",
               "--max-plies",
               "30",
               "--concurrent",
               "4",
               "--threads",
               "1",
               "--leaves",
               "4",
               "--workers",
               "1",
               "--buffer-games",
               "6",
               "--push-batch",
               "2",
               "--flush-timeout",
               "1",
               "--rpc-deadline",
               "2",
               "--metrics-listen",
               "127.0.0.1:0"},
              dir_, "no-replay");
  const int metrics_port = logged_metrics_port("no-replay");
  ASSERT_GT(metrics_port, 0) << child.err();
  auto page = [&] { return http_get(metrics_port, "/metrics"); };
  ASSERT_TRUE(eventually([&] { return metric(page(), "chessrl_selfplay_games_shed_total") >= 2; },
                         60s, child))
      << child.err();
  const std::string metrics = page();
  EXPECT_EQ(metric(metrics, "chessrl_model_version"), 0.0) << metrics;  // the uniform bootstrap
  EXPECT_EQ(metric(metrics, "chessrl_selfplay_games_buffered"), 6.0) << metrics;
  EXPECT_EQ(metric(metrics, "chessrl_selfplay_games_pushed_total"), 0.0) << metrics;
  const std::string health = http_get(metrics_port, "/healthz");
  EXPECT_NE(health.find(" 503 "), std::string::npos) << health;
  EXPECT_NE(health.find("push buffer"), std::string::npos) << health;
  EXPECT_NE(child.err().find("shed the oldest"), std::string::npos) << child.err();

  // SIGTERM, scraped every 20 ms until it exits: the 6 buffered games are lost,
  // and it waits (--final-scrape-wait) for a scrape that reads that count.
  child.signal(SIGTERM);
  std::optional<int> code;
  std::string last_page;
  const auto deadline = Clock::now() + 30s;
  while (!(code = child.wait(0ms)) && Clock::now() < deadline) {
    const std::string scraped = page();
    if (scraped.rfind("HTTP/1.1 200", 0) == 0) last_page = scraped;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(code.has_value()) << child.err();
  EXPECT_EQ(*code, 0) << child.err();
  const std::string err = child.err();
  EXPECT_NE(err.find(" 6 could not be pushed (lost)"), std::string::npos) << err;
  EXPECT_NE(err.find("6 games lost: waiting up to 15 s"), std::string::npos) << err;
  EXPECT_NE(err.find("lost counts scraped after "), std::string::npos) << err;
  EXPECT_EQ(metric(last_page, "chessrl_selfplay_games_lost_total"), 6.0) << last_page;
  // --concurrent 4, no --games: the 4 games in progress.
  EXPECT_EQ(metric(last_page, "chessrl_selfplay_games_abandoned_total"), 4.0) << last_page;
}

TEST_F(SelfplayBinaryTest, AnUnknownOptionStopsStartUpNamingIt) {
  Child child({CHESSRL_SELFPLAY_BINARY, "--bogus-option", "3"}, dir_, "bogus");
  const std::optional<int> code = child.wait(30s);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  EXPECT_NE(child.err().find("--bogus-option"), std::string::npos) << child.err();

  Child bad({CHESSRL_SELFPLAY_BINARY, "--push-batch", "64", "--buffer-games", "8"}, dir_, "bad");
  const std::optional<int> bad_code = bad.wait(30s);
  ASSERT_TRUE(bad_code.has_value());
  EXPECT_EQ(*bad_code, 2);
  EXPECT_NE(bad.err().find("--push-batch"), std::string::npos) << bad.err();
}

}  // namespace
}  // namespace chessrl::selfplay_service
