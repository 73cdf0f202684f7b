// Helpers of the RedisReplayStore tests (redis_store_test.cpp,
// redis_durability_test.cpp, redis_memory_test.cpp): options for a test
// server, games of made-up positions, model blobs.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"

namespace chessrl::replay {

// For gtest's messages: the status's name, not a byte.
inline void PrintTo(PushStatus status, std::ostream* os) {
  *os << (status == PushStatus::kStored      ? "kStored"
          : status == PushStatus::kDuplicate ? "kDuplicate"
                                             : "kFailed");
}

}  // namespace chessrl::replay

namespace chessrl::replay::redis_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline RedisOptions options_for(const harness::RedisServer& server) {
  RedisOptions options;
  options.port = server.port();
  options.password = server.password();
  options.key_prefix = "t";
  options.connections = 4;
  options.connect_timeout = 1000ms;
  options.command_timeout = 2000ms;
  options.backoff_min = 20ms;
  options.backoff_max = 200ms;
  return options;
}

// A game whose positions are "<id>/<i>": any bytes do for the store.
inline StoredGame game(const std::string& id, int positions) {
  StoredGame g;
  g.id = id;
  for (int i = 0; i < positions; ++i) g.positions.push_back(id + "/" + std::to_string(i));
  return g;
}

inline std::vector<PushStatus> statuses_of(const std::vector<PushResult>& results) {
  std::vector<PushStatus> statuses;
  for (const PushResult& result : results) statuses.push_back(result.status);
  return statuses;
}

inline std::vector<PushStatus> push_ok(RedisReplayStore& store, std::vector<StoredGame> games) {
  auto results = store.push(games);
  EXPECT_TRUE(results.ok()) << results.error();
  return results.ok() ? statuses_of(*results) : std::vector<PushStatus>();
}

// Polls until the store answers (it may be backing off after a failure).
inline bool wait_until_reachable(RedisReplayStore& store, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (store.ping().ok()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// zlib's CRC-32 (reflected 0xEDB88320), bit by bit: the test's own check of
// the value the store is given.
inline std::uint32_t crc32_of(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::string random_blob(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::string blob(size, '\0');
  for (char& c : blob) c = static_cast<char>(engine() & 0xFF);
  return blob;
}

inline ModelMeta meta_for(std::uint64_t version, std::string_view blob) {
  ModelMeta meta;
  meta.version = version;
  meta.step = version * 1000;
  meta.size_bytes = blob.size();
  meta.crc32 = crc32_of(blob);
  meta.created_unix_ms = 1'700'000'000'000 + static_cast<std::int64_t>(version);
  meta.metadata = {{"arch", "resnet-6x64"}, {"trainer", "rank0"}};
  return meta;
}

}  // namespace chessrl::replay::redis_test
