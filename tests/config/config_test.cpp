#include "chessrl/config/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace chessrl::config {
namespace {

struct Parsed {
  int port = 6379;
  std::string host = "localhost";
  std::vector<int> sizes;
  bool verbose = false;
};

class ConfigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("CHESSRL_REDIS_PORT");
    ::unsetenv("CHESSRL_REDIS_HOST");
    std::filesystem::remove(path_);
  }
  std::string write(const std::string& yaml) {
    std::ofstream(path_) << yaml;
    return path_;
  }
  // Parses argv; returns the CLI11 error message, empty on success.
  std::string parse(std::vector<std::string> args, Parsed& out) {
    CLI::App app;
    app.add_option("--redis-port", out.port)->check(CLI::Range(1, 65535));
    app.add_option("--redis-host", out.host);
    app.add_option("--sizes", out.sizes);
    app.add_flag("--verbose", out.verbose);
    finish(app);
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("chessrl-config-test-" + std::to_string(::getpid()) + ".yaml"))
                          .string();
};

TEST_F(ConfigTest, EnvNames) {
  EXPECT_EQ(env_name("redis-password"), "CHESSRL_REDIS_PASSWORD");
  EXPECT_EQ(env_name("max-sample"), "CHESSRL_MAX_SAMPLE");
}

TEST_F(ConfigTest, DefaultsWithNothingGiven) {
  Parsed p;
  EXPECT_EQ(parse({}, p), "");
  EXPECT_EQ(p.port, 6379);
  EXPECT_EQ(p.host, "localhost");
}

TEST_F(ConfigTest, FileFlattensNestedMapsAndReadsLists) {
  Parsed p;
  const auto file = write("redis:\n  port: 7000\n  host: cache\nsizes: [1, 2, 3]\nverbose: true\n");
  EXPECT_EQ(parse({"--config", file}, p), "");
  EXPECT_EQ(p.port, 7000);
  EXPECT_EQ(p.host, "cache");
  EXPECT_EQ(p.sizes, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(p.verbose);
}

TEST_F(ConfigTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  const auto file = write("redis-port: 7000\nredis-host: from-file\n");
  ::setenv("CHESSRL_REDIS_PORT", "7001", 1);
  Parsed env_over_file;
  EXPECT_EQ(parse({"--config", file}, env_over_file), "");
  EXPECT_EQ(env_over_file.port, 7001);
  EXPECT_EQ(env_over_file.host, "from-file");
  Parsed flag_over_env;
  EXPECT_EQ(parse({"--config", file, "--redis-port", "7002"}, flag_over_env), "");
  EXPECT_EQ(flag_over_env.port, 7002);
}

TEST_F(ConfigTest, UnknownKeyIsAnErrorNamingIt) {
  Parsed p;
  const auto message = parse({"--config", write("redis-prot: 7000\n")}, p);
  EXPECT_NE(message.find("redis-prot"), std::string::npos) << message;
}

TEST_F(ConfigTest, OutOfRangeValueIsAnErrorNamingTheOption) {
  Parsed p;
  const auto message = parse({"--config", write("redis-port: 70000\n")}, p);
  EXPECT_NE(message.find("redis-port"), std::string::npos) << message;
  ::setenv("CHESSRL_REDIS_PORT", "0", 1);
  Parsed q;
  const auto env_message = parse({}, q);
  EXPECT_NE(env_message.find("redis-port"), std::string::npos) << env_message;
}

TEST_F(ConfigTest, InvalidYamlIsAClearError) {
  Parsed p;
  const auto message = parse({"--config", write("redis-port: [unclosed\n")}, p);
  EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
  Parsed q;
  const auto scalar = parse({"--config", write("just a string\n")}, q);
  EXPECT_NE(scalar.find("map"), std::string::npos) << scalar;
}

// Found by fuzz_config (tests/fuzz/corpus/config/regression-map-as-key.yaml):
// a key that is a map or a list made yaml-cpp throw its own exception, which
// CLI11_PARSE does not catch, so start-up ended in std::terminate.
TEST_F(ConfigTest, AKeyThatIsNotAPlainNameIsAClearError) {
  Parsed p;
  const auto nested = parse({"--config", write("redis:\n  ? host: cache\n  : 1\n")}, p);
  EXPECT_NE(nested.find("line 2 (under 'redis'): a key must be a plain name"), std::string::npos)
      << nested;
  Parsed q;
  const auto list = parse({"--config", write("? [redis, port]\n: 7000\n")}, q);
  EXPECT_NE(list.find("line 1: a key must be a plain name"), std::string::npos) << list;
}

// Seen while writing fuzz_config, which reports it as a timeout (the input is
// tests/fuzz/corpus/config/regression-alias-expansion.yaml): 650 bytes of
// nested aliases expand to 2^24 keys, and reading them hung start-up.
TEST_F(ConfigTest, AliasesExpandingToTooManyKeysAreAnError) {
  std::string yaml = "a0: &a0 {x: 1, y: 2}\n";
  for (int i = 1; i < 24; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " {p: *a" +
            std::to_string(i - 1) + ", q: *a" + std::to_string(i - 1) + "}\n";
  }
  Parsed p;
  const auto message = parse({"--config", write(yaml)}, p);
  EXPECT_NE(message.find("more than 10000 keys"), std::string::npos) << message;
}

// Found by fuzz_config (tests/fuzz/corpus/config/
// regression-alias-inside-its-anchor.yaml): yaml-cpp lets an alias refer to
// the anchor it is inside, the map then contains itself, and reading it
// recursed until the stack overflowed.
TEST_F(ConfigTest, AnAliasInsideItsOwnAnchorIsAnError) {
  Parsed p;
  const auto message = parse({"--config", write("redis: &r {port: 7000, again: *r}\n")}, p);
  EXPECT_NE(message.find("maps nest more than 32 deep"), std::string::npos) << message;
}

TEST_F(ConfigTest, MissingFileIsAnError) {
  Parsed p;
  EXPECT_NE(parse({"--config", "/nonexistent/chessrl.yaml"}, p), "");
}

}  // namespace
}  // namespace chessrl::config
