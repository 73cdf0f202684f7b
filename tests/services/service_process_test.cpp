// ServiceProcess in-process (unit): the exit status of a parse (a refused value
// and an unknown flag 2, naming it; --help 0), of run() (BadOptions 2, any
// other exception 1), the ready file's JSON and its atomic write, and a ready
// file that cannot be written naming --ready-file.
#include "chessrl/runtime/service_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/core/files.h"

namespace chessrl::runtime {
namespace {

namespace fs = std::filesystem;

// Parses `args` (after the program name) into an app with --count 1..9 and
// --ready-file; the status and what went to stderr.
struct Parsed {
  std::optional<int> status;
  std::string err;
};

Parsed parse(std::vector<std::string> args) {
  CLI::App app{"test"};
  int count = 1;
  app.add_option("--count", count, "a number")->check(CLI::Range(1, 9));
  ServiceProcess process("test-service");
  process.add_options(app);
  config::finish(app);
  std::vector<char*> argv = {const_cast<char*>("test-service")};
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  Parsed out;
  out.status = process.parse(app, static_cast<int>(argv.size()), argv.data());
  out.err = ::testing::internal::GetCapturedStderr();
  ::testing::internal::GetCapturedStdout();
  return out;
}

TEST(ServiceProcess, ParseErrorsExitTwoNamingTheFlag) {
  const Parsed refused = parse({"--count", "12"});
  EXPECT_EQ(refused.status, std::optional<int>(kExitBadOptions));
  EXPECT_NE(refused.err.find("--count"), std::string::npos) << refused.err;

  const Parsed unknown = parse({"--no-such-flag", "3"});
  EXPECT_EQ(unknown.status, std::optional<int>(kExitBadOptions));
  EXPECT_NE(unknown.err.find("--no-such-flag"), std::string::npos) << unknown.err;

  EXPECT_EQ(parse({"--help"}).status, std::optional<int>(kExitDone));
  EXPECT_EQ(parse({"--count", "3", "--ready-file", "/x"}).status, std::nullopt);
}

TEST(ServiceProcess, RunMapsFailuresToExitStatuses) {
  ServiceProcess process("test-service");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(process.run([] { return 0; }), kExitDone);
  EXPECT_EQ(process.run([] { return 7; }), 7);
  EXPECT_EQ(process.run([]() -> int { throw BadOptions("--count and --other clash"); }),
            kExitBadOptions);
  EXPECT_EQ(process.run([]() -> int { throw std::runtime_error("the disk is full"); }),
            kExitFailed);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("test-service: --count and --other clash\n"), std::string::npos) << err;
  EXPECT_NE(err.find("test-service: the disk is full\n"), std::string::npos) << err;
}

TEST(ServiceProcess, TheReadyFileHoldsThePidAndThePortsByName) {
  EXPECT_EQ(ready_json(42, {{"grpc", 50051}, {"metrics", 9102}}),
            "{\"pid\": 42, \"ports\": {\"grpc\": 50051, \"metrics\": 9102}}\n");
  EXPECT_EQ(ready_json(7, {}), "{\"pid\": 7, \"ports\": {}}\n");

  const fs::path dir = fs::temp_directory_path() / ("ready-file-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "ready.json").string();
  ASSERT_TRUE(write_ready_file(path, 1234, {{"grpc", 1}, {"rendezvous", 65535}}).ok());
  auto text = read_file(path);
  ASSERT_TRUE(text.ok()) << text.error();
  const auto json = nlohmann::json::parse(*text);
  EXPECT_EQ(json["pid"], 1234);
  EXPECT_EQ(json["ports"]["grpc"], 1);
  EXPECT_EQ(json["ports"]["rendezvous"], 65535);
  EXPECT_EQ(json["ports"].size(), 2u);
  // Written whole: nothing but the file is left in the directory.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);

  // Through a ServiceProcess: its pid; a path that cannot be written names
  // --ready-file and the path.
  CLI::App app{"test"};
  ServiceProcess process("test-service");
  process.add_options(app);
  const std::string again = (dir / "again.json").string();
  const std::string missing = (dir / "no-such-dir" / "ready.json").string();
  std::vector<std::string> args = {"test-service", "--ready-file", again};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ASSERT_EQ(process.parse(app, 3, argv.data()), std::nullopt);
  EXPECT_EQ(process.ready_file(), again);
  process.ready({{"http", 8080}});
  EXPECT_EQ(nlohmann::json::parse(*read_file(again))["pid"], ::getpid());

  ServiceProcess none("test-service");
  none.ready({{"http", 8080}});  // no --ready-file: nothing written, no error

  CLI::App bad_app{"test"};
  ServiceProcess bad("test-service");
  bad.add_options(bad_app);
  args = {"test-service", "--ready-file", missing};
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  ASSERT_EQ(bad.parse(bad_app, 3, argv.data()), std::nullopt);
  try {
    bad.ready({});
    ADD_FAILURE() << "no error for " << missing;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--ready-file " + missing, 0), 0u) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chessrl::runtime
