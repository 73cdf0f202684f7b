// chessrl bench nn: forward-pass throughput of an inference backend alone, and
// through BatchEvaluator with many concurrent callers, measured in one run: a
// table, or with --json one JSON document of the same figures (each row's
// window in Unix seconds, for readers that line it up with samples taken
// meanwhile: scripts/gpu-check-helper.py).
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/forward.h"
#include "bench/util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/rules.h"
#include "chessrl/core/error.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/torch_backend.h"
#include "commands.h"

namespace chessrl::tool {

// Positions along seeded random games, each with its history.
std::vector<chess::Position> bench_positions(int count) {
  std::mt19937 rng(2024);
  std::vector<chess::Position> out;
  while (int(out.size()) < count) {
    chess::Position pos;
    const int plies = std::uniform_int_distribution<int>(4, 120)(rng);
    for (int ply = 0; ply < plies && chess::game_result(pos).reason == chess::Termination::kNone;
         ++ply) {
      const chess::MoveList moves = chess::legal_moves(pos);
      pos.make_move(moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)]);
    }
    if (!chess::legal_moves(pos).empty()) out.push_back(pos);
  }
  return out;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

RawResult measure_raw_here(nn::InferenceBackend& backend,
                           const std::vector<nn::InputPlanes>& inputs, double seconds) {
  std::vector<float> logits(inputs.size() * nn::kPolicySize);
  std::vector<nn::Wdl> wdl(inputs.size());
  int passes = 0;
  const double cpu_start = thread_cpu_seconds();
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds || passes < 3) {
    backend.forward(inputs, logits, wdl);
    ++passes;
    elapsed = seconds_since(start);
  }
  return {double(passes) * double(inputs.size()) / elapsed, 1000.0 * elapsed / passes,
          1000.0 * (thread_cpu_seconds() - cpu_start) / passes};
}

// `streams` threads calling the backend at once, as many as BatchEvaluator has
// workers, so both sides of the comparison use the machine the same way. Each
// runs on a thread of its own, as the workers do (LibTorch's OpenMP state is
// per thread).
RawResult measure_raw(nn::InferenceBackend& backend, const std::vector<nn::InputPlanes>& inputs,
                      double seconds, int streams) {
  std::vector<RawResult> results(static_cast<size_t>(streams));
  std::vector<std::thread> threads;
  for (int i = 0; i < streams; ++i)
    threads.emplace_back(
        [&, i] { results[size_t(i)] = measure_raw_here(backend, inputs, seconds); });
  for (auto& t : threads) t.join();
  RawResult total{0, 0};
  for (const RawResult& r : results) {
    total.evals_per_second += r.evals_per_second;
    total.ms_per_batch += r.ms_per_batch / streams;
    total.cpu_ms_per_batch += r.cpu_ms_per_batch / streams;
  }
  return total;
}

namespace {

struct NnBenchOptions {
  std::vector<std::string> nets{"6x64"};
  int blocks = 0, filters = 0;
  std::vector<int> batches{1, 64, 256};
  std::string device = "cpu";
  std::string precision = "fp32";
  int threads = 0;
  int callers = 0;
  int workers = 0;
  double seconds = 2.0;
  int repeat = 5;
  std::string model;
  std::int64_t max_model_params = nn::kDefaultMaxModelParams;  // for --model only
  std::string backend = "torch";
  bool json = false;  // one JSON document on stdout instead of the table
};

struct EvaluatorResult {
  double evals_per_second;
  double mean_batch;
  double p50_latency_ms;
};

// Waits until the evaluator finishes a forward pass after `batches` of them;
// returns the time it noticed. Windows from completion to completion hold
// whole batches, so big, slow batches do not skew the rate.
Clock::time_point next_completion(const nn::BatchEvaluator& evaluator, std::uint64_t batches,
                                  nn::EvaluatorStats& stats) {
  while (true) {
    stats = evaluator.stats();
    if (stats.batches > batches) return Clock::now();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

EvaluatorResult measure_evaluator(std::shared_ptr<nn::InferenceBackend> backend,
                                  std::vector<chess::Position> positions, int batch, int callers,
                                  int workers, double seconds) {
  nn::BatchEvaluator evaluator(backend, {.max_batch = batch, .workers = workers});
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&, c] {
      // Each caller prepares (encodes) its position every time, as a search does.
      chess::Position pos = positions[size_t(c) % positions.size()];
      const chess::MoveList moves = chess::legal_moves(pos);
      nn::EvalRequest request;
      while (!stop.load(std::memory_order_relaxed)) {
        nn::prepare(request, pos, std::span<const chess::Move>(moves.begin(), moves.end()));
        evaluator.evaluate(request);
      }
    });
  // Warm up: a few batches before the window opens.
  nn::EvaluatorStats begin, end;
  auto t0 = next_completion(evaluator, 0, begin);
  t0 = next_completion(evaluator, begin.batches + 1, begin);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  end = evaluator.stats();
  const auto t1 = next_completion(evaluator, end.batches, end);
  stop = true;
  for (auto& t : threads) t.join();
  const nn::EvaluatorStats d = end - begin;
  return {double(d.evaluated) / std::chrono::duration<double>(t1 - t0).count(), d.mean_batch(),
          1000.0 * d.latency_quantile(0.5)};
}

// The caller-side cost per position: encoding with history (prepare() = encode
// plus the policy indices of the legal moves), and expanding to floats (the
// CPU backend's first step), without and with the chess feature planes a
// -feat network takes (encoding.h; computed from the 112 planes when expanded).
nlohmann::json encoding_cost(std::vector<chess::Position> positions, int repeat) {
  std::vector<double> prepare_ns, expand_ns, features_ns, expand_all_ns;
  nn::EvalRequest request;
  std::vector<float> planes(nn::kMaxInputPlanes * 64);
  std::vector<chess::MoveList> moves;
  std::vector<nn::InputPlanes> encoded;
  for (const auto& p : positions) {
    moves.push_back(chess::legal_moves(p));
    encoded.push_back(nn::encode_copy(p));
  }
  constexpr int kRounds = 20;
  const double per_round = double(kRounds * positions.size());
  std::uint64_t sink_bits = 0;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    for (int round = 0; round < kRounds; ++round)
      for (size_t i = 0; i < positions.size(); ++i)
        nn::prepare(request, positions[i],
                    std::span<const chess::Move>(moves[i].begin(), moves[i].end()));
    prepare_ns.push_back(1e9 * seconds_since(start) / per_round);
    start = Clock::now();
    for (int round = 0; round < kRounds; ++round)
      for (size_t i = 0; i < positions.size(); ++i) {
        request.input.values[0] = float(round);  // keeps the loop from being folded away
        nn::expand(request.input, planes.data());
      }
    expand_ns.push_back(1e9 * seconds_since(start) / per_round);
    start = Clock::now();
    for (int round = 0; round < kRounds; ++round)
      for (const nn::InputPlanes& in : encoded) sink_bits ^= nn::chess_features(in).masks[0];
    features_ns.push_back(1e9 * seconds_since(start) / per_round);
    start = Clock::now();
    for (int round = 0; round < kRounds; ++round)
      for (const nn::InputPlanes& in : encoded) {
        nn::expand(in, planes.data(), nn::kMaxInputPlanes);
        sink_bits ^= std::uint64_t(planes[size_t(nn::kMaterialDifferencePlane) * 64]);
      }
    expand_all_ns.push_back(1e9 * seconds_since(start) / per_round);
    volatile float sink = planes[nn::kOnesPlane * 64];
    (void)sink;
  }
  volatile std::uint64_t sink = sink_bits;
  (void)sink;
  return {{"prepare_ns", median(prepare_ns)},
          {"expand_ns", median(expand_ns)},
          {"chess_features_ns", median(features_ns)},
          {"expand_with_features_ns", median(expand_all_ns)},
          {"planes_with_features", nn::kMaxInputPlanes}};
}

void print_encoding_cost(const nlohmann::json& c) {
  std::printf(
      "per position, on the caller's thread: prepare (encode 8 plies of history + policy indices) "
      "%.0f ns, expand to floats %.0f ns; chess features (-feat) %.0f ns, expand with them (%d "
      "planes) %.0f ns\n",
      c["prepare_ns"].get<double>(), c["expand_ns"].get<double>(),
      c["chess_features_ns"].get<double>(), c["planes_with_features"].get<int>(),
      c["expand_with_features_ns"].get<double>());
}

nn::Checkpoint bench_checkpoint(const NnBenchOptions& o, const std::string& net) {
  if (!o.model.empty()) return nn::load_checkpoint_file(o.model).value_or_throw();
  nn::NetworkConfig config = nn::parse_network_name(net).value_or_throw();
  return nn::fresh_checkpoint(config, 1);
}

void run_nn_bench(NnBenchOptions o) {
  if (o.blocks > 0 || o.filters > 0) {
    if (o.blocks <= 0 || o.filters <= 0) throw Error("--blocks and --filters go together");
    o.nets = {std::to_string(o.blocks) + "x" + std::to_string(o.filters)};
  }
  if (!o.model.empty()) o.nets = {"model"};
  const bool fake = o.backend != "torch";
  if (fake) o.nets = {o.backend};
  nn::TorchBackendOptions backend_options;
  backend_options.device = o.device;
  backend_options.precision = nn::parse_precision(o.precision).value_or_throw();
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  const nn::CpuSplit split = nn::default_cpu_split();
  const int workers = o.workers > 0 ? o.workers : (cuda ? 2 : split.workers);
  backend_options.threads =
      o.threads > 0 ? o.threads : std::max(1, split.workers * split.threads / workers);
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  // Enough callers that every worker has a batch in flight and one more waits.
  auto callers_for = [&](int batch) {
    return o.callers > 0 ? o.callers : std::max(2, (workers + 1) * batch);
  };
  const int max_callers = callers_for(max_batch);
  const auto positions = bench_positions(std::max(max_batch, max_callers));

  ProgressLine progress;
  nlohmann::json doc = {{"bench", "nn"}, {"rows", nlohmann::json::array()}};
  bool header = false;
  int width = 10;  // the net column: the longest name
  for (const std::string& net : o.nets) width = std::max(width, int(net.size()));
  for (const std::string& net : o.nets) {
    std::string name = net;
    std::shared_ptr<nn::InferenceBackend> backend;
    if (fake) {
      backend = std::make_shared<nn::FakeBackend>(o.backend == "uniform"
                                                      ? nn::FakeBackend::Mode::kUniform
                                                      : nn::FakeBackend::Mode::kRandom);
    } else {
      const nn::Checkpoint checkpoint = bench_checkpoint(o, net);
      name = checkpoint.info.config.name();
      // Fresh --net networks are built already: the ceiling guards --model only.
      backend_options.limits.max_parameters = o.model.empty() ? 0 : o.max_model_params;
      backend = nn::make_torch_backend(checkpoint, backend_options).value_or_throw();
    }
    if (!header) {  // said once, with the first backend built
      const nn::TorchInfo info = nn::torch_info();
      doc["libtorch"] = info.version;
      doc["backend"] = backend->describe();
      doc["workers"] = workers;
      doc["cpu_threads"] = info.cpu_threads;
      doc["repeat"] = o.repeat;
      doc["seconds"] = o.seconds;
      header = true;
      if (!o.json) {
        std::printf(
            "bench nn: LibTorch %s, %s; %d forward stream(s) (raw) = %d BatchEvaluator "
            "worker(s), %d CPU thread(s) each; median of %d run(s) of %.1f s; efficiency = eval "
            "/ raw, per run\n",
            info.version.c_str(), backend->describe().c_str(), workers, workers, info.cpu_threads,
            o.repeat, o.seconds);
        std::printf("%-*s %5s %12s %10s %10s %8s %12s %10s %11s %10s\n", width, "net", "batch",
                    "raw evals/s", "ms/batch", "cpu ms", "callers", "eval evals/s", "mean batch",
                    "p50 lat ms", "efficiency");
      }
    }
    for (int batch : o.batches) {
      const int callers = callers_for(batch);
      std::vector<nn::InputPlanes> inputs;
      for (int i = 0; i < batch; ++i) inputs.push_back(nn::encode_copy(positions[size_t(i)]));
      const double started_at = unix_seconds();
      progress.show("%s batch %d: warming up", name.c_str(), batch);
      measure_raw(*backend, inputs, 0.3, workers);
      std::vector<double> raw, ms, cpu_ms, through, fill, latency, ratio;
      for (int r = 0; r < o.repeat; ++r) {
        progress.show("%s batch %d: run %d/%d, backend alone", name.c_str(), batch, r + 1,
                      o.repeat);
        const RawResult rr = measure_raw(*backend, inputs, o.seconds, workers);
        raw.push_back(rr.evals_per_second);
        ms.push_back(rr.ms_per_batch);
        cpu_ms.push_back(rr.cpu_ms_per_batch);
        progress.show("%s batch %d: run %d/%d, through BatchEvaluator with %d callers",
                      name.c_str(), batch, r + 1, o.repeat, callers);
        const EvaluatorResult er =
            measure_evaluator(backend, positions, batch, callers, workers, o.seconds);
        through.push_back(er.evals_per_second);
        ratio.push_back(er.evals_per_second / rr.evals_per_second);
        fill.push_back(er.mean_batch);
        latency.push_back(er.p50_latency_ms);
      }
      progress.clear();
      const double raw_rate = median(raw), eval_rate = median(through);
      doc["rows"].push_back({{"net", name},
                             {"batch", batch},
                             {"raw_evals_per_second", raw_rate},
                             {"ms_per_batch", median(ms)},
                             {"cpu_ms_per_batch", median(cpu_ms)},
                             {"callers", callers},
                             {"evals_per_second", eval_rate},
                             {"mean_batch", median(fill)},
                             {"p50_latency_ms", median(latency)},
                             {"efficiency", median(ratio)},
                             {"started_at", started_at},
                             {"ended_at", unix_seconds()}});
      if (o.json) continue;
      std::printf("%-*s %5d %12.0f %10.2f %10.2f %8d %12.0f %10.1f %11.2f %10.3f\n", width,
                  name.c_str(), batch, raw_rate, median(ms), median(cpu_ms), callers, eval_rate,
                  median(fill), median(latency), median(ratio));
      std::fflush(stdout);
    }
  }
  doc["encoding"] = encoding_cost(positions, o.repeat);
  if (o.json) {
    print_json_document(doc.dump(2));
  } else {
    print_encoding_cost(doc["encoding"]);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Benchmarks; each prints a table, or with --json one JSON document of the same "
      "figures instead (nn, selfplay, train, replay, sample, swap, selfplay-stop, capacity, "
      "load, fanout and abuse)");
  bench->require_subcommand(1);

  auto o = std::make_shared<NnBenchOptions>();
  CLI::App* nn_cmd = bench->add_subcommand(
      "nn", "Network throughput: the inference backend alone and through BatchEvaluator");
  nn_cmd
      ->add_option("--net", o->nets,
                   "Networks as BLOCKSxFILTERS[-seR][-gpN][-feat][-reply][-mlh], comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  nn_cmd->add_option("--blocks", o->blocks, "Residual blocks (with --filters; instead of --net)")
      ->check(CLI::Range(1, 64));
  nn_cmd->add_option("--filters", o->filters, "Filters per convolution (with --blocks)")
      ->check(CLI::Range(1, 1024));
  nn_cmd->add_option("--batch", o->batches, "Batch sizes, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  nn_cmd->add_option("--device", o->device, "cpu, cuda or cuda:N")->capture_default_str();
  nn_cmd->add_option("--precision", o->precision, "fp32, fp16 or bf16 (fp16/bf16 need CUDA)")
      ->capture_default_str();
  nn_cmd
      ->add_option("--nn-threads,--threads", o->threads,
                   "LibTorch CPU threads per forward pass (0: the cores over the workers)")
      ->check(CLI::Range(0, 1024));
  nn_cmd
      ->add_option(
          "--callers", o->callers,
          "Concurrent callers of BatchEvaluator, one position each (0: (workers + 1) x batch)")
      ->check(CLI::Range(0, 8192));
  nn_cmd
      ->add_option("--workers", o->workers,
                   "BatchEvaluator workers, and concurrent streams for the raw figure (0: up to 4 "
                   "on CPU, 2 on CUDA)")
      ->check(CLI::Range(0, 64));
  nn_cmd->add_option("--seconds", o->seconds, "Length of each timed run")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  nn_cmd->add_option("--repeat", o->repeat, "Timed runs per row (the median is shown)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  nn_cmd->add_option("--model", o->model, "Benchmark this checkpoint instead of fresh networks");
  nn_cmd
      ->add_option("--max-model-params", o->max_model_params,
                   "Refuse a --model whose architecture has more parameters than this, before "
                   "allocating it (0: no ceiling)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  nn_cmd
      ->add_option("--backend", o->backend,
                   "torch, or uniform/random: no network, to measure BatchEvaluator's own cost")
      ->check(CLI::IsMember({"torch", "uniform", "random"}))
      ->capture_default_str();
  nn_cmd->add_flag("--json", o->json,
                   "Print one JSON document with the table's figures (each row's window in Unix "
                   "seconds) instead of the table");
  nn_cmd->callback([o] { run_nn_bench(*o); });
  add_bench_selfplay_command(*bench);
#ifdef CHESSRL_HAVE_SERVICES
  add_bench_replay_command(*bench);
  add_bench_load_command(*bench);
  add_bench_abuse_command(*bench);
  add_bench_selfplay_stop_command(*bench);
  add_bench_swap_command(*bench);
  add_bench_sample_command(*bench);
  add_bench_capacity_command(*bench);
  add_bench_fanout_command(*bench);
#endif
}

}  // namespace chessrl::tool
