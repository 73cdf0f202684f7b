// `chessrl bench selfplay-stop`: how long chessrl-selfplay takes from SIGTERM
// to its exit, with its push buffer full and the replay service reachable
// (the flush of every buffered game), and with the buffer empty (the stop
// itself: abandoning the games in progress, tearing down). The real binaries
// on loopback ports: chessrl-selfplay (a tiny network and few visits, so that
// games finish fast; games as long as its defaults make them) pushing to
// chessrl-replay over a private redis-server (appendfsync always, as the
// chart's Redis).
//
// The full buffer: Redis is killed (chessrl-replay up, answering UNAVAILABLE)
// or, with --outage replay, chessrl-replay is not started yet, while
// self-play fills its buffer; once its /metrics shows a shed game (the buffer
// is full), Redis is started again (chessrl-replay answers Stats) or
// chessrl-replay is started, and SIGTERM goes at once. The times come from
// the log's lines as they appear: SIGTERM to "stopping:" (the games in
// progress abandoned), to "done:" (the flush over), to the exit. Self-play's
// pusher retries on its own too, so it can push the buffer in the moment
// between replay's return and SIGTERM: such a run times no flush of a full
// buffer, and is run again (--full-tries in all; each run says how many it took).
//
// The bench checks what it times: it exits non-zero, saying FAILED, when a
// stop did not end with chessrl-selfplay's exit status 0 and no game lost.
// --sabotage sends SIGKILL instead of SIGTERM, so that the check's own test
// (tests/tools/CMakeLists.txt) sees it fail. A table, or with --json one JSON
// document of the same figures (the exit status is the same).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/replay_shared.h"
#include "bench/selfplay_stop_report.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/ports.h"
#include "chessrl/harness/service_binary.h"
#include "chessrl/metrics/http_client.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

using harness::find_service_binary;
using harness::log_since;
using harness::log_size;
using harness::pick_port;

using selfplay_stop::print_run;
using selfplay_stop::print_summary;
using selfplay_stop::scenario_json;
using selfplay_stop::stop_problem;
using selfplay_stop::StopRun;

constexpr const char* kWhat = "bench selfplay-stop";

struct StopBenchOptions {
  int repeat = 5;
  std::string scenario = "both";  // full, empty or both
  std::string outage = "redis";   // what is down while the buffer fills: redis or replay
  std::size_t buffer_games = 0;   // 0: chessrl-selfplay's default
  int flush_timeout = 60;         // long enough that the whole flush is timed
  std::string net = "1x8";
  int visits = 8;
  int reduced_visits = 4;
  int concurrent = 4;
  int threads = 1;
  std::vector<std::string> selfplay_args;  // more chessrl-selfplay options
  double fill_timeout = 1800;
  int full_tries = 5;  // full runs whose buffer was taken before SIGTERM: run again, this often
  std::string bin_dir;
  bool sabotage = false;  // SIGKILL instead of SIGTERM: the check must fail
  bool json = false;      // one JSON document on stdout instead of the table
};

// The body of GET `path` on 127.0.0.1:port; "" when nothing answers.
std::string http_get(int port, const std::string& path) {
  auto reply = metrics::http_get("127.0.0.1", port, path, std::chrono::seconds(10));
  return reply.ok() ? reply->body : "";
}

// The value of the series `name` (no labels) in a /metrics page; NaN if absent.
double metric(const std::string& page, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = page.find(key);
  return at == std::string::npos ? NAN : std::atof(page.c_str() + at + key.size());
}

// The number just before `suffix` in `text` ("4096 pushed," -> 4096); -1 when absent.
long number_before(const std::string& text, const std::string& suffix) {
  const auto at = text.find(suffix);
  if (at == std::string::npos) return -1;
  std::size_t start = at;
  while (start > 0 && text[start - 1] >= '0' && text[start - 1] <= '9') --start;
  return start == at ? -1 : std::atol(text.c_str() + start);
}

struct SelfplayChild {
  std::unique_ptr<Process> child;
  int metrics_port = 0;
  std::string log_path;
};

SelfplayChild start_selfplay(const StopBenchOptions& o, int replay_port, const std::string& dir,
                             const std::string& replica) {
  ProcessSpec spec;
  const std::vector<std::pair<std::string, std::string>> options = {
      {"--replay", "127.0.0.1:" + std::to_string(replay_port)},
      {"--replica", replica},
      {"--metrics-listen", "127.0.0.1:0"},
      {"--bootstrap", "net"},
      {"--net", o.net},
      {"--visits", std::to_string(o.visits)},
      {"--reduced-visits", std::to_string(o.reduced_visits)},
      {"--concurrent", std::to_string(o.concurrent)},
      {"--threads", std::to_string(o.threads)},
      {"--workers", "1"},
      {"--nn-threads", "1"},
      {"--flush-timeout", std::to_string(o.flush_timeout)},
      // Timed without it: with nothing lost it never waits anyway.
      {"--final-scrape-wait", "0"},
      {"--progress-interval", "0"},
  };
  spec.argv = {find_service_binary("chessrl-selfplay", o.bin_dir).value_or_throw()};
  for (const auto& [flag, value] : options) spec.argv.insert(spec.argv.end(), {flag, value});
  if (o.buffer_games > 0) {
    spec.argv.insert(spec.argv.end(), {"--buffer-games", std::to_string(o.buffer_games)});
  }
  spec.argv.insert(spec.argv.end(), o.selfplay_args.begin(), o.selfplay_args.end());
  spec.output_path = dir + "/" + replica + ".log";
  spec.null_stdin = true;
  // It binds a metrics port the kernel picks and names it in its ready file
  // (removed first: a file that is there is this start's).
  const std::string ready_file = spec.output_path + ".ready.json";
  spec.argv.insert(spec.argv.end(), {"--ready-file", ready_file});
  std::remove(ready_file.c_str());
  SelfplayChild out;
  out.log_path = spec.output_path;
  out.child = std::make_unique<Process>(Process::start(spec).value_or_throw());
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  std::optional<harness::ReadyFile> ready;
  while (!(ready = harness::read_ready_file(ready_file))) {
    if (out.child->exited() || Clock::now() > deadline)
      throw Error(std::string(kWhat) + ": chessrl-selfplay did not write " + ready_file + " (" +
                  out.child->status() + "); its log:\n" + log_tail(out.log_path, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.metrics_port = ready->port("metrics");
  if (out.metrics_port <= 0)
    throw Error(std::string(kWhat) + ": " + ready_file + " names no metrics port");
  return out;
}

void stop_and_time(SelfplayChild& selfplay, double limit_s, bool sabotage, StopRun& run) {
  const std::uintmax_t from = log_size(selfplay.log_path);
  const auto start = Clock::now();
  if (sabotage) {
    selfplay.child->kill();
  } else {
    selfplay.child->terminate();
  }
  while (!selfplay.child->exited()) {
    const std::string text = log_since(selfplay.log_path, from);
    if (std::isnan(run.to_stopping) &&
        text.find(" games in progress abandoned") != std::string::npos)
      run.to_stopping = seconds_since(start);
    if (std::isnan(run.to_pushing) && text.find(" buffered games (up to") != std::string::npos)
      run.to_pushing = seconds_since(start);
    if (std::isnan(run.to_done) && text.find("done: ") != std::string::npos)
      run.to_done = seconds_since(start);
    if (seconds_since(start) > limit_s) {
      selfplay.child->kill();
      throw Error(std::string(kWhat) + ": chessrl-selfplay still running " +
                  std::to_string(int(limit_s)) + " s after SIGTERM; its log:\n" +
                  log_tail(selfplay.log_path, 20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  run.to_exit = seconds_since(start);
  run.exit_status = selfplay.child->status();
  run.clean_exit = selfplay.child->clean_exit();
  const std::string text = log_since(selfplay.log_path, from);
  run.buffered = std::max(0L, number_before(text, " buffered games (up to"));
  run.pushed = number_before(text, " pushed, ");
  run.lost = number_before(text, " could not be pushed");
  run.abandoned = number_before(text, " games in progress abandoned");
}

void read_plies(const std::string& page, StopRun& run) {
  const double count = metric(page, "chessrl_selfplay_game_plies_count");
  if (count > 0) run.mean_plies = metric(page, "chessrl_selfplay_game_plies_sum") / count;
}

void read_positions(const ReplayChild& replay, StopRun& run) {
  if (replay.metrics_port == 0) return;
  const std::string page = http_get(replay.metrics_port, "/metrics");
  const double games = metric(page, "chessrl_replay_games_stored_total");
  if (games > 0)
    run.positions_per_game = metric(page, "chessrl_replay_positions_stored_total") / games;
}

std::string temp_dir() {
  char pattern[] = "/tmp/chessrl-bench-stop-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (made == nullptr) throw Error(std::string(kWhat) + ": cannot create a directory in /tmp");
  return made;
}

// The buffer filled while Redis or chessrl-replay is down, then SIGTERM once
// the replay service answers again.
StopRun run_full_once(const StopBenchOptions& o, int index, ProgressLine& progress) {
  auto redis = start_bench_redis("chessrl-bench-stop", "always");
  const std::string dir = temp_dir();
  ReplayChild replay;
  int replay_port = 0;
  if (o.outage == "redis") {
    replay = start_replay_child(*redis, o.bin_dir, {}, true, kWhat);
    replay_port = replay.port;
    redis->kill();
  } else {
    // A number to start chessrl-replay on later (self-play needs it first).
    replay_port = pick_port();
  }
  SelfplayChild selfplay =
      start_selfplay(o, replay_port, dir, "bench-stop-full-" + std::to_string(index));
  const auto start = Clock::now();
  StopRun run;
  for (;;) {
    const std::string page = http_get(selfplay.metrics_port, "/metrics");
    const double buffered = metric(page, "chessrl_selfplay_games_buffered");
    progress.show("full buffer, run %d/%d: %.0f games buffered after %.0f s", index, o.repeat,
                  std::isnan(buffered) ? 0.0 : buffered, seconds_since(start));
    if (metric(page, "chessrl_selfplay_games_shed_total") >= 1) {
      read_plies(page, run);
      run.full = std::isnan(buffered) ? -1 : std::lround(buffered);
      break;
    }
    if (selfplay.child->exited())
      throw Error(std::string(kWhat) + ": chessrl-selfplay exited (" + selfplay.child->status() +
                  "); its log:\n" + log_tail(selfplay.log_path, 20));
    if (seconds_since(start) > o.fill_timeout)
      throw Error(std::string(kWhat) + ": the buffer did not fill within --fill-timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  progress.clear();
  if (o.outage == "redis") {
    redis->restart();
    rpc::ClientOptions wait;
    wait.address = "127.0.0.1:" + std::to_string(replay.port);
    wait.attempts = 40;
    wait.backoff_max = std::chrono::milliseconds(100);
    if (auto up = rpc::ReplayClient(wait).stats(); !up.ok())
      throw Error(std::string(kWhat) + ": chessrl-replay did not answer after Redis came back (" +
                  up.error() + ")");
  } else {
    replay = start_replay_child(*redis, o.bin_dir, {}, true, kWhat, {}, "",
                                "127.0.0.1:" + std::to_string(replay_port));
  }
  stop_and_time(selfplay, o.flush_timeout + 120.0, o.sabotage, run);
  read_positions(replay, run);
  replay.child->stop(std::chrono::seconds(10));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return run;
}

// run_full_once until self-play's own retry did not push the buffer before
// SIGTERM (fewer buffered at SIGTERM than when full), --full-tries at most; the
// last try when every one was taken so.
StopRun run_full(const StopBenchOptions& o, int index, ProgressLine& progress) {
  for (int t = 1;; ++t) {
    StopRun run = run_full_once(o, index, progress);
    run.tries = t;
    if (run.buffered >= run.full || t >= o.full_tries) return run;
    std::fprintf(stderr,
                 "full run %d, try %d: %ld of the %ld buffered games were pushed before SIGTERM "
                 "(self-play's own retry, once replay was back): no full flush to time, run "
                 "again\n",
                 index, t, run.full - run.buffered, run.full);
  }
}

// Everything up; SIGTERM just after a push emptied the buffer.
StopRun run_empty(const StopBenchOptions& o, int index, ProgressLine& progress) {
  auto redis = start_bench_redis("chessrl-bench-stop", "always");
  const std::string dir = temp_dir();
  ReplayChild replay = start_replay_child(*redis, o.bin_dir, {}, true, kWhat);
  SelfplayChild selfplay =
      start_selfplay(o, replay.port, dir, "bench-stop-empty-" + std::to_string(index));
  const auto start = Clock::now();
  const double warm_games = 2.0 * o.concurrent;
  StopRun run;
  for (;;) {
    const std::string page = http_get(selfplay.metrics_port, "/metrics");
    const double pushed = metric(page, "chessrl_selfplay_games_pushed_total");
    progress.show("empty buffer, run %d/%d: %.0f games pushed after %.0f s", index, o.repeat,
                  std::isnan(pushed) ? 0.0 : pushed, seconds_since(start));
    if (pushed >= warm_games && metric(page, "chessrl_selfplay_games_buffered") == 0) {
      read_plies(page, run);
      break;
    }
    if (selfplay.child->exited())
      throw Error(std::string(kWhat) + ": chessrl-selfplay exited (" + selfplay.child->status() +
                  "); its log:\n" + log_tail(selfplay.log_path, 20));
    if (seconds_since(start) > o.fill_timeout)
      throw Error(std::string(kWhat) + ": fewer than " + std::to_string(int(warm_games)) +
                  " games pushed within --fill-timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  progress.clear();
  stop_and_time(selfplay, o.flush_timeout + 120.0, o.sabotage, run);
  read_positions(replay, run);
  replay.child->stop(std::chrono::seconds(10));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return run;
}

// Prints the table; false when a stop was not clean (stop_problem), each named.
bool run_stop_bench(const StopBenchOptions& o) {
  if (!o.json)
    std::printf(
        "chessrl bench selfplay-stop: chessrl-selfplay (%s network, %d/%d visits, %d games "
        "at once, %d search threads) pushing to chessrl-replay over a private redis-server "
        "(appendfsync always), on loopback; %d runs per scenario; --flush-timeout %d%s%s\n\n",
        o.net.c_str(), o.visits, o.reduced_visits, o.concurrent, o.threads, o.repeat,
        o.flush_timeout,
        o.buffer_games > 0 ? (", --buffer-games " + std::to_string(o.buffer_games)).c_str() : "",
        o.scenario == "empty"
            ? ""
            : (o.outage == "redis" ? "; full buffer: filled while Redis is down"
                                   : "; full buffer: filled while chessrl-replay is down"));
  std::fflush(stdout);
  ProgressLine progress;
  std::vector<StopRun> full, empty;
  for (int i = 1; i <= o.repeat; ++i) {
    // Interleaved, so that a change in the machine's load touches both alike.
    if (o.scenario != "empty") {
      full.push_back(run_full(o, i, progress));
      if (!o.json) print_run("full", i, full.back());
    }
    if (o.scenario != "full") {
      empty.push_back(run_empty(o, i, progress));
      if (!o.json) print_run("empty", i, empty.back());
    }
  }
  std::vector<std::string> problems;
  const auto check = [&](const char* scenario, const std::vector<StopRun>& runs) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (const std::string why = stop_problem(runs[i]); !why.empty())
        problems.push_back(std::string(scenario) + " run " + std::to_string(i + 1) + ": " + why);
    }
  };
  check("full", full);
  check("empty", empty);
  if (o.json) {
    nlohmann::json doc = {{"bench", "selfplay-stop"},
                          {"net", o.net},
                          {"visits", o.visits},
                          {"reduced_visits", o.reduced_visits},
                          {"concurrent", o.concurrent},
                          {"threads", o.threads},
                          {"repeat", o.repeat},
                          {"flush_timeout", o.flush_timeout},
                          {"buffer_games", o.buffer_games},
                          {"outage", o.outage},
                          {"problems", problems},
                          {"ok", problems.empty()}};
    if (!full.empty()) doc["full"] = scenario_json(full);
    if (!empty.empty()) doc["empty"] = scenario_json(empty);
    print_json_document(doc.dump(2));
    return problems.empty();
  }
  std::printf(
      "\nmedians, in seconds: \"stopping\" is the line saying the games in progress "
      "were abandoned; \"pushing\" the flush's start (no line when nothing is "
      "buffered); \"done\" its end\n\n");
  std::printf(
      "| buffer | runs | games flushed | lost | abandoned | plies per game | positions "
      "per game | SIGTERM → \"stopping\" | \"stopping\" → \"done\" | of which the "
      "flush (\"pushing\" → \"done\") | \"done\" → exit | SIGTERM → exit (range) | "
      "games/s in the flush |\n");
  std::printf(
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: |\n");
  if (!full.empty()) print_summary("full", full);
  if (!empty.empty()) print_summary("empty", empty);
  std::printf("\n");
  for (const std::string& why : problems) std::printf("%s\n", why.c_str());
  std::printf("%s\n", problems.empty() ? "OK: every stop exited with status 0 and lost no game"
                                       : "FAILED: a stop was not clean (see above)");
  std::fflush(stdout);
  return problems.empty();
}

}  // namespace

void add_bench_selfplay_stop_command(CLI::App& bench) {
  auto o = std::make_shared<StopBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "selfplay-stop",
      "chessrl-selfplay from SIGTERM to exit with a full push buffer and the replay service "
      "reachable (the flush), and with an empty one (abandoning the games in progress): real "
      "binaries over a private redis-server on loopback ports");
  cmd->add_option("--repeat", o->repeat, "runs per scenario (medians reported)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--scenario", o->scenario, "full, empty or both")
      ->check(CLI::IsMember({"full", "empty", "both"}))
      ->capture_default_str();
  cmd->add_option("--outage", o->outage,
                  "what is down while the buffer fills: redis (chessrl-replay up and connected, "
                  "answering UNAVAILABLE) or replay (started only before SIGTERM: self-play's "
                  "channel reconnects during the flush)")
      ->check(CLI::IsMember({"redis", "replay"}))
      ->capture_default_str();
  cmd->add_option("--buffer-games", o->buffer_games,
                  "chessrl-selfplay's --buffer-games (0: its default)")
      ->capture_default_str();
  cmd->add_option("--flush-timeout", o->flush_timeout,
                  "chessrl-selfplay's --flush-timeout: long, so that the whole flush is timed")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  cmd->add_option("--net", o->net, "self-play's network (--bootstrap net)")->capture_default_str();
  cmd->add_option("--visits", o->visits)->capture_default_str();
  cmd->add_option("--reduced-visits", o->reduced_visits)->capture_default_str();
  cmd->add_option("--concurrent", o->concurrent, "games played at once")->capture_default_str();
  cmd->add_option("--threads", o->threads, "search threads")->capture_default_str();
  cmd->add_option(
         "--selfplay-arg", o->selfplay_args,
         "one more chessrl-selfplay argument (repeatable), e.g. --selfplay-arg=--max-plies=40")
      ->allow_extra_args(false);
  cmd->add_option("--fill-timeout", o->fill_timeout, "seconds allowed to fill the buffer")
      ->capture_default_str();
  cmd->add_option("--full-tries", o->full_tries,
                  "tries of a full run, when self-play's own retry pushed the buffer between "
                  "replay's return and SIGTERM (no full flush to time)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--bin-dir", o->bin_dir,
                  "where chessrl-selfplay and chessrl-replay are (default: beside this "
                  "executable, the build tree, PATH)");
  cmd->add_flag("--sabotage", o->sabotage,
                "stop with SIGKILL instead of SIGTERM: the check's own test (the bench must "
                "say FAILED and exit 1)");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the table's figures (and \"ok\", \"problems\") "
                "instead of the table");
  cmd->callback([o] {
    if (!run_stop_bench(*o)) throw Error(std::string(kWhat) + ": a stop was not clean");
  });
}

}  // namespace chessrl::tool
