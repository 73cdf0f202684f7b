// What the scenarios of `chessrl bench load` share: reading a replay window
// back from Redis (the check that no acknowledged game is lost or stored
// twice), restarting a killed redis-server, percentiles and error codes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/core/subprocess.h"

namespace chessrl::tool {

// What one Redis holds under the key prefix "chessrl": the window's game ids
// in order (an id twice is a game stored twice), the training positions its
// entries name, and the position keys and dedup markers missing for them.
struct WindowScan {
  std::vector<std::string> ids;
  std::uint64_t positions = 0;
  std::uint64_t missing_positions = 0;
  std::uint64_t missing_markers = 0;
};

// Reads the whole window inside Lua, 2,000 entries a call (no call holds
// Redis long). Throws chessrl::Error (with redis.log's tail) when Redis does
// not answer.
WindowScan scan_window(const harness::RedisServer& redis);

// Starts redis-server again from `redis`'s redis.conf (same port and data
// directory, so it loads its AOF) after redis.kill(), and waits until it
// answers PING, up to `patience` (loading a large AOF on a loaded machine takes
// longer than RedisServer::restart waits). The child is killed when destroyed.
std::unique_ptr<Process> restart_redis(const harness::RedisServer& redis,
                                     std::chrono::seconds patience);

// The `p` quantile (0..1) of `v` (sorted in place), nearest rank; 0 when empty.
double percentile(std::vector<double>& v, double p);

// "PushGames: UNAVAILABLE: ..." -> "UNAVAILABLE".
std::string error_code(const std::string& error);

}  // namespace chessrl::tool
