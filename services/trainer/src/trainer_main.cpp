// chessrl-trainer's entry point (services/trainer/main.cpp calls it): the options, then the run.
#include "chessrl/trainer_service/main.h"

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "chessrl/runtime/registry.h"
#include "chessrl/config/config.h"
#include "chessrl/core/error.h"
#include "chessrl/core/progress.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/gpu_sampler.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/client_options.h"
#include "chessrl/runtime/options.h"
#include "chessrl/runtime/service_process.h"
#include "chessrl/train/distributed.h"
#include "chessrl/train/example.h"
#include "chessrl/train/source.h"
#include "chessrl/train/trainer.h"
#include "replay_source.h"
#include "trainer_metrics.h"

namespace chessrl::trainer_service {

namespace {

namespace train = chessrl::train;

// The shared option groups (runtime/options.h, client_options.h), then the trainer's own.
struct Settings : chessrl::runtime::StatusListenOptions, chessrl::runtime::ClientOptions {
  Settings() {
    metrics_listen = "0.0.0.0:9100";
    rpc_deadline_s = 60;
  }
  std::string data;
  std::uint32_t max_sample = 16384;
  int sample_inflight = chessrl::trainer_service::kDefaultSampleInflight;
  std::string net = chessrl::nn::kDefaultNet;
  // TrainerOptions' own (the learning settings are its defaults).
  std::string optimizer{train::optimizer_name(train::TrainerOptions{}.optimizer)};
  std::string schedule{train::schedule_name(train::TrainerOptions{}.schedule)};
  int bucket_mb = 4;
  train::TrainerOptions options;
  train::DistributedConfig distributed;
  int publish_wait_s = 10;
  int rendezvous_timeout_s = 300;
  int collective_timeout_s = 600;
  int stall_timeout_s = 900;
  bool print_rendezvous = false;
};

void add_options(CLI::App& app, Settings& s) {
  train::TrainerOptions& o = s.options;
  o.checkpoint_dir = "checkpoints";
  // The learning settings (optimizer, learning rate, value target) are
  // TrainerOptions' defaults, measured in docs/learning.md. What the service
  // adds, the defaults of every launcher (chessrl local, the chart): a model
  // version every 200 steps and a checkpoint every 100, training from 4,000
  // stored positions and paused while samples trained exceed 4 per position
  // stored.
  o.publish_every = 200;
  o.checkpoint_every = 100;
  o.min_window = 4000;
  o.max_reuse = 4;
  o.log_every = 50;

  // Where data comes from, where models go.
  s.chessrl::runtime::ClientOptions::add_to(
      app, "model registry address (host:port); default: --replay, or none with --data");
  app.add_option("--data", s.data,
                 "train on a fixed data set instead of the replay service: a self-play records "
                 "file (JSON Lines) or a directory of *.jsonl files");
  app.add_option("--max-sample", s.max_sample,
                 "most positions per Sample call (the replay service's --max-sample must allow it)")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str();
  app.add_option("--sample-inflight", s.sample_inflight,
                 "Sample calls kept in flight, each decoded on a thread of its own, ahead of the "
                 "batches (1: one call at a time, decoded on the prefetch thread)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  s.chessrl::runtime::StatusListenOptions::add_to(app);

  // The network and the device.
  app.add_option("--net", s.net,
                 "network: BLOCKSxFILTERS, then any of -seR (squeeze-excitation), -gpN (global "
                 "pooling), -feat (chess feature planes), -reply (the opponent's reply head), "
                 "-mlh (the moves-left head): \"10x128-se4\", \"4x32-reply-mlh\" (docs/nn.md)")
      ->capture_default_str();
  app.add_option("--device", o.device, "cpu, cuda, cuda:N or auto (CUDA when present)")
      ->capture_default_str();
  app.add_option("--torch-threads,--threads", o.threads,
                 "LibTorch intra-op threads of the training steps (0: its default)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();

  // Batches and steps.
  app.add_option("--batch-size", o.batch_size, "examples per rank per optimizer step")
      ->capture_default_str();
  app.add_option("--accumulate", o.accumulate,
                 "micro-batches per step (the batch size must be divisible by it)")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "stop after this many steps (0: until stopped)")
      ->capture_default_str();

  // The optimizer and its schedule.
  app.add_option("--optimizer", s.optimizer, "sgd (Nesterov momentum) or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay,
                 "SGD: L2 added to the gradient; AdamW: decoupled weight decay")
      ->capture_default_str();
  app.add_option("--schedule", s.schedule, "learning-rate schedule: constant, cosine or step")
      ->check(CLI::IsMember({"constant", "cosine", "step"}))
      ->capture_default_str();
  app.add_option("--warmup-steps", o.warmup_steps, "linear warm-up from 0 over these steps")
      ->capture_default_str();
  app.add_option("--schedule-steps", o.schedule_steps, "cosine: steps to decay over (0: --steps)")
      ->capture_default_str();
  app.add_option("--lr-min-factor", o.lr_min_factor, "cosine: the final lr is lr * this")
      ->capture_default_str();
  app.add_option("--decay-every", o.decay_every, "step: multiply the lr by --decay-factor every N steps")
      ->capture_default_str();
  app.add_option("--decay-factor", o.decay_factor, "step: the factor")->capture_default_str();

  // Losses and numerics.
  app.add_option("--value-loss-weight", o.value_loss_weight, "total loss = policy + weight * value")
      ->capture_default_str();
  app.add_option("--material-loss-weight", o.material_loss_weight,
                 "... + weight * the material head's loss (its target: the side to move's "
                 "material lead a few plies later; 0: not trained)")
      ->capture_default_str();
  app.add_option("--reply-loss-weight", o.reply_loss_weight,
                 "... + weight * the reply head's loss (a --net with -reply: cross-entropy "
                 "against the move the opponent played next; 0: not trained)")
      ->capture_default_str();
  app.add_option("--moves-left-loss-weight", o.moves_left_loss_weight,
                 "... + weight * the moves-left head's loss (a --net with -mlh: Huber on the "
                 "plies left in the game / 20; 0: not trained)")
      ->capture_default_str();
  app.add_option("--value-q-ratio", o.value_q_ratio,
                 "value target: this share of the search's root win/draw/loss, the rest the "
                 "game's result")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--policy-legal-only", o.policy_legal_only,
                 "policy loss over the legal moves only (true/false)")
      ->capture_default_str();
  app.add_option("--clip-norm", o.clip_norm, "clip gradients to this global norm (0: off)")
      ->capture_default_str();
  app.add_option("--mixed-precision", o.mixed_precision,
                 "CUDA only: bf16 autocast and TF32 (true/false)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initial weights and of --data's sampling")
      ->capture_default_str();

  // Checkpoints and publishing.
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "checkpoints go here, and training resumes from the latest one (\"\": none)")
      ->capture_default_str();
  app.add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints")
      ->capture_default_str();
  app.add_option("--keep-checkpoints", o.keep_checkpoints, "checkpoints kept (older ones deleted)")
      ->capture_default_str();
  app.add_option("--init-checkpoint", o.init_checkpoint,
                 "start from these weights when --checkpoint-dir holds no checkpoint");
  app.add_option("--publish-every", o.publish_every,
                 "rank 0 publishes a model version every N steps (0: not by steps)")
      ->capture_default_str();
  app.add_option("--publish-every-seconds", o.publish_every_seconds,
                 "rank 0 also publishes once this many seconds have passed since its last "
                 "version, between the step multiples (0: only by steps); with --publish-every 0, "
                 "by time alone: a version every N seconds however fast or slow the steps")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--publish-wait", s.publish_wait_s,
                 "at the end, seconds the last model queued for publishing may take to go out "
                 "(publishing runs in the background and never holds a step)")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();

  // Gates.
  app.add_option("--min-window", o.min_window,
                 "positions the replay window must hold before training starts")
      ->capture_default_str();
  app.add_option("--max-reuse", o.max_reuse,
                 "pause while samples trained / positions stored exceeds this (0: no cap)")
      ->capture_default_str();

  // The pipeline and the all-reduce.
  app.add_option("--prefetch-batches", o.prefetch_batches, "ready batches queued per rank")
      ->capture_default_str();
  app.add_option("--bucket-mb", s.bucket_mb, "gradient all-reduce bucket size (MiB)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--overlap", o.overlap, "all-reduce buckets while backward runs (true/false)")
      ->capture_default_str();
  app.add_option("--hash-every", o.hash_every,
                 "check that every rank holds the same weights every N steps (0: off)")
      ->capture_default_str();
  app.add_option("--log-every", o.log_every, "a progress line every N steps (0: never)")
      ->capture_default_str();

  // Rendezvous defaults (MASTER_ADDR, MASTER_PORT, then PET_MASTER_ADDR,
  // PET_MASTER_PORT override; train::distributed_from_env).
  app.add_option("--master-addr", s.distributed.master_addr,
                 "rendezvous host when neither MASTER_ADDR nor PET_MASTER_ADDR is set")
      ->capture_default_str();
  app.add_option("--master-port", s.distributed.master_port,
                 "rendezvous port when neither MASTER_PORT nor PET_MASTER_PORT is set; 0 (rank "
                 "0 only): a port the kernel picks, logged as 'rendezvous: listening on port N'")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--rendezvous-timeout", s.rendezvous_timeout_s,
                 "seconds to wait for every rank to join")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--collective-timeout", s.collective_timeout_s,
                 "seconds one collective may block (a dead peer) before the rank fails")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--stall-timeout", s.stall_timeout_s,
                 "seconds without progress (a step, a data fetch returning, a look at the paused "
                 "data gates) after which /healthz answers 503 and a liveness probe restarts the "
                 "rank; longer than --collective-timeout")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--print-rendezvous", s.print_rendezvous,
               "print the rank, world size, rendezvous address and local rank that the "
               "environment and these options give (JSON, one line) and exit");
}

// Fills in what the options name as text; the message names the option.
chessrl::Result<void> resolve(Settings& s) {
  if (auto loaded = s.load_security(); !loaded.ok()) return loaded;
  auto net = chessrl::nn::parse_network_name(s.net);
  if (!net.ok()) return chessrl::fail("--net " + s.net + ": " + net.error());
  s.options.network = *net;
  auto optimizer = train::parse_optimizer(s.optimizer);
  if (!optimizer.ok()) return chessrl::fail("--optimizer: " + optimizer.error());
  s.options.optimizer = *optimizer;
  auto schedule = train::parse_schedule(s.schedule);
  if (!schedule.ok()) return chessrl::fail("--schedule: " + schedule.error());
  s.options.schedule = *schedule;
  if (s.options.schedule == train::ScheduleKind::kCosine && s.options.steps == 0 &&
      s.options.schedule_steps == 0)
    return chessrl::fail("--schedule cosine needs a length to decay over, and --steps is 0 (train "
                         "until stopped) and --schedule-steps is 0: set --schedule-steps");
  s.options.publish_flush_ms = std::int64_t(s.publish_wait_s) * 1000;
  s.options.bucket_bytes = static_cast<std::size_t>(s.bucket_mb) << 20;
  // A collective that times out is the trainer's to handle (rank 0 checkpoints,
  // all restart); a liveness restart first would lose that.
  if (s.stall_timeout_s <= s.collective_timeout_s)
    return chessrl::fail("--stall-timeout " + std::to_string(s.stall_timeout_s) +
                         " must be longer than --collective-timeout " +
                         std::to_string(s.collective_timeout_s) +
                         ": a collective that times out is the trainer's own to report");
  s.options.stall_timeout_ms = std::int64_t(s.stall_timeout_s) * 1000;
  if (auto valid = s.options.validate(); !valid.ok()) return valid;
  s.distributed.rendezvous_timeout = std::chrono::seconds(s.rendezvous_timeout_s);
  s.distributed.collective_timeout = std::chrono::seconds(s.collective_timeout_s);
  return {};
}

// process.signals(): SIGTERM / SIGINT; train() stops at the next step.
int run(Settings& s, train::DistributedConfig dist, chessrl::runtime::ServiceProcess& process) {
  const std::atomic<bool>& stop = process.signals().flag();
  const int rank = dist.rank;
  auto log = [rank](const std::string& line) {
    std::fprintf(stderr, "chessrl-trainer[%d]: %s\n", rank, line.c_str());
  };
  log("distributed: " + dist.origin);

  chessrl::metrics::Registry registry;
  chessrl::metrics::add_build_info(registry);
  chessrl::trainer_service::TrainerMetrics metrics(registry, rank, dist.world_size,
                                                   s.options.max_reuse, s.options.network);
  chessrl::metrics::GpuSampler gpus(registry);  // no NVML (no GPU): no series
  // /healthz: 503 once the rank stays in one thing past its bound (docs/training.md).
  chessrl::Progress progress(std::chrono::seconds(s.stall_timeout_s));
  std::unique_ptr<chessrl::metrics::Exposer> exposer;
  if (s.metrics_on()) {
    exposer = std::make_unique<chessrl::metrics::Exposer>(
        registry, s.metrics_listen, [&progress] { return progress.stalled(); }, s.probe_listen);
    log("metrics on port " + std::to_string(exposer->port()));
    if (exposer->probe_port() != 0) log("probes on port " + std::to_string(exposer->probe_port()));
  }
  // The ready file: now, or, on rank 0 of several, once its rendezvous store
  // listens (before it waits for the other ranks; again after a regroup). A
  // file that cannot be written there stops the rank (exit status 1).
  chessrl::runtime::ListeningPorts ports;
  if (exposer) {
    ports.emplace_back("metrics", exposer->port());
    if (exposer->probe_port() != 0) ports.emplace_back("probe", exposer->probe_port());
  }
  std::atomic<bool> ready_failed{false};
  if (rank == 0 && dist.world_size > 1) {
    dist.on_listening = [&process, &ready_failed, ports, log](int port) {
      chessrl::runtime::ListeningPorts with = ports;
      with.emplace_back("rendezvous", port);
      try {
        process.ready(with);
      } catch (const std::exception& e) {
        log(std::string(e.what()) + ": stopping");
        ready_failed = true;
        process.signals().request();
      }
    };
  } else {
    process.ready(ports);
  }

  chessrl::rpc::ClientOptions client_options;
  client_options.deadline = std::chrono::seconds(s.rpc_deadline_s);
  client_options.security = s.security;
  // One attempt per call everywhere (the default): the prefetcher retries a sample
  // with backoff, the data gate asks for stats again within a second, and the
  // publishing thread retries a publish (docs/architecture.md, "Who retries what").

  // The data.
  std::unique_ptr<train::ExampleSource> source;
  if (!s.data.empty()) {
    auto examples = train::load_examples(s.data);
    if (!examples.ok()) throw chessrl::Error("--data: " + examples.error());
    if (examples->empty()) throw chessrl::Error("--data " + s.data + ": no positions in it");
    log("training on " + std::to_string(examples->size()) + " positions from " + s.data);
    source = std::make_unique<train::DatasetSource>(std::move(examples).value(), s.options.seed);
  } else {
    client_options.address = s.replay;
    auto client = std::make_shared<chessrl::rpc::ReplayClient>(client_options);
    source = std::make_unique<chessrl::trainer_service::ReplaySource>(std::move(client), s.max_sample,
                                                                    s.sample_inflight);
    log("training on positions sampled from the replay service at " + s.replay + " (" +
        std::to_string(s.sample_inflight) + " Sample call(s) in flight)");
  }

  // Where models go (rank 0 only).
  std::shared_ptr<chessrl::rpc::ModelRegistryClient> models;
  std::string registry_address = s.registry;
  if (registry_address.empty() && s.data.empty()) registry_address = s.replay;
  if (rank == 0 && !registry_address.empty() &&
      (s.options.publish_every > 0 || s.options.publish_every_seconds > 0)) {
    client_options.address = registry_address;
    // train()'s publishing thread retries with backoff, a newer model first.
    models = std::make_shared<chessrl::rpc::ModelRegistryClient>(client_options);
    std::string cadence;
    if (s.options.publish_every > 0)
      cadence = std::to_string(s.options.publish_every) + " steps";
    if (s.options.publish_every_seconds > 0) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g s", s.options.publish_every_seconds);
      cadence += (cadence.empty() ? "" : " or ") + std::string(seconds) +
                 (cadence.empty() ? "" : ", whichever comes first");
    }
    log("publishing a model version every " + cadence + " to " + registry_address);
  }

  train::TrainerCallbacks callbacks;
  callbacks.log = log;
  callbacks.on_step = [&metrics](const train::StepReport& report) { metrics.on_step(report); };
  callbacks.on_progress = [&progress](const std::string& what, std::chrono::milliseconds within) {
    progress.beat(what, within);
  };
  // train() logs pauses, resumes and publishes itself.
  callbacks.on_pause = [&metrics](bool paused, const std::string&) { metrics.on_pause(paused); };
  if (models) {
    const std::string network = s.options.network.name();
    // Called on train()'s publishing thread; `checkpoint` holds the weights
    // only (no optimizer state: a smaller model for self-play and evaluation).
    // It owns what it uses: a call in flight at the end is abandoned.
    callbacks.publish = [models, network](const chessrl::nn::Checkpoint& checkpoint) {
      return chessrl::runtime::publish_model(*models, checkpoint, network, "chessrl-trainer");
    };
    callbacks.on_publish_outcome = [&metrics](std::optional<std::uint64_t> version) {
      if (version)
        metrics.on_publish(*version);
      else
        metrics.on_publish_failure();
    };
  }

  auto summary = train::train(s.options, dist, *source, callbacks, stop);
  if (ready_failed) return chessrl::runtime::kExitFailed;
  if (!summary.ok()) throw chessrl::Error(summary.error());
  const train::TrainSummary& r = *summary;
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(r.weights_hash));
  const nlohmann::json line = {
      {"rank", rank},
      {"world_size", dist.world_size},
      {"start_step", r.start_step},
      {"end_step", r.end_step},
      {"resumed", r.resumed},
      {"samples_total", r.samples_total},
      {"weights_hash", hash},
      {"checkpoint", r.last_checkpoint},
      {"seconds", r.seconds},
      {"published", r.published},
      {"publish_skipped", r.publish_skipped},
  };
  std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
  if (r.publish_abandoned) {
    // A registry call still in flight (it may block for --rpc-deadline): the
    // checkpoint is on disk, so exit now rather than wait for it.
    log("exiting with a publish call still in flight (the registry does not answer)");
    std::fflush(stderr);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace

int trainer_main(int argc, char** argv) {
  // gloo's TCP transport writes to its peers with writev(2), which raises
  // SIGPIPE once a peer has died; its default action would end this rank with
  // exit 141 before gloo reports the broken pair. Ignored, the write fails with
  // EPIPE and the collective fails as it does for any other peer loss (PyTorch
  // from Python gets the same because Python ignores SIGPIPE).
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts (see stop_signals.h): the trainer's, gRPC's and
  // the metrics server's threads inherit the blocked signals.
  chessrl::runtime::ServiceProcess process("chessrl-trainer");
  process.install_stop_signals("stopping after this step (a checkpoint is written)");
  CLI::App app{"chessrl-trainer: data-parallel training on self-play positions from the replay "
               "service (or a fixed --data set); rank 0 checkpoints and publishes model versions"};
  Settings settings;
  add_options(app, settings);
  process.add_options(app);
  chessrl::config::finish(app);
  if (auto status = process.parse(app, argc, argv)) return *status;

  if (auto resolved = resolve(settings); !resolved.ok()) {
    process.log(resolved.error());
    return chessrl::runtime::kExitBadOptions;
  }
  auto dist = train::distributed_from_env(settings.distributed, train::process_env,
                                          train::local_hostname());
  if (!dist.ok()) {
    process.log(dist.error());
    return chessrl::runtime::kExitBadOptions;
  }
  if (settings.print_rendezvous) {
    const nlohmann::json where = {
        {"rank", dist->rank},
        {"world_size", dist->world_size},
        {"master_addr", dist->master_addr},
        {"master_port", dist->master_port},
        {"local_rank", dist->local_rank},
        {"origin", dist->origin},
    };
    std::printf("%s\n",
                where.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  return process.run([&] { return run(settings, *dist, process); });
}

}  // namespace chessrl::trainer_service
