// Uniform sampling over a large window (120,000 positions in 3,000 games),
// in memory and in a real redis-server: 240,000 draws with fixed seeds,
// counted in 100 buckets of consecutive positions (oldest to newest), must
// pass a chi-square bound that a sampler favouring recent games, or the
// first game of the window, fails (checked below on such samplers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "chessrl/replay/memory_store.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"

namespace chessrl::replay {
namespace {

constexpr std::uint64_t kGames = 3000;
constexpr std::uint64_t kPerGame = 40;
constexpr std::uint64_t kWindow = kGames * kPerGame;  // 120,000 positions
constexpr std::size_t kBuckets = 100;
constexpr std::size_t kDraws = 240'000;  // 2,400 expected per bucket
// Chi-square with 99 degrees of freedom: mean 99, sd 14; P(> 170) < 1e-6.
constexpr double kChiSquareBound = 170;

// Games 0..kGames-1 of kPerGame positions each; a position's text is its index.
std::vector<StoredGame> window_games() {
  std::vector<StoredGame> games(kGames);
  for (std::uint64_t g = 0; g < kGames; ++g) {
    games[g].id = "uniform-" + std::to_string(g);
    for (std::uint64_t p = 0; p < kPerGame; ++p) {
      games[g].positions.push_back(std::to_string(g * kPerGame + p));
    }
  }
  return games;
}

double chi_square(const std::vector<std::uint64_t>& indices) {
  std::vector<double> counts(kBuckets, 0);
  for (const std::uint64_t i : indices) counts[i * kBuckets / kWindow] += 1;
  const double expected = static_cast<double>(indices.size()) / kBuckets;
  double sum = 0;
  for (const double c : counts) sum += (c - expected) * (c - expected) / expected;
  return sum;
}

// kDraws indices drawn by `store` in calls of 10,000 with fixed seeds.
std::vector<std::uint64_t> draw(ReplayStore& store) {
  std::vector<std::uint64_t> out;
  out.reserve(kDraws);
  for (std::uint64_t seed = 1; out.size() < kDraws; ++seed) {
    auto sampled = store.sample(10'000, seed);
    EXPECT_TRUE(sampled.ok()) << sampled.error();
    if (!sampled.ok()) break;
    EXPECT_EQ(sampled->window_positions, kWindow);
    for (const std::string& p : sampled->positions) out.push_back(std::stoull(p));
  }
  return out;
}

void expect_uniform(const std::vector<std::uint64_t>& indices) {
  ASSERT_EQ(indices.size(), kDraws);
  EXPECT_LT(chi_square(indices), kChiSquareBound);
}

TEST(SamplingUniformityTest, TheBoundCatchesBiasedSamplers) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> any(0, kWindow - 1);
  std::uniform_int_distribution<std::uint64_t> recent(kWindow / 2, kWindow - 1);
  std::uniform_int_distribution<std::uint64_t> first_game(0, kPerGame - 1);
  std::vector<std::uint64_t> fair, favours_recent, favours_first;
  std::bernoulli_distribution coin_3(0.03), coin_1(0.01);
  for (std::size_t i = 0; i < kDraws; ++i) {
    fair.push_back(any(rng));
    favours_recent.push_back(coin_3(rng) ? recent(rng) : any(rng));     // newer half 51.5%
    favours_first.push_back(coin_1(rng) ? first_game(rng) : any(rng));  // first game 1%, not 0.03%
  }
  EXPECT_LT(chi_square(fair), kChiSquareBound);
  EXPECT_GT(chi_square(favours_recent), kChiSquareBound);
  EXPECT_GT(chi_square(favours_first), kChiSquareBound);
}

TEST(SamplingUniformityTest, TheMemoryStoreSamplesALargeWindowUniformly) {
  MemoryReplayStore store(kWindow);
  ASSERT_TRUE(store.push(window_games()).ok());
  expect_uniform(draw(store));
}

TEST(SamplingUniformityTest, TheRedisStoreSamplesALargeWindowUniformly) {
  auto server = harness::RedisServer::start();
  RedisOptions options;
  options.port = server->port();
  options.password = server->password();
  options.window_positions = kWindow;
  RedisReplayStore store(options);
  const std::vector<StoredGame> games = window_games();
  for (std::size_t at = 0; at < games.size(); at += 250) {
    const std::size_t n = std::min<std::size_t>(250, games.size() - at);
    ASSERT_TRUE(store.push(std::span(games).subspan(at, n)).ok());
  }
  expect_uniform(draw(store));
}

}  // namespace
}  // namespace chessrl::replay
