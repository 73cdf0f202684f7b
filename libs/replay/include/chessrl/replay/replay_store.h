// ReplayStore: where validated games live, as a sliding window of the most
// recent training positions that can be sampled uniformly. Two
// implementations: RedisReplayStore (redis_store.h), the service's, and
// MemoryReplayStore (memory_store.h), for tests of everything above a store.
//
// Every method is thread-safe. Failures (the store unreachable, a reply that
// makes no sense) come back as a Result error; the service reports them as
// UNAVAILABLE, and the caller may retry: pushes are idempotent by game id.
// sample() says when a failure is not worth retrying (StoreResult's kind:
// damaged data, a count over the store's limit; see store_error.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/record/validation.h"
#include "chessrl/replay/store_error.h"

namespace chessrl::replay {

// What a store keeps of a game: the training positions validation made of it
// (libs/record, once, on ingest).
using record::StoredGame;

// kFailed: the store did not take this game (it is not stored; pushing it
// again is safe), while other games of the same call may have been stored.
enum class PushStatus : std::uint8_t { kStored, kDuplicate, kFailed };

// What push() did with one game.
struct PushResult {
  PushStatus status = PushStatus::kFailed;
  std::string error;  // kFailed: what the store said, naming the game
  bool operator==(PushStatus other) const { return status == other; }
  bool operator==(const PushResult&) const = default;
};

struct WindowStats {
  std::uint64_t games = 0;      // games in the window
  std::uint64_t positions = 0;  // positions in the window
  std::uint64_t capacity = 0;   // the window's size limit, in positions
  std::uint64_t games_total = 0;      // games ever stored
  std::uint64_t positions_total = 0;  // positions ever stored
  // A sharded store (sharded_store.h): shards that did not answer, whose
  // games are missing from the sums above. 0 for every other store.
  std::uint32_t shards_down = 0;
};

// What the store's server says about itself (Redis: INFO memory and
// persistence), for monitoring.
struct StoreServerInfo {
  std::uint64_t used_memory_bytes = 0;
  std::uint64_t max_memory_bytes = 0;  // 0: no limit
  bool aof_enabled = false;
  bool aof_ok = true;  // the last append-only write and rewrite succeeded
  bool rdb_ok = true;  // the last snapshot (BGSAVE) succeeded
  std::uint64_t changes_since_save = 0;  // writes not in the last snapshot
  std::int64_t last_save_unix = 0;       // when the last snapshot finished
};

struct SampledPositions {
  std::vector<std::string> positions;  // serialized chessrl.v1.TrainingPosition
  std::uint64_t window_positions = 0;  // window size when drawn
};

class ReplayStore {
 public:
  virtual ~ReplayStore() = default;

  // Stores each game unless a game with its id is stored already (then
  // kDuplicate and nothing is written), each one atomically, then evicts the
  // oldest games while the window holds more than its capacity. A batch is
  // not all-or-nothing: one result per game, in order, says which games are
  // in the store (kStored, kDuplicate) and which are not (kFailed, with the
  // store's error; pushing it again is safe). A failed call (the store
  // unreachable, the connection lost mid-reply) acknowledges nothing: some of
  // the games may be stored, and pushing them again reports kDuplicate.
  virtual Result<std::vector<PushResult>> push(std::span<const StoredGame> games) = 0;

  // `count` positions drawn uniformly with replacement from the window (an
  // empty list when the window is empty). `seed` seeds the draw, so a store
  // that does not change answers the same seed the same way.
  virtual StoreResult<SampledPositions> sample(std::size_t count, std::uint64_t seed) = 0;

  virtual Result<WindowStats> stats() = 0;

  // The server's memory and persistence state; nullopt for a store without a
  // server (the in-memory one).
  virtual Result<std::optional<StoreServerInfo>> server_info() {
    return std::optional<StoreServerInfo>();
  }
};

}  // namespace chessrl::replay
