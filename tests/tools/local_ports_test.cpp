// The ports of `chessrl local`'s and `chessrl bench load`'s children: read
// back from the line a child logs after binding port 0 (only the lines since
// its start, the last such line), and pick_port() outside the kernel's
// ephemeral range.
#include "chessrl/harness/ports.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace chessrl::harness {
namespace {

namespace fs = std::filesystem;

class LocalPortsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ =
        (fs::temp_directory_path() / ("local-ports-test-" + std::to_string(::getpid()))).string();
    fs::remove(log_);
  }
  void TearDown() override { fs::remove(log_); }
  void append(const std::string& text) { std::ofstream(log_, std::ios::app) << text; }
  std::string log_;
};

TEST_F(LocalPortsTest, ReadsThePortOfTheLinesSinceTheStart) {
  EXPECT_EQ(log_size(log_), 0u);
  EXPECT_FALSE(logged_port(log_, 0, "metrics on port "));  // no log yet
  append("chessrl-trainer[0]: metrics on port 40001\n");
  const auto from = log_size(log_);
  EXPECT_GT(from, 0u);
  EXPECT_EQ(logged_port(log_, 0, "metrics on port "), 40001);
  EXPECT_FALSE(logged_port(log_, from, "metrics on port "));  // an earlier start's line
  append("chessrl-trainer[0]: metrics on port 4");            // being written
  EXPECT_FALSE(logged_port(log_, from, "metrics on port "));
  append("0002\nchessrl-trainer[0]: training\n");
  EXPECT_EQ(logged_port(log_, from, "metrics on port "), 40002);
  append("chessrl-trainer[0]: metrics on port 40003\n");  // started again: the last line
  EXPECT_EQ(logged_port(log_, from, "metrics on port "), 40003);
}

TEST_F(LocalPortsTest, ReadsBothPortsOfTheReplayLine) {
  append(
      "chessrl-replay: serving gRPC on port 41000 (store redis, window 20000 positions), "
      "metrics on port 41001\n");
  EXPECT_EQ(logged_port(log_, 0, "serving gRPC on port "), 41000);
  EXPECT_EQ(logged_port(log_, 0, "metrics on port "), 41001);
}

// The ready file a service writes once it listens (libs/runtime's
// write_ready_file): read whole, or not at all.
TEST_F(LocalPortsTest, ReadsTheReadyFileOnlyWhenItIsWhole) {
  EXPECT_FALSE(read_ready_file(log_)) << "no file yet";
  append(R"({"pid": 1234, "ports": {"grpc": 41000, "met)");
  EXPECT_FALSE(read_ready_file(log_)) << "not JSON";
  fs::remove(log_);
  append(R"({"pid": 1234})");
  EXPECT_FALSE(read_ready_file(log_)) << "no ports";
  fs::remove(log_);
  append(R"({"pid": 1234, "ports": {"grpc": 41000, "metrics": 41001}})" "\n");
  const auto ready = read_ready_file(log_);
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->pid, 1234);
  EXPECT_EQ(ready->port("grpc"), 41000);
  EXPECT_EQ(ready->port("metrics"), 41001);
  EXPECT_EQ(ready->port("http"), 0) << "a port it does not have";
}

TEST(WithPort, SetsTheAddressAfterTheFlagInBothSpellings) {
  const std::vector<std::string> argv = {"chessrl-replay", "--listen", "127.0.0.1:0",
                                         "--metrics-listen", "127.0.0.1:0"};
  EXPECT_EQ(with_port(argv, "--metrics-listen", 41001),
            (std::vector<std::string>{"chessrl-replay", "--listen", "127.0.0.1:0",
                                      "--metrics-listen", "127.0.0.1:41001"}));
  EXPECT_EQ(
      with_port({"prometheus", "--web.listen-address=127.0.0.1:0"}, "--web.listen-address", 9090),
      (std::vector<std::string>{"prometheus", "--web.listen-address=127.0.0.1:9090"}));
}

TEST(PickPort, StaysBelowTheEphemeralRange) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  for (int i = 0; i < 1000; ++i) {
    const int port = pick_port();
    EXPECT_GE(port, 10000);
    EXPECT_LT(port, low);
  }
}

}  // namespace
}  // namespace chessrl::harness
