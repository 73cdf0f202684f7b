// The in-memory stores: idempotent pushes, the sliding window and its
// eviction order, uniform reproducible sampling, failure injection, and the
// model registry's publish/latest/best, pruning and leases.
#include "chessrl/replay/memory_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <set>
#include <string>
#include <vector>

namespace chessrl::replay {
namespace {

// A game whose positions are "<id>#0", "<id>#1", ...
StoredGame game(const std::string& id, std::size_t positions) {
  StoredGame g;
  g.id = id;
  for (std::size_t i = 0; i < positions; ++i) g.positions.push_back(id + "#" + std::to_string(i));
  return g;
}

std::vector<PushStatus> push(MemoryReplayStore& store, std::vector<StoredGame> games) {
  std::vector<PushStatus> statuses;
  for (const PushResult& result : store.push(games).value_or_throw()) {
    statuses.push_back(result.status);
  }
  return statuses;
}

constexpr PushStatus kStored = PushStatus::kStored;
constexpr PushStatus kDuplicate = PushStatus::kDuplicate;

TEST(MemoryReplayStore, StoresOnceByGameId) {
  MemoryReplayStore store(100);
  EXPECT_EQ(push(store, {game("a", 3), game("b", 2)}), (std::vector{kStored, kStored}));
  EXPECT_EQ(push(store, {game("a", 3), game("c", 1)}), (std::vector{kDuplicate, kStored}));
  // The same id twice in one batch: the second is the duplicate.
  EXPECT_EQ(push(store, {game("d", 4), game("d", 4)}), (std::vector{kStored, kDuplicate}));
  EXPECT_TRUE(push(store, {}).empty());
  const WindowStats s = store.stats().value_or_throw();
  EXPECT_EQ(s.games, 4u);
  EXPECT_EQ(s.positions, 10u);
  EXPECT_EQ(s.capacity, 100u);
  EXPECT_EQ(s.games_total, 4u);
  EXPECT_EQ(s.positions_total, 10u);
}

TEST(MemoryReplayStore, EvictsOldestGamesFirst) {
  MemoryReplayStore store(10);
  push(store, {game("a", 4), game("b", 4)});
  push(store, {game("c", 4)});  // 12 > 10: "a" goes
  WindowStats s = store.stats().value_or_throw();
  EXPECT_EQ(s.games, 2u);
  EXPECT_EQ(s.positions, 8u);
  std::set<std::string> seen;
  for (const std::string& p : store.sample(400, 1).value_or_throw().positions) seen.insert(p);
  EXPECT_EQ(seen, (std::set<std::string>{"b#0", "b#1", "b#2", "b#3", "c#0", "c#1", "c#2", "c#3"}));

  push(store, {game("d", 1), game("e", 5)});  // 14: "b" goes, then 10 fits
  s = store.stats().value_or_throw();
  EXPECT_EQ(s.games, 3u);
  EXPECT_EQ(s.positions, 10u);
  EXPECT_EQ(s.games_total, 5u);
  EXPECT_EQ(s.positions_total, 18u);
  // Ids are remembered after eviction.
  EXPECT_EQ(push(store, {game("a", 4)}), std::vector{kDuplicate});

  // A game bigger than the whole window is stored, then evicted with the rest.
  push(store, {game("huge", 11)});
  s = store.stats().value_or_throw();
  EXPECT_EQ(s.games, 0u);
  EXPECT_EQ(s.positions, 0u);
  EXPECT_EQ(s.games_total, 6u);
  EXPECT_TRUE(store.sample(5, 1).value_or_throw().positions.empty());
  push(store, {game("f", 2)});
  EXPECT_EQ(store.stats().value_or_throw().positions, 2u);
}

TEST(MemoryReplayStore, EmptyWindowSamplesNothing) {
  MemoryReplayStore store(10);
  const SampledPositions s = store.sample(16, 3).value_or_throw();
  EXPECT_TRUE(s.positions.empty());
  EXPECT_EQ(s.window_positions, 0u);
  push(store, {game("a", 2)});
  EXPECT_TRUE(store.sample(0, 3).value_or_throw().positions.empty());
  EXPECT_EQ(store.sample(0, 3).value_or_throw().window_positions, 2u);
}

TEST(MemoryReplayStore, SameSeedSameDraw) {
  MemoryReplayStore store(1000);
  push(store, {game("a", 100), game("b", 50)});
  const SampledPositions first = store.sample(64, 42).value_or_throw();
  EXPECT_EQ(first.positions.size(), 64u);
  EXPECT_EQ(first.window_positions, 150u);
  EXPECT_EQ(store.sample(64, 42).value_or_throw().positions, first.positions);
  EXPECT_NE(store.sample(64, 43).value_or_throw().positions, first.positions);
}

// Uniform over positions, not over games: games of 1, 2, 3 and 4 positions.
TEST(MemoryReplayStore, SamplesUniformlyOverPositions) {
  MemoryReplayStore store(10);
  push(store, {game("a", 1), game("b", 2), game("c", 3), game("d", 4)});
  constexpr int kDraws = 100'000;
  const SampledPositions s = store.sample(kDraws, 2024).value_or_throw();
  ASSERT_EQ(s.positions.size(), static_cast<std::size_t>(kDraws));
  std::map<std::string, int> counts;
  for (const std::string& p : s.positions) ++counts[p];
  ASSERT_EQ(counts.size(), 10u);
  const double expected = kDraws / 10.0;
  double chi2 = 0;
  for (const auto& [position, n] : counts) chi2 += (n - expected) * (n - expected) / expected;
  // 10 cells, 9 degrees of freedom: a uniform sampler exceeds 27.88 with
  // probability 0.001. The seed is fixed, so the test is deterministic; a
  // sampler that picked a game first would give chi2 in the thousands.
  EXPECT_LT(chi2, 27.88);
}

// As Redis does: evicted games' ids are remembered for as many games as the
// window holds, not forever, so memory stays bounded by the window.
TEST(MemoryReplayStore, RemembersEvictedIdsForOneWindowOfGames) {
  MemoryReplayStore store(10);  // five games of 2 positions
  for (int i = 0; i < 20; ++i) push(store, {game("g" + std::to_string(i), 2)});
  // In the window: g15..g19; remembered after eviction: g10..g14.
  EXPECT_EQ(push(store, {game("g19", 2), game("g10", 2)}), (std::vector{kDuplicate, kDuplicate}));
  EXPECT_EQ(push(store, {game("g9", 2)}), std::vector{kStored});
}

// As in Redis: a game without positions is counted and keeps nothing (no
// window entry, no id), so pushing them forever grows nothing.
TEST(MemoryReplayStore, GamesWithoutPositionsKeepNothing) {
  MemoryReplayStore store(10);
  push(store, {game("real", 2)});
  for (int i = 0; i < 500; ++i) EXPECT_EQ(push(store, {game("e" + std::to_string(i), 0)}), std::vector{kStored});
  const WindowStats s = store.stats().value_or_throw();
  EXPECT_EQ(s.games, 1u);
  EXPECT_EQ(s.positions, 2u);
  EXPECT_EQ(s.games_total, 501u);
  EXPECT_EQ(push(store, {game("real", 0)}), std::vector{kDuplicate});
}

TEST(MemoryReplayStore, InjectedFailure) {
  MemoryReplayStore store(10);
  push(store, {game("a", 2)});
  store.set_failure("redis down");
  const std::vector<StoredGame> games = {game("b", 1)};
  auto pushed = store.push(games);
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.error(), "redis down");
  auto sampled = store.sample(1, 1);
  ASSERT_FALSE(sampled.ok());
  EXPECT_EQ(sampled.error(), "redis down");
  ASSERT_FALSE(store.stats().ok());
  store.set_failure("");
  EXPECT_EQ(push(store, {game("b", 1)}), std::vector{kStored});
  EXPECT_EQ(store.stats().value_or_throw().positions, 3u);
}

ModelMeta meta(std::uint64_t version, std::uint32_t crc, std::uint64_t size) {
  ModelMeta m;
  m.version = version;
  m.step = version * 1000;
  m.size_bytes = size;
  m.crc32 = crc;
  m.created_unix_ms = 1'700'000'000'000 + static_cast<std::int64_t>(version);
  m.metadata = {{"arch", "resnet-6x64"}};
  return m;
}

TEST(MemoryModelStore, EmptyRegistry) {
  MemoryModelStore store;
  EXPECT_FALSE(store.latest().value_or_throw().has_value());
  EXPECT_FALSE(store.best().value_or_throw().has_value());
  EXPECT_FALSE(store.info(1).value_or_throw().has_value());
  EXPECT_FALSE(store.read(1).value_or_throw().has_value());
  EXPECT_FALSE(store.set_best(1).value_or_throw());
}

TEST(MemoryModelStore, PublishIsIdempotentAndDetectsConflicts) {
  MemoryModelStore store;
  EXPECT_EQ(store.publish(meta(1, 0xAB, 4), "blob").value_or_throw(), PublishStatus::kPublished);
  EXPECT_EQ(store.publish(meta(1, 0xAB, 4), "blob").value_or_throw(),
            PublishStatus::kAlreadyPublished);
  EXPECT_EQ(store.publish(meta(1, 0xCD, 4), "blib").value_or_throw(), PublishStatus::kConflict);
  EXPECT_EQ(store.publish(meta(1, 0xAB, 5), "blobs").value_or_throw(), PublishStatus::kConflict);
  EXPECT_EQ(*store.read(1).value_or_throw(), "blob");
  EXPECT_EQ(*store.info(1).value_or_throw(), meta(1, 0xAB, 4));
}

TEST(MemoryModelStore, LatestIsTheHighestVersion) {
  MemoryModelStore store;
  ASSERT_EQ(store.publish(meta(3, 3, 2), "v3").value_or_throw(), PublishStatus::kPublished);
  ASSERT_EQ(store.publish(meta(2, 2, 2), "v2").value_or_throw(), PublishStatus::kPublished);
  EXPECT_EQ(store.latest().value_or_throw()->version, 3u);
  ASSERT_EQ(store.publish(meta(7, 7, 2), "v7").value_or_throw(), PublishStatus::kPublished);
  const ModelMeta latest = *store.latest().value_or_throw();
  EXPECT_EQ(latest, meta(7, 7, 2));
  EXPECT_EQ(latest.created_unix_ms, 1'700'000'000'007);
  EXPECT_EQ(*store.read(2).value_or_throw(), "v2");
}

TEST(MemoryModelStore, BestMovesOnlyToKnownVersions) {
  MemoryModelStore store;
  ASSERT_TRUE(store.publish(meta(1, 1, 2), "v1").ok());
  ASSERT_TRUE(store.publish(meta(2, 2, 2), "v2").ok());
  EXPECT_FALSE(store.best().value_or_throw().has_value());
  EXPECT_TRUE(store.set_best(1).value_or_throw());
  EXPECT_EQ(*store.best().value_or_throw(), meta(1, 1, 2));
  EXPECT_FALSE(store.set_best(9).value_or_throw());
  EXPECT_EQ(store.best().value_or_throw()->version, 1u);
  EXPECT_TRUE(store.set_best(2).value_or_throw());
  EXPECT_EQ(store.best().value_or_throw()->version, 2u);
}

// Publishes versions 1..n, each blob "v<i>".
void publish_versions(MemoryModelStore& store, std::uint64_t n) {
  for (std::uint64_t v = 1; v <= n; ++v) {
    const std::string blob = "v" + std::to_string(v);
    ASSERT_EQ(store.publish(meta(v, static_cast<std::uint32_t>(v), blob.size()), blob)
                  .value_or_throw(),
              PublishStatus::kPublished);
  }
}

std::vector<std::uint64_t> kept_versions(MemoryModelStore& store) {
  std::vector<std::uint64_t> kept;
  for (const ModelMeta& m : store.versions_after(0, 100).value_or_throw()) kept.push_back(m.version);
  return kept;
}

TEST(MemoryModelStore, PruneKeepsTheNewestTheBestAndTheLeased) {
  using namespace std::chrono_literals;
  MemoryModelStore store;
  publish_versions(store, 6);
  ASSERT_TRUE(store.set_best(1).value_or_throw());
  ASSERT_TRUE(store.lease(2, 1h).value_or_throw());
  EXPECT_EQ(store.prune(3).value_or_throw(), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(kept_versions(store), (std::vector<std::uint64_t>{1, 2, 4, 5, 6}));
  // A lease of a version that does not exist (or no longer does) is refused.
  EXPECT_FALSE(store.lease(3, 1h).value_or_throw());
  EXPECT_FALSE(store.lease(99, 1h).value_or_throw());
  // Ended (ttl 0): the next prune takes it.
  EXPECT_TRUE(store.lease(2, 0ms).value_or_throw());
  EXPECT_EQ(store.prune(3).value_or_throw(), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(kept_versions(store), (std::vector<std::uint64_t>{1, 4, 5, 6}));
  EXPECT_EQ(store.best().value_or_throw()->version, 1u);
}

TEST(MemoryModelStore, ALeaseExpiresAndCanBeRenewed) {
  using namespace std::chrono_literals;
  MemoryModelStore store;
  publish_versions(store, 4);
  ASSERT_TRUE(store.lease(1, 30ms).value_or_throw());
  ASSERT_TRUE(store.lease(2, 30ms).value_or_throw());
  ASSERT_TRUE(store.lease(2, 1h).value_or_throw());  // renewed before it ended
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(store.prune(2).value_or_throw(), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(kept_versions(store), (std::vector<std::uint64_t>{2, 3, 4}));
  // keep 0 keeps everything, leased or not.
  EXPECT_TRUE(store.prune(0).value_or_throw().empty());
}

TEST(MemoryModelStore, InjectedFailure) {
  MemoryModelStore store;
  ASSERT_TRUE(store.publish(meta(1, 1, 2), "v1").ok());
  store.set_failure("unreachable");
  EXPECT_FALSE(store.publish(meta(2, 2, 2), "v2").ok());
  EXPECT_FALSE(store.latest().ok());
  EXPECT_FALSE(store.info(1).ok());
  EXPECT_FALSE(store.read(1).ok());
  EXPECT_FALSE(store.best().ok());
  ASSERT_FALSE(store.set_best(1).ok());
  EXPECT_EQ(store.set_best(1).error(), "unreachable");
  EXPECT_FALSE(store.lease(1, std::chrono::seconds(1)).ok());
  EXPECT_FALSE(store.prune(1).ok());
  store.set_failure("");
  EXPECT_EQ(store.latest().value_or_throw()->version, 1u);
}

}  // namespace
}  // namespace chessrl::replay
