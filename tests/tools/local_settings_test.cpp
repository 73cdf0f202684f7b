// What `chessrl local` passes to self-play: its search threads (the machine's
// cores shared out unless given) and, through local_children, its niceness;
// and to replay: its window only when given.
#include "local/settings.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "local/children.h"

namespace chessrl::tool {
namespace {

// The value after `flag` in `argv`, or "" when absent.
std::string value_of(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
}

TEST(LocalSettings, SelfplayThreadsGoToTheSearchAndTheNetworkWorkers) {
  LocalOptions o;
  o.selfplay_threads = 3;
  const auto argv = selfplay_settings(o);
  EXPECT_EQ(value_of(argv, "--threads"), "3");
  EXPECT_EQ(value_of(argv, "--workers"), "3");
  EXPECT_EQ(value_of(argv, "--nn-threads"), "1");
  EXPECT_EQ(value_of(argv, "--concurrent"), std::to_string(local_defaults::kConcurrentGames));
}

// The window is chessrl-replay's own (--window-positions' default) unless
// chessrl local is given --window, as the chart leaves it to the binary.
TEST(LocalSettings, ReplayKeepsItsOwnWindowUnlessGivenOne) {
  LocalOptions o;
  EXPECT_EQ(replay_settings(o), (std::vector<std::string>{"--store", "redis"}));
  o.window = 20000;
  EXPECT_EQ(value_of(replay_settings(o), "--window-positions"), "20000");
}

TEST(LocalSettings, AutoThreadsShareTheCoresOutOverTheProcesses) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(auto_selfplay_threads(1), cores);
  EXPECT_EQ(auto_selfplay_threads(2), std::max(1, cores / 2));
  EXPECT_EQ(auto_selfplay_threads(cores + 1), 1) << "at least one thread each";
  EXPECT_EQ(auto_selfplay_threads(0), cores) << "no process: as for one";
}

TEST(LocalSettings, AChildRunsAtItsNiceness) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("local-settings-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string log = (dir / "nice.log").string();
  // coreutils' nice without arguments prints the niceness it runs at.
  auto child = Child::start(ChildSpec{"nice", {"/usr/bin/nice"}, {}, log, 7});
  ASSERT_TRUE(child.ok()) << child.error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(*child)->exited() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE((*child)->clean_exit()) << (*child)->status();
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, std::to_string(::getpriority(PRIO_PROCESS, 0) + 7) + "\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chessrl::tool
