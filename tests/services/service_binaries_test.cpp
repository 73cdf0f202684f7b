// The process contract every service binary keeps (integration), one case per
// binary: started with port 0 for every listener and --ready-file, it writes
// the file with its pid and the ports it bound, each of which takes a
// connection (the HTTP ones answer a GET); SIGTERM then exits 0. A refused
// value and an unknown flag exit 2 naming the flag, and so does replay's
// combination of --ack-replicas with --store memory (found after parsing).
// No service needs its peers for this: the replay and registry addresses
// given refuse connections, and every binary serves its ports meanwhile.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"

namespace chessrl {
namespace {

namespace fs = std::filesystem;
using chessrl::testing::Child;
using namespace std::chrono_literals;

// An address nothing listens on: the port of a socket bound and closed.
std::string refused_address() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

bool connects(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

struct Binary {
  std::string name;                      // the test's name
  std::vector<std::string> run;          // argv to serve on port 0, without --ready-file
  std::map<std::string, std::string> env;
  std::set<std::string> ports;           // the keys its ready file must hold
  std::vector<std::string> refused;      // argv a value check refuses
  std::string refused_flag;              // the flag its message names
};

std::ostream& operator<<(std::ostream& out, const Binary& b) { return out << b.name; }

const std::string kLocal = "127.0.0.1:0";
const std::string kStateDir = "{dir}/state";  // {dir}: the test's directory

std::vector<Binary> binaries() {
  const std::string nobody = refused_address();
  std::vector<Binary> out = {
      {"replay",
       {CHESSRL_REPLAY_BINARY, "--store", "memory", "--listen", kLocal, "--metrics-listen", kLocal,
        "--probe-listen", kLocal, "--models-http-listen", kLocal, "--shutdown-grace", "1"},
       {},
       {"grpc", "metrics", "probe", "http"},
       {CHESSRL_REPLAY_BINARY, "--redis-port", "0"},
       "--redis-port"},
      {"selfplay",
       {CHESSRL_SELFPLAY_BINARY, "--replay", nobody, "--metrics-listen", kLocal, "--probe-listen",
        kLocal, "--visits", "8", "--concurrent", "1", "--threads", "1", "--workers", "1",
        "--flush-timeout", "1", "--final-scrape-wait", "0", "--rpc-deadline", "2"},
       {},
       {"metrics", "probe"},
       {CHESSRL_SELFPLAY_BINARY, "--buffer-games", "0"},
       "--buffer-games"},
      {"trainer",
       {CHESSRL_TRAINER_BINARY, "--replay", nobody, "--metrics-listen", kLocal, "--probe-listen",
        kLocal, "--net", "1x8", "--threads", "1", "--checkpoint-dir", ""},
       {},
       {"metrics", "probe"},
       {CHESSRL_TRAINER_BINARY, "--bucket-mb", "0"},
       "--bucket-mb"},
      // Rank 0 of two: the rendezvous store's port too, written before it
      // waits for rank 1 (which never comes; SIGTERM stops the wait).
      {"trainer_rank0",
       {CHESSRL_TRAINER_BINARY, "--replay", nobody, "--metrics-listen", kLocal, "--net", "1x8",
        "--threads", "1", "--checkpoint-dir", ""},
       {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "0"}},
       {"metrics", "rendezvous"},
       {CHESSRL_TRAINER_BINARY, "--rendezvous-timeout", "0"},
       "--rendezvous-timeout"},
      {"evaluator",
       {CHESSRL_EVALUATOR_BINARY, "--registry", nobody, "--metrics-listen", kLocal,
        "--probe-listen", kLocal, "--anchors", "random", "--nn-threads", "1", "--state-dir",
        kStateDir},
       {},
       {"metrics", "probe"},
       {CHESSRL_EVALUATOR_BINARY, "--pairs", "0"},
       "--pairs"},
  };
#ifdef CHESSRL_WEB_BINARY
  out.push_back({"web",
                 {CHESSRL_WEB_BINARY, "--listen", kLocal, "--probe-listen", kLocal, "--selfplay",
                  nobody},
                 {},
                 {"http", "metrics", "probe"},
                 {CHESSRL_WEB_BINARY, "--max-boards", "0"},
                 "--max-boards"});
#endif
  return out;
}

class ServiceBinaryTest : public ::testing::TestWithParam<Binary> {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("service-binaries-" + GetParam().name + "-" + std::to_string(::getpid())))
               .string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_P(ServiceBinaryTest, WritesItsPortsToTheReadyFileAndStopsOnSigterm) {
  const Binary& b = GetParam();
  const std::string ready = dir_ + "/ready.json";
  std::vector<std::string> argv = b.run;
  for (std::string& arg : argv)
    if (arg == kStateDir) arg = dir_ + "/state";
  argv.insert(argv.end(), {"--ready-file", ready});
  Child child = Child::start(argv, b.env, dir_, "serve");

  // The file appears once every port is bound (rename: whole or not at all).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    if (auto code = child.wait(0ms)) FAIL() << "exited " << *code << ":\n" << child.err();
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(fs::exists(ready)) << "no ready file after 60 s:\n" << child.err();
  const nlohmann::json json = nlohmann::json::parse(testing::slurp(ready));
  EXPECT_EQ(json["pid"], child.pid());
  std::set<std::string> keys;
  for (const auto& [key, port] : json["ports"].items()) {
    keys.insert(key);
    ASSERT_TRUE(port.is_number_integer()) << json;
    const int number = port.get<int>();
    EXPECT_GT(number, 0) << key;
    EXPECT_TRUE(connects(number)) << key << " port " << number << " takes no connection";
    if (key == "metrics") {
      EXPECT_EQ(testing::http_get(number, "/metrics").rfind("HTTP/1.1 200", 0), 0u) << key;
    } else if (key == "probe") {
      EXPECT_EQ(testing::http_get(number, "/livez").rfind("HTTP/1.1 200", 0), 0u) << key;
    } else if (key == "http") {
      // Replay's model URLs answer 404 (no model yet), the viewer its page.
      EXPECT_EQ(testing::http_get(number, "/").rfind("HTTP/1.", 0), 0u) << key;
    }
  }
  EXPECT_EQ(keys, b.ports) << json;
  // The log lines that name the ports stay.
  if (keys.count("metrics") && b.name != "web") {
    const std::string line = "metrics on port " + std::to_string(json["ports"]["metrics"].get<int>());
    EXPECT_NE(child.err().find(line), std::string::npos) << child.err();
  }

  child.signal(SIGTERM);
  const std::optional<int> code = child.wait(60s);
  ASSERT_TRUE(code.has_value()) << "still running 60 s after SIGTERM:\n" << child.err();
  EXPECT_EQ(*code, 0) << child.err();
  EXPECT_NE(child.err().find("SIGTERM"), std::string::npos) << child.err();
}

TEST_P(ServiceBinaryTest, BadOptionsExitTwoNamingTheFlag) {
  const Binary& b = GetParam();
  Child refused(b.refused, dir_, "refused");
  EXPECT_EQ(refused.wait(60s), std::optional<int>(2)) << refused.err();
  EXPECT_NE(refused.err().find(b.refused_flag), std::string::npos) << refused.err();

  Child unknown({b.run.front(), "--no-such-flag", "1"}, dir_, "unknown");
  EXPECT_EQ(unknown.wait(60s), std::optional<int>(2)) << unknown.err();
  EXPECT_NE(unknown.err().find("--no-such-flag"), std::string::npos) << unknown.err();
}

INSTANTIATE_TEST_SUITE_P(Services, ServiceBinaryTest, ::testing::ValuesIn(binaries()),
                         [](const auto& test) { return test.param.name; });

// Replay's checks after parsing are bad options too: 2, naming the flag.
TEST(ReplayBinary, ACombinationItCannotServeExitsTwo) {
  const fs::path dir =
      fs::temp_directory_path() / ("service-binaries-replay-ack-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Child child({CHESSRL_REPLAY_BINARY, "--store", "memory", "--ack-replicas", "1", "--listen", kLocal,
               "--metrics-listen", "off"},
              dir.string(), "replay");
  EXPECT_EQ(child.wait(60s), std::optional<int>(2)) << child.err();
  EXPECT_NE(child.err().find("--ack-replicas"), std::string::npos) << child.err();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chessrl
