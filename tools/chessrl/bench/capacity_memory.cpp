// `chessrl bench capacity --phase memory`: Redis used_memory per position of
// the window over many turnovers (flat?), one shard against N shards of a part
// each, and how often the AOF is rewritten per turnover.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/capacity.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/replay/sharded_store.h"

namespace chessrl::tool::capacity {
namespace {

constexpr double kTargetBytesPerPosition = 320;
constexpr double kTargetFlatness = 0.02;
constexpr double kTargetShardRatio = 1.05;

// One layout's run: Redis's used_memory (summed over its shards) and the
// window's positions after each turnover.
struct MemoryRun {
  int shards = 0;
  double empty_memory = 0;  // Σ used_memory before the first push
  std::vector<double> memory, positions, rewrites;
  double fork_usec = 0;             // the largest latest_fork_usec seen
  double dataset = 0, clients = 0;  // Σ used_memory_dataset and mem_clients_normal at the end
  double per_position(std::size_t t) const { return memory[t] / positions[t]; }
};

MemoryRun run_layout(const CapacityOptions& o, const Corpus& corpus, int k) {
  const int cpus = cpu_count();
  MemoryRun run;
  run.shards = k;
  std::vector<PinnedRedis> redis;
  std::vector<std::unique_ptr<replay::RedisReplayStore>> stores;
  std::vector<replay::ReplayStore*> shards;
  std::vector<std::string> names;
  const auto windows = replay::split_window(o.memory_window, std::size_t(k));
  for (int i = 0; i < k; ++i) {
    // Redis's own AOF rewrite settings (100%, 64 MB), as the chart leaves them.
    redis.push_back(start_pinned_redis("everysec", cpus < 2 ? -1 : (k == 1 ? cpus - 1 : i % cpus)));
    stores.push_back(std::make_unique<replay::RedisReplayStore>(
        store_options(*redis.back().server, windows[std::size_t(i)], o.threads)));
    shards.push_back(stores.back().get());
    names.push_back("127.0.0.1:" + std::to_string(redis.back().server->port()));
  }
  replay::ShardedReplayStore store(shards, names);
  (void)store.stats().value_or_throw();  // loads the scripts before the empty baseline
  for (const auto& r : redis) run.empty_memory += read_counters(*r.server).used_memory;
  ProgressLine progress;
  const std::uint64_t games =
      std::uint64_t(double(o.memory_window) / corpus.positions_per_game) + 1;
  for (int t = 0; t < o.turnovers; ++t) {
    progress.show("memory, %d shard(s): turnover %d/%d", k, t + 1, o.turnovers);
    push_games(store, corpus, games, o.batch, o.threads, "m" + std::to_string(t) + "-");
    double memory = 0, rewrites = 0;
    for (const auto& r : redis) {
      const RedisCounters c = read_counters(*r.server);
      memory += c.used_memory;
      rewrites += c.aof_rewrites;
      run.fork_usec = std::max(run.fork_usec, c.latest_fork_usec);
      if (t + 1 == o.turnovers) {
        run.dataset += c.used_memory_dataset;
        run.clients += c.clients_memory;
      }
    }
    run.memory.push_back(memory);
    run.positions.push_back(double(store.stats().value_or_throw().positions));
    run.rewrites.push_back(rewrites);
  }
  progress.clear();
  std::fprintf(stderr, "memory, %d shard(s): %.0f bytes/position after %d turnovers\n", k,
               run.per_position(run.memory.size() - 1), o.turnovers);
  return run;
}

// Least-squares slope of y over x = 0, 1, ...
double slope(const std::vector<double>& y) {
  const double n = double(y.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    sx += double(i);
    sy += y[i];
    sxx += double(i) * double(i);
    sxy += double(i) * y[i];
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace

nlohmann::json run_memory_phase(const CapacityOptions& o, const Corpus& corpus) {
  if (cpu_count() >= 2) pin_this_thread({0});
  const MemoryRun one = run_layout(o, corpus, 1);
  const MemoryRun many = run_layout(o, corpus, o.overhead_shards);
  pin_this_thread({});

  nlohmann::json doc = {{"window", o.memory_window},
                        {"turnovers", o.turnovers},
                        {"positions_per_game", corpus.positions_per_game},
                        {"bytes_per_position", corpus.bytes_per_position},
                        {"shards", many.shards},
                        {"rows", nlohmann::json::array()}};
  if (!o.json) {
    std::printf(
        "\n## Window memory (%llu-position window, %d turnovers, %.1f positions of %.0f bytes "
        "per game, appendfsync everysec with Redis's own rewrite settings)\n\n",
        (unsigned long long)o.memory_window, o.turnovers, corpus.positions_per_game,
        corpus.bytes_per_position);
    std::printf(
        "| turnover | 1 shard used_memory MB | bytes/position | %d shards Σ used_memory MB | "
        "bytes/position | AOF rewrites (1 shard, Σ %d shards) |\n",
        many.shards, many.shards);
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  }
  for (std::size_t t = 0; t < one.memory.size(); ++t) {
    doc["rows"].push_back({{"turnover", t + 1},
                           {"one_shard_used_memory_mb", one.memory[t] / 1e6},
                           {"one_shard_bytes_per_position", one.per_position(t)},
                           {"shards_used_memory_mb", many.memory[t] / 1e6},
                           {"shards_bytes_per_position", many.per_position(t)},
                           {"one_shard_aof_rewrites", one.rewrites[t]},
                           {"shards_aof_rewrites", many.rewrites[t]}});
    if (!o.json)
      std::printf("| %zu | %.1f | %.0f | %.1f | %.0f | %.0f, %.0f |\n", t + 1, one.memory[t] / 1e6,
                  one.per_position(t), many.memory[t] / 1e6, many.per_position(t), one.rewrites[t],
                  many.rewrites[t]);
  }

  // Steady state from the second turnover: by then a window of evicted games'
  // dedup markers is kept, as it will be from then on.
  std::vector<double> steady;
  for (std::size_t t = 1; t < one.memory.size(); ++t) steady.push_back(one.per_position(t));
  const double mean = [&] {
    double s = 0;
    for (double v : steady) s += v;
    return s / double(steady.size());
  }();
  double deviation = 0;
  for (double v : steady) deviation = std::max(deviation, std::abs(v - mean) / mean);
  const std::size_t tail = std::min<std::size_t>(10, steady.size());
  const std::vector<double> last(steady.end() - std::ptrdiff_t(tail), steady.end());
  const double trend = slope(last) / mean;
  const std::size_t end = one.memory.size() - 1;
  const double ratio = many.memory[end] / one.memory[end];
  const double net_ratio =
      (many.memory[end] - many.empty_memory) / (one.memory[end] - one.empty_memory);
  const double net_per_position = (one.memory[end] - one.empty_memory) / one.positions[end];
  const double rewrites_per_turnover = one.rewrites[end] / double(one.memory.size());
  const auto null_if_nan = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
  };

  doc["per_position"] = {{"mean_bytes", mean},
                         {"net_bytes", net_per_position},
                         {"empty_server_mb", one.empty_memory / 1e6},
                         {"target_bytes", kTargetBytesPerPosition},
                         {"met", mean <= kTargetBytesPerPosition}};
  doc["flatness"] = {{"largest_deviation", deviation},
                     {"target", kTargetFlatness},
                     {"met", deviation <= kTargetFlatness},
                     {"slope_turnovers", tail},
                     {"slope_per_turnover", null_if_nan(trend)}};
  doc["shard_ratio"] = {
      {"used_memory", ratio},
      {"net_of_empty", net_ratio},
      {"target", kTargetShardRatio},
      {"met", ratio <= kTargetShardRatio},
      {"dataset_mb", {{"one", one.dataset / 1e6}, {"shards", many.dataset / 1e6}}},
      {"clients_mb", {{"one", one.clients / 1e6}, {"shards", many.clients / 1e6}}}};
  doc["aof_rewrites"] = {{"count", one.rewrites[end]},
                         {"per_turnover", rewrites_per_turnover},
                         {"latest_fork_us", one.fork_usec}};
  if (!o.json) {
    auto verdict = [](bool met) { return met ? "met" : "missed"; };
    std::printf(
        "\nused_memory per position (1 shard, turnovers 2-%d): mean %.0f bytes, %.0f net of "
        "the empty server's %.1f MB (target <= %.0f: %s)\n",
        o.turnovers, mean, net_per_position, one.empty_memory / 1e6, kTargetBytesPerPosition,
        verdict(mean <= kTargetBytesPerPosition));
    std::printf(
        "flatness: largest deviation from that mean %.2f%% (target within ±%.0f%%: %s); "
        "slope over the last %zu turnovers %+.3f%% per turnover\n",
        100 * deviation, 100 * kTargetFlatness, verdict(deviation <= kTargetFlatness), tail,
        100 * trend);
    std::printf(
        "%d shards of 1/%d the window vs 1 shard of the whole: %.3fx used_memory (target <= "
        "%.2fx: %s); %.3fx net of each empty server\n",
        many.shards, many.shards, ratio, kTargetShardRatio, verdict(ratio <= kTargetShardRatio),
        net_ratio);
    std::printf(
        "of which: used_memory_dataset %.1f MB vs %.1f MB (%.3fx); the connections' buffers "
        "%.1f MB vs %.1f MB\n",
        many.dataset / 1e6, one.dataset / 1e6, many.dataset / one.dataset, many.clients / 1e6,
        one.clients / 1e6);
    std::printf(
        "AOF rewrites (1 shard): %.0f in %d turnovers, %.2f per turnover; latest fork %.0f "
        "us\n",
        one.rewrites[end], o.turnovers, rewrites_per_turnover, one.fork_usec);
  }
  if (!std::isfinite(mean) || mean <= 0 || !std::isfinite(ratio) || ratio <= 0)
    throw Error("bench capacity: the memory figures came out zero or not finite");
  return doc;
}

}  // namespace chessrl::tool::capacity
