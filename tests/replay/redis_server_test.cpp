// harness::RedisServer (libs/replay), the tests' own redis-server: redis-server cannot
// listen on port 0 and say which port it got, so harness::RedisServer picks a number
// (bound and released) that another process may take before
// redis-server binds it. Then redis-server exits "Address already in use" and
// harness::RedisServer starts it again on another port, up to 5 attempts; a failure of
// another kind is not retried.
#include "chessrl/harness/redis_server.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/refusing_port.h"
#include "chessrl/core/error.h"

namespace chessrl::replay {
namespace {

using chessrl::testing::RefusingPort;

harness::RedisServer::Options quick_options() {
  harness::RedisServer::Options options;
  options.appendonly = false;
  return options;
}

TEST(RedisServer, StartsAgainOnAnotherPortWhenItsPortIsTaken) {
  const RefusingPort taken;  // as if another process had bound the number first
  std::vector<int> picked;
  harness::RedisServer::Options options = quick_options();
  options.pick_port = [&] {
    picked.push_back(picked.empty() ? taken.port() : 0);  // 0: harness::RedisServer picks one
    return picked.back();
  };
  auto server = harness::RedisServer::start(options);
  ASSERT_EQ(picked.size(), 2u) << "the taken port, then another";
  EXPECT_NE(server->port(), taken.port());
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->cli({"PING"}), "PONG");
}

TEST(RedisServer, GivesUpAfterFiveTakenPortsNamingTheProblem) {
  const RefusingPort taken;
  int attempts = 0;
  harness::RedisServer::Options options = quick_options();
  options.pick_port = [&] {
    ++attempts;
    return taken.port();
  };
  try {
    harness::RedisServer::start(options);
    FAIL() << "started on a taken port";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("redis-server on port " + std::to_string(taken.port()) + " exited"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Address already in use"), std::string::npos) << what;
  }
  EXPECT_EQ(attempts, 5);
}

TEST(RedisServer, AnotherFailureIsNotRetried) {
  int attempts = 0;
  harness::RedisServer::Options options = quick_options();
  options.extra_config = {"no-such-directive yes"};  // redis-server exits at start
  options.pick_port = [&] {
    ++attempts;
    return 0;
  };
  EXPECT_THROW(harness::RedisServer::start(options), Error);
  EXPECT_EQ(attempts, 1);
}

}  // namespace
}  // namespace chessrl::replay
