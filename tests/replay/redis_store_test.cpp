// RedisReplayStore against a real redis-server (chessrl/replay/redis_server.h),
// one server per test, on a free loopback port.
#include "chessrl/replay/redis_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../support/refusing_port.h"
#include "chessrl/harness/redis_server.h"
#include "redis_test_util.h"

namespace chessrl::replay {
namespace {

using namespace std::chrono_literals;
using chessrl::harness::RedisServer;
using Clock = std::chrono::steady_clock;

using namespace chessrl::replay::redis_test;

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = harness::RedisServer::start(); }
  std::unique_ptr<harness::RedisServer> server_;
};

TEST_F(RedisStoreTest, PingAnswers) {
  RedisReplayStore store(options_for(*server_));
  auto pong = store.ping();
  EXPECT_TRUE(pong.ok()) << pong.error();
}

TEST_F(RedisStoreTest, ServerInfoReportsMemoryAndPersistence) {
  RedisReplayStore store(options_for(*server_));
  push_ok(store, {game("a", 5)});
  server_->cli({"CONFIG", "SET", "maxmemory", "104857600"});
  auto info = store.server_info();
  ASSERT_TRUE(info.ok()) << info.error();
  ASSERT_TRUE(info->has_value());
  const StoreServerInfo& i = **info;
  EXPECT_GT(i.used_memory_bytes, 100'000u);  // an empty Redis already uses ~1 MB
  EXPECT_EQ(i.max_memory_bytes, 104'857'600u);
  EXPECT_TRUE(i.aof_enabled);  // the test server runs with appendonly yes
  EXPECT_TRUE(i.aof_ok);
  EXPECT_TRUE(i.rdb_ok);
  EXPECT_GT(i.changes_since_save, 0u);  // the push; the test server never snapshots
  EXPECT_GT(i.last_save_unix, 1'600'000'000);

  harness::RedisServer::Options no_aof;
  no_aof.appendonly = false;
  auto plain = harness::RedisServer::start(no_aof);
  RedisOptions plain_options = options_for(*plain);
  plain_options.allow_unpersisted = true;  // refused otherwise (redis_ack_test)
  RedisReplayStore plain_store(plain_options);
  auto plain_info = plain_store.server_info();
  ASSERT_TRUE(plain_info.ok()) << plain_info.error();
  EXPECT_FALSE((*plain_info)->aof_enabled);
}

TEST(RedisInfoParse, ReadsTheFieldsAndNamesWhatIsMissing) {
  const std::string info =
      "# Memory\r\nused_memory:1234\r\nused_memory_human:1.21K\r\nmaxmemory:0\r\n"
      "\n# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:7\r\n"
      "rdb_last_save_time:1700000000\r\nrdb_last_bgsave_status:err\r\naof_enabled:1\r\n"
      "aof_last_bgrewrite_status:ok\r\naof_last_write_status:ok\r\n";
  auto parsed = parse_redis_info(info);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->used_memory_bytes, 1234u);
  EXPECT_EQ(parsed->max_memory_bytes, 0u);
  EXPECT_EQ(parsed->changes_since_save, 7u);
  EXPECT_EQ(parsed->last_save_unix, 1'700'000'000);
  EXPECT_FALSE(parsed->rdb_ok);
  EXPECT_TRUE(parsed->aof_ok);
  EXPECT_TRUE(parsed->aof_enabled);

  std::string no_memory = info;
  no_memory.replace(no_memory.find("used_memory:"), 12, "used_memorx:");
  auto missing = parse_redis_info(no_memory);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "INFO has no used_memory");

  std::string bad = info;
  bad.replace(bad.find("maxmemory:0"), 11, "maxmemory:x");
  auto garbled = parse_redis_info(bad);
  ASSERT_FALSE(garbled.ok());
  EXPECT_EQ(garbled.error(), "INFO maxmemory is not a number: x");
}

TEST_F(RedisStoreTest, PushStoresGamesAndStatsCountThem) {
  RedisReplayStore store(options_for(*server_));
  auto statuses = push_ok(store, {game("a", 5), game("b", 7), game("c", 0)});
  EXPECT_EQ(statuses, std::vector<PushStatus>(3, PushStatus::kStored));
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 2u);  // "c" has no positions: counted, not kept
  EXPECT_EQ(stats->positions, 12u);
  EXPECT_EQ(stats->games_total, 3u);
  EXPECT_EQ(stats->positions_total, 12u);
  EXPECT_EQ(stats->capacity, 50'000u);  // RedisOptions' window: chessrl-replay's default
  EXPECT_EQ(server_->cli({"GET", "t:pos:0"}), "a/0");
  EXPECT_EQ(server_->cli({"GET", "t:pos:11"}), "b/6");
  EXPECT_EQ(server_->cli({"LRANGE", "t:window", "0", "-1"}), "0 5 a\n5 7 b");
  EXPECT_EQ(server_->cli({"EXISTS", "t:game:c"}), "0");
  EXPECT_EQ(server_->cli({"TTL", "t:game:a"}), "-1");
}

TEST_F(RedisStoreTest, SameIdIsStoredOnceAcrossAndWithinCalls) {
  RedisReplayStore store(options_for(*server_));
  EXPECT_EQ(push_ok(store, {game("g1", 4)}), std::vector{PushStatus::kStored});
  EXPECT_EQ(push_ok(store, {game("g1", 4), game("g2", 3), game("g2", 3)}),
            (std::vector{PushStatus::kDuplicate, PushStatus::kStored, PushStatus::kDuplicate}));
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 2u);
  EXPECT_EQ(stats->positions, 7u);
  EXPECT_EQ(stats->games_total, 2u);
}

TEST_F(RedisStoreTest, EvictsOldestGamesBeyondCapacity) {
  RedisOptions options = options_for(*server_);
  options.window_positions = 100;
  RedisReplayStore store(options);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(push_ok(store, {game("g" + std::to_string(i), 30)}),
              std::vector{PushStatus::kStored});
    auto stats = store.stats();
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_LE(stats->positions, 100u);
  }
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 3u);  // g7, g8, g9
  EXPECT_EQ(stats->positions, 90u);
  EXPECT_EQ(stats->games_total, 10u);
  EXPECT_EQ(stats->positions_total, 300u);
  EXPECT_EQ(stats->capacity, 100u);
  EXPECT_EQ(server_->cli({"LRANGE", "t:window", "0", "-1"}), "210 30 g7\n240 30 g8\n270 30 g9");
  EXPECT_EQ(server_->cli({"GET", "t:pos:first"}), "210");
  // The evicted positions are gone: 90 positions, 6 game markers (the
  // window's 3 and those of the last 3 evicted, g4..g6), and pos:next,
  // pos:first, window, evicted, stats.
  EXPECT_EQ(server_->cli({"EXISTS", "t:pos:0", "t:pos:209"}), "0");
  EXPECT_EQ(server_->cli({"EXISTS", "t:pos:210", "t:pos:299"}), "2");
  EXPECT_EQ(server_->cli({"DBSIZE"}), "101");
  EXPECT_EQ(server_->cli({"LRANGE", "t:evicted", "0", "-1"}), "g4\ng5\ng6");
  // A lately evicted game's marker expires later; the window's do not.
  const long ttl = std::stol(server_->cli({"TTL", "t:game:g6"}));
  EXPECT_GT(ttl, 7 * 24 * 3600 - 60);
  EXPECT_LE(ttl, 7 * 24 * 3600);
  EXPECT_EQ(server_->cli({"TTL", "t:game:g9"}), "-1");
  EXPECT_EQ(server_->cli({"EXISTS", "t:game:g3"}), "0");
  // So a late retry of a lately evicted game is still a duplicate.
  EXPECT_EQ(push_ok(store, {game("g6", 30)}), std::vector{PushStatus::kDuplicate});
  // Samples come from the window only.
  auto sampled = store.sample(2000, 7);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  EXPECT_EQ(sampled->window_positions, 90u);
  ASSERT_EQ(sampled->positions.size(), 2000u);
  for (const std::string& position : sampled->positions) {
    ASSERT_TRUE(position.starts_with("g7/") || position.starts_with("g8/") ||
                position.starts_with("g9/"))
        << position;
  }
}

TEST_F(RedisStoreTest, SampleIsUniformOverTheWindow) {
  RedisReplayStore store(options_for(*server_));
  std::vector<StoredGame> games;
  for (int i = 0; i < 10; ++i) games.push_back(game("u" + std::to_string(i), 5));  // 50 blobs
  push_ok(store, games);
  constexpr std::size_t kDraws = 50'000;
  auto sampled = store.sample(kDraws, 20240601);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  ASSERT_EQ(sampled->positions.size(), kDraws);
  EXPECT_EQ(sampled->window_positions, 50u);
  std::map<std::string, int> counts;
  for (const std::string& position : sampled->positions) ++counts[position];
  ASSERT_EQ(counts.size(), 50u);
  const double expected = static_cast<double>(kDraws) / 50.0;
  double chi_square = 0;
  for (const auto& [position, count] : counts) {
    chi_square += (count - expected) * (count - expected) / expected;
  }
  // 85.35 is the 99.9% quantile of chi-square with 49 degrees of freedom: a
  // uniform sampler exceeds it for 1 seed in 1000, and the seed is fixed, so
  // the test is deterministic; a biased one (say the first position drawn
  // twice as often) lands far above it.
  EXPECT_LT(chi_square, 85.35);
}

TEST_F(RedisStoreTest, SameSeedSameSample) {
  RedisReplayStore store(options_for(*server_));
  push_ok(store, {game("s1", 40), game("s2", 40)});
  auto a = store.sample(500, 99);
  auto b = store.sample(500, 99);
  auto c = store.sample(500, 100);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->positions, b->positions);
  EXPECT_NE(a->positions, c->positions);
  // Seeds that differ only in their high bits differ too (the seed is mixed
  // before Redis's 31-bit seed).
  auto d = store.sample(500, 99 + (std::uint64_t{1} << 40));
  ASSERT_TRUE(d.ok());
  EXPECT_NE(a->positions, d->positions);
}

TEST_F(RedisStoreTest, EmptyWindowSamplesNothing) {
  RedisReplayStore store(options_for(*server_));
  auto sampled = store.sample(10, 1);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  EXPECT_TRUE(sampled->positions.empty());
  EXPECT_EQ(sampled->window_positions, 0u);
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 0u);
  EXPECT_EQ(stats->positions, 0u);
  auto none = store.push({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(RedisStoreTest, RefusesHugeSamples) {
  RedisReplayStore store(options_for(*server_));
  auto sampled = store.sample(1'000'001, 1);
  ASSERT_FALSE(sampled.ok());
  EXPECT_NE(sampled.error().find("1000001"), std::string::npos) << sampled.error();
}

TEST_F(RedisStoreTest, WrongPasswordIsAnAuthError) {
  RedisOptions options = options_for(*server_);
  options.password = "not-the-password";
  RedisReplayStore store(options);
  auto first = store.ping();
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.error().find("AUTH"), std::string::npos) << first.error();
  EXPECT_NE(first.error().find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << first.error();
  // While backing off, the next call says so and still names the cause.
  auto second = store.stats();
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("AUTH"), std::string::npos) << second.error();

  options.password.clear();
  RedisReplayStore no_password(options);
  auto refused = no_password.ping();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("NOAUTH"), std::string::npos) << refused.error();
}

// The helper's password lives in a 0600 redis.conf inside its 0700 directory,
// and neither redis-server's command line nor redis-cli's holds it: a password
// with quotes, a backslash and a space (redis.conf quoting) still works.
TEST(RedisServerHelper, KeepsThePasswordOffCommandLines) {
  harness::RedisServer::Options options;
  options.password = "helper \"q\" \\ " + std::to_string(::getpid()) + "-" +
                     std::to_string(Clock::now().time_since_epoch().count());
  auto server = harness::RedisServer::start(options);
  struct stat st {};
  ASSERT_EQ(::stat(server->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((server->dir() + "/redis.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  RedisReplayStore store(options_for(*server));
  ASSERT_TRUE(store.ping().ok()) << store.ping().error();
  std::atomic<bool> stop{false};
  std::thread cli([&] {
    while (!stop) EXPECT_EQ(server->cli({"PING"}), "PONG");
  });
  std::vector<std::string> holding;
  for (int scan = 0; scan < 50; ++scan) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string pid = it->path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      // read(2), not std::ifstream: a process exiting mid-read fails it (ESRCH),
      // which a stream would throw.
      const int fd = ::open(("/proc/" + pid + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      std::string cmdline;
      char buffer[4096];
      for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        cmdline.append(buffer, std::size_t(n));
      ::close(fd);
      if (cmdline.find(options.password) != std::string::npos) holding.push_back(pid);
    }
  }
  stop = true;
  cli.join();
  EXPECT_TRUE(holding.empty()) << "processes with the password on their command line: "
                               << ::testing::PrintToString(holding);
}

TEST(RedisStoreUnreachable, FailsFastAndBacksOff) {
  const chessrl::testing::RefusingPort nobody;  // no Redis: connects are refused
  RedisOptions options;
  options.port = nobody.port();
  // A backoff far longer than the bound below: a call that waited for it, or a
  // connect that waited at all, would take 30 s; failing fast takes milliseconds,
  // and the 10 s bound leaves room for a machine busy with other tests.
  options.backoff_min = 30s;
  options.backoff_max = 60s;
  RedisReplayStore store(options);
  const auto start = Clock::now();
  auto first = store.push(std::vector{game("x", 1)});
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.error().find("redis 127.0.0.1:" + std::to_string(options.port) + ": connect"),
            std::string::npos)
      << first.error();
  auto second = store.sample(1, 1);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("unavailable (retrying in"), std::string::npos) << second.error();
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST_F(RedisStoreTest, SurvivesRedisRestartWithoutLosingAcknowledgedGames) {
  RedisOptions options = options_for(*server_);
  // Far longer than the outage's bound below, so that bound tells "fails at
  // once" from "waits for the command timeout" with room for a busy machine.
  options.command_timeout = 30s;
  RedisReplayStore store(options);
  std::vector<StoredGame> games;
  for (int i = 0; i < 200; ++i) games.push_back(game("r" + std::to_string(i), 3));
  for (std::size_t i = 0; i < games.size(); i += 10) {
    auto statuses = store.push(std::span(games).subspan(i, 10));
    ASSERT_TRUE(statuses.ok()) << statuses.error();
    ASSERT_EQ(statuses_of(*statuses), std::vector<PushStatus>(10, PushStatus::kStored));
  }

  server_->kill();
  // Every call fails, quickly (well within the command timeout), with the address.
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    auto pushed = store.push(std::vector{game("during-outage", 1)});
    auto sampled = store.sample(10, 1);
    auto stats = store.stats();
    EXPECT_LT(seconds_since(start), 10.0);
    ASSERT_FALSE(pushed.ok());
    ASSERT_FALSE(sampled.ok());
    ASSERT_FALSE(stats.ok());
    EXPECT_NE(stats.error().find("redis 127.0.0.1:" + std::to_string(server_->port())),
              std::string::npos)
        << stats.error();
    std::this_thread::sleep_for(50ms);
  }

  server_->restart();
  ASSERT_TRUE(wait_until_reachable(store, 30s));
  for (std::size_t i = 0; i < games.size(); i += 50) {
    auto statuses = store.push(std::span(games).subspan(i, 50));
    ASSERT_TRUE(statuses.ok()) << statuses.error();
    EXPECT_EQ(statuses_of(*statuses), std::vector<PushStatus>(50, PushStatus::kDuplicate));
  }
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games, 200u);
  EXPECT_EQ(stats->positions, 600u);
  EXPECT_EQ(stats->games_total, 200u);
  auto sampled = store.sample(100, 3);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  EXPECT_EQ(sampled->positions.size(), 100u);
}

TEST_F(RedisStoreTest, WritingToADeadServerIsAnErrorNotASigpipe) {
  RedisReplayStore store(options_for(*server_));
  ASSERT_TRUE(store.ping().ok());
  // SIGPIPE's default action ends the process (the fixture's redis-cli runs
  // set it to ignored, so put the default back): writing megabytes to a
  // killed server raises it unless the store keeps it from this thread.
  const auto previous = std::signal(SIGPIPE, SIG_DFL);
  server_->kill();
  StoredGame big = game("big", 0);
  big.positions.assign(1000, std::string(4096, 'p'));
  auto pushed = store.push(std::vector{big});
  std::signal(SIGPIPE, previous);
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.error().find("redis 127.0.0.1:"), std::string::npos) << pushed.error();
}

TEST_F(RedisStoreTest, CommandTimeoutBoundsAServerThatStopsAnswering) {
  RedisOptions options = options_for(*server_);
  options.command_timeout = 300ms;
  RedisReplayStore store(options);
  ASSERT_TRUE(store.ping().ok());
  std::thread sleeper([&] { server_->cli({"DEBUG", "SLEEP", "3"}); });
  // Calls answer quickly until the server falls asleep (redis-cli may take a
  // while to start on a busy machine: the loop waits up to 30 s for it); the
  // first that does not must give up after the command timeout, 300 ms, not
  // after the server's 3 s of sleep.
  Result<WindowStats> stats = fail("not called");
  double elapsed = 0;
  const auto deadline = Clock::now() + 30s;
  do {
    const auto start = Clock::now();
    stats = store.stats();
    elapsed = seconds_since(start);
    if (stats.ok()) std::this_thread::sleep_for(10ms);
  } while (stats.ok() && Clock::now() < deadline);
  sleeper.join();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().find("no reply within 300 ms"), std::string::npos) << stats.error();
  EXPECT_GE(elapsed, 0.25);
  EXPECT_LT(elapsed, 2.0);
  EXPECT_TRUE(wait_until_reachable(store, 30s));
}

TEST_F(RedisStoreTest, ReloadsScriptsAfterScriptFlush) {
  RedisReplayStore store(options_for(*server_));
  push_ok(store, {game("before", 2)});
  EXPECT_EQ(server_->cli({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(push_ok(store, {game("after", 2), game("before", 2)}),
            (std::vector{PushStatus::kStored, PushStatus::kDuplicate}));
  EXPECT_EQ(server_->cli({"SCRIPT", "FLUSH"}), "OK");
  auto sampled = store.sample(5, 1);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  EXPECT_EQ(sampled->positions.size(), 5u);
}

TEST_F(RedisStoreTest, PublishesAndReadsBackModels) {
  RedisReplayStore store(options_for(*server_));
  auto none = store.latest();
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->has_value());

  const std::string blob = random_blob(3 * (1 << 20) + (1 << 19), 1);  // 3.5 MiB: 4 chunks
  const ModelMeta meta = meta_for(1, blob);
  auto published = store.publish(meta, blob);
  ASSERT_TRUE(published.ok()) << published.error();
  EXPECT_EQ(*published, PublishStatus::kPublished);

  auto read = store.read(1);
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_TRUE(read->has_value());
  EXPECT_TRUE(**read == blob);
  auto info = store.info(1);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_EQ(*info, meta);
  auto latest = store.latest();
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ(*latest, meta);
  EXPECT_EQ(server_->cli({"HGET", "t:model:1", "chunks"}), "4");
  EXPECT_EQ(server_->cli({"EXISTS", "t:model:1:0", "t:model:1:3", "t:model:1:4"}), "2");
  EXPECT_EQ(server_->cli({"TTL", "t:model:1:0"}), "-1");
  EXPECT_EQ(server_->cli({"KEYS", "*tmp*"}), "");

  auto missing_info = store.info(99);
  auto missing_blob = store.read(99);
  ASSERT_TRUE(missing_info.ok() && missing_blob.ok());
  EXPECT_FALSE(missing_info->has_value());
  EXPECT_FALSE(missing_blob->has_value());

  // An empty blob is a version too.
  ASSERT_EQ(store.publish(meta_for(5, ""), "").value_or_throw(), PublishStatus::kPublished);
  EXPECT_EQ(store.read(5).value_or_throw(), std::optional<std::string>(""));
}

TEST_F(RedisStoreTest, LatestOnlyMovesForward) {
  RedisReplayStore store(options_for(*server_));
  const std::string two = random_blob(1000, 2);
  const std::string one = random_blob(1000, 1);
  ASSERT_EQ(store.publish(meta_for(2, two), two).value_or_throw(), PublishStatus::kPublished);
  ASSERT_EQ(store.publish(meta_for(1, one), one).value_or_throw(), PublishStatus::kPublished);
  auto latest = store.latest().value_or_throw();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->version, 2u);
  EXPECT_EQ(store.read(1).value_or_throw(), std::optional<std::string>(one));
  EXPECT_EQ(server_->cli({"ZRANGE", "t:models", "0", "-1"}), "1\n2");
}

TEST_F(RedisStoreTest, RepublishingIsIdempotentAndConflictsAreRefused) {
  RedisReplayStore store(options_for(*server_));
  const std::string blob = random_blob(5000, 3);
  ASSERT_EQ(store.publish(meta_for(1, blob), blob).value_or_throw(), PublishStatus::kPublished);
  EXPECT_EQ(store.publish(meta_for(1, blob), blob).value_or_throw(),
            PublishStatus::kAlreadyPublished);
  const std::string other = random_blob(5000, 4);
  EXPECT_EQ(store.publish(meta_for(1, other), other).value_or_throw(), PublishStatus::kConflict);
  EXPECT_EQ(store.read(1).value_or_throw(), std::optional<std::string>(blob));
  // A meta that does not describe the blob is refused before anything is written.
  ModelMeta wrong = meta_for(2, blob);
  wrong.size_bytes = 1;
  EXPECT_FALSE(store.publish(wrong, blob).ok());
  EXPECT_FALSE(store.info(2).value_or_throw().has_value());
}

TEST_F(RedisStoreTest, BestPointerMovesOnlyToExistingVersions) {
  RedisReplayStore store(options_for(*server_));
  EXPECT_FALSE(store.best().value_or_throw().has_value());
  EXPECT_FALSE(store.set_best(7).value_or_throw());
  const std::string blob = random_blob(100, 5);
  ASSERT_EQ(store.publish(meta_for(1, blob), blob).value_or_throw(), PublishStatus::kPublished);
  EXPECT_FALSE(store.best().value_or_throw().has_value());
  EXPECT_TRUE(store.set_best(1).value_or_throw());
  auto best = store.best().value_or_throw();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(*best, meta_for(1, blob));
}

TEST_F(RedisStoreTest, ConcurrentPushesStoreEachIdOnce) {
  RedisReplayStore store(options_for(*server_));  // 4 connections for 8 threads
  constexpr int kThreads = 8;
  std::atomic<int> stored{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Thread t pushes ids [50t, 50t + 100): each overlaps the next thread's.
      for (int batch = 0; batch < 10; ++batch) {
        std::vector<StoredGame> games;
        for (int k = 0; k < 10; ++k) {
          games.push_back(game("c" + std::to_string(50 * t + 10 * batch + k), 2));
        }
        games.push_back(games.front());  // and a duplicate within the batch
        auto statuses = store.push(games);
        if (!statuses.ok()) {
          ++failures;
          continue;
        }
        for (const PushResult& r : *statuses) stored += r == PushStatus::kStored ? 1 : 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  constexpr int kDistinct = 50 * (kThreads - 1) + 100;
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(stored.load(), kDistinct);
  auto stats = store.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->games_total, static_cast<std::uint64_t>(kDistinct));
  EXPECT_EQ(stats->positions, static_cast<std::uint64_t>(2 * kDistinct));
}

}  // namespace
}  // namespace chessrl::replay
