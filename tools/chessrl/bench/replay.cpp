// `chessrl bench replay`: the replay service's ingest (games/s) and sample
// (positions/s) throughput against a private redis-server, with concurrent
// gRPC clients, printed beside redis-benchmark's raw SET/GET rate measured in
// the same run. A table, or with --json one JSON document of the same figures.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/replay_shared.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/redis_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

struct ReplayBenchOptions {
  int clients = 4;
  int push_batch = 16;      // games per PushGames
  int sample_count = 1024;  // positions per Sample
  int plies = 160;
  double target_fraction = 0.5;
  double seconds = 3;
  int repeat = 3;
  std::uint64_t window = 1'000'000;
  std::string appendfsync = "everysec";
  bool json = false;  // one JSON document on stdout instead of the table
};

struct RedisRates {
  double set = 0;
  double get = 0;
};

// redis-benchmark --csv prints "SET","<requests/s>",... per test.
RedisRates run_redis_benchmark(const harness::RedisServer& redis, int clients, int value_bytes) {
  auto program = find_program("redis-benchmark");
  if (!program) throw Error("bench replay: redis-benchmark not found (apt install redis-tools)");
  auto child = Subprocess::start({*program, "-h", "127.0.0.1", "-p", std::to_string(redis.port()),
                                  "-a", redis.password(), "-t", "set,get", "-n", "100000", "-c",
                                  std::to_string(clients), "-d", std::to_string(value_bytes), "-r",
                                  "100000", "--csv"});
  if (!child.ok()) throw Error("bench replay: " + child.error());
  RedisRates rates;
  while (auto line = child->read_line(std::chrono::seconds(120))) {
    auto rate_of = [&](const char* test) {
      const std::string prefix = std::string("\"") + test + "\",\"";
      if (line->rfind(prefix, 0) != 0) return 0.0;
      return std::stod(line->substr(prefix.size()));
    };
    rates.set = std::max(rates.set, rate_of("SET"));
    rates.get = std::max(rates.get, rate_of("GET"));
  }
  return rates;
}

struct PhaseResult {
  double calls = 0;
  double items = 0;  // games (ingest) or positions (sample)
  double seconds = 0;
  std::string error;
};

// Runs `work(client, stop)` on `clients` threads for `seconds`.
template <class Work>
PhaseResult run_phase(int clients, double seconds, Work&& work) {
  std::atomic<bool> stop{false};
  std::vector<PhaseResult> per(static_cast<std::size_t>(clients));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] { per[static_cast<std::size_t>(c)] = work(c, stop); });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  PhaseResult total;
  total.seconds = seconds_since(start);
  for (const auto& p : per) {
    total.calls += p.calls;
    total.items += p.items;
    if (total.error.empty()) total.error = p.error;
  }
  return total;
}

void run_replay_bench(const ReplayBenchOptions& o) {
  auto redis = start_bench_redis("chessrl-bench", o.appendfsync);
  replay::RedisOptions store_options;
  store_options.port = redis->port();
  store_options.password = redis->password();
  store_options.window_positions = o.window;
  store_options.connections = std::max(2, o.clients);
  replay::RedisReplayStore store(store_options);
  metrics::Registry registry;
  replay_service::ReplayServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  // The clients push as one producer at the service's whole ingest rate,
  // above one replica's --producer-rate: what is measured is the service.
  server_options.replay.producers.rate = 0;
  replay_service::ReplayServer server(store, store, registry, server_options);
  rpc::ClientOptions client_options;
  client_options.address = "127.0.0.1:" + std::to_string(server.port());

  // Unique games for every push of every repeat: ids never repeat, so every
  // push stores (no duplicates) and the window fills like real self-play.
  const std::vector<v1::Game> pool = synthetic_game_pool(o.plies, o.target_fraction, "synthetic");
  double positions_per_game = 0;
  for (const v1::Game& game : pool) positions_per_game += game.targets_size();
  positions_per_game /= double(pool.size());
  std::atomic<std::uint64_t> next_id{0};

  if (!o.json) {
    std::printf(
        "chessrl bench replay: redis-server on 127.0.0.1:%d (AUTH, appendfsync %s), "
        "%d clients, %.0f s per phase, median of %d\n",
        redis->port(), o.appendfsync.c_str(), o.clients, o.seconds, o.repeat);
    std::printf("games: %d plies at most, %.1f training positions each; window %llu positions\n\n",
                o.plies, positions_per_game, static_cast<unsigned long long>(o.window));
  }

  ProgressLine progress;
  progress.show("redis-benchmark -t set,get -c %d ...", o.clients);
  const RedisRates raw = run_redis_benchmark(*redis, o.clients, 300);

  std::vector<double> ingest_games, ingest_positions, sample_positions, sample_calls;
  for (int r = 0; r < o.repeat; ++r) {
    progress.show("run %d/%d: ingest ...", r + 1, o.repeat);
    auto ingest = run_phase(o.clients, o.seconds, [&](int, const std::atomic<bool>& stop) {
      rpc::ReplayClient client(client_options);
      PhaseResult out;
      v1::PushGamesRequest request;
      while (!stop.load()) {
        request.Clear();
        for (int g = 0; g < o.push_batch; ++g) {
          const std::uint64_t id = next_id++;
          v1::Game* game = request.add_games();
          *game = pool[id % pool.size()];
          game->set_id("bench-" + std::to_string(id));
        }
        auto reply = client.push_games(request);
        if (!reply.ok()) {
          out.error = reply.error();
          break;
        }
        for (const auto& result : reply->results()) {
          if (result.status() != v1::STORED) {
            out.error = "game " + result.id() + " not stored: " + result.reason() + " " +
                        result.detail();
            return out;
          }
        }
        out.calls += 1;
        out.items += o.push_batch;
      }
      return out;
    });
    if (!ingest.error.empty()) throw Error("bench replay: ingest: " + ingest.error);
    ingest_games.push_back(ingest.items / ingest.seconds);
    ingest_positions.push_back(ingest.items * positions_per_game / ingest.seconds);

    progress.show("run %d/%d: sample ...", r + 1, o.repeat);
    auto sample = run_phase(o.clients, o.seconds, [&](int, const std::atomic<bool>& stop) {
      rpc::ReplayClient client(client_options);
      PhaseResult out;
      while (!stop.load()) {
        auto reply = client.sample(static_cast<std::uint32_t>(o.sample_count));
        if (!reply.ok()) {
          out.error = reply.error();
          break;
        }
        out.calls += 1;
        out.items += reply->positions_size();
      }
      return out;
    });
    if (!sample.error.empty()) throw Error("bench replay: sample: " + sample.error);
    sample_positions.push_back(sample.items / sample.seconds);
    sample_calls.push_back(sample.calls / sample.seconds);
  }
  progress.clear();
  auto stats = store.stats();
  if (o.json) {
    nlohmann::json doc = {{"bench", "replay"},
                          {"appendfsync", o.appendfsync},
                          {"clients", o.clients},
                          {"seconds", o.seconds},
                          {"repeat", o.repeat},
                          {"plies", o.plies},
                          {"positions_per_game", positions_per_game},
                          {"window", o.window},
                          {"ingest",
                           {{"games_per_call", o.push_batch},
                            {"games_per_second", median(ingest_games)},
                            {"positions_per_second", median(ingest_positions)},
                            {"redis_set_per_second", raw.set}}},
                          {"sample",
                           {{"positions_per_call", o.sample_count},
                            {"positions_per_second", median(sample_positions)},
                            {"calls_per_second", median(sample_calls)},
                            {"redis_get_per_second", raw.get}}}};
    if (stats.ok())
      doc["window_after"] = {
          {"games", stats->games}, {"positions", stats->positions}, {"capacity", stats->capacity}};
    server.shutdown(std::chrono::seconds(1));
    print_json_document(doc.dump(2));
    return;
  }
  std::printf("| measure | per call | rate | raw Redis (redis-benchmark, 300 B values) |\n");
  std::printf("| --- | --- | ---: | ---: |\n");
  std::printf("| ingest (PushGames) | %d games | %.0f games/s (%.0f positions/s) | SET %.0f/s |\n",
              o.push_batch, median(ingest_games), median(ingest_positions), raw.set);
  std::printf("| sample (Sample) | %d positions | %.0f positions/s (%.0f calls/s) | GET %.0f/s |\n",
              o.sample_count, median(sample_positions), median(sample_calls), raw.get);
  if (stats.ok()) {
    std::printf("\nwindow after the run: %llu games, %llu positions (capacity %llu)\n",
                static_cast<unsigned long long>(stats->games),
                static_cast<unsigned long long>(stats->positions),
                static_cast<unsigned long long>(stats->capacity));
  }
  server.shutdown(std::chrono::seconds(1));
}

}  // namespace

void add_bench_replay_command(CLI::App& bench) {
  auto o = std::make_shared<ReplayBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "replay", "Replay service throughput (ingest games/s, sample positions/s) against a "
                "private redis-server, beside redis-benchmark's raw rate");
  cmd->add_option("--clients", o->clients, "concurrent gRPC clients")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  add_game_options(*cmd, o->push_batch, 1024, o->sample_count, o->plies, o->target_fraction);
  cmd->add_option("--seconds", o->seconds, "length of each phase")
      ->check(CLI::Range(0.2, 600.0))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "runs of both phases; the table shows medians")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--window", o->window, "window size in positions")
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 32))
      ->capture_default_str();
  cmd->add_option("--appendfsync", o->appendfsync, "Redis AOF fsync policy")
      ->check(CLI::IsMember({"always", "everysec", "no"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the table's figures instead of the table");
  cmd->callback([o] { run_replay_bench(*o); });
}

}  // namespace chessrl::tool
