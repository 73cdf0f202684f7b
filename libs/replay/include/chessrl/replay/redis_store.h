// RedisReplayStore: the ReplayStore and ModelStore over Redis (hiredis), the
// only code in chess-rl that talks to Redis. The key layout and why sampling
// takes one round trip are in docs/replay.md. Each push and each sample is one
// Lua script call (atomic in Redis), so several replay processes may share one
// Redis.
//
// Thread-safe: a pool of connections, one per concurrent caller up to
// `connections`. A broken connection is reopened (with AUTH when a password is
// set) on a later call, with exponential backoff; while Redis is unreachable
// every call fails at once with a message naming the address and the last
// error, and never blocks longer than the command timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/replay/model_store.h"
#include "chessrl/replay/replay_store.h"

namespace chessrl::replay {

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;               // AUTH when not empty
  std::string key_prefix = "chessrl";  // every key starts with "<prefix>:"
  // Training positions kept: chessrl-replay's --window-positions default, the
  // window `make run` and the chart's default values train from (a laptop's
  // loop turns it over in minutes); values-gpu.yaml and values-fleet.yaml set
  // their own.
  std::uint64_t window_positions = 50'000;
  // How long a game id is remembered after its game left the window, so a
  // late retry of an evicted game is still a duplicate.
  std::chrono::seconds dedup_ttl{7 * 24 * 3600};
  int connections = 8;
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{2000};

  // What an acknowledgement promises (docs/replay.md, "Durability"). Each
  // acknowledging write (a push, a model publish, set_best) waits, on its
  // connection, until `ack_replicas` replicas have it (WAIT) and, with
  // `ack_fsync`, until Redis has fsynced it to its AOF; when that does not
  // happen within `ack_timeout` the call fails (kUnavailable) naming how many
  // confirmed: its data is written but not acknowledged, and a retry finds the
  // games as duplicates. A write that stored nothing new (only duplicates)
  // first INCRs P:ack, so the wait covers the earlier write of the same data.
  int ack_replicas = 0;
  std::chrono::milliseconds ack_timeout{1000};
  // Needs the fsync before the acknowledgement: satisfied by appendfsync
  // always; otherwise WAITAOF (Redis 7.2 or newer). A server that can give
  // neither is refused, naming its version.
  bool ack_fsync = false;
  // Every new connection checks INFO persistence and is refused when Redis
  // writes no AOF (a restart or failover then loses acknowledged games;
  // RDB snapshots alone lose everything since the last one). True accepts it.
  bool allow_unpersisted = false;
};

// A Redis version ("7.0.15") as major * 100 + minor (700); nullopt when it
// does not start with two numbers.
std::optional<int> parse_redis_version(std::string_view version);

// How a connection makes its writes as durable as `options` ask, from what the
// server said: its INFO persistence and INFO server text, and its appendfsync
// (CONFIG GET; nullopt when CONFIG is refused, as managed Redis services do).
// An error names what is missing, the option that asks for it, and the
// server's version where that is the reason.
struct AckPlan {
  bool wait_aof = false;  // send WAITAOF 1 0 <timeout> after each acknowledging write
};
Result<AckPlan> plan_acknowledgement(const RedisOptions& options, std::string_view info,
                                     const std::optional<std::string>& appendfsync);

// Whether a Redis maxmemory-policy keeps every key the window needs:
// noeviction and volatile-* do (no key of the window has a TTL; the keys with
// one, dedup markers of evicted games and half-uploaded model chunks, may go),
// allkeys-* do not (Sample would fail on an evicted position, and positions
// be overwritten).
bool eviction_policy_keeps_window(std::string_view policy);

// The fields StoreServerInfo needs from the text of INFO replies ("key:value"
// lines); an error names a field that is missing or not a number.
Result<StoreServerInfo> parse_redis_info(std::string_view info);

class RedisReplayStore final : public ReplayStore, public ModelStore {
 public:
  // Does not connect: the first call does (so a service can start before Redis).
  explicit RedisReplayStore(RedisOptions options);
  ~RedisReplayStore() override;
  RedisReplayStore(const RedisReplayStore&) = delete;
  RedisReplayStore& operator=(const RedisReplayStore&) = delete;

  // Connects (or reuses a connection) and sends PING: ok when Redis answers.
  // Every new connection first reads CONFIG GET maxmemory-policy and is
  // refused, with a message naming the policy, when it can evict the window's
  // keys (a renamed CONFIG: a warning on stderr, once, and no check).
  Result<void> ping();
  // The policy the last connection attempt was refused for; empty when none
  // was.
  std::string refused_eviction_policy() const;
  // Why the last connection attempt was refused for Redis's configuration
  // (its maxmemory-policy, no AOF, a guarantee asked of acknowledgements that
  // it cannot give); empty when it was not (a service refuses to start when
  // this is set after a failed ping: Redis is there, but unfit).
  std::string refused_configuration() const;

  Result<std::vector<PushResult>> push(std::span<const StoredGame> games) override;
  StoreResult<SampledPositions> sample(std::size_t count, std::uint64_t seed) override;
  Result<WindowStats> stats() override;
  // INFO memory and INFO persistence, one round trip.
  Result<std::optional<StoreServerInfo>> server_info() override;

  StoreResult<PublishStatus> publish(const ModelMeta& meta, std::string_view blob) override;
  StoreResult<std::optional<ModelMeta>> latest() override;
  StoreResult<std::optional<ModelMeta>> info(std::uint64_t version) override;
  StoreResult<std::optional<std::string>> read(std::uint64_t version) override;
  StoreResult<std::vector<ModelMeta>> versions_after(std::uint64_t version,
                                                     std::size_t limit) override;
  StoreResult<std::optional<ModelMeta>> best() override;
  Result<bool> set_best(std::uint64_t version) override;
  Result<bool> lease(std::uint64_t version, std::chrono::milliseconds ttl) override;
  Result<std::vector<std::uint64_t>> prune(std::size_t keep) override;

  const RedisOptions& options() const { return options_; }

 private:
  class Pool;
  // Whether acknowledging writes wait (ack_replicas, ack_fsync), and so
  // carry the barrier write.
  bool waits_for_acknowledgement() const { return options_.ack_replicas > 0 || options_.ack_fsync; }
  RedisOptions options_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace chessrl::replay
