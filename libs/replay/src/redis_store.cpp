// RedisReplayStore. Key layout (P = options.key_prefix):
//
//   P:pos:next      integer  the next position sequence number
//   P:pos:first     integer  the first sequence number in the window (absent: 0).
//                            The window is [first, next); every key in it exists.
//   P:pos:<seq>     string   one serialized chessrl.v1.TrainingPosition
//   P:window        list     one entry per game in the window, oldest first:
//                            "<first seq> <count> <id>"
//   P:game:<id>     string   "<first seq> <count>": the dedup marker. No TTL while
//                            its game is in the window; EXPIRE dedup_ttl once the
//                            game is evicted, so a late retry is still a duplicate,
//                            and deleted once P:evicted drops the id
//   P:evicted       list     ids of evicted games whose markers are kept, oldest
//                            first; at most as many as the window holds games
//   P:stats         hash     games_total, positions_total, window_games
//
//   P:model:<v>     hash     step, size_bytes, crc32, created_unix_ms, chunks, and
//                            each metadata entry as "meta.<key>"; written last, so
//                            a version exists exactly when its hash does
//   P:model:<v>:<i> string   chunk i of the blob (at most 1 MiB)
//   P:model:<v>:tmp:<nonce>:<i>  a chunk being uploaded (1 h TTL), renamed into
//                            place by the publish script
//   P:models        zset     every version kept, score = version (prune() drops
//                            all but the newest K and the best)
//   P:model:latest  integer  the highest version published
//   P:model:best    integer  set by set_best
//   P:model:leases  zset     versions prune() keeps, score = when the lease
//                            ends (ms of Redis's TIME); set by lease()
//
// A push is one EVALSHA per game (dedup, store, evict: atomic per game), all
// of a batch pipelined in one round trip inside MULTI/EXEC; a sample is one
// EVALSHA (draws and MGETs inside Redis, so one round trip whatever the count).
// A script refused with NOSCRIPT (cache flushed, Redis restarted) did not run:
// the pool loads the scripts again and resends it, once. The scripts are in
// redis_scripts.h; they build key names from P rather than take KEYS, which is
// fine on a single Redis but not on a Redis Cluster.
#include "chessrl/replay/redis_store.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <type_traits>
#include <utility>

#include "chessrl/core/splitmix64.h"
#include "parse_number.h"
#include "redis_connection.h"
#include "redis_scripts.h"

namespace chessrl::replay {

using redis::Command;
using redis::Reply;

class RedisReplayStore::Pool : public redis::ConnectionPool {
 public:
  using ConnectionPool::ConnectionPool;
};

namespace {

constexpr std::size_t kMaxSampleCount = 1'000'000;
constexpr std::size_t kSampleChunk = 2048;  // positions per Lua call
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr std::string_view kUploadTtlSeconds = "3600";
constexpr std::string_view kMetaPrefix = "meta.";

std::vector<std::string_view> script_sources() {
  std::vector<std::string_view> sources(redis::kScriptCount);
  sources[redis::kPushScript] = redis::kPushLua;
  sources[redis::kSampleScript] = redis::kSampleLua;
  sources[redis::kStatsScript] = redis::kStatsLua;
  sources[redis::kPublishScript] = redis::kPublishLua;
  sources[redis::kModelInfoScript] = redis::kModelInfoLua;
  sources[redis::kSetBestScript] = redis::kSetBestLua;
  sources[redis::kPruneScript] = redis::kPruneLua;
  sources[redis::kLeaseScript] = redis::kLeaseLua;
  return sources;
}

std::string_view text(const redisReply* reply) { return {reply->str, reply->len}; }

bool is_string(const redisReply* reply) {
  return reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS;
}

// A string or integer reply as a number.
template <class T>
std::optional<T> number(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_INTEGER) {
    if (reply->integer < 0 && std::is_unsigned_v<T>) return std::nullopt;
    return static_cast<T>(reply->integer);
  }
  if (is_string(reply)) return parse_number<T>(text(reply));
  return std::nullopt;
}

// The message for a reply that is an error or not what `what` expects.
std::string describe(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_ERROR) return std::string(text(reply));
  return "unexpected reply (type " + std::to_string(reply->type) + ")";
}

// Redis's Lua rand48 takes a C int seed: reduce the 64-bit seed to 31 bits
// after mixing (SplitMix64's finalizer) so every seed bit matters.
std::uint64_t lua_seed(std::uint64_t seed) { return splitmix64_finalize(seed) & 0x7fffffffULL; }

std::string random_nonce() {
  static std::mt19937_64 engine{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard lock(mu);
  return std::to_string(engine());
}

// ModelMeta from a model-info script reply: {version, {field, value, ...}}.
// A reply that is not what the script returns is the store misbehaving
// (unavailable); fields that do not parse are damaged data.
StoreResult<std::optional<ModelMeta>> parse_meta(const redis::ConnectionPool& pool,
                                                 const Reply& reply) {
  if (reply->type == REDIS_REPLY_NIL) return std::optional<ModelMeta>();
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
      reply->element[1]->type != REDIS_REPLY_ARRAY || reply->element[1]->elements % 2 != 0) {
    return fail(pool.error("model info: " + describe(reply.get())));
  }
  ModelMeta meta;
  auto version = number<std::uint64_t>(reply->element[0]);
  if (!version) {
    return store_fail(StoreErrorKind::kDataLoss, pool.error("model info: bad version"));
  }
  meta.version = *version;
  const redisReply* fields = reply->element[1];
  for (std::size_t i = 0; i + 1 < fields->elements; i += 2) {
    if (!is_string(fields->element[i]) || !is_string(fields->element[i + 1])) {
      return store_fail(StoreErrorKind::kDataLoss, pool.error("model info: bad field"));
    }
    const std::string_view field = text(fields->element[i]);
    const std::string_view value = text(fields->element[i + 1]);
    bool parsed = true;
    if (field == "step") {
      auto n = parse_number<std::uint64_t>(value);
      parsed = n.has_value();
      meta.step = n.value_or(0);
    } else if (field == "size_bytes") {
      auto n = parse_number<std::uint64_t>(value);
      parsed = n.has_value();
      meta.size_bytes = n.value_or(0);
    } else if (field == "crc32") {
      auto n = parse_number<std::uint32_t>(value);
      parsed = n.has_value();
      meta.crc32 = n.value_or(0);
    } else if (field == "created_unix_ms") {
      meta.created_unix_ms = parse_number<std::int64_t>(value).value_or(0);
    } else if (field.starts_with(kMetaPrefix)) {
      meta.metadata.emplace(field.substr(kMetaPrefix.size()), value);
    }
    if (!parsed) {
      return store_fail(StoreErrorKind::kDataLoss, pool.error("model " +
                                                              std::to_string(meta.version) +
                                                              ": bad " + std::string(field)));
    }
  }
  return std::optional<ModelMeta>(std::move(meta));
}

}  // namespace

RedisReplayStore::RedisReplayStore(RedisOptions options)
    : options_(std::move(options)), pool_(std::make_unique<Pool>(options_, script_sources())) {}

RedisReplayStore::~RedisReplayStore() = default;

Result<void> RedisReplayStore::ping() {
  auto reply = pool_->run(Command("PING"));
  if (!reply.ok()) return fail(reply.error());
  if ((*reply)->type != REDIS_REPLY_STATUS || text(reply->get()) != "PONG") {
    return fail(pool_->error("PING: " + describe(reply->get())));
  }
  return {};
}

Result<std::vector<PushResult>> RedisReplayStore::push(std::span<const StoredGame> games) {
  if (games.empty()) return std::vector<PushResult>();
  const std::string capacity = std::to_string(options_.window_positions);
  const std::string ttl = std::to_string(std::max<std::int64_t>(options_.dedup_ttl.count(), 0));
  std::vector<Command> commands;
  commands.reserve(games.size() + 1);
  for (const StoredGame& game : games) {
    Command& command = commands.emplace_back(Command::script(redis::kPushScript));
    command.arg(options_.key_prefix).arg(game.id).arg(capacity).arg(ttl);
    for (const std::string& position : game.positions) command.arg(position);
  }
  // The barrier: a write in the same transaction, so that the wait after it
  // also covers games that come back duplicates (written by an earlier call
  // that may have failed before its acknowledgement) though nothing new is.
  // From Redis 7.2, WAIT and WAITAOF wait for the connection's last write
  // that propagated, not the last command (7.0 moved it on every command).
  const bool barrier = waits_for_acknowledgement();
  if (barrier) commands.emplace_back("INCR").arg_copy(options_.key_prefix + ":ack");
  // MULTI/EXEC around a batch: Redis then runs all of it in one go, so with
  // appendfsync always it costs one fsync, not one per game (batches of 100:
  // 2.1x the games/s on a 2-core VM; the slower the disk, the larger the gain).
  // EXEC does not roll back: a script that fails leaves the others' games
  // stored, so each game gets its own result.
  auto replies = pool_->run(commands, /*atomic=*/commands.size() > 1, /*acknowledge=*/true);
  if (!replies.ok()) return fail(replies.error());
  if (barrier && replies->back()->type != REDIS_REPLY_INTEGER) {
    return fail(pool_->error("push: not acknowledged, INCR " + options_.key_prefix +
                             ":ack: " + describe(replies->back().get())));
  }
  std::vector<PushResult> results(games.size());
  for (std::size_t i = 0; i < games.size(); ++i) {
    const redisReply* reply = (*replies)[i].get();
    if (reply->type != REDIS_REPLY_INTEGER || (reply->integer != 0 && reply->integer != 1)) {
      results[i].error = pool_->error("push of game '" + games[i].id + "': " + describe(reply));
      continue;  // kFailed
    }
    results[i].status = reply->integer == 1 ? PushStatus::kStored : PushStatus::kDuplicate;
  }
  return results;
}

StoreResult<SampledPositions> RedisReplayStore::sample(std::size_t count, std::uint64_t seed) {
  if (count > kMaxSampleCount) {
    return store_fail(StoreErrorKind::kInvalidArgument,
                      "sample: " + std::to_string(count) + " positions asked, at most " +
                std::to_string(kMaxSampleCount) + " per call");
  }
  // One Lua call per kSampleChunk positions: a script blocks Redis while it
  // runs, so a large sample must not be one long script.
  SampledPositions sampled;
  std::size_t chunk_index = 0;
  do {
    const std::size_t want = std::min(kSampleChunk, count - sampled.positions.size());
    Command command = Command::script(redis::kSampleScript);
    command.arg(options_.key_prefix)
        .arg(std::uint64_t{want})
        .arg(lua_seed(seed + 0x9e3779b97f4a7c15ULL * chunk_index++));
    auto reply = pool_->run(command);
    if (!reply.ok()) return fail(reply.error());
    const redisReply* array = reply->get();
    std::optional<std::uint64_t> window;
    if (array->type == REDIS_REPLY_ARRAY && array->elements >= 1) {
      window = number<std::uint64_t>(array->element[0]);
    }
    if (!window) return fail(pool_->error("sample: " + describe(array)));
    sampled.window_positions = *window;
    if (*window == 0 || count == 0) {
      sampled.positions.clear();
      return sampled;
    }
    if (array->elements != want + 1) {
      return fail(pool_->error("sample: " + std::to_string(array->elements - 1) +
                               " positions returned for " + std::to_string(want)));
    }
    if (sampled.positions.empty()) sampled.positions.reserve(count);
    for (std::size_t i = 1; i < array->elements; ++i) {
      const redisReply* position = array->element[i];
      if (position->type != REDIS_REPLY_STRING) {
        return store_fail(StoreErrorKind::kDataLoss,
                          pool_->error("sample: a position in the window is missing"));
      }
      sampled.positions.emplace_back(text(position));
    }
  } while (sampled.positions.size() < count);
  return sampled;
}

Result<WindowStats> RedisReplayStore::stats() {
  Command command = Command::script(redis::kStatsScript);
  command.arg(options_.key_prefix);
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  const redisReply* array = reply->get();
  std::uint64_t values[5] = {};
  bool parsed = array->type == REDIS_REPLY_ARRAY && array->elements == 5;
  for (std::size_t i = 0; parsed && i < 5; ++i) {
    auto value = number<std::uint64_t>(array->element[i]);
    parsed = value.has_value();
    values[i] = value.value_or(0);
  }
  if (!parsed || values[1] < values[0]) return fail(pool_->error("stats: " + describe(array)));
  WindowStats stats;
  stats.positions = values[1] - values[0];
  stats.games_total = values[2];
  stats.positions_total = values[3];
  stats.games = values[4];
  stats.capacity = options_.window_positions;
  return stats;
}

Result<std::optional<StoreServerInfo>> RedisReplayStore::server_info() {
  std::vector<Command> commands;
  commands.emplace_back("INFO").arg("memory");
  commands.emplace_back("INFO").arg("persistence");
  auto replies = pool_->run(commands);
  if (!replies.ok()) return fail(replies.error());
  std::string text_of_both;
  for (const Reply& reply : *replies) {
    const redisReply* r = reply.get();
    if (r->type != REDIS_REPLY_STRING) {
      return fail(pool_->error("INFO: " + describe(r)));
    }
    text_of_both.append(text(r)).append("\n");
  }
  auto parsed = parse_redis_info(text_of_both);
  if (!parsed.ok()) return fail(pool_->error(parsed.error()));
  return std::optional<StoreServerInfo>(*parsed);
}

StoreResult<PublishStatus> RedisReplayStore::publish(const ModelMeta& meta,
                                                     std::string_view blob) {
  const std::string version = std::to_string(meta.version);
  if (meta.version == 0) {
    return store_fail(StoreErrorKind::kInvalidArgument, "publish: model version must be > 0");
  }
  if (meta.size_bytes != blob.size()) {
    return store_fail(StoreErrorKind::kInvalidArgument,
                      "publish: model " + version + " meta says " +
                          std::to_string(meta.size_bytes) + " bytes, the blob has " +
                          std::to_string(blob.size()));
  }
  const std::string key = options_.key_prefix + ":model:" + version;
  const std::string size = std::to_string(meta.size_bytes);
  const std::string crc = std::to_string(meta.crc32);

  // Published already? Then nothing is uploaded (the script checks again).
  Command existing("HMGET");
  existing.arg(key).arg("size_bytes").arg("crc32");
  auto current = pool_->run(existing);
  if (!current.ok()) return fail(current.error());
  const redisReply* fields = current->get();
  if (fields->type != REDIS_REPLY_ARRAY || fields->elements != 2) {
    return fail(pool_->error("publish: " + describe(fields)));
  }
  if (fields->element[0]->type == REDIS_REPLY_STRING) {
    const bool same = text(fields->element[0]) == size &&
                      fields->element[1]->type == REDIS_REPLY_STRING &&
                      text(fields->element[1]) == crc;
    if (!same) return PublishStatus::kConflict;
    // Acknowledged again: wait as for a new publish (the barrier covers the
    // earlier one, which may have failed in its wait).
    if (waits_for_acknowledgement()) {
      Command barrier("INCR");
      barrier.arg_copy(options_.key_prefix + ":ack");
      auto waited = pool_->run(std::span(&barrier, 1), /*atomic=*/false, /*acknowledge=*/true);
      if (!waited.ok()) return fail(waited.error());
      if (waited->front()->type != REDIS_REPLY_INTEGER) {
        return fail(pool_->error("publish: not acknowledged, INCR " + options_.key_prefix +
                                 ":ack: " + describe(waited->front().get())));
      }
    }
    return PublishStatus::kAlreadyPublished;
  }

  // Upload the chunks under temporary names, then one script moves them into
  // place and writes the meta hash: one round trip for the whole version.
  const std::string nonce = random_nonce();
  const std::size_t chunks = (blob.size() + kChunkBytes - 1) / kChunkBytes;
  std::vector<Command> commands;
  commands.reserve(chunks + 1);
  for (std::size_t i = 0; i < chunks; ++i) {
    commands.emplace_back("SET")
        .arg_copy(key + ":tmp:" + nonce + ":" + std::to_string(i))
        .arg(blob.substr(i * kChunkBytes, kChunkBytes))
        .arg("EX")
        .arg(kUploadTtlSeconds);
  }
  Command& commit = commands.emplace_back(Command::script(redis::kPublishScript));
  commit.arg(options_.key_prefix).arg(version).arg(nonce).arg(std::uint64_t{chunks});
  commit.arg(size).arg(crc);
  commit.arg("step").arg(meta.step).arg("size_bytes").arg(size).arg("crc32").arg(crc);
  commit.arg("created_unix_ms").arg_copy(std::to_string(meta.created_unix_ms));
  commit.arg("chunks").arg(std::uint64_t{chunks});
  for (const auto& [name, value] : meta.metadata) {
    commit.arg_copy(std::string(kMetaPrefix) + name).arg(value);
  }
  // The barrier (see push) after the script: the wait then covers an earlier
  // publish of this version that the script finds.
  const bool barrier = waits_for_acknowledgement();
  if (barrier) commands.emplace_back("INCR").arg_copy(options_.key_prefix + ":ack");
  auto replies = pool_->run(commands, /*atomic=*/false, /*acknowledge=*/true);
  if (!replies.ok()) return fail(replies.error());
  if (barrier) {
    if (replies->back()->type != REDIS_REPLY_INTEGER) {
      return fail(pool_->error("publish: not acknowledged, INCR " + options_.key_prefix +
                               ":ack: " + describe(replies->back().get())));
    }
    replies->pop_back();
  }
  for (std::size_t i = 0; i < chunks; ++i) {
    const redisReply* reply = (*replies)[i].get();
    if (reply->type != REDIS_REPLY_STATUS) {
      return fail(pool_->error("publish: uploading model " + version + ": " + describe(reply)));
    }
  }
  const redisReply* result = replies->back().get();
  if (result->type != REDIS_REPLY_INTEGER || result->integer < 0 || result->integer > 2) {
    return fail(pool_->error("publish: model " + version + ": " + describe(result)));
  }
  static constexpr PublishStatus kByCode[] = {
      PublishStatus::kPublished, PublishStatus::kAlreadyPublished, PublishStatus::kConflict};
  return kByCode[static_cast<std::size_t>(result->integer)];
}

StoreResult<std::optional<ModelMeta>> RedisReplayStore::latest() {
  Command command = Command::script(redis::kModelInfoScript);
  command.arg(options_.key_prefix).arg("latest");
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  return parse_meta(*pool_, *reply);
}

StoreResult<std::optional<ModelMeta>> RedisReplayStore::info(std::uint64_t version) {
  Command command = Command::script(redis::kModelInfoScript);
  command.arg(options_.key_prefix).arg(version);
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  return parse_meta(*pool_, *reply);
}

StoreResult<std::vector<ModelMeta>> RedisReplayStore::versions_after(std::uint64_t version,
                                                                     std::size_t limit) {
  Command command("ZRANGEBYSCORE");
  command.arg_copy(options_.key_prefix + ":models")
      .arg_copy("(" + std::to_string(version))
      .arg("+inf")
      .arg("LIMIT")
      .arg(std::uint64_t{0})
      .arg(std::uint64_t{limit});
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  const redisReply* list = reply->get();
  if (list->type != REDIS_REPLY_ARRAY) return fail(pool_->error("versions: " + describe(list)));
  std::vector<ModelMeta> out;
  for (std::size_t i = 0; i < list->elements; ++i) {
    auto v = number<std::uint64_t>(list->element[i]);
    if (!v) return fail(pool_->error("versions: bad version"));
    auto meta = info(*v);
    if (!meta.ok()) return meta.failure();
    if (meta->has_value()) out.push_back(**meta);
  }
  return out;
}

StoreResult<std::optional<ModelMeta>> RedisReplayStore::best() {
  Command command = Command::script(redis::kModelInfoScript);
  command.arg(options_.key_prefix).arg("best");
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  return parse_meta(*pool_, *reply);
}

StoreResult<std::optional<std::string>> RedisReplayStore::read(std::uint64_t version) {
  const std::string name = "model " + std::to_string(version);
  const std::string key = options_.key_prefix + ":model:" + std::to_string(version);
  Command fields_command("HMGET");
  fields_command.arg(key).arg("chunks").arg("size_bytes").arg("crc32");
  auto fields = pool_->run(fields_command);
  if (!fields.ok()) return fail(fields.error());
  const redisReply* array = fields->get();
  if (array->type != REDIS_REPLY_ARRAY || array->elements != 3) {
    return fail(pool_->error("read " + name + ": " + describe(array)));
  }
  if (array->element[0]->type == REDIS_REPLY_NIL) return std::optional<std::string>();
  auto chunks = number<std::uint64_t>(array->element[0]);
  auto size = number<std::uint64_t>(array->element[1]);
  auto crc = number<std::uint32_t>(array->element[2]);
  if (!chunks || !size || !crc) {
    return store_fail(StoreErrorKind::kDataLoss, pool_->error("read " + name + ": bad meta"));
  }

  std::vector<Command> commands;
  commands.reserve(*chunks);
  for (std::uint64_t i = 0; i < *chunks; ++i) {
    commands.emplace_back("GET").arg_copy(key + ":" + std::to_string(i));
  }
  auto replies = pool_->run(commands);
  if (!replies.ok()) return fail(replies.error());
  std::string blob;
  blob.reserve(*size);
  uLong actual_crc = crc32(0L, Z_NULL, 0);
  for (const Reply& reply : *replies) {
    if (reply->type != REDIS_REPLY_STRING) {
      // Pruned between the two round trips: absent, as if read a moment later.
      Command exists("EXISTS");
      exists.arg(key);
      auto still = pool_->run(exists);
      if (still.ok() && (*still)->type == REDIS_REPLY_INTEGER && (*still)->integer == 0) {
        return std::optional<std::string>();
      }
      return store_fail(StoreErrorKind::kDataLoss,
                        pool_->error("read " + name + ": a chunk is missing"));
    }
    blob.append(reply->str, reply->len);
    actual_crc = crc32(actual_crc, reinterpret_cast<const Bytef*>(reply->str),
                       static_cast<uInt>(reply->len));
  }
  if (blob.size() != *size || actual_crc != *crc) {
    return store_fail(StoreErrorKind::kDataLoss,
                      pool_->error("read " + name +
                                   ": stored data does not match its size and crc32"));
  }
  return std::optional<std::string>(std::move(blob));
}

Result<bool> RedisReplayStore::set_best(std::uint64_t version) {
  Command command = Command::script(redis::kSetBestScript);
  command.arg(options_.key_prefix).arg(version);
  // The script SETs the pointer whenever it answers 1: the wait covers it.
  auto replies = pool_->run(std::span(&command, 1), /*atomic=*/false, /*acknowledge=*/true);
  if (!replies.ok()) return fail(replies.error());
  const redisReply* reply = replies->front().get();
  if (reply->type != REDIS_REPLY_INTEGER) return fail(pool_->error("set_best: " + describe(reply)));
  return reply->integer == 1;
}

bool eviction_policy_keeps_window(std::string_view policy) {
  return !policy.starts_with("allkeys-");
}

std::string RedisReplayStore::refused_eviction_policy() const {
  return pool_->refused_eviction_policy();
}

std::string RedisReplayStore::refused_configuration() const {
  return pool_->refused_configuration();
}

Result<bool> RedisReplayStore::lease(std::uint64_t version, std::chrono::milliseconds ttl) {
  Command command = Command::script(redis::kLeaseScript);
  command.arg(options_.key_prefix)
      .arg(version)
      .arg(static_cast<std::uint64_t>(std::max<std::int64_t>(ttl.count(), 0)));
  // As set_best: the script writes whenever it answers 1, so the wait covers it.
  auto replies = pool_->run(std::span(&command, 1), /*atomic=*/false, /*acknowledge=*/true);
  if (!replies.ok()) return fail(replies.error());
  const redisReply* reply = replies->front().get();
  if (reply->type != REDIS_REPLY_INTEGER) return fail(pool_->error("lease: " + describe(reply)));
  return reply->integer == 1;
}

Result<std::vector<std::uint64_t>> RedisReplayStore::prune(std::size_t keep) {
  if (keep == 0) return std::vector<std::uint64_t>();
  Command command = Command::script(redis::kPruneScript);
  command.arg(options_.key_prefix).arg(std::uint64_t{keep});
  auto reply = pool_->run(command);
  if (!reply.ok()) return fail(reply.error());
  const redisReply* list = reply->get();
  if (list->type != REDIS_REPLY_ARRAY) return fail(pool_->error("prune: " + describe(list)));
  std::vector<std::uint64_t> pruned;
  for (std::size_t i = 0; i < list->elements; ++i) {
    auto version = number<std::uint64_t>(list->element[i]);
    if (!version) return fail(pool_->error("prune: bad version"));
    pruned.push_back(*version);
  }
  return pruned;
}

}  // namespace chessrl::replay
