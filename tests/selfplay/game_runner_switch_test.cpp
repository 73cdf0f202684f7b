// GameRunner::switch_to: games that start after a switch play on the new
// network, the games in progress finish on theirs, no slot waits, every game
// comes with the version that played it, and a replaced network is retired
// once its last game ends. Two seeded fake backends that answer differently
// tell the networks apart: each game must be exactly the game that its
// network plays for that index alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/selfplay/game_runner.h"

namespace chessrl::selfplay {
namespace {

using namespace std::chrono_literals;

GameRunnerOptions quick(std::uint64_t games, int concurrent, int threads) {
  GameRunnerOptions o;
  o.concurrent_games = concurrent;
  o.threads = threads;
  o.leaves_per_search = 4;
  o.seed = 4242;
  o.id_nonce = 9;  // the same ids in every run, to compare games
  o.max_games = games;
  o.config.playouts = {.full_visits = 16, .reduced_visits = 8, .full_fraction = 0.5f};
  o.config.max_plies = 30;
  o.config.short_max_plies = 16;
  return o;
}

std::shared_ptr<nn::BatchEvaluator> evaluator(std::uint64_t seed) {
  return std::make_shared<nn::BatchEvaluator>(
      std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, seed),
      nn::BatchEvaluatorOptions{.max_batch = 64, .batch_timeout = 100us});
}

// Games 0..n-1 played on one network alone, by index.
std::map<std::uint64_t, record::GameRecord> alone(std::uint64_t seed, std::uint64_t n) {
  GameRunner runner(Network{evaluator(seed), 1}, quick(n, 4, 2));
  std::map<std::uint64_t, record::GameRecord> games;
  runner.run([&](record::GameRecord&& r) { games.emplace(r.index, std::move(r)); });
  return games;
}

constexpr std::uint64_t kOld = 11, kNew = 12;  // the versions
constexpr std::uint64_t kOldSeed = 77, kNewSeed = 91;

TEST(GameRunnerSwitch, NewGamesPlayOnTheNewNetworkWhileOldOnesFinishOnTheirs) {
  constexpr std::uint64_t kReference = 64;
  const auto on_old = alone(kOldSeed, kReference);
  const auto on_new = alone(kNewSeed, kReference);
  ASSERT_EQ(on_old.size(), kReference);
  ASSERT_NE(on_old.at(0).moves, on_new.at(0).moves) << "the two networks play alike";

  GameRunnerOptions options = quick(0, 6, 2);  // no game limit: a stop ends it
  std::mutex mutex;
  std::vector<std::pair<std::uint64_t, double>> retired;
  std::atomic<bool> retired_old{false};
  options.on_retired = [&](std::uint64_t version, double overlap) {
    std::lock_guard lock(mutex);
    retired.emplace_back(version, overlap);
    retired_old = true;
  };
  GameRunner runner(Network{evaluator(kOldSeed), kOld}, options);
  std::atomic<bool> stop{false};
  std::vector<std::pair<record::GameRecord, std::uint64_t>> games;
  std::size_t old_after_switch = 0, old_after_retired = 0, new_games = 0;
  int in_play_at_switch = 0;
  bool switched = false;
  runner.play(
      [&](record::GameRecord&& r, std::uint64_t version) {
        if (version == kOld && switched) ++old_after_switch;
        if (version == kOld && retired_old) ++old_after_retired;
        if (version == kNew) ++new_games;
        games.emplace_back(std::move(r), version);
        if (!switched && games.size() == 6) {
          runner.switch_to(Network{evaluator(kNewSeed), kNew});
          switched = true;
          in_play_at_switch = runner.networks_in_play();
        }
        if (retired_old && new_games >= 10) stop = true;
      },
      &stop);

  ASSERT_TRUE(switched);
  EXPECT_EQ(in_play_at_switch, 2) << "games were in progress on the old network";
  EXPECT_GT(old_after_switch, 0u) << "no game in progress finished on the old network";
  EXPECT_EQ(old_after_retired, 0u);
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(retired.size(), 1u);
    EXPECT_EQ(retired[0].first, kOld);
    EXPECT_GT(retired[0].second, 0.0);
  }
  EXPECT_EQ(runner.networks_in_play(), 1);
  EXPECT_EQ(runner.version(), kNew);

  std::uint64_t last_old = 0, first_new = ~0ull;
  for (const auto& [game, version] : games) {
    ASSERT_LT(game.index, kReference);
    const auto& expected = version == kOld ? on_old : on_new;
    ASSERT_TRUE(version == kOld || version == kNew) << version;
    EXPECT_EQ(game, expected.at(game.index))
        << "game " << game.index << " is not the game version " << version << " plays";
    if (version == kOld) last_old = std::max(last_old, game.index);
    if (version == kNew) first_new = std::min(first_new, game.index);
  }
  EXPECT_LT(last_old, first_new) << "a game started on the old network after the switch";

  const RunnerStats stats = runner.stats();
  EXPECT_EQ(stats.games, games.size());
  // No slot waited for the switch: every slot had a game in every round.
  EXPECT_EQ(stats.idle_slot_seconds, 0.0);
  EXPECT_GE(stats.abandoned, 1u);
  EXPECT_LE(stats.abandoned, 6u);
}

TEST(GameRunnerSwitch, WithNothingInProgressTheOldNetworkRetiresAtOnce) {
  GameRunnerOptions options = quick(3, 2, 1);
  std::vector<std::pair<std::uint64_t, double>> retired;
  options.on_retired = [&](std::uint64_t version, double overlap) {
    retired.emplace_back(version, overlap);
  };
  auto first = evaluator(kOldSeed);
  std::weak_ptr<nn::BatchEvaluator> held = first;
  GameRunner runner(Network{std::move(first), kOld}, options);
  runner.switch_to(Network{evaluator(kNewSeed), kNew});
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_EQ(retired[0], std::make_pair(kOld, 0.0));
  EXPECT_TRUE(held.expired()) << "the replaced evaluator is still held";
  EXPECT_EQ(runner.networks_in_play(), 1);
  std::vector<std::uint64_t> versions;
  runner.play([&](record::GameRecord&&, std::uint64_t version) { versions.push_back(version); });
  EXPECT_EQ(versions, std::vector<std::uint64_t>(3, kNew));
  EXPECT_THROW(runner.switch_to(Network{nullptr, 3}), Error);
  EXPECT_THROW(GameRunner(Network{nullptr, 3}, options), Error);
}

// The drain, kept for one network in play at a time: play() returns once the
// games in progress finished; the switch then retires the old network at once
// and the next play() is all on the new one. The slots idled meanwhile.
TEST(GameRunnerSwitch, DrainThenSwitch) {
  GameRunnerOptions options = quick(0, 4, 2);
  std::vector<std::uint64_t> retired;
  options.on_retired = [&](std::uint64_t version, double) { retired.push_back(version); };
  GameRunner runner(Network{evaluator(kOldSeed), kOld}, options);
  std::atomic<bool> drain{false}, stop{false};
  std::uint64_t old_games = 0;
  runner.play(
      [&](record::GameRecord&&, std::uint64_t version) {
        EXPECT_EQ(version, kOld);
        if (++old_games == 3) drain = true;
      },
      &stop, &drain);
  EXPECT_EQ(runner.stats().abandoned, 0u);
  runner.switch_to(Network{evaluator(kNewSeed), kNew});
  EXPECT_EQ(retired, std::vector<std::uint64_t>{kOld});
  drain = false;
  std::uint64_t new_games = 0;
  runner.play(
      [&](record::GameRecord&&, std::uint64_t version) {
        EXPECT_EQ(version, kNew);
        if (++new_games == 2) stop = true;
      },
      &stop, &drain);
  EXPECT_GE(new_games, 2u);
  EXPECT_GT(runner.stats().idle_slot_seconds, 0.0);
}

class FailingBackend : public nn::InferenceBackend {
 public:
  void forward(std::span<const nn::InputPlanes>, std::span<float>, std::span<nn::Wdl>) override {
    throw Error("device lost");
  }
  std::string describe() const override { return "failing"; }
};

// A network that fails while another is in play: the failure reaches the
// caller (whichever thread evaluated it), and the games left are abandoned.
TEST(GameRunnerSwitch, AFailureOfEitherNetworkReachesTheCaller) {
  GameRunnerOptions options = quick(0, 6, 2);
  GameRunner runner(Network{evaluator(kOldSeed), kOld}, options);
  bool switched = false;
  EXPECT_THROW(runner.play([&](record::GameRecord&&, std::uint64_t) {
    if (switched) return;
    switched = true;
    runner.switch_to(Network{std::make_shared<nn::BatchEvaluator>(
                                 std::make_shared<FailingBackend>(), nn::BatchEvaluatorOptions{}),
                             kNew});
  }),
               Error);
  EXPECT_TRUE(switched);
  EXPECT_GE(runner.stats().abandoned, 1u);
  EXPECT_EQ(runner.networks_in_play(), 1) << "the old network was not retired";
}

}  // namespace
}  // namespace chessrl::selfplay
