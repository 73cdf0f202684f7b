// `chessrl doctor` as a black box: its JSON, the GPUs and NCCL of the fake
// NVML library, Redis probes against real redis-servers (open, with a
// password, none), a port held by the test, and the games/hour estimate.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "../support/refusing_port.h"
#ifdef CHESSRL_HAVE_SERVICES
#include "chessrl/harness/redis_server.h"
#endif

namespace {

using nlohmann::json;

struct Output {
  int status = -1;
  std::string out;
};

// Runs `env chessrl doctor args` through the shell; stdout only.
Output doctor(const std::string& args, const std::string& env = "") {
  const std::string command = env + " '" CHESSRL_BINARY "' doctor " + args + " 2>/dev/null";
  Output run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  const int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// A socket listening on 127.0.0.1:port (0: any free port); -1 when taken.
int listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

#ifdef CHESSRL_HAVE_SERVICES
// A real redis-server (libs/replay's test helper: it starts another on a
// port collision), no persistence; `password` "" for none.
std::unique_ptr<chessrl::harness::RedisServer> start_redis(const std::string& password) {
  chessrl::harness::RedisServer::Options options;
  options.password = password;
  options.appendonly = false;
  return chessrl::harness::RedisServer::start(options);
}
#endif

TEST(Doctor, JsonHasTheMachinesFacts) {
  const Output run =
      doctor("--no-estimate --json", "CHESSRL_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1");
  ASSERT_EQ(run.status, 0) << run.out;
  const json facts = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(facts.is_discarded()) << "not JSON:\n" << run.out;
  EXPECT_GE(facts.at("cpu").at("cores").get<int>(), 1);
  EXPECT_FALSE(facts.at("libtorch").at("version").get<std::string>().empty());
  EXPECT_GT(facts.at("memory").at("total_bytes").get<std::uint64_t>(), 0u);
  EXPECT_FALSE(facts.at("gpus").at("nvml").get<bool>());
  EXPECT_TRUE(facts.at("gpus").at("devices").empty());
  EXPECT_EQ(facts.at("gpus").at("error").get<std::string>().rfind("NVML not found", 0), 0u);
  EXPECT_TRUE(facts.at("nccl").contains("found"));
  EXPECT_EQ(facts.at("ports").size(), 8u);
  for (const char* port : {"6379", "50051", "9100", "9104", "29500"}) {
    const std::string state = facts.at("ports").at(port).get<std::string>();
    EXPECT_TRUE(state == "free" || state == "in use") << port << ": " << state;
  }
  EXPECT_TRUE(facts.at("programs").at("redis-server").at("found").get<bool>());
  EXPECT_TRUE(facts.at("programs").contains("promtool"));
  EXPECT_TRUE(facts.at("programs").contains("stockfish"));
  EXPECT_FALSE(facts.contains("estimate"));
}

TEST(Doctor, ReportsTheGpusAndNcclItFinds) {
  const std::string env = std::string("CHESSRL_NVML_LIBRARY='") + CHESSRL_FAKE_NVML +
                          "' CHESSRL_NCCL_LIBRARY='" + CHESSRL_FAKE_NVML + "'";
  const Output text = doctor("--no-estimate", env);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("\ngpus: 2 (NVIDIA driver 555.42.06)\n"), std::string::npos) << text.out;
  EXPECT_NE(
      text.out.find("\ngpu 0: Fake GPU Alpha 80GB, memory 20.0/80.0 GiB used, utilization 37%\n"),
      std::string::npos)
      << text.out;
  EXPECT_NE(
      text.out.find("\ngpu 1: Fake GPU Beta 16GB, memory 1.0/16.0 GiB used, utilization 5%\n"),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(version 2.18.3)"), std::string::npos) << text.out;

  const json facts = json::parse(doctor("--no-estimate --json", env).out);
  ASSERT_EQ(facts.at("gpus").at("devices").size(), 2u);
  EXPECT_EQ(facts.at("gpus").at("devices")[1].at("name"), "Fake GPU Beta 16GB");
  EXPECT_EQ(facts.at("gpus").at("devices")[0].at("memory_total_bytes").get<std::uint64_t>(),
            80ull << 30);
  EXPECT_EQ(facts.at("nccl").at("version"), "2.18.3");
}

#ifdef CHESSRL_HAVE_SERVICES  // harness::RedisServer is in libs/replay, built with the services
TEST(Doctor, ProbesRedis) {
  const auto open = start_redis("");
  const auto locked = start_redis("s3cret");
  const chessrl::testing::RefusingPort nobody;  // connects are refused
  const std::string a = "127.0.0.1:" + std::to_string(open->port());
  const std::string b = "127.0.0.1:" + std::to_string(locked->port());
  const std::string c = nobody.address();
  EXPECT_NE(doctor("--no-estimate --redis " + a).out.find("redis at " + a + ": reachable (PONG)\n"),
            std::string::npos);
  EXPECT_NE(doctor("--no-estimate --redis " + b)
                .out.find("redis at " + b + ": needs a password (NOAUTH)\n"),
            std::string::npos);
  const Output refused = doctor("--no-estimate --redis " + c);
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.out.find("redis at " + c + ": not reachable (connection refused)\n"),
            std::string::npos)
      << refused.out;
  const json facts = json::parse(doctor("--no-estimate --json --redis " + b).out);
  EXPECT_EQ(facts.at("redis").at("status"), "needs_password");
  EXPECT_NE(doctor("--no-estimate --redis nonsense").out.find("redis at nonsense: bad address"),
            std::string::npos);
}
#endif

TEST(Doctor, SeesAPortInUse) {
  const int held = listen_on(9104);  // -1: someone else holds it, in use all the same
  const Output run = doctor("--no-estimate");
  if (held >= 0) ::close(held);
  EXPECT_NE(run.out.find(" 9104 in use,"), std::string::npos) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("\nports: 6379 (free|in use), 50051 ")))
      << run.out;
}

TEST(Doctor, EstimatesGamesPerHour) {
  const Output run = doctor("--seconds 2");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_TRUE(std::regex_search(
      run.out, std::regex("\nself-play \\(4x32, fresh random weights, .*: [0-9.]+ positions/s over "
                          "[0-9.]+ s\n")))
      << run.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      run.out, m,
      std::regex("\nestimated games/hour for make run: ~([0-9]+) \\((assumed 120 plies "
                 "per game|mean of [0-9]+ finished games)")))
      << run.out;
  EXPECT_GT(std::stoll(m[1]), 0);

  // 3 s: on a loaded machine one second can pass before the first batch is evaluated.
  const json facts = json::parse(doctor("--seconds 3 --json").out);
  const json& e = facts.at("estimate");
  EXPECT_GT(e.at("positions_per_second").get<double>(), 0);
  EXPECT_NEAR(e.at("games_per_hour").get<double>(),
              e.at("positions_per_second").get<double>() * 3600 / e.at("mean_plies").get<double>(),
              1e-6 * e.at("games_per_hour").get<double>());
}

}  // namespace
