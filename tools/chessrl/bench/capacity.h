// What the parts of `chessrl bench capacity` share: its options, the corpus of
// validated games it pushes, private redis-servers pinned to a core, and
// Redis's own accounting read from INFO (main-thread CPU, EVALSHA time, AOF
// size, used_memory). Built only with the services (CHESSRL_SERVICES). With
// --json the phases print nothing on stdout and give their figures as JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
#include "chessrl/replay/replay_store.h"

namespace chessrl::tool::capacity {

struct CapacityOptions {
  std::string phase = "all";       // all, calibrate, scaling, memory
  int runs = 5;                    // each constant is the median of this many runs
  double seconds = 4;              // length of each measured phase of a run
  int threads = 8;                 // concurrent callers of the store (keeps 2 shards busy)
  int batch = 32;                  // games per push, as the self-play pusher sends
  int plies = 100;                 // ~100 training positions per game
  std::uint64_t window = 200'000;  // calibration window (positions); eviction runs throughout
  int model_mb = 14;               // the model blob read in phase (c)
  double max_reuse = 4;            // R: positions sampled per position ingested
  int shards = 2;                  // the one step of scaling: 1 vs this many shards
  int overhead_shards = 4;         // Σ main-thread µs per position: this many shards vs 1
  std::uint64_t memory_window = 1'000'000;  // the window of --phase memory (positions)
  int turnovers = 20;                       // windows' worth of positions pushed in --phase memory
  bool quick = false;
  bool json = false;  // one JSON document on stdout instead of the tables
};

// Validated synthetic games: the positions a store keeps, as replay makes them.
struct Corpus {
  std::vector<replay::StoredGame> games;
  double positions_per_game = 0;
  double bytes_per_position = 0;  // serialized TrainingPosition, mean
};

// A private redis-server (AUTH, AOF with `appendfsync`) with every thread
// pinned to `cpu` (as `taskset -a -p -c`), or unpinned when cpu < 0.
struct PinnedRedis {
  std::unique_ptr<harness::RedisServer> server;
  int pid = 0;
  int cpu = -1;
};
PinnedRedis start_pinned_redis(const std::string& appendfsync, int cpu,
                               const std::vector<std::string>& extra_config = {});

// Pins every thread of process `pid` to `cpu`; throws chessrl::Error naming it.
void pin_process(int pid, int cpu);
// The calling thread's affinity (threads it starts inherit it); empty: every CPU.
void pin_this_thread(const std::vector<int>& cpus);
int cpu_count();

// "key:value" lines of an INFO reply; commandstats lines keep their
// "calls=..,usec=.." value whole.
std::map<std::string, std::string> parse_info(const std::string& text);

// Redis's own counters at one moment (INFO all).
struct RedisCounters {
  double main_thread_cpu_us = 0;  // used_cpu_user_main_thread + used_cpu_sys_main_thread
  double evalsha_usec = 0;        // cmdstat_evalsha usec
  double aof_bytes = 0;           // aof_current_size
  double aof_rewrites = 0;
  double used_memory = 0;
  double used_memory_dataset = 0;  // used_memory less Redis's own overhead
  double clients_memory = 0;       // mem_clients_normal: the connections' buffers
  double latest_fork_usec = 0;
};
RedisCounters read_counters(const harness::RedisServer& server);

// Store options for `server` with `window` positions and `connections`.
replay::RedisOptions store_options(const harness::RedisServer& server, std::uint64_t window,
                                   int connections);

// Up to `count` copies of corpus games with unique ids ("<prefix><n>"), pushed
// in batches of `batch` from `threads` threads until `count` or until `stop`
// (when given) is set. Returns the positions stored; throws chessrl::Error
// when a call fails or a game is not stored.
std::uint64_t push_games(replay::ReplayStore& store, const Corpus& corpus, std::uint64_t count,
                         int batch, int threads, const std::string& prefix,
                         const std::atomic<bool>* stop = nullptr);

// --phase memory: used_memory per position over `turnovers` windows, one
// shard and `overhead_shards` shards of a part each; prints its table unless
// options.json, and returns the same figures (MB are 10^6 bytes).
nlohmann::json run_memory_phase(const CapacityOptions& options, const Corpus& corpus);

}  // namespace chessrl::tool::capacity
