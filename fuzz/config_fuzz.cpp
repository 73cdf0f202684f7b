// A YAML config file (--config, libs/config) read into the options of a
// service, as chessrl-replay declares them (numbers with ranges, a choice,
// strings, a list, a flag). The contract every main relies on: whatever the
// file holds, parsing ends normally or with a CLI::ParseError (which
// CLI11_PARSE turns into a message and an exit code); any other exception
// would escape main and abort start-up without naming the problem.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "chessrl/config/config.h"
#include "fuzz_check.h"

namespace {

struct Settings {
  std::string listen = "0.0.0.0:50051";
  std::string store = "redis";
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::uint64_t window_positions = 1000000;
  unsigned max_sample = 65536;
  std::size_t max_game_bytes = 1 << 20;
  double ratio = 0.5;
  std::vector<std::string> peers;
  bool verbose = false;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--listen", s.listen, "gRPC address")->capture_default_str();
  app.add_option("--store", s.store, "redis or memory")->check(CLI::IsMember({"redis", "memory"}));
  app.add_option("--redis-host", s.redis_host, "Redis host");
  app.add_option("--redis-port", s.redis_port, "Redis port")->check(CLI::Range(1, 65535));
  app.add_option("--window-positions", s.window_positions, "window")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  app.add_option("--max-sample", s.max_sample, "most per call")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--max-game-bytes", s.max_game_bytes, "largest game")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{64} << 20));
  app.add_option("--ratio", s.ratio, "a ratio")->check(CLI::Range(0.0, 1.0));
  app.add_option("--peers", s.peers, "a list");
  app.add_flag("--verbose", s.verbose, "a flag");
}

// The file the YAML goes through (CLI11 reads --config from a path), removed
// when the process ends normally.
struct ConfigFile {
  std::string path = "/tmp/chessrl-fuzz-config-" + std::to_string(::getpid()) + ".yaml";
  ~ConfigFile() { ::unlink(path.c_str()); }
};

const std::string& config_path() {
  static const ConfigFile file;
  return file.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(config_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    FUZZ_CHECK(out.good(), "cannot write " + config_path());
  }
  Settings settings;
  CLI::App app("config fuzz");
  add_options(app, settings);
  chessrl::config::finish(app);
  const char* argv[] = {"chessrl-fuzz", "--config", config_path().c_str()};
  try {
    app.parse(3, argv);
  } catch (const CLI::ParseError&) {
    return 0;
  }
  FUZZ_CHECK(settings.redis_port >= 1 && settings.redis_port <= 65535);
  FUZZ_CHECK(settings.ratio >= 0.0 && settings.ratio <= 1.0);
  FUZZ_CHECK(settings.store == "redis" || settings.store == "memory", settings.store);
  return 0;
}
