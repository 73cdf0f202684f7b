// What an acknowledgement of RedisReplayStore promises beyond one Redis
// answering, against real redis-servers on free loopback ports: with
// ack_replicas, a write is acknowledged only once a replica (a second
// redis-server, replicaof the first) has it, and a write it did not confirm
// fails, is found a duplicate on retry and counted once; a Redis without an
// append-only file is refused unless allow_unpersisted says that loss is
// acceptable; ack_fsync needs appendfsync always or WAITAOF (Redis 7.2+).
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
#include "redis_test_util.h"

namespace chessrl::replay {
namespace {

using namespace chessrl::replay::redis_test;

// The value of `field` in an INFO reply's text ("" when absent).
std::string info_field(const std::string& info, const std::string& field) {
  const std::string key = field + ":";
  std::size_t at = info.rfind("\n" + key);
  at = at == std::string::npos ? (info.rfind(key, 0) == 0 ? 0 : std::string::npos) : at + 1;
  if (at == std::string::npos) return "";
  const std::size_t begin = at + key.size();
  const std::size_t end = info.find_first_of("\r\n", begin);
  return info.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Waits (up to 10 s) until `replica` is in step with `primary`: linked, not
// syncing or loading, its first AOF written (a replica with AOF rewrites it
// after a full sync, and is slow to confirm meanwhile), at the primary's
// replication offset, and counted online by the primary.
bool wait_for_replica(const harness::RedisServer& primary, const harness::RedisServer& replica) {
  const auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    const std::string theirs = replica.cli({"INFO", "replication"}) + "\n" +
                               replica.cli({"INFO", "persistence"});
    const std::string ours = primary.cli({"INFO", "replication"});
    if (info_field(theirs, "master_link_status") == "up" &&
        info_field(theirs, "master_sync_in_progress") == "0" &&
        info_field(theirs, "loading") == "0" &&
        info_field(theirs, "aof_rewrite_in_progress") == "0" &&
        info_field(theirs, "aof_rewrite_scheduled") == "0" &&
        info_field(theirs, "slave_repl_offset") == info_field(ours, "master_repl_offset") &&
        info_field(ours, "connected_slaves") == "1" &&
        ours.find("state=online") != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Waits until `server` has written its first AOF (after appendonly was turned
// on, or a replica's full sync): until then Redis ignores SIGTERM ("Writing
// initial AOF, can't exit"), and the server's destructor would wait 5 s.
void wait_for_aof_rewrite(const harness::RedisServer& server) {
  const auto deadline = Clock::now() + 10s;
  while (info_field(server.cli({"INFO", "persistence"}), "aof_rewrite_in_progress") != "0" &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
}

// A test server whose replicas sync at once (Redis waits 5 s by default for
// more replicas to share a diskless sync).
std::unique_ptr<harness::RedisServer> start_primary() {
  harness::RedisServer::Options options;
  options.extra_config = {"repl-diskless-sync-delay 0"};
  return harness::RedisServer::start(options);
}

// A second redis-server replicating `primary`; returns once it is in step
// (wait_for_replica). Without an AOF of its own: its persistence is beside
// the point here, and with appendfsync always it would fsync before each
// confirmation, slow on a busy disk.
std::unique_ptr<harness::RedisServer> start_replica(const harness::RedisServer& primary) {
  harness::RedisServer::Options options;
  options.appendonly = false;
  options.extra_config = {"replicaof 127.0.0.1 " + std::to_string(primary.port()),
                          "masterauth \"" + primary.password() + "\""};
  auto replica = harness::RedisServer::start(options);
  EXPECT_TRUE(wait_for_replica(primary, *replica))
      << primary.cli({"INFO", "replication"}) << replica->cli({"INFO", "replication"});
  return replica;
}

// SIGSTOP of a redis-server for a scope: its connections stay open, it
// answers nothing (a replica that has fallen behind). SIGCONT at the end.
class Frozen {
 public:
  explicit Frozen(const harness::RedisServer& server)
      : pid_(std::stoi(info_field(server.cli({"INFO", "server"}), "process_id"))) {
    ::kill(pid_, SIGSTOP);
  }
  ~Frozen() { thaw(); }
  void thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  int pid_;
};

// How many of `games` the replica holds (their dedup markers).
int held_by(const harness::RedisServer& replica, const std::vector<StoredGame>& games) {
  std::vector<std::string> exists = {"EXISTS"};
  for (const StoredGame& g : games) exists.push_back("t:game:" + g.id);
  return std::stoi(replica.cli(exists));
}

TEST(RedisAckReplicas, AcknowledgesOnlyOnceTheReplicaHasTheWrite) {
  auto primary = start_primary();
  auto replica = start_replica(*primary);
  RedisOptions options = options_for(*primary);
  options.ack_replicas = 1;
  options.ack_timeout = 5000ms;
  RedisReplayStore store(options);
  const std::vector<StoredGame> first = {game("r1", 3), game("r2", 2)};
  EXPECT_EQ(push_ok(store, first), (std::vector{PushStatus::kStored, PushStatus::kStored}));
  EXPECT_EQ(held_by(*replica, first), 2);

  // A replica that answers nothing holds the acknowledgement back.
  Frozen frozen(*replica);
  const auto start = Clock::now();
  const std::vector<StoredGame> second = {game("r3", 4)};
  auto pushed = std::async(std::launch::async, [&] { return store.push(second); });
  EXPECT_EQ(pushed.wait_for(500ms), std::future_status::timeout)
      << "acknowledged while the replica was stopped";
  frozen.thaw();
  auto results = pushed.get();
  ASSERT_TRUE(results.ok()) << results.error();
  EXPECT_EQ(statuses_of(*results), std::vector{PushStatus::kStored});
  EXPECT_GE(seconds_since(start), 0.5);
  EXPECT_EQ(held_by(*replica, second), 1);

  // A model publish and SetBest wait the same way.
  const std::string blob = random_blob(3000, 7);
  EXPECT_EQ(store.publish(meta_for(1, blob), blob).value_or_throw(), PublishStatus::kPublished);
  EXPECT_TRUE(store.set_best(1).value_or_throw());
  EXPECT_EQ(replica->cli({"GET", "t:model:best"}), "1");
}

// The replica is gone: the push fails, naming how many replicas confirmed,
// and nothing is acknowledged although the games are written. Pushed again
// once the replica is back, each game is a duplicate: stored and counted once.
TEST(RedisAckReplicas, AnUnconfirmedPushFailsAndItsRetryStoresEachGameOnce) {
  auto primary = start_primary();
  auto replica = start_replica(*primary);
  RedisOptions options = options_for(*primary);
  options.ack_replicas = 1;
  options.ack_timeout = 300ms;
  RedisReplayStore store(options);
  ASSERT_TRUE(store.ping().ok());
  replica->kill();
  const std::vector<StoredGame> games = {game("u1", 3), game("u2", 2), game("u3", 5)};
  auto failed = store.push(games);
  ASSERT_FALSE(failed.ok()) << "acknowledged without the replica";
  EXPECT_NE(failed.error().find("only 0 of 1 replicas confirmed it within 300 ms"),
            std::string::npos)
      << failed.error();
  EXPECT_NE(failed.error().find("not acknowledged"), std::string::npos) << failed.error();
  // Retried while the replica is still gone: duplicates now, still not acknowledged.
  auto again = store.push(games);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("0 of 1 replicas"), std::string::npos) << again.error();

  replica->restart();
  ASSERT_TRUE(wait_for_replica(*primary, *replica));
  // The retry, with time to spare for a busy machine.
  options.ack_timeout = 5000ms;
  RedisReplayStore retrying(options);
  EXPECT_EQ(push_ok(retrying, games),
            (std::vector{PushStatus::kDuplicate, PushStatus::kDuplicate, PushStatus::kDuplicate}));
  EXPECT_EQ(held_by(*replica, games), 3);
  const WindowStats stats = retrying.stats().value_or_throw();
  EXPECT_EQ(stats.games_total, 3u);
  EXPECT_EQ(stats.games, 3u);
  EXPECT_EQ(stats.positions, 10u);
}

// Games written by a push that was not acknowledged, pushed again by another
// process: duplicates, which are acknowledged only once the replica has them,
// not at once. From Redis 7.2 WAIT counts the replicas that have the
// connection's last write (src/server.c, call(): the client's offset moves
// only when a command propagates); the other process's last write is one the
// replica confirmed, so without a write of its own (the barrier, INCR P:ack)
// its retry would be acknowledged at once. Redis 7.0, this machine's, moves
// the offset after every command, so there the test passes without the
// barrier too.
TEST(RedisAckReplicas, ADuplicateIsAcknowledgedOnlyOnceTheReplicaHasIt) {
  auto primary = start_primary();
  auto replica = start_replica(*primary);
  RedisOptions options = options_for(*primary);
  options.ack_replicas = 1;
  options.ack_timeout = 300ms;
  RedisReplayStore first(options);
  options.ack_timeout = 2000ms;  // its pushes that succeed: time to spare for a busy machine
  RedisReplayStore second(options);
  ASSERT_TRUE(first.ping().ok());
  EXPECT_EQ(push_ok(second, {game("d0", 1)}), std::vector{PushStatus::kStored});  // confirmed
  const std::vector<StoredGame> games = {game("d1", 2), game("d2", 3)};
  Frozen frozen(*replica);
  ASSERT_FALSE(first.push(games).ok()) << "acknowledged while the replica was stopped";
  auto retried = second.push(games);
  EXPECT_FALSE(retried.ok()) << "duplicates acknowledged while the replica lacks them";
  frozen.thaw();
  EXPECT_EQ(push_ok(second, games), (std::vector{PushStatus::kDuplicate, PushStatus::kDuplicate}));
  EXPECT_EQ(held_by(*replica, games), 2);
  EXPECT_EQ(second.stats().value_or_throw().games_total, 3u);  // d0, d1, d2: each once
}

// A Redis without an append-only file loses every acknowledged game on a
// restart: refused, naming the setting and the option that accepts it.
TEST(RedisPersistence, ARedisWithoutAofIsRefusedUnlessLossIsAllowed) {
  harness::RedisServer::Options server_options;
  server_options.appendonly = false;
  auto server = harness::RedisServer::start(server_options);
  RedisReplayStore store(options_for(*server));
  auto pong = store.ping();
  ASSERT_FALSE(pong.ok()) << "a Redis without AOF was accepted";
  EXPECT_NE(pong.error().find("appendonly no"), std::string::npos) << pong.error();
  EXPECT_NE(pong.error().find("--allow-unpersisted-acks"), std::string::npos) << pong.error();
  EXPECT_EQ(store.refused_configuration(), pong.error());
  EXPECT_FALSE(store.push(std::vector{game("a", 1)}).ok());
  EXPECT_EQ(server->cli({"DBSIZE"}), "0");

  RedisOptions allowed = options_for(*server);
  allowed.allow_unpersisted = true;
  RedisReplayStore allowed_store(allowed);
  auto allowed_pong = allowed_store.ping();
  EXPECT_TRUE(allowed_pong.ok()) << allowed_pong.error();
  EXPECT_EQ(allowed_store.refused_configuration(), "");
  EXPECT_EQ(push_ok(allowed_store, {game("a", 1)}), std::vector{PushStatus::kStored});

  // AOF turned on while the store backs off: the next connection takes it.
  ASSERT_EQ(server->cli({"CONFIG", "SET", "appendonly", "yes"}), "OK");
  EXPECT_TRUE(wait_until_reachable(store, 3s));
  EXPECT_EQ(store.refused_configuration(), "");
  wait_for_aof_rewrite(*server);
}

// ack_fsync: appendfsync always gives it on any version; otherwise only
// WAITAOF does (Redis 7.2+), and an older Redis is refused naming its version.
TEST(RedisPersistence, AckFsyncNeedsAppendfsyncAlwaysOrWaitaof) {
  harness::RedisServer::Options server_options;
  server_options.appendfsync = "everysec";
  auto server = harness::RedisServer::start(server_options);
  const std::string version = info_field(server->cli({"INFO", "server"}), "redis_version");
  const auto number = parse_redis_version(version);
  ASSERT_TRUE(number.has_value()) << version;
  RedisOptions options = options_for(*server);
  options.ack_fsync = true;
  RedisReplayStore store(options);
  auto pong = store.ping();
  if (*number >= 702) {  // WAITAOF: everysec, and each acknowledgement waits for the fsync
    EXPECT_TRUE(pong.ok()) << pong.error();
    EXPECT_EQ(push_ok(store, {game("f0", 2)}), std::vector{PushStatus::kStored});
  } else {
    ASSERT_FALSE(pong.ok()) << "--ack-fsync accepted on Redis " << version << " with everysec";
    EXPECT_NE(pong.error().find("Redis " + version + " has appendfsync everysec"),
              std::string::npos)
        << pong.error();
    EXPECT_NE(pong.error().find("WAITAOF (Redis 7.2 or newer)"), std::string::npos) << pong.error();
    EXPECT_EQ(store.refused_configuration(), pong.error());
  }
  ASSERT_EQ(server->cli({"CONFIG", "SET", "appendfsync", "always"}), "OK");
  EXPECT_TRUE(wait_until_reachable(store, 3s));
  EXPECT_EQ(push_ok(store, {game("f1", 2)}), std::vector{PushStatus::kStored});
}

// The decision each new connection makes from INFO and CONFIG GET, for the
// versions and settings no test server here has.
TEST(RedisPersistence, PlanFollowsTheServersVersionAndSettings) {
  const auto info = [](const char* version, int aof) {
    return std::string("# Server\r\nredis_version:") + version +
           "\r\n# Persistence\r\naof_enabled:" + std::to_string(aof) + "\r\n";
  };
  RedisOptions options;
  auto refused = plan_acknowledgement(options, info("7.0.15", 0), std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("--allow-unpersisted-acks"), std::string::npos);
  EXPECT_TRUE(plan_acknowledgement(options, info("7.0.15", 1), std::nullopt).ok());
  EXPECT_FALSE(plan_acknowledgement(options, "# Server\r\nredis_version:7.0.15\r\n", "always").ok())
      << "no aof_enabled: whether Redis persists is unknown";
  options.allow_unpersisted = true;
  EXPECT_TRUE(plan_acknowledgement(options, info("7.0.15", 0), std::nullopt).ok());

  options.allow_unpersisted = false;
  options.ack_fsync = true;
  auto always = plan_acknowledgement(options, info("7.0.15", 1), "always");
  ASSERT_TRUE(always.ok()) << always.error();
  EXPECT_FALSE(always->wait_aof);  // Redis fsyncs before it replies
  auto old = plan_acknowledgement(options, info("7.0.15", 1), "everysec");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().find("Redis 7.0.15 has appendfsync everysec"), std::string::npos)
      << old.error();
  auto unreadable = plan_acknowledgement(options, info("6.2.14", 1), std::nullopt);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.error().find("Redis 6.2.14 does not say its appendfsync"), std::string::npos)
      << unreadable.error();
  for (const auto& fsync : {std::optional<std::string>("everysec"), std::optional<std::string>()}) {
    auto waitaof = plan_acknowledgement(options, info("7.2.4", 1), fsync);
    ASSERT_TRUE(waitaof.ok()) << waitaof.error();
    EXPECT_TRUE(waitaof->wait_aof);
  }
  options.allow_unpersisted = true;  // accepts no AOF, but then there is no fsync to wait for
  auto no_aof = plan_acknowledgement(options, info("7.2.4", 0), "everysec");
  ASSERT_FALSE(no_aof.ok());
  EXPECT_NE(no_aof.error().find("--ack-fsync"), std::string::npos) << no_aof.error();

  EXPECT_EQ(parse_redis_version("7.0.15"), 700);
  EXPECT_EQ(parse_redis_version("7.2.4"), 702);
  EXPECT_EQ(parse_redis_version("8.0"), 800);
  EXPECT_EQ(parse_redis_version("7"), std::nullopt);
  EXPECT_EQ(parse_redis_version("x.y.z"), std::nullopt);
}

}  // namespace
}  // namespace chessrl::replay
