// `chessrl bench fanout`: model distribution to many self-play pods, measured
// (bench/fanout_run.cpp: followers and publishes; bench/fanout_idle.cpp: idle
// watch streams).
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "bench/fanout.h"
#include "chessrl/core/error.h"
#include "commands.h"

namespace chessrl::tool {

void add_bench_fanout_command(CLI::App& bench) {
  auto o = std::make_shared<fanout::FanoutOptions>();
  auto replay_args = std::make_shared<std::string>();
  auto model_bytes = std::make_shared<double>(double(o->model_bytes));
  CLI::App* cmd = bench.add_subcommand(
      "fanout",
      "Model distribution to many pods: --followers runtime::ModelFollowers (the real registry "
      "client and policy, a connection each, a loader that keeps no bytes) over --replicas "
      "chessrl-replay processes over one private redis-server, while --versions random blobs of "
      "--model-bytes are published every --interval. Per version: notification delay, the "
      "share holding it over time, failed downloads, Redis bytes served; replay's peak RSS and "
      "CPU; a PASS/FAIL line per criterion. With --idle-watchers: bare watch streams held "
      "open, replay's CPU. Each follower takes ~4 threads, and one open file here and one in "
      "chessrl-replay (the soft limit is raised to followers x 4 + 1024; the hard limit must "
      "allow it). The followers' memory grows with each version (gRPC's buffers: 1,000 "
      "followers of 14 MB reach about 9 GiB by the fourth version over 2 replicas); a run "
      "stops with an error when the machine has under 2 GiB left");
  cmd->add_option("--followers", o->followers, "model followers, one connection each")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--replicas", o->replicas,
                  "chessrl-replay processes over the one Redis (followers round-robin)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  cmd->add_option("--versions", o->versions, "versions published")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--interval", o->interval, "time between publishes (s, ms or min; 60s)")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, double>{{"ms", 0.001}, {"s", 1}, {"min", 60}}))
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--model-bytes", *model_bytes,
                  "size of each published model, in bytes or with a unit (3.3MB: a 6x64 "
                  "checkpoint; 14MB: 10x128; kB, MB, KiB, MiB); at most 64 MiB, "
                  "chessrl-replay's default --max-model-bytes")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, double>{
              {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"kib", 1024}, {"mib", 1 << 20}},
          CLI::AsNumberWithUnit::CASE_INSENSITIVE))
      ->check(CLI::Range(1.0, double(std::uint64_t{64} << 20)))
      ->capture_default_str();
  cmd->add_option("--replay-binary", o->replay_binary,
                  "the chessrl-replay to measure (default: the one beside chessrl, or the build "
                  "tree's)");
  cmd->add_option("--replay-args", *replay_args,
                  "more arguments for every chessrl-replay, space-separated "
                  "(\"--max-watchers 4096\")");
  cmd->add_option("--settle", o->settle,
                  "seconds the followers get to connect before the first publish (0: "
                  "followers / 250, at least 3)")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  cmd->add_option("--bloop-downloads", o->bloop_downloads,
                  "sequential GetModel calls that measure B_loop (one replay's loopback "
                  "throughput), which sets the hold bound max(10 s, 1.5 x N x S / B_loop)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  auto* idle = cmd->add_option("--idle-watchers", o->idle_watchers,
                               "instead: this many bare WatchModels streams on one replay, "
                               "nothing published; replay's CPU share over --idle-seconds "
                               "(pass: at most 5% of a core)")
                   ->check(CLI::Range(1, 100000));
  cmd->add_option("--idle-seconds", o->idle_seconds, "the idle mode's measured window")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--check", o->check, "exit 1 when a criterion fails (else only FAIL is printed)");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the tables' figures and each criterion's pass "
                "instead of the tables (what is said as it runs goes to stderr)");
  cmd->callback([o, replay_args, model_bytes, idle, cmd] {
    o->model_bytes = static_cast<std::uint64_t>(*model_bytes);
    std::istringstream words(*replay_args);
    for (std::string word; words >> word;) o->replay_args.push_back(word);
    if (idle->count() > 0) {
      for (const char* name : {"--followers", "--replicas", "--versions", "--interval",
                               "--model-bytes", "--settle", "--bloop-downloads"})
        if (cmd->get_option(name)->count() > 0)
          throw Error(std::string("bench fanout: ") + name +
                      " is for the follower run, not --idle-watchers");
    } else if (cmd->get_option("--idle-seconds")->count() > 0) {
      throw Error("bench fanout: --idle-seconds needs --idle-watchers");
    }
    const int status = idle->count() > 0 ? fanout::run_fanout_idle(*o) : fanout::run_fanout(*o);
    if (status != 0 && o->check) throw Error("bench fanout: a criterion failed (see FAIL above)");
  });
}

}  // namespace chessrl::tool
