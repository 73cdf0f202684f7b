// `chessrl bench load --rate R`: many producers at an open-loop rate, each a
// self-play pod's own push buffer (GamePusher: 4,096 games, 32-game pushes,
// the oldest shed with counts when full, backoff on refusals) on its own
// channel (rpc::make_channel) and producer name, against chessrl-replay over
// one or more private redis-servers (appendfsync always). Optionally one shard
// SIGKILLed and restarted during the run, or an overload: the producers'
// capacity measured, then 3x it, then half of it until the backlog drains.
// Afterwards every Redis is read back: every acknowledged game must be in a
// window exactly once. Reports latency, refusals by code and reason, the
// service's peak RSS, threads and /metrics: a table, or with --json one JSON
// document of the same figures (bench/load_fanin_report.h).
#pragma once

#include <string>

namespace chessrl::tool {

struct FanInOptions {
  int producers = 1000;
  double rate = 0.111;  // games a second per producer
  double seconds = 60;
  int samplers = 2;
  int sample_count = 256;
  int plies = 160;
  double target_fraction = 0.25;
  int buffer_games = 4096;
  int push_batch = 32;
  int shards = 1;
  double kill_shard_at = -1;  // seconds into the run; < 0: no kill
  double restart_after = 2;
  double overload = 0;  // > 0: the overload scenario at this multiple of the measured capacity
  double measure_seconds = 20;
  double recover_limit = 120;  // the backlog must drain within this after the load drops
  double drain_seconds = 120;
  std::string bin_dir;
  bool json = false;  // one JSON document on stdout instead of the table
};

// Runs it and prints the report. Returns 0 when no acknowledged game is lost
// or stored twice and none is left unresolved, 1 otherwise.
int run_fanin_bench(const FanInOptions& o);

}  // namespace chessrl::tool
