// What RedisReplayStore promises about acknowledged games and bounded memory,
// against a real redis-server: per-game results when a batch fails partway,
// no acknowledged game lost to a SIGKILL right after the acknowledgement,
// dedup markers bounded by the window, the maxmemory-policy check, and the
// model registry's pruning and leases.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
#include "redis_test_util.h"

namespace chessrl::replay {
namespace {

using namespace chessrl::replay::redis_test;

// The number of keys matching `pattern` (KEYS, fine for a test's few keys).
int count_keys(const harness::RedisServer& server, const std::string& pattern) {
  return std::stoi(server.cli({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", pattern}));
}

// Redis's EXEC does not roll back: when one game's script fails, the games
// before and after it are stored, and the result says so per game.
TEST(RedisStorePush, ABatchThatFailsPartwayReportsEachGame) {
  auto server = harness::RedisServer::start();
  RedisReplayStore store(options_for(*server));
  ASSERT_TRUE(store.ping().ok());
  // Make the script fail for one game only: the default user may no longer
  // touch the dedup marker of "bad-1" (NOPERM inside the script).
  ASSERT_EQ(server->cli({"ACL", "SETUSER", "default", "resetkeys", "~t:pos:*", "~t:window",
                         "~t:evicted", "~t:stats", "~t:game:ok-*"}),
            "OK");
  const std::vector<StoredGame> games = {game("ok-1", 3), game("bad-1", 2), game("ok-2", 4)};
  auto results = store.push(games);
  ASSERT_TRUE(results.ok()) << results.error();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ(statuses_of(*results),
            (std::vector{PushStatus::kStored, PushStatus::kFailed, PushStatus::kStored}));
  EXPECT_NE((*results)[1].error.find("'bad-1'"), std::string::npos) << (*results)[1].error;
  EXPECT_TRUE((*results)[0].error.empty());
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 2u);
  EXPECT_EQ(stats->positions, 7u);

  // Pushing the batch again once Redis takes it stores the failed game only.
  ASSERT_EQ(server->cli({"ACL", "SETUSER", "default", "allkeys"}), "OK");
  EXPECT_EQ(push_ok(store, games),
            (std::vector{PushStatus::kDuplicate, PushStatus::kStored, PushStatus::kDuplicate}));
  EXPECT_EQ(store.stats().value_or_throw().positions, 9u);
}

// A SIGKILL of Redis the moment a push is acknowledged: after a restart on
// the same directory every acknowledged game is there. `always` is what the
// project runs (harness::RedisServer, chessrl local, the chart). `everysec` survives
// this too on a healthy disk (Redis write()s the AOF before it replies; the
// kernel keeps the data when the process dies), so it is not a case here:
// it loses acknowledged games on a node crash, or a kill while a slow fsync
// makes Redis defer its write() (up to 2 s), which a test cannot stage.
class KillAfterAck : public ::testing::TestWithParam<const char*> {};

TEST_P(KillAfterAck, NoAcknowledgedGameIsLost) {
  harness::RedisServer::Options server_options;
  server_options.appendfsync = GetParam();
  auto server = harness::RedisServer::start(server_options);
  ASSERT_EQ(server->cli({"CONFIG", "GET", "appendfsync"}), std::string("appendfsync\n") + GetParam());
  RedisReplayStore store(options_for(*server));
  std::set<std::string> acknowledged;
  int next = 0;
  for (int round = 0; round < 8; ++round) {
    ASSERT_TRUE(wait_until_reachable(store, 5s)) << "round " << round;
    std::vector<StoredGame> games;
    for (int k = 0; k < 50; ++k) games.push_back(game("k" + std::to_string(next++), 4));
    auto results = store.push(games);
    server->kill();  // SIGKILL, the moment the acknowledgement is in
    ASSERT_TRUE(results.ok()) << results.error();
    for (std::size_t k = 0; k < games.size(); ++k) {
      ASSERT_EQ((*results)[k], PushStatus::kStored) << games[k].id;
      acknowledged.insert(games[k].id);
    }
    server->restart();
  }
  ASSERT_TRUE(wait_until_reachable(store, 5s));
  std::vector<StoredGame> all;
  for (const std::string& id : acknowledged) all.push_back(game(id, 4));
  auto again = store.push(all);
  ASSERT_TRUE(again.ok()) << again.error();
  int lost = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    if ((*again)[k] != PushStatus::kDuplicate) {
      ++lost;
      ADD_FAILURE() << all[k].id << " was acknowledged, then lost";
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(store.stats().value_or_throw().games_total, acknowledged.size() + lost);
}

INSTANTIATE_TEST_SUITE_P(ProjectSettings, KillAfterAck, ::testing::Values("always"));

// An evicted game's dedup marker is kept while fewer than a window's worth of
// games were evicted after it, then deleted: markers number at most twice
// the games in the window, however many games went through. A game in the
// window, or evicted lately, is still a duplicate.
TEST(RedisStoreWindow, DedupMarkersAreBoundedByTheWindow) {
  auto server = harness::RedisServer::start();
  RedisOptions options = options_for(*server);
  options.window_positions = 10;  // five games of 2 positions
  RedisReplayStore store(options);
  for (int i = 0; i < 40; ++i) push_ok(store, {game("g" + std::to_string(i), 2)});
  EXPECT_EQ(store.stats().value_or_throw().games, 5u);
  EXPECT_LE(count_keys(*server, "t:game:*"), 10);
  // In the window: g35..g39; remembered after eviction: g30..g34.
  EXPECT_EQ(push_ok(store, {game("g39", 2), game("g30", 2)}),
            (std::vector{PushStatus::kDuplicate, PushStatus::kDuplicate}));
  // Long gone: stored again (its marker was dropped with the window).
  EXPECT_EQ(push_ok(store, {game("g3", 2)}), std::vector{PushStatus::kStored});
  EXPECT_LE(count_keys(*server, "t:game:*"), 10);
}

// Games without positions (a draw at the move limit before any target, or a
// hostile client pushing them forever) are counted and keep nothing: no window
// entry, no marker. Before, each kept both and eviction, which runs on
// positions, never removed them: Redis grew without bound.
TEST(RedisStoreWindow, GamesWithoutPositionsKeepNothing) {
  auto server = harness::RedisServer::start();
  RedisOptions options = options_for(*server);
  options.window_positions = 10;
  RedisReplayStore store(options);
  push_ok(store, {game("real", 2)});
  const int keys_before = count_keys(*server, "t:*");
  std::vector<StoredGame> empties;
  for (int i = 0; i < 500; ++i) empties.push_back(game("empty" + std::to_string(i), 0));
  for (PushStatus s : push_ok(store, empties)) EXPECT_EQ(s, PushStatus::kStored);
  const WindowStats stats = store.stats().value_or_throw();
  EXPECT_EQ(stats.games, 1u);
  EXPECT_EQ(stats.positions, 2u);
  EXPECT_EQ(stats.games_total, 501u);
  EXPECT_EQ(count_keys(*server, "t:*"), keys_before);
  EXPECT_EQ(count_keys(*server, "t:game:*"), 1);
  // A real game's id is still a duplicate, even sent as an empty one.
  EXPECT_EQ(push_ok(store, {game("real", 0)}), std::vector{PushStatus::kDuplicate});
}

// allkeys-* may evict any key, the window's too (Sample would then fail and
// new positions overwrite others): the store refuses to work over it, with a
// message naming the policy. noeviction and volatile-* are fine (no window key
// has a TTL).
TEST(RedisStorePolicy, RefusesAPolicyThatCanEvictTheWindow) {
  auto server = harness::RedisServer::start();
  ASSERT_EQ(server->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}), "OK");
  RedisReplayStore store(options_for(*server));
  auto pong = store.ping();
  ASSERT_FALSE(pong.ok());
  EXPECT_NE(pong.error().find("maxmemory-policy allkeys-lru"), std::string::npos) << pong.error();
  EXPECT_EQ(store.refused_eviction_policy(), "allkeys-lru");
  auto pushed = store.push(std::vector{game("a", 1)});
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.error().find("allkeys-lru"), std::string::npos) << pushed.error();

  for (const char* policy : {"noeviction", "volatile-lru"}) {
    ASSERT_EQ(server->cli({"CONFIG", "SET", "maxmemory-policy", policy}), "OK");
    EXPECT_TRUE(wait_until_reachable(store, 3s)) << policy;
    EXPECT_EQ(store.refused_eviction_policy(), "") << policy;
  }
  EXPECT_FALSE(eviction_policy_keeps_window("allkeys-random"));
  EXPECT_FALSE(eviction_policy_keeps_window("allkeys-lfu"));
  EXPECT_TRUE(eviction_policy_keeps_window("volatile-ttl"));
  EXPECT_TRUE(eviction_policy_keeps_window("noeviction"));
}

// A Redis whose CONFIG command is renamed away: the policy cannot be read,
// which is not a reason to stop (a warning on stderr).
TEST(RedisStorePolicy, WorksWhenConfigIsDisabled) {
  harness::RedisServer::Options server_options;
  server_options.extra_config = {"rename-command CONFIG \"\""};
  auto server = harness::RedisServer::start(server_options);
  RedisReplayStore store(options_for(*server));
  auto pong = store.ping();
  EXPECT_TRUE(pong.ok()) << pong.error();
  EXPECT_EQ(push_ok(store, {game("a", 2)}), std::vector{PushStatus::kStored});
}

// The registry keeps the newest `keep` versions and the best; the others go,
// chunks and all, and read as absent.
TEST(RedisRegistry, PruneKeepsTheNewestVersionsAndTheBest) {
  auto server = harness::RedisServer::start();
  RedisReplayStore store(options_for(*server));
  std::vector<std::string> blobs;
  for (std::uint64_t v = 1; v <= 6; ++v) {
    blobs.push_back(random_blob((1 << 20) + 10, v));  // two chunks each
    ASSERT_EQ(store.publish(meta_for(v, blobs.back()), blobs.back()).value_or_throw(),
              PublishStatus::kPublished);
  }
  ASSERT_TRUE(store.set_best(2).value_or_throw());
  EXPECT_EQ(count_keys(*server, "t:model:*"), 6 * 3 + 2);  // hash + 2 chunks; latest, best
  auto pruned = store.prune(3);
  ASSERT_TRUE(pruned.ok()) << pruned.error();
  EXPECT_EQ(*pruned, (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(count_keys(*server, "t:model:*"), 4 * 3 + 2);
  EXPECT_FALSE(store.info(1).value_or_throw().has_value());
  EXPECT_FALSE(store.read(3).value_or_throw().has_value());
  EXPECT_EQ(store.read(2).value_or_throw().value(), blobs[1]);
  EXPECT_EQ(store.read(6).value_or_throw().value(), blobs[5]);
  std::vector<std::uint64_t> kept;
  for (const ModelMeta& meta : store.versions_after(0, 100).value_or_throw()) {
    kept.push_back(meta.version);
  }
  EXPECT_EQ(kept, (std::vector<std::uint64_t>{2, 4, 5, 6}));
  EXPECT_EQ(store.best().value_or_throw()->version, 2u);
  EXPECT_EQ(store.latest().value_or_throw()->version, 6u);
  // Nothing more to prune; 0 keeps everything.
  EXPECT_TRUE(store.prune(3).value_or_throw().empty());
  EXPECT_TRUE(store.prune(0).value_or_throw().empty());
}

// A leased version outlives --keep-models until its lease ends (by Redis's
// clock), is ended by a ttl of 0, and a lease of a version that does not exist
// is refused; the best is kept throughout, and ended leases are forgotten.
TEST(RedisRegistry, PruneKeepsLeasedVersionsUntilTheLeaseEnds) {
  auto server = harness::RedisServer::start();
  RedisReplayStore store(options_for(*server));
  for (std::uint64_t v = 1; v <= 6; ++v) {
    const std::string blob = random_blob(100, v);
    ASSERT_EQ(store.publish(meta_for(v, blob), blob).value_or_throw(), PublishStatus::kPublished);
  }
  auto versions = [&] {
    std::vector<std::uint64_t> kept;
    for (const ModelMeta& meta : store.versions_after(0, 100).value_or_throw())
      kept.push_back(meta.version);
    return kept;
  };
  auto leases = [&] { return std::stoi(server->cli({"ZCARD", "t:model:leases"})); };
  ASSERT_TRUE(store.set_best(1).value_or_throw());
  ASSERT_TRUE(store.lease(2, 1h).value_or_throw());
  ASSERT_TRUE(store.lease(3, 300ms).value_or_throw());
  EXPECT_FALSE(store.lease(42, 1h).value_or_throw());
  EXPECT_EQ(leases(), 2);

  EXPECT_EQ(store.prune(2).value_or_throw(), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(versions(), (std::vector<std::uint64_t>{1, 2, 3, 5, 6}));
  EXPECT_EQ(store.read(2).value_or_throw().value(), random_blob(100, 2));

  std::this_thread::sleep_for(400ms);  // v3's lease ends
  EXPECT_EQ(store.prune(2).value_or_throw(), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(leases(), 1);  // the ended one is forgotten
  EXPECT_FALSE(store.lease(3, 1h).value_or_throw());  // pruned: no lease

  ASSERT_TRUE(store.lease(2, 0ms).value_or_throw());  // ended early
  EXPECT_EQ(leases(), 0);
  EXPECT_EQ(store.prune(2).value_or_throw(), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(versions(), (std::vector<std::uint64_t>{1, 5, 6}));
  EXPECT_EQ(store.best().value_or_throw()->version, 1u);
  EXPECT_EQ(store.latest().value_or_throw()->version, 6u);
}

}  // namespace
}  // namespace chessrl::replay
