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
  std::uint64_t window_positions = 1'000'000;
  // How long a game id is remembered after its game left the window, so a
  // late retry of an evicted game is still a duplicate.
  std::chrono::seconds dedup_ttl{7 * 24 * 3600};
  int connections = 8;
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{2000};
};

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
  // was (a service refuses to start when this is set after a failed ping).
  std::string refused_eviction_policy() const;

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
  Result<std::vector<std::uint64_t>> prune(std::size_t keep) override;

  const RedisOptions& options() const { return options_; }

 private:
  class Pool;
  RedisOptions options_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace chessrl::replay
