// chessrl selfplay: plays games with the GameRunner and writes training records
// (JSON Lines) and PGN. chessrl bench selfplay: self-play throughput against
// the network's raw throughput at the same batch size, in one run.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend_setup.h"
#include "bench/forward.h"
#include "bench/util.h"
#include "chessrl/chess/pgn.h"
#include "chessrl/core/error.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/runtime/options.h"
#include "chessrl/selfplay/game_options.h"
#include "chessrl/selfplay/game_runner.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

// Options shared by selfplay and bench selfplay: the layout group
// (runtime/options.h, as chessrl-selfplay declares it), the game and the backend.
struct RunnerSetup : runtime::LayoutOptions {
  BackendSetup backend;
  selfplay::GameRunnerOptions runner;  // its threads and concurrent games are set by finish()
  bool no_tree_reuse = false;

  void add_options(CLI::App& app) {
    auto& o = runner;
    selfplay::add_game_options(app, o.config);
    runtime::LayoutOptions::add_to(app, o.leaves_per_search);
    app.add_option("--seed", o.seed, "Runner seed; each game's seed derives from it")
        ->capture_default_str();
    app.add_flag("--no-tree-reuse", no_tree_reuse, "Start every search from an empty tree");
    app.add_option("--start-fen", o.start_fen, "Start position (default: the standard one)");
    backend.add_options(app);
  }

  // Fills the defaults that depend on the backend; returns the evaluator options.
  nn::BatchEvaluatorOptions finish(const nn::InferenceBackend& b) {
    // The service's layout rule, with the backend built: a fake backend
    // (uniform, random) runs one stream.
    if (workers <= 0) workers = b.preferred_streams();
    const runtime::SearchLayout layout =
        fill(backend.device, backend.nn_threads, runner.leaves_per_search, runner.max_games);
    runner.threads = layout.threads;
    runner.concurrent_games = layout.concurrent_games;
    runner.config.tree_reuse = !no_tree_reuse;
    runner.validate().value_or_throw();
    return evaluator_options(runner.leaves_per_search);
  }
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted = true; }

struct SelfplayOptions {
  RunnerSetup setup;
  std::uint64_t games = 16;
  std::string out = "selfplay";
};

void run_selfplay(SelfplayOptions o) {
  if (o.games == 0) throw Error("--games must be at least 1");
  o.setup.runner.max_games = o.games;
  auto backend = o.setup.backend.make();
  const nn::BatchEvaluatorOptions eo = o.setup.finish(*backend);
  std::filesystem::create_directories(o.out);
  const std::string records_path = o.out + "/games.jsonl", pgn_path = o.out + "/games.pgn";
  std::ofstream records(records_path, std::ios::trunc), pgn(pgn_path, std::ios::trunc);
  if (!records || !pgn) throw Error("cannot write to " + o.out);

  nn::BatchEvaluator evaluator(backend, eo);
  selfplay::GameRunner runner(evaluator, o.setup.runner);
  const auto& r = o.setup.runner;
  std::printf(
      "selfplay: %llu games, %d at once on %d threads, %d leaves per search, %d/%d visits (full "
      "fraction %.2f), seed %llu\n  backend %s, %d evaluator worker(s), batches up to %d\n",
      static_cast<unsigned long long>(o.games), r.concurrent_games, r.threads, r.leaves_per_search,
      r.config.playouts.full_visits, r.config.playouts.reduced_visits,
      double(r.config.playouts.full_fraction), static_cast<unsigned long long>(r.seed),
      o.setup.backend.describe(*backend).c_str(), eo.workers, eo.max_batch);
  std::fflush(stdout);

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const auto start = Clock::now();
  std::atomic<bool> finished{false};
  std::thread reporter([&] {
    ProgressLine line;
    const bool tty = ::isatty(STDERR_FILENO);
    auto last_print = Clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      const double t = seconds_since(start);
      const selfplay::RunnerStats s = runner.stats();
      const nn::EvaluatorStats e = evaluator.stats();
      char text[256];
      std::snprintf(text, sizeof text,
                    "games %llu/%llu  %.0f games/h  %.0f positions/s  %.0f evals/s  batch %.1f",
                    static_cast<unsigned long long>(s.games),
                    static_cast<unsigned long long>(o.games), 3600.0 * double(s.games) / t,
                    double(s.positions) / t, double(e.evaluated) / t, e.mean_batch());
      if (tty) {
        line.show("%s", text);
      } else if (seconds_since(last_print) >= 10) {
        std::fprintf(stderr, "%s\n", text);
        last_print = Clock::now();
      }
    }
  });

  std::uint64_t written = 0;
  std::string error;
  try {
    runner.run(
        [&](record::GameRecord&& g) {
          records << record::to_json(g) << '\n';
          auto text = chess::write_pgn(record::to_pgn(g));
          if (text) pgn << *text << '\n';
          records.flush();
          pgn.flush();
          ++written;
        },
        &g_interrupted);
  } catch (const std::exception& e) {
    error = e.what();
  }
  finished = true;
  reporter.join();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!error.empty()) throw Error("self-play failed: " + error);

  const double t = seconds_since(start);
  const selfplay::RunnerStats s = runner.stats();
  const nn::EvaluatorStats e = evaluator.stats();
  std::printf(
      "%s%llu games in %.1f s: +%llu =%llu -%llu (white's view), %llu resigned; %llu positions "
      "(%llu recorded)\n",
      g_interrupted ? "interrupted: " : "", static_cast<unsigned long long>(s.games), t,
      static_cast<unsigned long long>(s.white_wins), static_cast<unsigned long long>(s.draws),
      static_cast<unsigned long long>(s.black_wins),
      static_cast<unsigned long long>(s.resignations), static_cast<unsigned long long>(s.positions),
      static_cast<unsigned long long>(s.recorded));
  std::printf(
      "%.0f games/hour, %.0f positions/s, %.0f evals/s (%.1f%% cache hits), mean batch %.1f, "
      "%llu playouts\n",
      3600.0 * double(s.games) / t, double(s.positions) / t, double(e.evaluated) / t,
      e.requests ? 100.0 * double(e.cache_hits) / double(e.requests) : 0.0, e.mean_batch(),
      static_cast<unsigned long long>(s.playouts));
  std::printf("resignation: %llu played-out games would have resigned, %llu wrongly (%.1f%%)\n",
              static_cast<unsigned long long>(s.resign_checked),
              static_cast<unsigned long long>(s.resign_false_positives),
              100.0 * s.resign_false_positive_rate());
  std::printf("wrote %llu games to %s and %s\n", static_cast<unsigned long long>(written),
              records_path.c_str(), pgn_path.c_str());
}

struct BenchSelfplayOptions {
  RunnerSetup setup;
  int blocks = 0, filters = 0;
  double seconds = 10;
  double warmup = 3;
  int repeat = 3;
  bool json = false;  // one JSON document on stdout instead of the table
};

struct Window {
  selfplay::RunnerStats runner;
  nn::EvaluatorStats evaluator;
};

void run_bench_selfplay(BenchSelfplayOptions o) {
  if (o.blocks > 0 || o.filters > 0) {
    if (o.blocks <= 0 || o.filters <= 0) throw Error("--blocks and --filters go together");
    o.setup.backend.net = std::to_string(o.blocks) + "x" + std::to_string(o.filters);
  }
  o.setup.runner.max_games = 0;
  auto backend = o.setup.backend.make();
  const nn::BatchEvaluatorOptions eo = o.setup.finish(*backend);
  const auto& r = o.setup.runner;
  // --json: the table's figures, each run's windows in Unix seconds (bench/util.h).
  nlohmann::json doc = {{"bench", "selfplay"},
                        {"backend", o.setup.backend.describe(*backend)},
                        {"games", r.concurrent_games},
                        {"threads", r.threads},
                        {"leaves_per_search", r.leaves_per_search},
                        {"visits", r.config.playouts.full_visits},
                        {"workers", eo.workers},
                        {"max_batch", eo.max_batch},
                        {"repeat", o.repeat},
                        {"seconds", o.seconds},
                        {"warmup", o.warmup},
                        {"runs", nlohmann::json::array()}};
  if (!o.json) {
    std::printf(
        "bench selfplay: %s; %d games at once on %d threads, %d leaves per search, %d visits per "
        "move (every move full), %d evaluator worker(s), batches up to %d; median of %d run(s) "
        "of %.0f s after %.0f s warm-up; raw = the backend alone at the run's mean batch, %d "
        "stream(s), measured right after\n",
        o.setup.backend.describe(*backend).c_str(), r.concurrent_games, r.threads,
        r.leaves_per_search, r.config.playouts.full_visits, eo.workers, eo.max_batch, o.repeat,
        o.seconds, o.warmup, eo.workers);
    std::printf("%4s %12s %12s %11s %10s %12s %10s\n", "run", "positions/s", "playouts/s",
                "evals/s", "mean batch", "raw evals/s", "efficiency");
  }
  const auto positions = bench_positions(4096);
  std::vector<double> pos_rate, playout_rate, eval_rate, batch, raw_rate, ratio;
  ProgressLine progress;
  for (int run = 0; run < o.repeat; ++run) {
    nn::BatchEvaluator evaluator(backend, eo);
    auto options = r;
    options.seed = r.seed + std::uint64_t(run);
    selfplay::GameRunner runner(evaluator, options);
    std::atomic<bool> stop{false};
    std::thread play([&] { runner.run({}, &stop); });
    auto snapshot = [&] { return Window{runner.stats(), evaluator.stats()}; };
    progress.show("run %d/%d: warming up", run + 1, o.repeat);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
    const Window begin = snapshot();
    const auto t0 = Clock::now();
    const double play_from = unix_seconds();
    progress.show("run %d/%d: self-play for %.0f s", run + 1, o.repeat, o.seconds);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    const Window end = snapshot();
    const double t = seconds_since(t0);
    const double play_to = unix_seconds();
    stop = true;
    play.join();
    const nn::EvaluatorStats d = end.evaluator - begin.evaluator;
    const double evals = double(d.evaluated) / t;
    const int mean = std::max(1, int(std::lround(d.mean_batch())));
    std::vector<nn::InputPlanes> inputs;
    for (int i = 0; i < mean; ++i) inputs.push_back(nn::encode_copy(positions[std::size_t(i)]));
    progress.show("run %d/%d: the backend alone at batch %d", run + 1, o.repeat, mean);
    measure_raw(*backend, inputs, 0.3, eo.workers);
    const double raw_from = unix_seconds();
    const RawResult raw = measure_raw(*backend, inputs, o.seconds, eo.workers);
    const double raw_to = unix_seconds();
    progress.clear();
    pos_rate.push_back(double(end.runner.positions - begin.runner.positions) / t);
    playout_rate.push_back(double(end.runner.playouts - begin.runner.playouts) / t);
    eval_rate.push_back(evals);
    batch.push_back(d.mean_batch());
    raw_rate.push_back(raw.evals_per_second);
    ratio.push_back(evals / raw.evals_per_second);
    doc["runs"].push_back({{"run", run + 1},
                           {"positions_per_second", pos_rate.back()},
                           {"playouts_per_second", playout_rate.back()},
                           {"evals_per_second", evals},
                           {"mean_batch", batch.back()},
                           {"raw_evals_per_second", raw_rate.back()},
                           {"efficiency", ratio.back()},
                           {"selfplay_window", {play_from, play_to}},
                           {"raw_window", {raw_from, raw_to}}});
    if (o.json) continue;
    std::printf("%4d %12.1f %12.0f %11.0f %10.1f %12.0f %10.3f\n", run + 1, pos_rate.back(),
                playout_rate.back(), evals, batch.back(), raw_rate.back(), ratio.back());
    std::fflush(stdout);
  }
  doc["median"] = {
      {"positions_per_second", median(pos_rate)}, {"playouts_per_second", median(playout_rate)},
      {"evals_per_second", median(eval_rate)},    {"mean_batch", median(batch)},
      {"raw_evals_per_second", median(raw_rate)}, {"efficiency", median(ratio)}};
  if (o.json) {
    print_json_document(doc.dump(2));
    return;
  }
  std::printf("%4s %12.1f %12.0f %11.0f %10.1f %12.0f %10.3f\n", "med", median(pos_rate),
              median(playout_rate), median(eval_rate), median(batch), median(raw_rate),
              median(ratio));
}

}  // namespace

void add_selfplay_command(CLI::App& app) {
  auto o = std::make_shared<SelfplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "selfplay", "Play self-play games; write training records (games.jsonl) and PGN (games.pgn)");
  cmd->add_option("--games", o->games, "Games to play")->capture_default_str();
  cmd->add_option("--out", o->out, "Output directory")->capture_default_str();
  o->setup.add_options(*cmd);
  cmd->callback([o] { run_selfplay(*o); });
}

void add_bench_selfplay_command(CLI::App& bench) {
  auto o = std::make_shared<BenchSelfplayOptions>();
  o->setup.runner.config.playouts = {.full_visits = 800, .reduced_visits = 800, .full_fraction = 1};
  CLI::App* cmd = bench.add_subcommand(
      "selfplay", "Self-play throughput, and its evals/s as a fraction of the network's alone");
  cmd->add_option("--blocks", o->blocks, "Residual blocks of a fresh network (with --filters)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--filters", o->filters, "Filters of a fresh network (with --blocks)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--games", o->setup.concurrent_games,
                  "Games at once, as --concurrent (0: threads x batch / leaves)")
      ->check(CLI::Range(0, 65536));
  cmd->add_option("--seconds", o->seconds, "Length of each timed run")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Self-play before each timed window")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Runs (the median is shown)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the table's figures (each run's self-play and "
                "backend-alone windows in Unix seconds) instead of the table");
  o->setup.add_options(*cmd);
  cmd->callback([o] { run_bench_selfplay(*o); });
}

}  // namespace chessrl::tool
