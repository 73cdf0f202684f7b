// `chessrl bench capacity`: the per-unit costs that bound replay at scale, read
// from Redis's own accounting (INFO cpu main-thread time, commandstats, AOF
// size) rather than from wall throughput, and the capacity model they give for
// 10 to 10,000 GPUs; one step of scaling (1 vs 2 pinned Redis shards) and the
// window's memory per position (--phase memory, bench/capacity_memory.cpp).
// The tables, or with --json one JSON document of the same figures (a phase's
// key only when it ran; each constant's median, min, max and runs).
#include "bench/capacity.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/record/validation.h"
#include "chessrl/replay/sharded_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/game.pb.h"
#include "commands.h"

namespace chessrl::tool::capacity {
namespace {

constexpr double kPositionsPerGpuSecond = 1111;  // 40,000 games/h of ~100 positions
constexpr double kRedisBusyCeiling = 0.6;        // a shard's main thread at most 60% busy
constexpr std::uint32_t kSampleCount = 1024;     // positions per sample call

// The runs of one constant: its median and spread.
struct Figure {
  std::vector<double> runs;
  void add(double v) { runs.push_back(v); }
  double mid() const { return median(runs); }
  double lo() const { return *std::min_element(runs.begin(), runs.end()); }
  double hi() const { return *std::max_element(runs.begin(), runs.end()); }
  bool sane() const { return !runs.empty() && std::isfinite(mid()) && mid() > 0; }
};

// --json: a figure's median, spread and runs.
nlohmann::json figure_json(const Figure& f) {
  return {{"median", f.mid()}, {"min", f.lo()}, {"max", f.hi()}, {"runs", f.runs}};
}

std::string spread(const Figure& f, const char* format = "%.2f") {
  char one[64], two[64], three[64];
  std::snprintf(one, sizeof one, format, f.mid());
  std::snprintf(two, sizeof two, format, f.lo());
  std::snprintf(three, sizeof three, format, f.hi());
  return std::string(one) + " (" + two + "–" + three + ")";
}

double process_cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return 1e6 * double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// Synthetic games of about `plies` positions, validated as replay validates
// them; c_val (µs of one core per position) once per run.
Corpus build_corpus(const CapacityOptions& o, Figure& c_val) {
  harness::SyntheticGameOptions game_options;
  game_options.max_plies = o.plies;
  game_options.target_fraction = 1.0;
  game_options.producer = "bench-capacity";
  std::vector<v1::Game> games;
  for (int i = 0; i < 256; ++i)
    games.push_back(harness::make_synthetic_game(std::uint64_t(i), game_options));
  Corpus corpus;
  for (int r = 0; r < o.runs; ++r) {
    std::size_t positions = 0;
    const auto start = Clock::now();
    std::vector<replay::StoredGame> stored;
    for (const v1::Game& game : games) {
      auto result = record::validate_game(game);
      if (auto* rejection = std::get_if<record::Rejection>(&result))
        throw Error("bench capacity: a synthetic game was refused: " + rejection->detail);
      stored.push_back(std::get<replay::StoredGame>(std::move(result)));
      positions += stored.back().positions.size();
    }
    c_val.add(1e6 * seconds_since(start) / double(positions));
    corpus.games = std::move(stored);
    corpus.positions_per_game = double(positions) / double(games.size());
    corpus.bytes_per_position = 0;
    for (const auto& g : corpus.games)
      for (const auto& p : g.positions) corpus.bytes_per_position += double(p.size());
    corpus.bytes_per_position /= double(positions);
  }
  return corpus;
}

// Redis's counters and this process's CPU over one measured stretch.
struct Delta {
  RedisCounters before, after;
  double self_cpu_before = 0, self_cpu_after = 0;
  double seconds = 0;
  double main_us() const { return after.main_thread_cpu_us - before.main_thread_cpu_us; }
  double evalsha_us() const { return after.evalsha_usec - before.evalsha_usec; }
  double aof_bytes() const { return after.aof_bytes - before.aof_bytes; }
  double self_us() const { return self_cpu_after - self_cpu_before; }
};

// Runs `work(stop)` for `seconds` between two reads of every server's counters.
template <class Work>
std::vector<Delta> measure(const std::vector<const harness::RedisServer*>& servers, double seconds,
                           Work&& work) {
  std::vector<Delta> deltas(servers.size());
  for (std::size_t i = 0; i < servers.size(); ++i) deltas[i].before = read_counters(*servers[i]);
  const double self_before = process_cpu_us();
  const auto start = Clock::now();
  std::atomic<bool> stop{false};
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
  });
  try {
    work(stop);
  } catch (...) {
    stop = true;
    timer.join();
    throw;
  }
  timer.join();
  const double elapsed = seconds_since(start);
  const double self_after = process_cpu_us();
  for (std::size_t i = 0; i < servers.size(); ++i) {
    deltas[i].after = read_counters(*servers[i]);
    deltas[i].self_cpu_before = self_before;
    deltas[i].self_cpu_after = self_after;
    deltas[i].seconds = elapsed;
  }
  return deltas;
}

std::uint64_t games_for(std::uint64_t positions, const Corpus& corpus) {
  return std::uint64_t(double(positions) / corpus.positions_per_game) + 1;
}

struct Calibration {
  Figure c_in, c_in_always, evalsha_in, aof_per_position, aof_per_position_always, c_push;
  Figure c_s, c_sample_client, c_m, c_parse, c_val;
  Figure ingest_rate, ingest_rate_always;
};

// Phases (a) ingest with eviction (everysec, then always), (b) sample-only,
// (c) model reads, each run; Redis on the last CPU, this process on CPU 0.
Calibration calibrate(const CapacityOptions& o, const Corpus& corpus, Calibration c) {
  const int cpus = cpu_count();
  const int redis_cpu = cpus >= 2 ? cpus - 1 : -1;
  if (cpus >= 2) pin_this_thread({0});
  // No automatic AOF rewrite while measuring, so aof_current_size grows by
  // exactly what is appended (--phase memory counts rewrites).
  PinnedRedis redis = start_pinned_redis("everysec", redis_cpu, {"auto-aof-rewrite-percentage 0"});
  replay::RedisReplayStore store(store_options(*redis.server, o.window, o.threads));
  ProgressLine progress;
  progress.show("calibrate: filling the %llu-position window", (unsigned long long)o.window);
  push_games(store, corpus, games_for(o.window * 12 / 10, corpus), o.batch, o.threads, "fill-");
  std::string blob(std::size_t(o.model_mb) << 20, '\0');
  std::mt19937_64 rng(7);
  for (char& ch : blob) ch = char(rng());
  replay::ModelMeta meta;
  meta.version = 1;
  meta.size_bytes = blob.size();
  meta.crc32 = rpc::blob_crc32(blob);
  if (auto published = store.publish(meta, blob); !published.ok())
    throw Error("bench capacity: publishing the model: " + published.error());
  const double model_mb = double(blob.size()) / double(1 << 20);

  std::vector<std::string> sampled;
  const std::vector<const harness::RedisServer*> servers = {redis.server.get()};
  for (int r = 0; r < o.runs; ++r) {
    for (const std::string fsync : {"everysec", "always"}) {
      redis.server->cli({"CONFIG", "SET", "appendfsync", fsync});
      progress.show("calibrate run %d/%d: (a) ingest with eviction, appendfsync %s", r + 1, o.runs,
                    fsync.c_str());
      std::uint64_t positions = 0;
      const auto d = measure(servers, o.seconds, [&](const std::atomic<bool>& stop) {
        positions = push_games(store, corpus, ~std::uint64_t{0}, o.batch, o.threads,
                               "r" + std::to_string(r) + fsync + "-", &stop);
      })[0];
      const double p = double(positions);
      if (fsync == "everysec") {
        c.c_in.add(d.main_us() / p);
        c.evalsha_in.add(d.evalsha_us() / p);
        c.aof_per_position.add(d.aof_bytes() / p);
        c.c_push.add(d.self_us() / p);
        c.ingest_rate.add(p / d.seconds);
      } else {
        c.c_in_always.add(d.main_us() / p);
        c.aof_per_position_always.add(d.aof_bytes() / p);
        c.ingest_rate_always.add(p / d.seconds);
      }
    }
    redis.server->cli({"CONFIG", "SET", "appendfsync", "everysec"});

    progress.show("calibrate run %d/%d: (b) sample-only, %u per call", r + 1, o.runs, kSampleCount);
    std::atomic<std::uint64_t> drawn{0};
    const auto ds = measure(servers, o.seconds, [&](const std::atomic<bool>& stop) {
      std::vector<std::thread> threads;
      std::vector<std::string> errors(std::size_t(o.threads));
      for (int t = 0; t < o.threads; ++t)
        threads.emplace_back([&, t] {
          for (std::uint64_t seed = std::uint64_t(t) << 32; !stop.load(); ++seed) {
            auto got = store.sample(kSampleCount, seed + std::uint64_t(r) * 1000003);
            if (!got.ok()) {
              errors[std::size_t(t)] = got.error();
              return;
            }
            drawn += got->positions.size();
            if (t == 0 && sampled.empty()) sampled = std::move(got->positions);
          }
        });
      for (auto& th : threads) th.join();
      for (const auto& e : errors)
        if (!e.empty()) throw Error("bench capacity: sample: " + e);
    })[0];
    c.c_s.add(ds.main_us() / double(drawn));
    c.c_sample_client.add(ds.self_us() / double(drawn));

    progress.show("calibrate run %d/%d: (c) model reads, %.0f MB", r + 1, o.runs, model_mb);
    int reads = 0;
    const auto dm = measure(servers, o.seconds, [&](const std::atomic<bool>& stop) {
      while (!stop.load() || reads < 2) {
        auto got = store.read(1);
        if (!got.ok() || !got->has_value() || (*got)->size() != blob.size())
          throw Error("bench capacity: reading the model back failed" +
                      (got.ok() ? std::string() : ": " + got.error()));
        ++reads;
      }
    })[0];
    c.c_m.add(dm.main_us() / (reads * model_mb));

    // c_parse: what Sample does with each blob (parse it into the reply).
    v1::TrainingPosition position;
    const auto start = Clock::now();
    std::size_t parsed = 0;
    while (parsed < 200'000) {
      for (const std::string& b : sampled) {
        if (!position.ParseFromString(b))
          throw Error("bench capacity: a sampled blob does not parse");
        ++parsed;
      }
    }
    c.c_parse.add(1e6 * seconds_since(start) / double(parsed));
    progress.clear();
    std::fprintf(stderr,
                 "calibrate run %d/%d: c_in %.2f us (always %.2f), c_s %.3f us, c_m %.0f us/MB, "
                 "AOF %.0f B/position, %.0f positions/s ingested\n",
                 r + 1, o.runs, c.c_in.runs.back(), c.c_in_always.runs.back(), c.c_s.runs.back(),
                 c.c_m.runs.back(), c.aof_per_position.runs.back(), c.ingest_rate.runs.back());
  }
  pin_this_thread({});
  return c;
}

// The per-unit costs: printed, or (--json) as JSON (us, bytes, positions/s).
nlohmann::json calibration_json(const CapacityOptions& o, const Corpus& corpus,
                                const Calibration& c) {
  return {
      {"runs", o.runs},
      {"seconds", o.seconds},
      {"positions_per_game", corpus.positions_per_game},
      {"window", o.window},
      {"threads", o.threads},
      {"batch", o.batch},
      {"sample_count", kSampleCount},
      {"model_mb", o.model_mb},
      {"c_in_us", figure_json(c.c_in)},
      {"c_in_always_us", figure_json(c.c_in_always)},
      {"evalsha_us", figure_json(c.evalsha_in)},
      {"c_s_us", figure_json(c.c_s)},
      {"c_m_us_per_mb", figure_json(c.c_m)},
      {"aof_bytes_per_position", figure_json(c.aof_per_position)},
      {"aof_always_bytes_per_position", figure_json(c.aof_per_position_always)},
      {"c_val_us", figure_json(c.c_val)},
      {"c_push_us", figure_json(c.c_push)},
      {"c_sample_us", figure_json(c.c_sample_client)},
      {"c_parse_us", figure_json(c.c_parse)},
      {"ingest_positions_per_second",
       {{"everysec", figure_json(c.ingest_rate)}, {"always", figure_json(c.ingest_rate_always)}}}};
}

void print_calibration(const CapacityOptions& o, const Corpus& corpus, const Calibration& c) {
  std::printf("\n## Per-unit costs (median (min–max) of %d run(s) of %.1f s per phase)\n\n", o.runs,
              o.seconds);
  std::printf(
      "games: %.1f positions each (synthetic, validated); window %llu positions, "
      "evicting throughout; %d threads pushing %d-game batches\n\n",
      corpus.positions_per_game, (unsigned long long)o.window, o.threads, o.batch);
  std::printf("| constant | what | value |\n| --- | --- | ---: |\n");
  std::printf("| c_in | Redis main-thread us per position ingested and evicted (everysec) | %s |\n",
              spread(c.c_in).c_str());
  std::printf("| c_in always | the same with appendfsync always | %s |\n",
              spread(c.c_in_always).c_str());
  std::printf("| EVALSHA | of c_in, inside the push script (commandstats) | %s |\n",
              spread(c.evalsha_in).c_str());
  std::printf("| c_s | Redis main-thread us per sampled position (%u per call) | %s |\n",
              kSampleCount, spread(c.c_s, "%.3f").c_str());
  std::printf("| c_m | Redis main-thread us per model MB read (%d MB blob) | %s |\n", o.model_mb,
              spread(c.c_m, "%.0f").c_str());
  std::printf("| AOF | bytes appended per position (everysec) | %s |\n",
              spread(c.aof_per_position, "%.0f").c_str());
  std::printf("| AOF always | bytes appended per position (always) | %s |\n",
              spread(c.aof_per_position_always, "%.0f").c_str());
  std::printf("| c_val | replay: record::validate_game, us of one core per position | %s |\n",
              spread(c.c_val).c_str());
  std::printf("| c_push | replay: RedisReplayStore::push, client side, us per position | %s |\n",
              spread(c.c_push).c_str());
  std::printf(
      "| c_sample | replay: RedisReplayStore::sample, client side, us per position | %s |\n",
      spread(c.c_sample_client, "%.3f").c_str());
  std::printf("| c_parse | replay: a sampled blob parsed into v1::TrainingPosition, us | %s |\n",
              spread(c.c_parse, "%.3f").c_str());
  std::printf(
      "\ningest into one Redis on one CPU (wall): %s positions/s with everysec, %s with always. "
      "With always the main thread also waits in fsync, which INFO cpu does not count: the "
      "wall rate shows it.\n",
      spread(c.ingest_rate, "%.0f").c_str(), spread(c.ingest_rate_always, "%.0f").c_str());
}

// The capacity model: printed unless --json; returned as JSON either way.
nlohmann::json print_model(const CapacityOptions& o, const Calibration& c) {
  const double c_in = c.c_in.mid(), c_s = c.c_s.mid(), R = o.max_reuse;
  nlohmann::json doc = {{"positions_per_gpu_second", kPositionsPerGpuSecond},
                        {"max_reuse", R},
                        {"busy_ceiling", kRedisBusyCeiling},
                        {"rows", nlohmann::json::array()}};
  if (!o.json)
    std::printf(
        "\n## Capacity model (I = %.0f positions/s per GPU x N, S = R x I, R = %.1f, a "
        "shard's main thread <= %.0f%% busy)\n\n",
        kPositionsPerGpuSecond, R, 100 * kRedisBusyCeiling);
  for (const auto& [label, cin] : {std::pair{"everysec", c_in}, {"always", c.c_in_always.mid()}}) {
    const double gpus = kRedisBusyCeiling * 1e6 / (kPositionsPerGpuSecond * (cin + R * c_s));
    doc["gpus_one_redis_holds"][label] = gpus;
    if (!o.json)
      std::printf("GPUs one Redis holds (appendfsync %s): 0.6e6 / (%.0f x (c_in + R c_s)) = %.0f\n",
                  label, kPositionsPerGpuSecond, gpus);
  }
  if (!o.json) {
    std::printf(
        "\n| GPUs N | ingest I pos/s | sampled S pos/s | Redis main-thread cores | shards "
        "(everysec) | shards (always) | AOF MB/s per shard | replay cores | shard 0 "
        "main-thread s per model version |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  }
  for (double n : {10.0, 100.0, 1000.0, 10000.0}) {
    const double in = kPositionsPerGpuSecond * n, s = R * in;
    const double demand = in * c_in + s * c_s;
    const double shards = std::ceil(demand / kRedisBusyCeiling / 1e6);
    const double shards_always =
        std::ceil((in * c.c_in_always.mid() + s * c_s) / kRedisBusyCeiling / 1e6);
    const double replay_cores =
        (in * (c.c_val.mid() + c.c_push.mid()) + s * (c.c_sample_client.mid() + c.c_parse.mid())) /
        1e6;
    // Every self-play pod (one per GPU) reads each new version once, from shard 0.
    const double model_seconds = n * o.model_mb * c.c_m.mid() / 1e6;
    const double aof = in * c.aof_per_position.mid() / shards / 1e6;
    doc["rows"].push_back({{"gpus", n},
                           {"ingest_positions_per_second", in},
                           {"sampled_positions_per_second", s},
                           {"redis_main_thread_cores", demand / 1e6},
                           {"shards_everysec", shards},
                           {"shards_always", shards_always},
                           {"aof_mb_per_second_per_shard", aof},
                           {"replay_cores", replay_cores},
                           {"shard0_seconds_per_model_version", model_seconds}});
    if (!o.json)
      std::printf("| %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.1f | %.1f | %.1f |\n", n, in, s,
                  demand / 1e6, shards, shards_always, aof, replay_cores, model_seconds);
  }
  if (!o.json)
    std::printf(
        "\nreplay cores = I (c_val + c_push) + S (c_sample + c_parse); gRPC's own "
        "encoding is not in it.\n");
  return doc;
}

// One step of scaling: ShardedReplayStore over 1, --shards and
// --overhead-shards redis-servers, shard i pinned to CPU i mod CPUs (one shard
// on the last CPU), ingest-only from the validated corpus; runs interleave.
// Prints its table unless --json and fills `doc`; false when a ratio is not sane.
bool run_scaling(const CapacityOptions& o, const Corpus& corpus, nlohmann::json& doc) {
  std::set<int> counts = {1, o.shards, o.overhead_shards};
  const int cpus = cpu_count();
  pin_this_thread({});
  struct Setup {
    int shards = 0;
    std::vector<PinnedRedis> redis;
    std::vector<std::unique_ptr<replay::RedisReplayStore>> stores;
    std::unique_ptr<replay::ShardedReplayStore> sharded;
    Figure rate, cores, main_us;
  };
  std::vector<Setup> setups;
  ProgressLine progress;
  for (int k : counts) {
    Setup s;
    s.shards = k;
    const auto windows = replay::split_window(o.window, std::size_t(k));
    std::vector<replay::ReplayStore*> shards;
    std::vector<std::string> names;
    for (int i = 0; i < k; ++i) {
      const int cpu = cpus < 2 ? -1 : (k == 1 ? cpus - 1 : i % cpus);
      s.redis.push_back(start_pinned_redis("everysec", cpu, {"auto-aof-rewrite-percentage 0"}));
      s.stores.push_back(std::make_unique<replay::RedisReplayStore>(
          store_options(*s.redis.back().server, windows[std::size_t(i)], o.threads)));
      shards.push_back(s.stores.back().get());
      names.push_back("127.0.0.1:" + std::to_string(s.redis.back().server->port()));
    }
    s.sharded = std::make_unique<replay::ShardedReplayStore>(shards, names);
    progress.show("scaling: filling %d shard(s)", k);
    push_games(*s.sharded, corpus, games_for(o.window * 12 / 10, corpus), o.batch, o.threads,
               "fill-");
    setups.push_back(std::move(s));
  }
  std::vector<double> ratio_rate, ratio_main;
  for (int r = 0; r < o.runs; ++r) {
    for (Setup& s : setups) {
      progress.show("scaling run %d/%d: ingest into %d shard(s)", r + 1, o.runs, s.shards);
      std::vector<const harness::RedisServer*> servers;
      for (const auto& p : s.redis) servers.push_back(p.server.get());
      std::uint64_t positions = 0;
      const auto deltas = measure(servers, o.seconds, [&](const std::atomic<bool>& stop) {
        positions = push_games(*s.sharded, corpus, ~std::uint64_t{0}, o.batch, o.threads,
                               "s" + std::to_string(r) + "-", &stop);
      });
      double main_us = 0;
      for (const Delta& d : deltas) main_us += d.main_us();
      s.rate.add(double(positions) / deltas[0].seconds);
      s.cores.add(main_us / deltas[0].seconds / 1e6);
      s.main_us.add(main_us / double(positions));
    }
    progress.clear();
    std::fprintf(stderr, "scaling run %d/%d:", r + 1, o.runs);
    for (const Setup& s : setups)
      std::fprintf(stderr, " %d shard(s) %.0f positions/s (%.2f us/position);", s.shards,
                   s.rate.runs.back(), s.main_us.runs.back());
    std::fprintf(stderr, "\n");
  }
  auto find = [&](int k) -> const Setup& {
    return *std::find_if(setups.begin(), setups.end(),
                         [k](const Setup& s) { return s.shards == k; });
  };
  const Setup& one = find(1);
  Figure step, overhead;
  for (int r = 0; r < o.runs; ++r) {
    step.add(find(o.shards).rate.runs[std::size_t(r)] / one.rate.runs[std::size_t(r)]);
    overhead.add(find(o.overhead_shards).main_us.runs[std::size_t(r)] /
                 one.main_us.runs[std::size_t(r)]);
  }
  doc = {{"window", o.window},
         {"threads", o.threads},
         {"cpus", cpus},
         {"runs", o.runs},
         {"seconds", o.seconds},
         {"rows", nlohmann::json::array()},
         {"step",
          {{"shards", o.shards},
           {"ratio", figure_json(step)},
           {"target", 1.6},
           {"met", step.mid() >= 1.6}}},
         {"overhead",
          {{"shards", o.overhead_shards},
           {"ratio", figure_json(overhead)},
           {"target", 1.05},
           {"met", overhead.mid() <= 1.05}}}};
  for (const Setup& s : setups)
    doc["rows"].push_back({{"shards", s.shards},
                           {"positions_per_second", figure_json(s.rate)},
                           {"redis_main_thread_cores", figure_json(s.cores)},
                           {"main_thread_us_per_position", figure_json(s.main_us)}});
  if (o.json) return step.sane() && overhead.sane();
  std::printf(
      "\n## One step of scaling (ShardedReplayStore, ingest only, window %llu split over "
      "the shards, %d threads, %d CPU(s); median (min–max) of %d run(s) of %.1f s)\n\n",
      (unsigned long long)o.window, o.threads, cpus, o.runs, o.seconds);
  std::printf(
      "| shards | positions/s | Σ Redis main-thread cores | Σ main-thread us per position "
      "|\n| ---: | ---: | ---: | ---: |\n");
  for (const Setup& s : setups)
    std::printf("| %d | %s | %s | %s |\n", s.shards, spread(s.rate, "%.0f").c_str(),
                spread(s.cores).c_str(), spread(s.main_us).c_str());
  std::printf("\n%d shards vs 1: %sx the positions/s (target >= 1.6x: %s)\n", o.shards,
              spread(step).c_str(), step.mid() >= 1.6 ? "met" : "missed");
  std::printf("%d shards vs 1: %sx the Σ main-thread us per position (target <= 1.05x: %s)\n",
              o.overhead_shards, spread(overhead, "%.3f").c_str(),
              overhead.mid() <= 1.05 ? "met" : "missed");
  return step.sane() && overhead.sane();
}

void run_capacity(CapacityOptions o) {
  if (!o.json)
    std::printf(
        "chessrl bench capacity: phase %s; %d CPU(s); each Redis pinned to one "
        "CPU, AOF on\n",
        o.phase.c_str(), cpu_count());
  nlohmann::json doc = {{"bench", "capacity"}, {"phase", o.phase}, {"cpus", cpu_count()}};
  Calibration c;
  const Corpus corpus = build_corpus(o, c.c_val);
  bool sane = true;
  if (o.phase == "all" || o.phase == "calibrate") {
    c = calibrate(o, corpus, std::move(c));
    if (o.json) {
      doc["calibration"] = calibration_json(o, corpus, c);
    } else {
      print_calibration(o, corpus, c);
    }
    doc["model"] = print_model(o, c);
    for (const Figure* f : {&c.c_in, &c.c_in_always, &c.c_s, &c.c_m, &c.aof_per_position, &c.c_val,
                            &c.c_push, &c.c_sample_client, &c.c_parse})
      sane = sane && f->sane();
  }
  if (o.phase == "all" || o.phase == "scaling")
    sane = run_scaling(o, corpus, doc["scaling"]) && sane;
  if (o.phase == "all" || o.phase == "memory") doc["memory"] = run_memory_phase(o, corpus);
  // The document even when a constant is not sane (NaN as null): the reader sees which.
  if (o.json) print_json_document(doc.dump(2));
  std::fflush(stdout);
  if (!sane) throw Error("bench capacity: a constant came out zero or not finite (see above)");
}

}  // namespace
}  // namespace chessrl::tool::capacity

namespace chessrl::tool {

void add_bench_capacity_command(CLI::App& bench) {
  using capacity::CapacityOptions;
  auto o = std::make_shared<CapacityOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "capacity",
      "Per-unit Redis and replay costs from Redis's own accounting, the capacity model for 10 to "
      "10,000 GPUs, one step of shard scaling, and the window's memory per position");
  cmd->add_option("--phase", o->phase, "all, calibrate, scaling or memory")
      ->check(CLI::IsMember({"all", "calibrate", "scaling", "memory"}))
      ->capture_default_str();
  cmd->add_option("--runs", o->runs, "runs of each phase; the tables show medians")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "length of each measured phase of a run")
      ->check(CLI::Range(0.2, 600.0))
      ->capture_default_str();
  cmd->add_option("--callers,--threads", o->threads, "concurrent callers of the store")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--plies", o->plies, "length of the synthetic games (positions per game)")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  cmd->add_option("--window", o->window, "window of the calibration and scaling phases (positions)")
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 32))
      ->capture_default_str();
  cmd->add_option("--model-mb", o->model_mb, "size of the model blob read in phase (c)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-reuse", o->max_reuse, "R: positions sampled per position ingested")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--shards", o->shards, "the step of scaling: 1 shard vs this many")
      ->check(CLI::Range(2, 16))
      ->capture_default_str();
  cmd->add_option("--overhead-shards", o->overhead_shards,
                  "Σ main-thread us per position: this many shards vs 1")
      ->check(CLI::Range(2, 16))
      ->capture_default_str();
  cmd->add_option("--memory-window", o->memory_window, "window of --phase memory (positions)")
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 32))
      ->capture_default_str();
  cmd->add_option("--turnovers", o->turnovers,
                  "windows' worth of positions pushed in --phase memory")
      ->check(CLI::Range(3, 1000))
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick,
                "a short smoke run: 1 run of 0.5 s phases, 20,000- and 10,000-position windows, "
                "6 turnovers (flags given explicitly still win)");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the tables' figures instead of the tables");
  cmd->callback([o, cmd] {
    CapacityOptions run = *o;
    if (run.quick) {
      if (!cmd->count("--runs")) run.runs = 1;
      if (!cmd->count("--seconds")) run.seconds = 0.5;
      if (!cmd->count("--window")) run.window = 20'000;
      if (!cmd->count("--memory-window")) run.memory_window = 10'000;
      if (!cmd->count("--turnovers")) run.turnovers = 6;
    }
    capacity::run_capacity(run);
  });
}

}  // namespace chessrl::tool
