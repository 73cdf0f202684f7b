// `chessrl bench load`: the replay service under load, and a check that no
// acknowledged game is lost or stored twice. A private redis-server (appendfsync
// always) and the chessrl-replay binary over it; `--producers` threads push
// batches of fresh synthetic games (one gRPC channel each, like self-play
// replicas) while `--samplers` threads call Sample, for `--seconds`. Every id
// answered STORED is recorded; a game answered with any other status but
// DUPLICATE or REJECTED (FAILED: not stored) is sent again, and so is every game
// of a call that failed (UNAVAILABLE, DEADLINE_EXCEEDED, ...); a retry answered
// DUPLICATE counts as stored. When the producers stop (after retrying what is
// pending), Redis itself is read: every acknowledged id must be in the window
// exactly once, with its dedup marker and every position key of it.
// The kill scenario does the same with Redis killed (SIGKILL) at a third of the
// run and restarted on the same port and data directory `--down` seconds later.
// Exits nonzero when a game is lost, duplicated, rejected or left unresolved.
// The table, or with --json one JSON document of the same figures (a run per
// scenario; the open loop's in bench/load_fanin_report.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/load_fanin.h"
#include "bench/load_support.h"
#include "bench/replay_shared.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/rpc/clients.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

struct LoadOptions {
  int producers = 64;
  int samplers = 2;
  double seconds = 60;
  int push_batch = 8;      // games per PushGames
  int sample_count = 256;  // positions per Sample
  int plies = 160;
  double target_fraction = 0.25;
  std::string scenario = "both";  // plain, kill or both
  double down_seconds = 2;        // Redis down time in the kill scenario
  double drain_seconds = 60;      // how long producers retry what is pending after the run
  std::string bin_dir;
  // The checker's own test (hidden): before the check, one game's window entry
  // is removed and another's doubled, so the check must report 1 lost and 1
  // duplicated, and fail.
  bool sabotage = false;
  bool json = false;  // one JSON document on stdout instead of the table
};

// One thread's record: latencies of calls that answered, ids acknowledged,
// errors by gRPC code.
struct ThreadRecord {
  std::vector<double> latencies_ms;
  std::vector<std::string> acked;
  std::uint64_t positions = 0;
  std::uint64_t retried_games = 0;   // per-game statuses other than STORED/DUPLICATE/REJECTED
  std::uint64_t duplicate_acks = 0;  // retries answered DUPLICATE (counted as stored)
  std::uint64_t unexpected_duplicates = 0;  // DUPLICATE for an id never sent before
  std::uint64_t rejected = 0;
  std::uint64_t unresolved = 0;                 // still not acknowledged when the drain ended
  std::map<std::string, std::uint64_t> errors;  // failed calls by code
  std::string first_rejection;
};

struct RunResult {
  std::string scenario;
  double seconds = 0;
  ThreadRecord push;    // merged over the producers
  ThreadRecord sample;  // merged over the samplers (acked/positions unused)
  std::uint64_t sampled_positions = 0;
  std::uint64_t lost = 0;
  std::uint64_t duplicated = 0;             // ids acknowledged STORED more than once
  std::uint64_t window_duplicates = 0;      // ids in the window more than once
  std::uint64_t unacknowledged_stored = 0;  // in the window, never acknowledged
  std::uint64_t missing_markers = 0;
  std::uint64_t missing_positions = 0;
  long service_rss_kb = -1;
  std::string redis_used_memory;
  std::string service_status;
  bool ok() const {
    return lost == 0 && duplicated == 0 && window_duplicates == 0 && missing_markers == 0 &&
           missing_positions == 0 && push.rejected == 0 && push.unresolved == 0 &&
           push.unexpected_duplicates == 0;
  }
};

void merge(ThreadRecord& into, ThreadRecord&& from) {
  into.latencies_ms.insert(into.latencies_ms.end(), from.latencies_ms.begin(),
                           from.latencies_ms.end());
  into.acked.insert(into.acked.end(), std::make_move_iterator(from.acked.begin()),
                    std::make_move_iterator(from.acked.end()));
  into.positions += from.positions;
  into.retried_games += from.retried_games;
  into.duplicate_acks += from.duplicate_acks;
  into.unexpected_duplicates += from.unexpected_duplicates;
  into.rejected += from.rejected;
  into.unresolved += from.unresolved;
  for (const auto& [code, n] : from.errors) into.errors[code] += n;
  if (into.first_rejection.empty()) into.first_rejection = from.first_rejection;
}

struct PendingGame {
  v1::Game game;
  bool sent_before = false;
};

// Pushes fresh games until `stop`, then keeps retrying what is not yet
// acknowledged until `drain_until`.
ThreadRecord produce(int index, const LoadOptions& o, const rpc::ClientOptions& client_options,
                     const std::vector<v1::Game>& pool, const std::atomic<bool>& stop,
                     const std::atomic<Clock::rep>& drain_until) {
  rpc::ReplayClient client(client_options);
  ThreadRecord out;
  std::vector<PendingGame> pending;
  std::uint64_t made = 0;
  v1::PushGamesRequest request;
  while (true) {
    const bool stopping = stop.load();
    if (stopping && (pending.empty() || Clock::now().time_since_epoch().count() > drain_until))
      break;
    while (!stopping && static_cast<int>(pending.size()) < o.push_batch) {
      PendingGame g;
      g.game = pool[(static_cast<std::size_t>(index) * 7919 + made) % pool.size()];
      g.game.set_id("load-" + std::to_string(index) + "-" + std::to_string(made++));
      g.game.set_producer("load-" + std::to_string(index));  // one producer a thread, as replicas
      pending.push_back(std::move(g));
    }
    request.Clear();
    for (const auto& g : pending) *request.add_games() = g.game;
    const auto start = Clock::now();
    auto reply = client.push_games(request);
    if (!reply.ok()) {
      ++out.errors[error_code(reply.error())];
      for (auto& g : pending) g.sent_before = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    out.latencies_ms.push_back(seconds_since(start) * 1000);
    std::vector<PendingGame> again;
    for (int i = 0; i < reply->results_size() && i < static_cast<int>(pending.size()); ++i) {
      const auto& result = reply->results(i);
      PendingGame& g = pending[static_cast<std::size_t>(i)];
      if (result.status() == v1::STORED || result.status() == v1::DUPLICATE) {
        if (result.status() == v1::DUPLICATE) {
          // Stored by an earlier try whose answer was lost; a DUPLICATE of an id
          // never sent before would be a bug (ids are unique).
          if (!g.sent_before) ++out.unexpected_duplicates;
          ++out.duplicate_acks;
        }
        out.acked.push_back(g.game.id());
        out.positions += static_cast<std::uint64_t>(g.game.targets_size());
      } else if (result.status() == v1::REJECTED) {
        ++out.rejected;
        if (out.first_rejection.empty())
          out.first_rejection = g.game.id() + ": " + result.reason() + " " + result.detail();
      } else {  // not stored (FAILED): send it again
        ++out.retried_games;
        g.sent_before = true;
        again.push_back(std::move(g));
      }
    }
    pending = std::move(again);
  }
  out.unresolved = pending.size();
  return out;
}

ThreadRecord draw_samples(const LoadOptions& o, const rpc::ClientOptions& client_options,
                          const std::atomic<bool>& stop, std::uint64_t& positions) {
  rpc::ReplayClient client(client_options);
  ThreadRecord out;
  while (!stop.load()) {
    const auto start = Clock::now();
    auto reply = client.sample(static_cast<std::uint32_t>(o.sample_count));
    if (!reply.ok()) {
      ++out.errors[error_code(reply.error())];
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    out.latencies_ms.push_back(seconds_since(start) * 1000);
    positions += static_cast<std::uint64_t>(reply->positions_size());
  }
  return out;
}

void check_against_redis(const harness::RedisServer& redis, bool sabotage, RunResult& r) {
  if (sabotage) {
    redis.cli({"LPOP", "chessrl:window"});
    const std::string last = redis.cli({"LINDEX", "chessrl:window", "-1"});
    redis.cli({"RPUSH", "chessrl:window", last});
  }
  const WindowScan scan = scan_window(redis);
  r.missing_positions = scan.missing_positions;
  r.missing_markers = scan.missing_markers;
  std::unordered_map<std::string, int> in_window;
  in_window.reserve(scan.ids.size());
  for (const auto& id : scan.ids) ++in_window[id];
  for (const auto& [id, n] : in_window)
    if (n > 1) ++r.window_duplicates;
  std::unordered_map<std::string, int> acked;
  acked.reserve(r.push.acked.size());
  for (const auto& id : r.push.acked) ++acked[id];
  for (const auto& [id, n] : acked) {
    const auto it = in_window.find(id);
    if (it == in_window.end()) ++r.lost;
    if (n > 1) ++r.duplicated;
  }
  for (const auto& [id, n] : in_window)
    if (!acked.contains(id)) ++r.unacknowledged_stored;
}

RunResult run_load(const LoadOptions& o, bool kill_redis, const std::vector<v1::Game>& pool) {
  RunResult r;
  r.scenario = kill_redis ? "Redis SIGKILL + restart" : "steady";
  auto redis = start_bench_redis("chessrl-bench-load", "always");
  ReplayChild replay = start_replay_child(
      *redis, o.bin_dir,
      {"--redis-connections", "16", "--window-positions",
       "68719476736"},  // 2^36: nothing is evicted, so every game stays checkable
      false, "bench load");
  auto& service = replay.child;
  rpc::ClientOptions client_options;
  client_options.address = "127.0.0.1:" + std::to_string(replay.port);
  // One attempt per call (the default): retries are ours, counted.
  client_options.deadline = std::chrono::seconds(20);

  std::atomic<bool> stop{false};
  std::atomic<Clock::rep> drain_until{0};
  std::vector<ThreadRecord> producers(static_cast<std::size_t>(o.producers));
  std::vector<ThreadRecord> samplers(static_cast<std::size_t>(o.samplers));
  std::vector<std::uint64_t> sampled(static_cast<std::size_t>(o.samplers), 0);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int p = 0; p < o.producers; ++p)
    threads.emplace_back([&, p] {
      producers[std::size_t(p)] = produce(p, o, client_options, pool, stop, drain_until);
    });
  std::atomic<bool> stop_sampling{false};
  std::vector<std::thread> sampler_threads;
  for (int s = 0; s < o.samplers; ++s)
    sampler_threads.emplace_back([&, s] {
      samplers[std::size_t(s)] =
          draw_samples(o, client_options, stop_sampling, sampled[std::size_t(s)]);
    });

  ProgressLine progress;
  const auto sleep_until = [&](double at) {
    while (seconds_since(start) < at) {
      progress.show("bench load (%s): %.0f / %.0f s", r.scenario.c_str(), seconds_since(start),
                    o.seconds);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  };
  const auto stop_threads = [&](double drain_seconds) {
    drain_until = (Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(drain_seconds)))
                      .time_since_epoch()
                      .count();
    stop = true;
    stop_sampling = true;
    for (auto& t : threads) t.join();
    for (auto& t : sampler_threads) t.join();
  };
  std::unique_ptr<Process> restarted;  // destroyed (killed) before `redis` removes its directory
  try {
    if (kill_redis) {
      sleep_until(o.seconds / 3);
      redis->kill();
      std::this_thread::sleep_for(std::chrono::duration<double>(o.down_seconds));
      restarted = restart_redis(*redis, std::chrono::seconds(120));
    }
    sleep_until(o.seconds);
  } catch (...) {
    stop_threads(0);
    throw;
  }
  r.seconds = seconds_since(start);
  stop_threads(o.drain_seconds);
  progress.clear();
  for (auto& p : producers) merge(r.push, std::move(p));
  for (auto& s : samplers) merge(r.sample, std::move(s));
  for (auto n : sampled) r.sampled_positions += n;

  r.service_rss_kb = rss_kb(service->pid());
  r.redis_used_memory = redis_memory_field(*redis, "used_memory_human");
  check_against_redis(*redis, o.sabotage, r);
  service->stop(std::chrono::seconds(10));
  r.service_status = service->status();
  return r;
}

std::string errors_text(const std::map<std::string, std::uint64_t>& errors) {
  std::string s;
  for (const auto& [code, n] : errors)
    s += (s.empty() ? "" : ", ") + code + " " + std::to_string(n);
  return s.empty() ? "none" : s;
}

void print_results(const LoadOptions& o, std::vector<RunResult>& runs) {
  std::printf("| measure |");
  for (const auto& r : runs) std::printf(" %s |", r.scenario.c_str());
  std::printf("\n| --- |");
  for (std::size_t i = 0; i < runs.size(); ++i) std::printf(" ---: |");
  std::printf("\n");
  auto row = [&](const char* name, auto&& value) {
    std::printf("| %s |", name);
    for (auto& r : runs) std::printf(" %s |", value(r).c_str());
    std::printf("\n");
  };
  auto num = [](double v, const char* format = "%.0f") {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return std::string(buf);
  };
  row("producers x seconds",
      [&](RunResult& r) { return std::to_string(o.producers) + " x " + num(r.seconds, "%.1f"); });
  row("games acknowledged", [&](RunResult& r) { return num(double(r.push.acked.size())); });
  row("positions", [&](RunResult& r) { return num(double(r.push.positions)); });
  row("games/s", [&](RunResult& r) { return num(double(r.push.acked.size()) / r.seconds); });
  row("push p50 / p99 / max (ms)", [&](RunResult& r) {
    const double p50 = percentile(r.push.latencies_ms, 0.5);
    const double p99 = percentile(r.push.latencies_ms, 0.99);
    const double max = percentile(r.push.latencies_ms, 1.0);
    return num(p50, "%.1f") + " / " + num(p99, "%.1f") + " / " + num(max, "%.1f");
  });
  row("sample calls", [&](RunResult& r) { return num(double(r.sample.latencies_ms.size())); });
  row("sample p50 / p99 (ms)", [&](RunResult& r) {
    const double p50 = percentile(r.sample.latencies_ms, 0.5);
    const double p99 = percentile(r.sample.latencies_ms, 0.99);
    return num(p50, "%.1f") + " / " + num(p99, "%.1f");
  });
  row("failed push calls (retried)", [&](RunResult& r) { return errors_text(r.push.errors); });
  row("failed sample calls", [&](RunResult& r) { return errors_text(r.sample.errors); });
  row("games answered not stored (retried)",
      [&](RunResult& r) { return num(double(r.push.retried_games)); });
  row("retries answered DUPLICATE (stored)",
      [&](RunResult& r) { return num(double(r.push.duplicate_acks)); });
  row("**lost**", [&](RunResult& r) { return num(double(r.lost)); });
  row("**duplicated**",
      [&](RunResult& r) { return num(double(r.duplicated + r.window_duplicates)); });
  row("rejected / unresolved", [&](RunResult& r) {
    return num(double(r.push.rejected)) + " / " + num(double(r.push.unresolved));
  });
  row("missing position keys / markers", [&](RunResult& r) {
    return num(double(r.missing_positions)) + " / " + num(double(r.missing_markers));
  });
  row("stored, never acknowledged",
      [&](RunResult& r) { return num(double(r.unacknowledged_stored)); });
  row("chessrl-replay RSS at the end", [&](RunResult& r) {
    return r.service_rss_kb < 0 ? std::string("?")
                                : num(double(r.service_rss_kb) / 1024, "%.0f MiB");
  });
  row("Redis used_memory at the end", [&](RunResult& r) { return r.redis_used_memory; });
  for (const auto& r : runs)
    if (!r.push.first_rejection.empty())
      std::printf("\n%s: first rejected game: %s\n", r.scenario.c_str(),
                  r.push.first_rejection.c_str());
}

// --json: a closed-loop run's figures (latencies in ms).
nlohmann::json run_json(RunResult& r) {
  return {
      {"scenario", r.scenario},
      {"seconds", r.seconds},
      {"games_acknowledged", r.push.acked.size()},
      {"positions", r.push.positions},
      {"games_per_second", double(r.push.acked.size()) / r.seconds},
      {"push_latency_ms",
       {{"p50", percentile(r.push.latencies_ms, 0.5)},
        {"p99", percentile(r.push.latencies_ms, 0.99)},
        {"max", percentile(r.push.latencies_ms, 1.0)}}},
      {"sample_calls", r.sample.latencies_ms.size()},
      {"sampled_positions", r.sampled_positions},
      {"sample_latency_ms",
       {{"p50", percentile(r.sample.latencies_ms, 0.5)},
        {"p99", percentile(r.sample.latencies_ms, 0.99)}}},
      {"failed_push_calls", r.push.errors},
      {"failed_sample_calls", r.sample.errors},
      {"games_retried", r.push.retried_games},
      {"retries_answered_duplicate", r.push.duplicate_acks},
      {"lost", r.lost},
      {"duplicated", r.duplicated + r.window_duplicates},
      {"rejected", r.push.rejected},
      {"unresolved", r.push.unresolved},
      {"unexpected_duplicates", r.push.unexpected_duplicates},
      {"missing_position_keys", r.missing_positions},
      {"missing_markers", r.missing_markers},
      {"stored_never_acknowledged", r.unacknowledged_stored},
      {"replay_rss_mib",
       r.service_rss_kb < 0 ? nlohmann::json() : nlohmann::json(double(r.service_rss_kb) / 1024)},
      {"redis_used_memory", r.redis_used_memory},
      {"first_rejection", r.push.first_rejection},
      {"ok", r.ok()}};
}

int run_load_bench(const LoadOptions& o) {
  const std::vector<v1::Game> pool = synthetic_game_pool(o.plies, o.target_fraction, "bench-load");
  std::fprintf(
      o.json ? stderr : stdout,
      "chessrl bench load: chessrl-replay over a private redis-server (appendfsync always), "
      "%d producers (%d games per PushGames) and %d samplers (%d positions per Sample) "
      "for %.0f s\n\n",
      o.producers, o.push_batch, o.samplers, o.sample_count, o.seconds);
  std::vector<RunResult> runs;
  if (o.scenario != "kill") runs.push_back(run_load(o, false, pool));
  if (o.scenario != "plain") runs.push_back(run_load(o, true, pool));
  bool ok = true;
  for (const auto& r : runs) ok = ok && r.ok();
  if (o.json) {
    nlohmann::json doc = {{"bench", "load"},
                          {"loop", "closed"},
                          {"producers", o.producers},
                          {"samplers", o.samplers},
                          {"push_batch", o.push_batch},
                          {"sample_count", o.sample_count},
                          {"runs", nlohmann::json::array()},
                          {"ok", ok}};
    for (auto& r : runs) doc["runs"].push_back(run_json(r));
    print_json_document(doc.dump(2));
    return ok ? 0 : 1;
  }
  print_results(o, runs);
  std::printf("\n%s\n", ok ? "OK: every acknowledged game is in Redis exactly once"
                           : "FAILED: games lost, duplicated, rejected or unresolved (see above)");
  return ok ? 0 : 1;
}

}  // namespace

void add_bench_load_command(CLI::App& bench) {
  auto o = std::make_shared<LoadOptions>();
  auto f = std::make_shared<FanInOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "load",
      "The replay service under load (chessrl-replay over private redis-servers), then "
      "every acknowledged game checked in Redis: none lost, none twice. Closed loop "
      "(each producer pushes again as soon as answered; also with Redis killed and "
      "restarted), or with --rate an open loop of self-play push buffers (also over "
      "--shards with one killed, or an --overload). Exits 1 on a lost or duplicated game");
  cmd->add_option("--producers", o->producers, "threads pushing games, one gRPC channel each")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--samplers", o->samplers, "threads calling Sample")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--seconds,--duration", o->seconds,
                  "length of each run (with --overload: of the overload)")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  add_game_options(*cmd, o->push_batch, 256, o->sample_count, o->plies, o->target_fraction);
  cmd->add_option("--scenario", o->scenario,
                  "closed loop: steady (plain), Redis killed with SIGKILL at a third of the run "
                  "and restarted (kill), or one after the other (both)")
      ->check(CLI::IsMember({"plain", "kill", "both"}))
      ->capture_default_str();
  cmd->add_option("--down", o->down_seconds, "seconds Redis stays down in the kill scenario")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  cmd->add_option("--drain", o->drain_seconds,
                  "seconds producers keep retrying unacknowledged games after the run")
      ->check(CLI::Range(1.0, 600.0))
      ->capture_default_str();
  cmd->add_option("--bin-dir", o->bin_dir,
                  "where chessrl-replay is (default: beside this program, or the build tree)");
  cmd->add_flag("--sabotage", o->sabotage, "test of the check: drop one game, double another")
      ->group("");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the table's figures (and \"ok\") instead of the "
                "table");
  // The open loop (bench/load_fanin.h).
  auto* rate = cmd->add_option("--rate", f->rate,
                               "open loop: games a second each producer makes, pushed by "
                               "self-play's own buffer (32-game pushes unless --push-batch)")
                   ->check(CLI::Range(0.0001, 10000.0));
  auto* buffer = cmd->add_option("--buffer-games", f->buffer_games,
                                 "open loop: each producer's buffer (the oldest shed when full)")
                     ->check(CLI::Range(1, 1 << 20))
                     ->capture_default_str();
  auto* shards =
      cmd->add_option("--shards", f->shards,
                      "open loop: redis-servers, chessrl-replay --redis-shards over them")
          ->check(CLI::Range(1, 64))
          ->capture_default_str();
  auto* kill = cmd->add_option("--kill-shard-at", f->kill_shard_at,
                               "open loop: SIGKILL the last shard this many seconds in")
                   ->check(CLI::Range(0.0, 3600.0));
  auto* restart = cmd->add_option("--restart-after", f->restart_after,
                                  "open loop: seconds the killed shard stays down")
                      ->check(CLI::Range(0.0, 600.0))
                      ->capture_default_str();
  auto* overload =
      cmd->add_option("--overload", f->overload,
                      "open loop: measure what the service takes (--measure s at full speed), "
                      "offer this multiple of it for --seconds, then half of it until the "
                      "backlog drains (at most --recover-limit s)")
          ->check(CLI::Range(1.0, 100.0));
  auto* measure = cmd->add_option("--measure", f->measure_seconds,
                                  "open loop: seconds at full speed before --overload")
                      ->check(CLI::Range(4.0, 600.0))
                      ->capture_default_str();
  auto* recover = cmd->add_option("--recover-limit", f->recover_limit,
                                  "open loop: seconds the backlog may take to drain after "
                                  "--overload")
                      ->check(CLI::Range(1.0, 3600.0))
                      ->capture_default_str();
  auto* push_batch = cmd->get_option("--push-batch");
  cmd->callback([o, f, rate, buffer, shards, kill, restart, overload, measure, recover, push_batch,
                 cmd] {
    const bool open_loop = rate->count() > 0 || overload->count() > 0;
    if (!open_loop) {
      for (auto* option : {buffer, shards, kill, restart, measure, recover})
        if (option->count() > 0)
          throw Error("bench load: " + option->get_name() + " needs --rate or --overload");
      const int status = run_load_bench(*o);
      if (status != 0) throw Error("bench load: the check failed");
      return;
    }
    if (cmd->get_option("--scenario")->count() > 0 || cmd->get_option("--sabotage")->count() > 0)
      throw Error("bench load: --scenario and --sabotage are for the closed loop (without --rate)");
    if (rate->count() > 0 && overload->count() > 0)
      throw Error(
          "bench load: --rate and --overload exclude each other (--overload finds its rate)");
    if (overload->count() > 0 && kill->count() > 0)
      throw Error("bench load: --kill-shard-at is not part of the --overload scenario");
    f->producers = o->producers;
    f->samplers = o->samplers;
    f->seconds = o->seconds;
    f->sample_count = o->sample_count;
    f->plies = o->plies;
    f->target_fraction = o->target_fraction;
    f->drain_seconds = o->drain_seconds;
    f->bin_dir = o->bin_dir;
    f->json = o->json;
    if (push_batch->count() > 0) f->push_batch = o->push_batch;
    if (f->kill_shard_at >= f->seconds)
      throw Error("bench load: --kill-shard-at must fall inside --seconds");
    if (run_fanin_bench(*f) != 0) throw Error("bench load: the check failed");
  });
}

}  // namespace chessrl::tool
