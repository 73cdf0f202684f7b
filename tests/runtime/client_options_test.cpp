// The registry/replay-client option group (runtime/client_options.h), and how
// an option that kept its old name as an alias reads CHESSRL_* variables
// (config::finish): the chart and scripts that pass the old name still work.
#include "chessrl/runtime/client_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>

#include <string>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/runtime/options.h"

#include "parse_args.h"

namespace chessrl::runtime {
namespace {

using ::testing::HasSubstr;

using test_util::parse;

TEST(ClientOptions, DeclaresReplayRegistryDeadlineAndSecurity) {
  ClientOptions o;
  CLI::App app;
  o.add_to(app);
  ASSERT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.replay, kDefaultReplayAddress);
  EXPECT_EQ(o.registry, "");  // the caller's rule: --replay, or none
  EXPECT_EQ(o.rpc_deadline_s, 10);
  EXPECT_NE(app.get_option_no_throw("--token-file"), nullptr);
  EXPECT_NE(app.get_option_no_throw("--tls"), nullptr);
  EXPECT_TRUE(o.load_security().ok());

  ClientOptions given;
  CLI::App again;
  given.add_to(again);
  ASSERT_EQ(parse(again, {"--replay", "r:1", "--registry", "g:2", "--rpc-deadline", "3"}), "");
  EXPECT_EQ(given.replay, "r:1");
  EXPECT_EQ(given.registry, "g:2");
  EXPECT_EQ(given.rpc_deadline_s, 3);
}

TEST(ClientOptions, RegistryOnlyHasNoReplayFlag) {
  ClientOptions o;
  o.registry = kDefaultReplayAddress;
  CLI::App app;
  o.add_registry_only_to(app);
  EXPECT_EQ(app.get_option_no_throw("--replay"), nullptr);
  ASSERT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.registry, kDefaultReplayAddress);
}

TEST(ClientOptions, RefusesBadValuesNamingTheFlag) {
  ClientOptions o;
  CLI::App app;
  o.add_to(app);
  EXPECT_THAT(parse(app, {"--rpc-deadline", "0"}), HasSubstr("--rpc-deadline"));

  ClientOptions missing;
  missing.security_flags.token_file = "/nonexistent/chessrl-token";
  auto loaded = missing.load_security();
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.error(), HasSubstr("/nonexistent/chessrl-token"));
}

// Sets a variable for one test and removes it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(OldOptionNames, TheOldNamesVariableSetsTheOptionWhenItsOwnIsUnset) {
  ScopedEnv old_name("CHESSRL_THREADS", "3");
  LayoutOptions o;
  int leaves = 8;
  CLI::App app;
  o.add_to(app, leaves);
  config::finish(app);
  ASSERT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.search_threads, 3);
}

TEST(OldOptionNames, TheOptionsOwnVariableWinsOverTheOldNames) {
  ScopedEnv old_name("CHESSRL_THREADS", "3");
  ScopedEnv own_name("CHESSRL_SEARCH_THREADS", "5");
  LayoutOptions o;
  int leaves = 8;
  CLI::App app;
  o.add_to(app, leaves);
  config::finish(app);
  ASSERT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.search_threads, 5);
}

// A config file's key under either name gives way to a variable under either
// name: flag > env > file holds across the old and new names.
class OldOptionNamesInAFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "old_option_names_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  // search_threads after parsing --config with `yaml`.
  int search_threads_from(const std::string& yaml) {
    std::ofstream(path_) << yaml;
    LayoutOptions o;
    int leaves = 8;
    CLI::App app;
    o.add_to(app, leaves);
    config::finish(app);
    EXPECT_EQ(parse(app, {"--config", path_}), "");
    return o.search_threads;
  }
  std::string path_;
};

TEST_F(OldOptionNamesInAFile, TheOldKeyInTheFileSetsTheOption) {
  EXPECT_EQ(search_threads_from("threads: 8\n"), 8);
}

TEST_F(OldOptionNamesInAFile, TheNewNamesVariableBeatsTheOldKeyInTheFile) {
  ScopedEnv own_name("CHESSRL_SEARCH_THREADS", "4");
  EXPECT_EQ(search_threads_from("threads: 8\n"), 4);
}

TEST_F(OldOptionNamesInAFile, TheOldNamesVariableBeatsTheNewKeyInTheFile) {
  ScopedEnv old_name("CHESSRL_THREADS", "4");
  EXPECT_EQ(search_threads_from("search-threads: 8\n"), 4);
}

}  // namespace
}  // namespace chessrl::runtime
