// What the parts of `chessrl bench fanout` share: its options, the private
// redis-server and chessrl-replay processes it runs against, and what it reads
// of them (/proc CPU and memory, Redis INFO). Built only with the services
// (CHESSRL_SERVICES).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/replay_shared.h"
#include "chessrl/harness/redis_server.h"

namespace chessrl::tool::fanout {

struct FanoutOptions {
  int followers = 1000;
  int replicas = 1;                   // chessrl-replay processes over the one Redis
  int versions = 10;                  // versions published
  double interval = 60;               // seconds between publishes
  std::uint64_t model_bytes = 3'300'000;  // a 6x64 checkpoint; 10x128 is about 14 MB
  std::string replay_binary;          // empty: the chessrl-replay built beside chessrl
  std::vector<std::string> replay_args;  // passed to every chessrl-replay
  double settle = 0;                  // seconds the followers get before the first publish (0: auto)
  int bloop_downloads = 10;           // sequential GetModel calls that measure B_loop
  int idle_watchers = 0;              // > 0: the idle mode instead
  double idle_seconds = 60;
  bool check = false;                 // exit 1 when a criterion fails
  // One JSON document on stdout instead of the tables (the lines printed as it
  // runs go to stderr then).
  bool json = false;
};

// The follower run: publishes, followers, per-version figures, PASS/FAIL per
// criterion (with --json: "versions", the measures, "criteria" with "pass").
// Returns 1 when a criterion failed, else 0.
int run_fanout(const FanoutOptions& options);
// The idle mode: bare WatchModels streams, no publishes; replay's CPU and the
// Redis calls it makes. Returns 1 when a criterion failed, else 0.
int run_fanout_idle(const FanoutOptions& options);

// ---------------------------------------------------------------- support

// A redis-server and chessrl-replay processes over it.
struct Fleet {
  std::unique_ptr<harness::RedisServer> redis;
  int redis_pid = 0;
  std::string binary;                 // the chessrl-replay they run
  std::vector<ReplayChild> replicas;  // gRPC on 127.0.0.1:<port>
  std::uint64_t cache_bound = 0;      // replay's model cache bound in bytes (0: no cache flag)
  std::string cache_flag;             // the flag it came from, for the report
  std::vector<std::string> addresses() const;
};

// The binary (`options.replay_binary`, else beside this program), its cache
// bound (from `options.replay_args`, else its --help default), a redis-server.
Fleet start_redis(const FanoutOptions& options);
// `count` chessrl-replay processes over fleet.redis, each logging to a file
// of its own, each with `extra` and options.replay_args.
void start_replicas(Fleet& fleet, int count, const FanoutOptions& options,
                    const std::vector<std::string>& extra = {});

// B_loop: bytes/s of `downloads` sequential GetModel calls of one
// `model_bytes` blob from a chessrl-replay of its own over fleet.redis (under
// another key prefix, so no follower sees the blob), stopped afterwards.
double measure_bloop(const Fleet& fleet, const FanoutOptions& options);

// `bytes` random bytes from `seed`.
std::string random_blob(std::uint64_t bytes, std::uint64_t seed);

// utime + stime of a process in seconds (from /proc/<pid>/stat); -1 when unreadable.
double process_cpu_seconds(int pid);
// The calling process's CPU seconds (user + system).
double own_cpu_seconds();
// INFO's "key:value" lines (INFO <section>).
std::map<std::string, std::string> redis_info(const harness::RedisServer& redis,
                                              const std::string& section);
// total_net_output_bytes.
double redis_output_bytes(const harness::RedisServer& redis);
// The sum of calls over INFO commandstats, and the calls by command.
double redis_calls(const harness::RedisServer& redis, std::map<std::string, double>* by_command);

// The machine's MemAvailable in MiB (/proc/meminfo); -1 when unreadable.
long mem_available_mib();

// Raises the soft open-file limit to `wanted` (children inherit it); throws
// chessrl::Error naming the hard limit when it cannot.
void raise_file_limit(std::uint64_t wanted);

// "12.3 MB" style (powers of 1000), "512 KiB"-free: the bench's sizes are decimal.
std::string human_bytes(double bytes);
std::string format(const char* format, double value);

}  // namespace chessrl::tool::fanout
