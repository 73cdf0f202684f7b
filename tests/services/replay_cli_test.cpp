// The chessrl-replay binary over a real redis-server (password set) on a free
// loopback port: its configuration (file, environment, flags), health,
// SIGTERM, the password file that no command line holds, the options it
// refuses, producer quarantine, and the Redis settings it will not run on
// (an evicting policy, no append-only file). The service's protocol checks,
// in-process, are in replay_redis_test.cpp.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/core/files.h"
#include "chessrl/harness/redis_server.h"
#include "../support/logged_port.h"
#include "chessrl/rpc/clients.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using testing::batch;

// A password-protected redis-server per test; each test starts the binary.
class ReplayCliTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_ = harness::RedisServer::start(); }
  std::unique_ptr<harness::RedisServer> redis_;
};

struct Child {
  int pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // The exit status, or -1 when it still runs after `limit` (killed then).
  int wait_exit_within(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;  // the destructor kills it
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

Child spawn(const std::vector<std::string>& argv, const std::string& log) {
  Child child;
  child.pid = ::fork();
  if (child.pid == 0) {
    std::freopen(log.c_str(), "w", stderr);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::_Exit(127);
  }
  return child;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The port chessrl-replay says it serves on. Started with --listen
// 127.0.0.1:0, it binds a port the kernel picks: no window in which another
// process could take a number picked before (bind, close, reuse).
int served_port(const std::string& log) {
  return testing::logged_port(log, "serving gRPC on port ");
}

TEST_F(ReplayCliTest, BinaryTakesConfigAndEnvAndStopsGracefullyOnSigterm) {
  const std::string config = redis_->dir() + "/replay.yaml";
  std::ofstream(config) << "redis:\n  host: 127.0.0.1\n  port: " << redis_->port()
                        << "\nwindow-positions: 900000\nmetrics-listen: 127.0.0.1:0\n";
  ::setenv("CHESSRL_REDIS_PASSWORD", redis_->password().c_str(), 1);
  const std::string log = redis_->dir() + "/replay.log";
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--config", config, "--listen", "127.0.0.1:0",
                       "--shutdown-grace", "5"},
                      log);
  ::unsetenv("CHESSRL_REDIS_PASSWORD");
  const int port = served_port(log);
  ASSERT_NE(port, 0) << slurp(log);
  bool serving = false;
  for (int i = 0; i < 200 && !serving; ++i) {
    serving = testing::health(port) == grpc::health::v1::HealthCheckResponse::SERVING;
    if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(serving) << slurp(log);

  rpc::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  rpc::ReplayClient client(options);
  auto stats = client.stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->window_capacity(), 900000u);  // from the file

  // Pushes run while SIGTERM arrives: every acknowledged one is in Redis (the
  // window holds them all: markers of games long evicted are not kept).
  std::atomic<bool> stop{false};
  std::vector<std::string> acknowledged;
  std::thread pusher([&] {
    for (std::uint64_t s = 0; !stop; s += 4) {
      auto reply = client.push_games(batch(5000 + s, 4, 20));
      if (!reply.ok()) break;
      for (const auto& r : reply->results()) acknowledged.push_back(r.id());
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(child.pid, SIGTERM);
  EXPECT_EQ(child.wait_exit(), 0) << slurp(log);
  stop = true;
  pusher.join();
  EXPECT_NE(slurp(log).find("stopped"), std::string::npos) << slurp(log);
  ASSERT_FALSE(acknowledged.empty());
  std::vector<std::string> exists = {"EXISTS"};  // one redis-cli run: counts the keys present
  for (const auto& id : acknowledged) exists.push_back("chessrl:game:" + id);
  EXPECT_EQ(redis_->cli(exists), std::to_string(acknowledged.size()));
}

// /proc/PID/cmdline with read(2): a process that exits while it is read makes
// read fail (ESRCH), which std::ifstream turns into an exception. Empty then.
std::string read_cmdline(const std::string& pid) {
  std::string out;
  const int fd = ::open(("/proc/" + pid + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) out.append(buffer, std::size_t(n));
  ::close(fd);
  return out;
}

// The processes whose command line (/proc/PID/cmdline, what ps shows)
// contains `secret`, as "PID: cmdline" with the secret masked.
std::vector<std::string> cmdlines_holding(const std::string& secret) {
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_cmdline(pid);
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (const auto at = cmdline.find(secret); at != std::string::npos) {
      found.push_back(pid + ": " + cmdline.replace(at, secret.size(), "<secret>"));
    }
  }
  return found;
}

// Scans every process's command line for `secret` on a thread until stopped.
class CmdlineWatch {
 public:
  explicit CmdlineWatch(std::string secret)
      : secret_(std::move(secret)), thread_([this] {
          while (!stop_) {
            auto seen = cmdlines_holding(secret_);
            ++scans_;
            {
              std::lock_guard lock(mutex_);
              found_.insert(found_.end(), seen.begin(), seen.end());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // not a whole core
          }
        }) {}
  ~CmdlineWatch() { stop(); }
  // Stops scanning; what it found, and how many scans it made.
  std::vector<std::string> stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    return found_;
  }
  int scans() const { return scans_; }

 private:
  std::string secret_;
  std::atomic<bool> stop_{false};
  std::atomic<int> scans_{0};
  std::mutex mutex_;
  std::vector<std::string> found_;
  std::thread thread_;
};

TEST_F(ReplayCliTest, BinaryReadsThePasswordFromAFileAndNoCommandLineHoldsIt) {
  // A Redis of its own with a password nothing else uses, so a hit is ours.
  harness::RedisServer::Options redis_options;
  redis_options.password = "scan-" + std::to_string(::getpid()) + "-" +
                           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  CmdlineWatch watch(redis_options.password);
  auto redis = harness::RedisServer::start(redis_options);
  const std::string password_file = redis->dir() + "/password";
  ASSERT_TRUE(write_private_file(password_file, redis_options.password + "\n").ok());
  const std::string log = redis->dir() + "/replay.log";
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                       "--redis-port", std::to_string(redis->port()), "--redis-password-file",
                       password_file},
                      log);
  const int port = served_port(log);
  ASSERT_NE(port, 0) << slurp(log);
  bool serving = false;
  for (int i = 0; i < 200 && !serving; ++i) {
    serving = testing::health(port) == grpc::health::v1::HealthCheckResponse::SERVING;
    if (!serving) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(serving) << slurp(log);
  rpc::ReplayClient client(testing::single_try_client(port));
  auto reply = client.push_games(batch(7000, 2));
  ASSERT_TRUE(reply.ok()) << reply.error();
  for (const auto& r : reply->results()) EXPECT_EQ(r.status(), v1::STORED) << r.detail();
  // redis-cli runs too (with REDISCLI_AUTH) while the watch scans.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(redis->cli({"EXISTS", "chessrl:game:" + reply->results(0).id()}), "1");
  // The scan does see a password on a command line: one put there on purpose,
  // as the argv[0] of a sleep (one process, no child left behind by SIGKILL).
  Child control;
  {
    std::string name = "scan-control " + redis_options.password;
    std::string seconds = "5";
    char* args[] = {name.data(), seconds.data(), nullptr};
    ASSERT_EQ(::posix_spawn(&control.pid, "/bin/sleep", nullptr, nullptr, args, environ), 0);
  }
  for (int i = 0; i < 200 && cmdlines_holding(redis_options.password).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(child.pid, SIGTERM);
  EXPECT_EQ(child.wait_exit(), 0) << slurp(log);
  std::vector<std::string> found = watch.stop();
  EXPECT_GT(watch.scans(), 10);
  std::vector<std::string> unexpected, control_seen;
  for (const auto& f : found)
    (f.find("scan-control") != std::string::npos ? control_seen : unexpected).push_back(f);
  EXPECT_FALSE(control_seen.empty()) << "the scan missed the control process";
  EXPECT_TRUE(unexpected.empty()) << ::testing::PrintToString(unexpected);
}

TEST_F(ReplayCliTest, BinaryStopsOnAMissingOrEmptyPasswordFileNamingIt) {
  const std::string missing = redis_->dir() + "/no-such-password";
  const std::string log = redis_->dir() + "/missing.log";
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                       "--redis-port", std::to_string(redis_->port()), "--redis-password-file",
                       missing},
                      log);
  EXPECT_EQ(child.wait_exit(), 1) << slurp(log);
  EXPECT_NE(slurp(log).find("--redis-password-file " + missing + ": cannot read"), std::string::npos)
      << slurp(log);
  const std::string empty = redis_->dir() + "/empty-password";
  ASSERT_TRUE(write_private_file(empty, "\n").ok());
  Child blank = spawn({CHESSRL_REPLAY_BINARY, "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                       "--redis-password-file", empty},
                      log);
  EXPECT_EQ(blank.wait_exit(), 1) << slurp(log);
  EXPECT_NE(slurp(log).find("--redis-password-file " + empty + ": empty"), std::string::npos)
      << slurp(log);
}

TEST_F(ReplayCliTest, BinaryRefusesAPasswordOnTheCommandLineOrInItsConfig) {
  const std::string log = redis_->dir() + "/flag.log";
  Child flag = spawn({CHESSRL_REPLAY_BINARY, "--redis-password", "hunter2"}, log);
  EXPECT_NE(flag.wait_exit(), 0);
  for (const char* hint : {"--redis-password", "--redis-password-file", "CHESSRL_REDIS_PASSWORD"})
    EXPECT_NE(slurp(log).find(hint), std::string::npos) << hint << " in " << slurp(log);
  const std::string config = redis_->dir() + "/password.yaml";
  std::ofstream(config) << "redis:\n  password: hunter2\n";
  Child file = spawn({CHESSRL_REPLAY_BINARY, "--config", config}, log);
  EXPECT_NE(file.wait_exit(), 0);
  EXPECT_NE(slurp(log).find("--redis-password-file"), std::string::npos) << slurp(log);
  // Both ways at once: which one wins would be a guess.
  const std::string password_file = redis_->dir() + "/password";
  ASSERT_TRUE(write_private_file(password_file, redis_->password()).ok());
  ::setenv("CHESSRL_REDIS_PASSWORD", redis_->password().c_str(), 1);
  Child both = spawn({CHESSRL_REPLAY_BINARY, "--listen", "127.0.0.1:0", "--metrics-listen", "off",
                      "--redis-password-file", password_file},
                     log);
  ::unsetenv("CHESSRL_REDIS_PASSWORD");
  EXPECT_EQ(both.wait_exit(), 1);
  EXPECT_NE(slurp(log).find("give the Redis password one way"), std::string::npos) << slurp(log);
}

TEST_F(ReplayCliTest, BinaryRefusesAnUnknownConfigKey) {
  const std::string config = redis_->dir() + "/bad.yaml";
  std::ofstream(config) << "window-positionz: 10\n";
  const std::string log = redis_->dir() + "/bad.log";
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--config", config}, log);
  EXPECT_NE(child.wait_exit(), 0);
  EXPECT_NE(slurp(log).find("window-positionz"), std::string::npos) << slurp(log);
}

// --quarantine from flags (repeated, comma-separated) and from a config list:
// the named producers' pushes are refused, others are stored; an empty name
// stops start-up naming the option.
TEST_F(ReplayCliTest, BinaryQuarantinesTheProducersItIsGiven) {
  const auto push_from = [](int port, const std::string& producer) {
    rpc::ClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(port);
    auto request = batch(7000, 1, 20, producer + "-");
    request.mutable_games(0)->set_producer(producer);
    return rpc::ReplayClient(options).push_games(request).code();
  };
  const std::string config = redis_->dir() + "/quarantine.yaml";
  std::ofstream(config) << "quarantine: [pod-x, pod-y]\n";
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> runs = {
      {{"--quarantine", "pod-a,pod-b", "--quarantine", "pod-c"}, {"pod-a", "pod-b", "pod-c"}},
      {{"--config", config}, {"pod-x", "pod-y"}}};
  int run = 0;
  for (const auto& [args, quarantined] : runs) {
    const std::string log = redis_->dir() + "/quarantine-" + std::to_string(++run) + ".log";
    std::vector<std::string> argv = {CHESSRL_REPLAY_BINARY, "--store", "memory", "--listen",
                                     "127.0.0.1:0", "--metrics-listen", "off"};
    argv.insert(argv.end(), args.begin(), args.end());
    Child child = spawn(argv, log);
    const int port = served_port(log);
    ASSERT_NE(port, 0) << slurp(log);
    for (const auto& name : quarantined) {
      EXPECT_EQ(push_from(port, name), grpc::StatusCode::PERMISSION_DENIED) << name;
      EXPECT_NE(slurp(log).find(name), std::string::npos) << slurp(log);  // listed at start-up
    }
    EXPECT_EQ(push_from(port, "pod-d"), grpc::StatusCode::OK);
    ::kill(child.pid, SIGTERM);
    EXPECT_EQ(child.wait_exit(), 0) << slurp(log);
  }
  const std::string log = redis_->dir() + "/empty.log";
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--store", "memory", "--listen", "127.0.0.1:0",
                       "--metrics-listen", "off", "--quarantine", ""},
                      log);
  EXPECT_NE(child.wait_exit(), 0);
  EXPECT_NE(slurp(log).find("--quarantine: an empty producer name"), std::string::npos)
      << slurp(log);
}

// A Redis that may evict the window's keys: the binary does not start.
TEST_F(ReplayCliTest, BinaryRefusesARedisWhosePolicyCanEvictTheWindow) {
  ASSERT_EQ(redis_->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}), "OK");
  const std::string log = redis_->dir() + "/policy.log";
  ::setenv("CHESSRL_REDIS_PASSWORD", redis_->password().c_str(), 1);
  Child child = spawn({CHESSRL_REPLAY_BINARY, "--redis-port", std::to_string(redis_->port()),
                       "--listen", "127.0.0.1:0", "--metrics-listen", "off"},
                      log);
  ::unsetenv("CHESSRL_REDIS_PASSWORD");
  EXPECT_EQ(child.wait_exit(), 1) << slurp(log);
  EXPECT_NE(slurp(log).find("maxmemory-policy allkeys-lru"), std::string::npos) << slurp(log);
}

// A Redis without an append-only file: a restart would lose every game
// acknowledged since. The binary does not start on it, naming the problem and
// the flag that accepts the loss; with that flag it serves.
TEST_F(ReplayCliTest, BinaryRefusesARedisWithoutAofUnlessLossIsAllowed) {
  harness::RedisServer::Options no_aof;
  no_aof.appendonly = false;
  auto plain = harness::RedisServer::start(no_aof);
  const std::vector<std::string> argv = {CHESSRL_REPLAY_BINARY,
                                         "--redis-port",
                                         std::to_string(plain->port()),
                                         "--listen",
                                         "127.0.0.1:0",
                                         "--metrics-listen",
                                         "off"};
  ::setenv("CHESSRL_REDIS_PASSWORD", plain->password().c_str(), 1);
  const std::string log = plain->dir() + "/refused.log";
  Child refused = spawn(argv, log);
  std::vector<std::string> allowed_argv = argv;
  allowed_argv.push_back("--allow-unpersisted-acks");
  const std::string allowed_log = plain->dir() + "/allowed.log";
  Child allowed = spawn(allowed_argv, allowed_log);
  ::unsetenv("CHESSRL_REDIS_PASSWORD");

  EXPECT_EQ(refused.wait_exit_within(std::chrono::seconds(10)), 1) << slurp(log);
  EXPECT_NE(slurp(log).find("appendonly no"), std::string::npos) << slurp(log);
  EXPECT_NE(slurp(log).find("--allow-unpersisted-acks"), std::string::npos) << slurp(log);

  const int port = served_port(allowed_log);
  ASSERT_NE(port, 0) << slurp(allowed_log);
  rpc::ReplayClient client(testing::single_try_client(port));
  auto reply = client.push_games(batch(900, 2, 10));
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->results(0).status(), v1::STORED);
  ::kill(allowed.pid, SIGTERM);
  EXPECT_EQ(allowed.wait_exit(), 0) << slurp(allowed_log);
}

}  // namespace
}  // namespace chessrl::replay_service
