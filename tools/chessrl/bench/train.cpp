// `chessrl bench train`: data-parallel training throughput (weak scaling: the
// batch per rank is constant) with 1, 2, ... ranks, each a worker process of
// this tool joined over Gloo on loopback (NCCL with --device cuda), on a fixed
// synthetic data set; and, beside it, the same network trained by PyTorch from
// Python (train_yardstick.py) with the threads of one rank, on the same device.
// Tables, or with --json one JSON document of the same figures.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/train_support.h"
#include "bench/util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/rules.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/nn/torch_network.h"
#include "chessrl/train/distributed.h"
#include "chessrl/train/example.h"
#include "chessrl/train/source.h"
#include "chessrl/train/trainer.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

constexpr std::uint64_t kDataSeed = 20240611;
// Marks the worker's result line and its progress lines on stdout.
constexpr const char* kResultKey = "bench_train_result";
constexpr const char* kProgressKey = "bench_train_step";
constexpr const char* kListeningKey = "bench_train_listening";  // rank 0's rendezvous port

struct TrainBenchOptions {
  std::vector<int> ranks{1, 2};
  std::string net = "6x64";
  int batch = 256;
  int steps = 10;
  int warmup = 2;
  int repeat = 3;
  int threads = 1;
  std::string device = "cpu";    // cpu or cuda: rank r trains on GPU r modulo the GPUs
  bool mixed_precision = false;  // CUDA: bf16 autocast and TF32
  std::string python = "auto";
  std::string python_script;
  int examples = 4096;
  bool independent = true;  // also R unconnected 1-rank processes at once, for R > 1
  bool worker = false;      // hidden: run as one rank (RANK, WORLD_SIZE, MASTER_* set)
  bool json = false;        // one JSON document on stdout instead of the tables
};

// `count` examples from positions along seeded random legal games: the
// position after a random number of plies, with its real history, a random
// distribution over its legal moves and a random result.
std::vector<train::Example> synthetic_examples(int count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.05f, 1.0f);
  std::uniform_int_distribution<int> result_of(-1, 1);
  std::bernoulli_distribution take(0.25);
  std::vector<train::Example> out;
  out.reserve(static_cast<std::size_t>(count));
  std::vector<chess::Move> history;
  std::vector<float> probs;
  while (static_cast<int>(out.size()) < count) {
    chess::Position pos;
    history.clear();
    const int plies = std::uniform_int_distribution<int>(10, 200)(rng);
    for (int ply = 0; ply < plies && static_cast<int>(out.size()) < count; ++ply) {
      if (chess::game_result(pos).reason != chess::Termination::kNone) break;
      const chess::MoveList moves = chess::legal_moves(pos);
      if (moves.empty()) break;
      if (take(rng)) {
        probs.clear();
        float sum = 0;
        for (int i = 0; i < moves.size(); ++i) sum += probs.emplace_back(unit(rng));
        for (float& p : probs) p /= sum;
        auto example = train::make_example(chess::kStartFen, history,
                                           std::span<const chess::Move>(moves.begin(), moves.end()),
                                           probs, result_of(rng));
        if (!example.ok()) throw Error("bench train: synthetic example: " + example.error());
        out.push_back(std::move(example).value());
      }
      const chess::Move move = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
      pos.make_move(move);
      history.push_back(move);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// The worker: one rank.

void run_worker(const TrainBenchOptions& o) {
  train::DistributedConfig base;
  base.rendezvous_timeout = std::chrono::seconds(120);
  base.collective_timeout = std::chrono::seconds(300);
  train::DistributedConfig dist =
      train::distributed_from_env(base, train::process_env, train::local_hostname())
          .value_or_throw();
  // Rank 0 started on port 0 tells the parent the port its store bound; the
  // parent starts the other ranks on it.
  dist.on_listening = [](int port) {
    std::printf("{\"%s\":%d}\n", kListeningKey, port);
    std::fflush(stdout);
  };

  train::DatasetSource source(synthetic_examples(o.examples, kDataSeed), kDataSeed);

  train::TrainerOptions options;
  options.network = nn::parse_network_name(o.net).value_or_throw();
  options.device = o.device;
  options.mixed_precision = o.mixed_precision;
  options.batch_size = o.batch;
  options.steps = o.warmup + o.steps;
  options.threads = o.threads;
  options.checkpoint_dir.clear();
  options.log_every = 0;
  options.value_loss_weight = 1.0;
  // SGD on the result alone, as docs/benchmarks.md's figures were measured
  // (TrainerOptions' defaults are AdamW at 1e-3 with value_q_ratio 0.3).
  options.optimizer = train::OptimizerKind::kSgd;
  options.lr = 0.02;
  options.value_q_ratio = 0;

  std::vector<train::StepReport> reports;
  // Wall time from one step's report to the next: the step plus what the
  // trainer does between steps (agreeing to go on), which step_seconds omits.
  std::vector<double> intervals;
  std::optional<Clock::time_point> last_report;
  train::TrainerCallbacks callbacks;
  callbacks.log = [](const std::string&) {};
  callbacks.on_step = [&](const train::StepReport& r) {
    const auto now = Clock::now();
    intervals.push_back(last_report ? std::chrono::duration<double>(now - *last_report).count()
                                    : 0.0);
    last_report = now;
    reports.push_back(r);
    if (dist.rank == 0) {
      std::printf("{\"%s\":%lld}\n", kProgressKey, static_cast<long long>(r.step));
      std::fflush(stdout);
    }
  };
  std::atomic<bool> stop{false};
  auto summary = train::train(options, dist, source, callbacks, stop);
  if (!summary.ok())
    throw Error("bench train: rank " + std::to_string(dist.rank) + ": " + summary.error());

  std::vector<double> step_s, wall_s, rate, allreduce, wait;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const train::StepReport& r = reports[i];
    if (r.step <= o.warmup || r.step_seconds <= 0) continue;
    step_s.push_back(r.step_seconds);
    if (i > 0) wall_s.push_back(intervals[i]);
    rate.push_back(o.batch / r.step_seconds);
    allreduce.push_back(r.allreduce_seconds / r.step_seconds);
    wait.push_back(r.data_wait_seconds / r.step_seconds);
  }
  if (step_s.empty()) throw Error("bench train: no timed steps were reported");
  nlohmann::json line;
  line[kResultKey] = 1;
  line["rank"] = dist.rank;
  line["world"] = dist.world_size;
  line["steps"] = step_s.size();
  line["step_seconds"] = median(step_s);
  line["wall_step_seconds"] = wall_s.empty() ? median(step_s) : median(wall_s);
  line["samples_per_second"] = median(rate);
  line["allreduce_share"] = median(allreduce);
  line["data_wait_share"] = median(wait);
  line["weights_hash"] = summary->weights_hash;
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// The parent: starts the workers and the yardstick, prints the table.

std::string self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("bench train: cannot resolve /proc/self/exe: " + ec.message());
  return path.string();
}

struct RankResult {
  double step_seconds = 0;
  double wall_step_seconds = 0;
  double samples_per_second = 0;
  double allreduce_share = 0;
  double data_wait_share = 0;
  std::uint64_t weights_hash = 0;
};

struct WorldResult {
  double samples_per_second = 0;  // per rank: the median over ranks
  double step_seconds = 0;
  double wall_step_seconds = 0;
  double allreduce_share = 0;
  double data_wait_share = 0;
  bool hashes_equal = true;
};

// One row of the table: `processes` workers at once, joined as one world of
// that size, or (independent) each a world of one: the same load on the
// machine without the communication.
struct Layout {
  int processes = 1;
  bool independent = false;
};

WorldResult run_world(const TrainBenchOptions& o, Layout layout, int run, ProgressLine& progress) {
  const int gpus = std::max(1, nn::torch_info().cuda_devices);
  const int world = layout.processes;
  const char* what = layout.independent ? "independent 1-rank process(es)" : "rank(s)";
  const std::string exe = self_executable();
  // Rank 0 rendezvous on a port the kernel picks (MASTER_PORT=0) and says which;
  // the other ranks start once it has. Worlds of one never rendezvous.
  int shared_port = 0;
  std::vector<Subprocess> workers;
  for (int rank = 0; rank < world; ++rank) {
    const int port = layout.independent ? 0 : shared_port;
    std::vector<std::string> argv = env_prefix(o.threads);
    argv.push_back("RANK=" + std::to_string(layout.independent ? 0 : rank));
    argv.push_back("WORLD_SIZE=" + std::to_string(layout.independent ? 1 : world));
    argv.push_back("MASTER_ADDR=127.0.0.1");
    argv.push_back("MASTER_PORT=" + std::to_string(port));
    // The GPU of each process (the trainer reads LOCAL_RANK): one each while
    // there are enough, else shared (NCCL then refuses two ranks on one GPU).
    if (o.device == "cuda") argv.push_back("LOCAL_RANK=" + std::to_string(rank % gpus));
    argv.insert(argv.end(), {exe, "bench", "train", "--worker", "--net", o.net});
    argv.insert(argv.end(),
                {"--batch", std::to_string(o.batch), "--steps", std::to_string(o.steps)});
    argv.insert(argv.end(),
                {"--warmup", std::to_string(o.warmup), "--examples", std::to_string(o.examples)});
    argv.insert(argv.end(), {"--threads-per-rank", std::to_string(o.threads)});
    argv.insert(argv.end(), {"--device", o.device});
    if (o.mixed_precision) argv.push_back("--mixed-precision");
    auto child = Subprocess::start(argv);
    if (!child.ok()) throw Error("bench train: cannot start a worker: " + child.error());
    workers.push_back(std::move(child).value());
    if (rank == 0 && !layout.independent && world > 1) {
      while (auto line = workers.front().read_line(std::chrono::minutes(2))) {
        auto j = parse_json(*line);
        if (j && j->contains(kListeningKey)) {
          shared_port = (*j)[kListeningKey].get<int>();
          break;
        }
      }
      if (shared_port <= 0) {
        throw Error("bench train: rank 0 did not say its rendezvous port within 2 minutes "
                    "(see its messages above)");
      }
    }
  }
  const int total_steps = o.warmup + o.steps;
  std::vector<RankResult> results;
  for (int rank = 0; rank < world; ++rank) {
    std::optional<RankResult> result;
    progress.show("run %d/%d, %d %s: starting", run + 1, o.repeat, world, what);
    // A step takes seconds at most on CPU; minutes mean a rank is stuck.
    while (auto line =
               workers[static_cast<std::size_t>(rank)].read_line(std::chrono::minutes(10))) {
      auto j = parse_json(*line);
      if (!j) continue;
      if (j->contains(kProgressKey)) {
        const long long step = (*j)[kProgressKey].get<long long>();
        progress.show("run %d/%d, %d %s: step %lld/%d%s", run + 1, o.repeat, world, what, step,
                      total_steps, step <= o.warmup ? " (warm-up)" : "");
      } else if (j->contains(kResultKey)) {
        RankResult r;
        r.step_seconds = (*j)["step_seconds"].get<double>();
        r.wall_step_seconds = (*j)["wall_step_seconds"].get<double>();
        r.samples_per_second = (*j)["samples_per_second"].get<double>();
        r.allreduce_share = (*j)["allreduce_share"].get<double>();
        r.data_wait_share = (*j)["data_wait_share"].get<double>();
        r.weights_hash = (*j)["weights_hash"].get<std::uint64_t>();
        result = r;
        break;
      }
    }
    if (!result) {
      progress.clear();
      throw Error("bench train: rank " + std::to_string(rank) + " of " + std::to_string(world) +
                  " gave no result (see its messages above)");
    }
    results.push_back(*result);
  }
  workers.clear();  // reaps them

  WorldResult out;
  std::vector<double> rate, step, wall, allreduce, wait;
  for (const RankResult& r : results) {
    rate.push_back(r.samples_per_second);
    step.push_back(r.step_seconds);
    wall.push_back(r.wall_step_seconds);
    allreduce.push_back(r.allreduce_share);
    wait.push_back(r.data_wait_share);
    out.hashes_equal = out.hashes_equal && r.weights_hash == results.front().weights_hash;
  }
  out.samples_per_second = median(rate);
  out.step_seconds = median(step);
  out.wall_step_seconds = median(wall);
  out.allreduce_share = median(allreduce);
  out.data_wait_share = median(wait);
  return out;
}

std::int64_t cpp_parameter_count(const nn::NetworkConfig& config) {
  nn::Network network = nn::make_network(config, 1);
  std::int64_t count = 0;
  for (const auto& p : network->parameters()) count += p.numel();
  return count;
}

// What bench train measures and how, above its table.
void print_preamble(const TrainBenchOptions& o, const nn::NetworkConfig& config,
                    std::int64_t parameters, const std::vector<int>& worlds, bool have_one,
                    unsigned cores) {
  std::printf(
      "chessrl bench train: %s (%lld parameters), batch %d per rank (weak scaling), %d "
      "LibTorch + BLAS thread(s) per rank, %d timed steps after %d warm-up, median of %d "
      "run(s)\n",
      config.name().c_str(), static_cast<long long>(parameters), o.batch, o.threads, o.steps,
      o.warmup, o.repeat);
  std::printf(
      "data: %d synthetic examples from random legal games (fixed seed); ranks are "
      "processes joined by %s over loopback; SGD (Nesterov 0.9, wd 1e-4, lr 0.02)\n",
      o.examples, o.device == "cuda" ? "NCCL" : "Gloo");
  if (o.device == "cuda")
    std::printf("device: cuda (%d GPU(s) visible; rank r on GPU r modulo that), %s\n",
                nn::torch_info().cuda_devices,
                o.mixed_precision ? "bf16 autocast and TF32 (--mixed-precision)" : "fp32");
  std::printf(
      "this machine has %u core(s): R ranks x %d thread(s) use R x %d of them, so per-rank "
      "resources are constant and efficiency = per-rank samples/s at R / at 1 rank%s\n",
      cores, o.threads, o.threads, have_one ? "" : " (not measured: --ranks lacks 1)");
  std::printf(
      "step ms: the trainer's step time (data wait, forward, backward, all-reduce wait, "
      "optimizer); wall ms/step: from one step's report to the next (adds the per-step "
      "agreement between ranks); all-reduce and data wait: shares of step ms\n");
  for (int w : worlds)
    if (static_cast<unsigned>(w * o.threads) > cores)
      std::printf(
          "note: %d rank(s) x %d thread(s) oversubscribe the %u core(s); efficiency "
          "there measures contention, not scaling\n",
          w, o.threads, cores);
  std::printf("\n");
  std::fflush(stdout);
}

void run_train_bench(const TrainBenchOptions& o) {
  const nn::NetworkConfig config = nn::parse_network_name(o.net).value_or_throw();
  std::vector<int> worlds = o.ranks;
  std::sort(worlds.begin(), worlds.end());
  worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
  const bool have_one = worlds.front() == 1;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  std::string why_not;
  const std::optional<Yardstick> yardstick = find_yardstick(o.python, o.python_script, why_not);
  const std::int64_t parameters = cpp_parameter_count(config);
  // --json: the tables' figures (shares as fractions, times in ms).
  nlohmann::json doc = {{"bench", "train"},
                        {"net", config.name()},
                        {"parameters", parameters},
                        {"batch", o.batch},
                        {"threads_per_rank", o.threads},
                        {"steps", o.steps},
                        {"warmup", o.warmup},
                        {"repeat", o.repeat},
                        {"examples", o.examples},
                        {"device", o.device},
                        {"mixed_precision", o.mixed_precision},
                        {"cores", cores},
                        {"rows", nlohmann::json::array()}};
  if (!o.json) print_preamble(o, config, parameters, worlds, have_one, cores);

  std::vector<Layout> layouts;
  for (int w : worlds) {
    layouts.push_back({w, false});
    if (o.independent && w > 1) layouts.push_back({w, true});
  }
  ProgressLine progress;
  std::vector<std::vector<WorldResult>> by_layout(layouts.size());
  std::vector<std::vector<double>> efficiency(layouts.size());
  std::vector<double> py_rate, py_step, ratio;
  std::int64_t py_parameters = 0;
  bool hashes_equal = true;
  for (int run = 0; run < o.repeat; ++run) {
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      by_layout[i].push_back(run_world(o, layouts[i], run, progress));
      if (!layouts[i].independent) hashes_equal = hashes_equal && by_layout[i].back().hashes_equal;
      if (have_one)
        efficiency[i].push_back(by_layout[i].back().samples_per_second /
                                by_layout[0].back().samples_per_second);
    }
    if (yardstick) {
      progress.show("run %d/%d: Python yardstick", run + 1, o.repeat);
      const YardstickResult y = run_yardstick(
          *yardstick, {o.net, o.batch, o.steps, o.warmup, o.threads, o.device, o.mixed_precision},
          parameters);
      py_rate.push_back(y.samples_per_second);
      py_step.push_back(y.step_seconds);
      py_parameters = y.parameters;
      if (have_one) ratio.push_back(by_layout[0].back().samples_per_second / y.samples_per_second);
    }
  }
  progress.clear();

  auto med = [](const std::vector<WorldResult>& v, double WorldResult::*field) {
    std::vector<double> x;
    for (const WorldResult& r : v) x.push_back(r.*field);
    return median(x);
  };
  if (o.json) {
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      const double rate = med(by_layout[i], &WorldResult::samples_per_second);
      doc["rows"].push_back(
          {{"ranks", layouts[i].processes},
           {"independent", layouts[i].independent},
           {"samples_per_second_per_rank", rate},
           {"samples_per_second", rate * layouts[i].processes},
           {"step_ms", 1000 * med(by_layout[i], &WorldResult::step_seconds)},
           {"wall_ms_per_step", 1000 * med(by_layout[i], &WorldResult::wall_step_seconds)},
           {"allreduce_share", med(by_layout[i], &WorldResult::allreduce_share)},
           {"data_wait_share", med(by_layout[i], &WorldResult::data_wait_share)},
           {"efficiency", have_one ? nlohmann::json(median(efficiency[i])) : nlohmann::json()}});
    }
    doc["hashes_equal"] = hashes_equal;
    if (yardstick) {
      const double py = median(py_rate);
      doc["yardstick"] = {
          {"torch_version", yardstick->torch_version},
          {"samples_per_second", py},
          {"step_ms", 1000 * median(py_step)},
          {"parameters", py_parameters},
          {"same_network", parameters == py_parameters},
          {"cpp_over_python",
           have_one ? nlohmann::json(med(by_layout[0], &WorldResult::samples_per_second) / py)
                    : nlohmann::json()}};
    } else {
      doc["yardstick_skipped"] = why_not;
    }
    print_json_document(doc.dump(2));
    return;
  }
  std::printf(
      "| ranks | threads/rank | samples/s per rank | samples/s all ranks | step ms | "
      "wall ms/step | all-reduce | data wait | weak-scaling efficiency |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const Layout& l = layouts[i];
    const double rate = med(by_layout[i], &WorldResult::samples_per_second);
    char eff[32] = "-";
    if (have_one) std::snprintf(eff, sizeof eff, "%.2f", median(efficiency[i]));
    char name[48];
    std::snprintf(name, sizeof name, l.independent ? "%d x 1, unconnected" : "%d", l.processes);
    std::printf("| %s | %d | %.0f | %.0f | %.1f | %.1f | %.1f%% | %.1f%% | %s |\n", name, o.threads,
                rate, rate * l.processes, 1000 * med(by_layout[i], &WorldResult::step_seconds),
                1000 * med(by_layout[i], &WorldResult::wall_step_seconds),
                100 * med(by_layout[i], &WorldResult::allreduce_share),
                100 * med(by_layout[i], &WorldResult::data_wait_share), eff);
  }
  if (o.independent && layouts.size() > worlds.size())
    std::printf(
        "\n\"R x 1, unconnected\": R worlds of one rank at once (no all-reduce): the "
        "cost of sharing the machine alone; efficiency: the median over runs of the "
        "ratio to 1 rank in the same run\n");
  if (!hashes_equal)
    std::printf("\nwarning: the ranks of a run ended with different weights (hash mismatch)\n");

  if (yardstick) {
    const double py = median(py_rate);
    std::printf("\n| trainer | threads | samples/s | step ms | parameters |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: |\n");
    if (have_one)
      std::printf("| chessrl (C++, LibTorch), 1 rank | %d | %.0f | %.1f | %lld |\n", o.threads,
                  med(by_layout[0], &WorldResult::samples_per_second),
                  1000 * med(by_layout[0], &WorldResult::step_seconds),
                  static_cast<long long>(parameters));
    std::printf("| PyTorch %s (Python), train_yardstick.py | %d | %.0f | %.1f | %lld |\n",
                yardstick->torch_version.c_str(), o.threads, py, 1000 * median(py_step),
                static_cast<long long>(py_parameters));
    std::printf("\nparameters: C++ %lld, Python %lld: %s. ", static_cast<long long>(parameters),
                static_cast<long long>(py_parameters),
                parameters == py_parameters ? "the same network" : "MISMATCH");
    if (have_one)
      std::printf(
          "C++ / Python samples/s = %.2f (the medians above; the median of the per-run "
          "ratios is %.2f)\n",
          med(by_layout[0], &WorldResult::samples_per_second) / py, median(ratio));
    else
      std::printf("(no 1-rank C++ figure to compare: --ranks lacks 1)\n");
    std::printf(
        "the yardstick trains on pre-made random tensors (no data pipeline), with the same "
        "batch, losses and optimizer\n");
  } else {
    std::printf("\nPython yardstick skipped: %s\n", why_not.c_str());
  }
}

}  // namespace

void add_bench_train_command(CLI::App& bench) {
  auto o = std::make_shared<TrainBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "train",
      "Training throughput with 1, 2, ... data-parallel ranks (weak scaling), beside "
      "the same network trained by PyTorch from Python");
  cmd->add_option("--ranks", o->ranks, "World sizes to run, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--net", o->net, "Network as BLOCKSxFILTERS[-seR]")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Examples per rank per step")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps before them")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Runs of every world size (the table shows medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--threads-per-rank", o->threads, "LibTorch and BLAS threads per rank")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--device", o->device,
                  "cpu or cuda (each rank on its own GPU while there are enough)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_flag("--mixed-precision", o->mixed_precision,
                "With --device cuda: bf16 autocast and TF32, in the trainer and the yardstick");
  cmd->add_option("--python", o->python,
                  "The PyTorch yardstick: auto (python3, then /usr/bin/python3), off, or an "
                  "interpreter")
      ->capture_default_str();
  cmd->add_option("--python-script", o->python_script,
                  "The yardstick script (default: tools/chessrl/bench/train_yardstick.py of the source "
                  "tree)");
  cmd->add_option("--examples", o->examples, "Size of the synthetic data set")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cmd->add_flag("--independent,!--no-independent", o->independent,
                "For each R > 1, also run R unconnected 1-rank processes at once (the machine's "
                "contention without communication)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the tables' figures instead of the tables");
  cmd->add_flag("--worker", o->worker, "Run as one rank (internal)")->group("");
  cmd->callback([o] {
    if (o->mixed_precision && o->device != "cuda")
      throw Error("bench train: --mixed-precision needs --device cuda");
    if (o->worker) {
      run_worker(*o);
    } else {
      run_train_bench(*o);
    }
  });
}

}  // namespace chessrl::tool
