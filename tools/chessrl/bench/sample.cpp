// `chessrl bench sample`: how fast the trainer's data source turns the replay
// service's Sample calls into training examples. A private redis-server and a
// chessrl-replay (child process, on loopback) filled with synthetic games; the
// trainer's ReplaySource fetches batches with 1, 2, 4, 8 Sample calls in
// flight (--sample-inflight), median examples/s of several interleaved runs;
// then decoding alone (TrainingPosition to Example) on one thread. A table, or
// with --json one JSON document of the same figures.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/replay_shared.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/record/training_position.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/train/example.h"
#include "commands.h"
#include "replay_source.h"

namespace chessrl::tool {
namespace {

struct SampleBenchOptions {
  std::vector<int> inflight{1, 2, 4, 8};
  int batch = 1024;  // examples per fetch (a trainer rank's batch)
  std::uint32_t max_sample = 16384;
  std::uint64_t window = 200'000;  // positions pushed before measuring
  int plies = 160;
  double target_fraction = 0.5;
  std::string store = "redis";
  double seconds = 3;
  int repeat = 5;
  int decode_positions = 20'000;
  int added_latency_ms = 0;  // slept before each Sample call: a replay service across a network
  std::string bin_dir;
  bool json = false;  // one JSON document on stdout instead of the table
};

// Pushes unique synthetic games until `o.window` positions were stored (the
// window then holds about that many: its capacity is the same figure).
void fill_window(rpc::ReplayClient& client, const SampleBenchOptions& o, ProgressLine& progress) {
  const std::vector<v1::Game> pool = synthetic_game_pool(o.plies, o.target_fraction, "bench");
  std::uint64_t next_id = 0, stored = 0;
  while (stored < o.window) {
    v1::PushGamesRequest request;
    for (int g = 0; g < 32; ++g, ++next_id) {
      v1::Game* game = request.add_games();
      *game = pool[next_id % pool.size()];
      game->set_id("bench-sample-" + std::to_string(next_id));
    }
    auto reply = client.push_games(request);
    if (!reply.ok()) throw Error("bench sample: filling the window: " + reply.error());
    auto stats = client.stats();
    if (!stats.ok()) throw Error("bench sample: " + stats.error());
    stored = stats->positions_stored_total();
    progress.show("filling the window: %llu of %llu positions",
                  static_cast<unsigned long long>(stored),
                  static_cast<unsigned long long>(o.window));
  }
}

// Examples/s through ReplaySource with `inflight` calls, over `seconds`.
double measure_source(std::shared_ptr<rpc::ReplayClient> client, const SampleBenchOptions& o,
                      int inflight) {
  // The trainer's source over the same client; with --added-latency-ms each
  // call first sleeps that long (no CPU), as a round trip to another node would.
  const auto latency = std::chrono::milliseconds(o.added_latency_ms);
  trainer_service::ReplaySource source(
      [client, latency](std::uint32_t count) {
        if (latency.count() > 0) std::this_thread::sleep_for(latency);
        return client->sample(count);
      },
      [client] { client->cancel(); }, o.max_sample, inflight);
  // A warm-up of a fifth of the run: the pipeline starts on the first fetch,
  // and the window opens in its steady state (not on the k replies that
  // arrived ahead while the first one was awaited).
  for (const auto warm = Clock::now(); seconds_since(warm) < o.seconds / 5;)
    if (auto batch = source.fetch(0, 0, 1, o.batch); !batch.ok())
      throw Error("bench sample: " + batch.error());
  std::uint64_t examples = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < o.seconds) {
    auto batch = source.fetch(0, 0, 1, o.batch);
    if (!batch.ok()) throw Error("bench sample: " + batch.error());
    examples += batch->size();
    elapsed = seconds_since(start);
  }
  return double(examples) / elapsed;
}

// This thread's CPU time (s): on a shared machine, the time it ran, not the
// time others ran while it waited.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct DecodeRates {
  double per_second;      // to_example (TrainingPosition to Example), wall clock
  double per_cpu_second;  // the same per second of this thread's CPU time
  double decode_only;     // record::decode_position alone, per CPU second
};

DecodeRates measure_decode(const std::vector<v1::TrainingPosition>& corpus, int repeat) {
  std::vector<double> wall, cpu, decode;
  std::size_t sum = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    double cpu_start = thread_cpu_seconds();
    for (const auto& p : corpus) {
      auto example = trainer_service::to_example(p);
      if (!example.ok()) throw Error("bench sample: " + example.error());
      sum += example->legal.size();
    }
    wall.push_back(double(corpus.size()) / seconds_since(start));
    cpu.push_back(double(corpus.size()) / (thread_cpu_seconds() - cpu_start));
    cpu_start = thread_cpu_seconds();
    for (const auto& p : corpus) {
      auto decoded = record::decode_position(p);
      if (!decoded.ok()) throw Error("bench sample: " + decoded.error());
      sum += decoded->history.size();
    }
    decode.push_back(double(corpus.size()) / (thread_cpu_seconds() - cpu_start));
  }
  volatile std::size_t sink = sum;  // keeps the loops from being folded away
  (void)sink;
  return {median(wall), median(cpu), median(decode)};
}

void run_sample_bench(const SampleBenchOptions& o) {
  auto redis = start_bench_redis("chessrl-bench", "everysec");
  std::vector<std::string> extra = {
      "--window-positions", std::to_string(o.window),
      "--producer-rate",    "0",
      "--max-sample",       std::to_string(std::max<std::uint32_t>(o.max_sample, 16384))};
  if (o.store == "memory") extra.insert(extra.end(), {"--store", "memory"});
  ReplayChild replay = start_replay_child(*redis, o.bin_dir, extra, false, "bench sample");
  rpc::ClientOptions client_options;
  client_options.address = "127.0.0.1:" + std::to_string(replay.port);
  auto client = std::make_shared<rpc::ReplayClient>(client_options);

  ProgressLine progress;
  fill_window(*client, o, progress);
  const std::string latency_note =
      o.added_latency_ms > 0
          ? "; " + std::to_string(o.added_latency_ms) + " ms slept before each Sample call"
          : "";
  nlohmann::json doc = {{"bench", "sample"},
                        {"store", o.store},
                        {"window", o.window},
                        {"plies", o.plies},
                        {"batch", o.batch},
                        {"seconds", o.seconds},
                        {"repeat", o.repeat},
                        {"added_latency_ms", o.added_latency_ms},
                        {"rows", nlohmann::json::array()}};
  if (!o.json)
    std::printf(
        "chessrl bench sample: chessrl-replay (--store %s) on loopback, window %llu "
        "positions of synthetic games (%d plies at most); batches of %d, %.1f s per run, "
        "median of %d interleaved runs%s\n\n",
        o.store.c_str(), static_cast<unsigned long long>(o.window), o.plies, o.batch, o.seconds,
        o.repeat, latency_note.c_str());

  std::vector<std::vector<double>> rates(o.inflight.size());
  for (int r = 0; r < o.repeat; ++r)
    for (std::size_t i = 0; i < o.inflight.size(); ++i) {
      progress.show("run %d/%d: %d Sample call(s) in flight", r + 1, o.repeat, o.inflight[i]);
      // A client of its own per run: no channel state carried over.
      rates[i].push_back(
          measure_source(std::make_shared<rpc::ReplayClient>(client_options), o, o.inflight[i]));
    }
  progress.clear();
  if (!o.json) {
    std::printf("| Sample calls in flight | examples/s (median) | min | max | vs 1 |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
  }
  double one = 0, four = 0;
  for (std::size_t i = 0; i < o.inflight.size(); ++i) {
    const double m = median(rates[i]);
    if (o.inflight[i] == 1) one = m;
    if (o.inflight[i] == 4) four = m;
    const double low = *std::min_element(rates[i].begin(), rates[i].end());
    const double high = *std::max_element(rates[i].begin(), rates[i].end());
    doc["rows"].push_back({{"inflight", o.inflight[i]},
                           {"examples_per_second", m},
                           {"min", low},
                           {"max", high},
                           {"vs_one", one > 0 ? nlohmann::json(m / one) : nlohmann::json()}});
    if (!o.json)
      std::printf("| %d | %.0f | %.0f | %.0f | %.2fx |\n", o.inflight[i], m, low, high,
                  one > 0 ? m / one : 0.0);
  }
  if (one > 0 && four > 0 && !o.json)
    std::printf("\n4 in flight / 1 in flight: %.2fx\n", four / one);

  progress.show("decode: sampling %d positions", o.decode_positions);
  std::vector<v1::TrainingPosition> corpus;
  while (int(corpus.size()) < o.decode_positions) {
    auto reply = client->sample(std::min<std::uint32_t>(
        o.max_sample, std::uint32_t(o.decode_positions - int(corpus.size()))));
    if (!reply.ok()) throw Error("bench sample: " + reply.error());
    for (auto& p : *reply->mutable_positions()) corpus.push_back(std::move(p));
  }
  progress.show("decode: %d positions on one thread, %d runs", o.decode_positions, o.repeat);
  const DecodeRates decode = measure_decode(corpus, o.repeat);
  progress.clear();
  replay.child->stop(std::chrono::seconds(5));
  if (o.json) {
    doc["decode"] = {{"positions", o.decode_positions},
                     {"examples_per_second", decode.per_second},
                     {"examples_per_cpu_second", decode.per_cpu_second},
                     {"decode_position_per_cpu_second", decode.decode_only}};
    print_json_document(doc.dump(2));
    return;
  }
  std::printf(
      "\ndecode on one thread (%d sampled positions, median of %d): %.0f examples/s "
      "(TrainingPosition to Example), %.0f per CPU second of the thread; "
      "record::decode_position alone %.0f per CPU second\n",
      o.decode_positions, o.repeat, decode.per_second, decode.per_cpu_second, decode.decode_only);
}

}  // namespace

void add_bench_sample_command(CLI::App& bench) {
  auto o = std::make_shared<SampleBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "sample",
      "The trainer's data source: examples/s from chessrl-replay with 1, 2, 4, 8 "
      "Sample calls in flight, and decoding alone on one thread");
  cmd->add_option("--inflight", o->inflight, "Sample calls in flight, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "examples per fetch (a trainer rank's batch)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--max-sample", o->max_sample, "most positions per Sample call")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str();
  cmd->add_option("--window", o->window, "positions pushed before measuring (the window)")
      ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--plies", o->plies, "length of the synthetic games (at most)")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  cmd->add_option("--store", o->store, "chessrl-replay's store: redis or memory")
      ->check(CLI::IsMember({"redis", "memory"}))
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "length of each timed run")
      ->check(CLI::Range(0.2, 600.0))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "runs per row (the median is shown)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--decode-positions", o->decode_positions,
                  "sampled positions in the decode-only measurement")
      ->check(CLI::Range(100, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--added-latency-ms", o->added_latency_ms,
                  "sleep this long before each Sample call, as a round trip to a replay service "
                  "on another node would take (0: loopback alone)")
      ->check(CLI::Range(0, 10'000))
      ->capture_default_str();
  cmd->add_option("--bin-dir", o->bin_dir,
                  "where chessrl-replay is (default: beside this program, or the build tree)");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the table's figures instead of the table");
  cmd->callback([o] { run_sample_bench(*o); });
}

}  // namespace chessrl::tool
