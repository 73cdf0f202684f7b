// RedisServer: a private redis-server child process, on a free loopback port,
// in its own temporary directory, with a password and AOF persistence (by
// default appendfsync always, so a SIGKILL loses nothing Redis acknowledged).
// For integration tests, `chessrl bench replay` and `chessrl local`. Stopped
// and its directory removed by the destructor. Not thread-safe. The password
// never appears on a command line: redis-server reads it from a 0600
// redis.conf in that (0700) directory, redis-cli from REDISCLI_AUTH.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/core/subprocess.h"

namespace chessrl::harness {

class RedisServer {
 public:
  struct Options {
    std::string password = "chessrl-test-password";
    bool appendonly = true;
    std::string appendfsync = "always";  // always, everysec or no
    std::vector<std::string> extra_config;  // more redis.conf lines
    // The port of each attempt to start (see start()); when unset or 0, one
    // nothing listened on a moment ago. For the test of the retry.
    std::function<int()> pick_port;
  };
  // Starts redis-server and waits (up to 10 s) until it answers PING after
  // AUTH. redis-server cannot listen on port 0 and say which port it got, so
  // the port is one bound and released a moment ago; when redis-server exits
  // because another process took it first ("Address already in use"), it starts
  // again on another port, up to 5 attempts in all. Throws chessrl::Error
  // naming the problem (redis-server missing, did not come up, every port
  // taken) otherwise.
  static std::unique_ptr<RedisServer> start(Options options);
  static std::unique_ptr<RedisServer> start() { return start(Options{}); }
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  const std::string& password() const { return options_.password; }
  const std::string& dir() const { return dir_; }
  bool running() const { return process_.pid() > 0; }

  // SIGKILL, as a crash; waits for the process to be gone.
  void kill();
  // Starts it again on the same port and directory (after kill()), and waits
  // until it answers.
  void restart();
  // Runs redis-cli (with -p, the password in REDISCLI_AUTH) and returns its
  // stdout, trimmed.
  std::string cli(const std::vector<std::string>& args) const;

 private:
  RedisServer() = default;
  // Starts redis-server on port_ and waits until it answers. Returns false
  // when it exited because the port was taken and `port_taken_ok`; throws
  // chessrl::Error otherwise.
  bool launch(bool port_taken_ok);
  Options options_;
  int port_ = 0;
  Process process_;  // pid -1 when not running
  std::string dir_;
};

}  // namespace chessrl::harness
