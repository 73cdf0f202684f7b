#include "chessrl/train/trainer.h"

#include <torch/torch.h>  // first: the headers below assume it

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "batch.h"
#include "chessrl/nn/torch_network.h"
#include "data_gate.h"
#include "grad_reducer.h"
#include "optimizer.h"
#include "prefetcher.h"
#include "process_group.h"
#include "publisher.h"
#include "step_tensors.h"
#include "trainer_state.h"

namespace chessrl::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

// One rank's run: the state train() threads through its phases.
class Run {
 public:
  Run(const TrainerOptions& o, const DistributedConfig& d, ExampleSource& source,
      const TrainerCallbacks& cb, const std::atomic<bool>& stop)
      : o_(o),
        d_(d),
        source_(source),
        cb_(cb),
        stop_(stop),
        gate_(o.min_window, o.max_reuse, o.batch_size * d.world_size,
              [this](const std::string& l) { log(l); }) {}

  // The run, then the group ended (leave_group): shut down after a run whose
  // collectives all completed, aborted after a failure.
  Result<TrainSummary> run() {
    auto result = run_steps();
    reducer_.reset();  // its hooks and buckets refer to the group
    if (group_) {
      leave_group(*group_, result.ok() && !group_broken_,
                  [this](const std::string& l) { log(l); });
      group_.reset();
      pg_ = nullptr;
    }
    return result;
  }

 private:
  Result<TrainSummary> run_steps();
  // Progress for /healthz: doing `what`, the next beat within the stall timeout
  // (or `within`).
  void beat(const std::string& what, std::chrono::milliseconds within = std::chrono::milliseconds(0)) const {
    if (cb_.on_progress)
      cb_.on_progress(what, within.count() > 0 ? within : std::chrono::milliseconds(o_.stall_timeout_ms));
  }
  void log(const std::string& line) const {
    if (cb_.log)
      cb_.log(line);
    else
      std::fprintf(stderr, "trainer[%d]: %s\n", d_.rank, line.c_str());
  }
  Result<void> setup_device();
  Result<std::string> initial_bytes();
  Result<void> load_initial();
  Result<void> agree(std::int64_t& allowed, bool& go);
  Result<StepReport> step(Batch& host_batch, double data_wait);
  Result<void> check_hash();
  Result<void> write_checkpoint();
  void publish();
  // The weights (and buffers) at the step reached; with the trainer's state
  // and the optimizer's for a checkpoint, without them for a published model.
  nn::Checkpoint snapshot(bool with_optimizer = true);

  const TrainerOptions& o_;
  const DistributedConfig& d_;
  ExampleSource& source_;
  const TrainerCallbacks& cb_;
  const std::atomic<bool>& stop_;
  DataGate gate_;
  PublishCadence cadence_{0, 0, Clock::time_point()};  // set when the steps start
  std::unique_ptr<BackgroundPublisher> publisher_;  // rank 0 with a publish callback

  torch::Device device_{torch::kCPU};
  bool cuda_ = false;
  std::optional<Group> group_;
  Collectives* pg_ = nullptr;  // group_->pg, or null with one rank
  bool group_broken_ = false;  // a collective failed: the group is aborted, not shut down
  nn::Network net_{nullptr};
  std::unique_ptr<torch::optim::Optimizer> opt_;
  std::unique_ptr<GradReducer> reducer_;
  std::int64_t step_ = 0;
  std::uint64_t samples_total_ = 0;
  TrainSummary summary_;
  std::int64_t last_checkpoint_step_ = -1;
};

Result<void> Run::setup_device() {
  if (o_.threads > 0) torch::set_num_threads(o_.threads);
  const bool have_cuda = torch::cuda::is_available();
  if (o_.device == "cuda" && !have_cuda)
    return fail("device cuda: no CUDA device is visible (or LibTorch was built without CUDA)");
  cuda_ = o_.device == "cuda" || (o_.device == "auto" && have_cuda);
  if (cuda_) {
    if (const int n = static_cast<int>(torch::cuda::device_count()); d_.local_rank >= n)
      return fail("LOCAL_RANK=" + std::to_string(d_.local_rank) + ": this process sees " +
                  std::to_string(n) + " CUDA device(s) (CUDA_VISIBLE_DEVICES narrows them)");
    device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(d_.local_rank));
    // TF32 for the fp32 matrix work autocast leaves ("high": what replaces LibTorch 2.x's
    // deprecated allow-TF32 setters; cuDNN's convolutions use TF32 by default).
    if (o_.mixed_precision) at::globalContext().setFloat32MatmulPrecision("high");
  }
  torch::manual_seed(o_.seed * 1000003ULL + std::uint64_t(d_.rank));
  return {};
}

// Rank 0's starting point, as checkpoint bytes: the latest checkpoint in the
// directory, else --init-checkpoint's weights, else fresh weights.
Result<std::string> Run::initial_bytes() {
  if (!o_.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.checkpoint_dir, ec);
    if (ec) return fail("cannot create checkpoint directory " + o_.checkpoint_dir + ": " + ec.message());
    for (const auto& stale : nn::remove_stale_temp_files(o_.checkpoint_dir))
      log("removed " + stale + ", left by a writer that died mid-write");
    auto point = find_resume_point(o_.checkpoint_dir, d_.world_size,
                                   [this](const std::string& l) { log(l); });
    if (!point) return fail(point.error());
    if (*point) {
      summary_.resumed = true;
      log("resuming from " + (*point)->path);
      return std::move((*point)->bytes);
    }
  }
  if (!o_.init_checkpoint.empty()) {
    auto ckpt = nn::load_checkpoint_file(o_.init_checkpoint);
    if (!ckpt) return fail("init checkpoint: " + ckpt.error());
    ckpt->optimizer_state.clear();  // weights only: a new run
    ckpt->info.step = 0;
    log("starting from the weights of " + o_.init_checkpoint);
    return nn::serialize_checkpoint(*ckpt);
  }
  nn::Network fresh = nn::make_network(o_.network, o_.seed);
  nn::ModelInfo info;
  info.created_ms = nn::unix_millis_now();
  info.description = "initial weights, seed " + std::to_string(o_.seed);
  if (!o_.checkpoint_dir.empty()) log("no checkpoint in " + o_.checkpoint_dir + ": starting at step 0");
  return nn::serialize_checkpoint(nn::to_checkpoint(fresh, info));
}

// Every rank starts from rank 0's bytes (ranks need not share a disk).
Result<void> Run::load_initial() {
  std::string bytes;
  std::string error;
  if (d_.rank == 0) {
    auto b = initial_bytes();
    if (b)
      bytes = std::move(*b);
    else
      error = b.error();
  }
  if (pg_) {
    auto header = torch::tensor({std::int64_t(error.empty() ? std::int64_t(bytes.size()) : -1),
                                 std::int64_t(summary_.resumed)},
                                torch::kInt64);
    if (auto r = broadcast(*group_, header, 0, "broadcast of the initial state"); !r) return r;
    const std::int64_t n = header[0].item<std::int64_t>();
    summary_.resumed = header[1].item<std::int64_t>() != 0;
    if (n < 0) return fail(d_.rank == 0 ? error : "rank 0 could not load the initial state");
    auto data = torch::empty({n}, torch::kUInt8);
    if (d_.rank == 0) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
    if (auto r = broadcast(*group_, data, 0, "broadcast of the initial weights"); !r) return r;
    if (d_.rank != 0) bytes.assign(static_cast<const char*>(data.data_ptr()), std::size_t(n));
  } else if (!error.empty()) {
    return fail(error);
  }
  auto ckpt = nn::parse_checkpoint(bytes);
  if (!ckpt) return fail("initial state: " + ckpt.error());
  net_ = nn::make_network(o_.network, o_.seed);
  if (auto r = nn::load_weights(net_, *ckpt); !r)
    return fail((summary_.resumed ? "the latest checkpoint in " + o_.checkpoint_dir
                                  : std::string("the initial weights")) +
                " do not fit --net " + o_.network.name() + ": " + r.error());
  net_->to(device_);
  net_->train();
  opt_ = make_optimizer(o_, net_->parameters());
  if (summary_.resumed) {
    auto state = decode_state(ckpt->optimizer_state);
    if (!state) return fail(state.error());
    if (state->state.optimizer != optimizer_name(o_.optimizer))
      return fail("the latest checkpoint was trained with " + state->state.optimizer +
                  ", not " + optimizer_name(o_.optimizer) +
                  ": use the same optimizer or a new checkpoint directory");
    if (auto r = load_optimizer(*opt_, state->archive, device_); !r) return r;
    step_ = state->state.step;
    samples_total_ = state->state.samples_total;
    last_checkpoint_step_ = step_;
  }
  return {};
}

// All ranks agree whether to go on (nobody was told to stop) and how many
// steps the data gates allow (the minimum over ranks).
Result<void> Run::agree(std::int64_t& allowed, bool& go) {
  go = !stop_.load();
  // Stopping: no question to the data source (it may be gone and slow to say so).
  allowed = go ? gate_.allowance(source_, step_, samples_total_, false).first : 0;
  if (pg_) {
    auto t = torch::tensor({allowed, std::int64_t(go)}, torch::kInt64);
    if (auto r = allreduce(*group_, t, c10d::ReduceOp::MIN, "step agreement"); !r) return r;
    allowed = t[0].item<std::int64_t>();
    go = t[1].item<std::int64_t>() != 0;
  }
  return {};
}

Result<StepReport> Run::step(Batch& host_batch, double data_wait) {
  const auto start = Clock::now();
  const double lr = learning_rate(o_, step_);
  for (auto& group : opt_->param_groups()) group.options().set_lr(lr);
  opt_->zero_grad();
  Batch batch = cuda_ ? host_batch.to(device_, true) : host_batch;
  const std::int64_t micro = batch.size() / o_.accumulate;
  // Policy, value, material, reply, moves left: summed over micro-batches.
  torch::Tensor loss_sums = torch::zeros({5}, torch::TensorOptions().device(device_));
  // With peers, a collective may fail before the optimizer step: the forward
  // passes' batch-norm statistics are then undone, so the state stays that of
  // the last step done (what rank 0 checkpoints after a peer's failure).
  BufferRestore restore(pg_ ? float_buffers(net_) : std::vector<torch::Tensor>{});
  std::vector<torch::Tensor> buffers;
  torch::Tensor buffer_flat;
  c10::intrusive_ptr<c10d::Work> buffer_work;
  for (int m = 0; m < o_.accumulate; ++m) {
    const Batch mb = batch.slice(m * micro, micro);
    const bool last = m + 1 == o_.accumulate;
    if (reducer_) reducer_->prepare(last);
    const bool autocast = cuda_ && o_.mixed_precision;
    if (autocast) set_cuda_autocast(true);
    nn::NetworkOutput out = net_->forward(mb.input, /*training_heads=*/true);
    if (autocast) set_cuda_autocast(false);
    const LossTerms losses = compute_losses(out, mb);
    // A head the network has is always in the graph (weight 0 included), so
    // every rank reduces the same gradients; one it lacks adds a constant 0.
    const torch::Tensor total = losses.policy + o_.value_loss_weight * losses.value +
                                o_.material_loss_weight * losses.material +
                                o_.reply_loss_weight * losses.reply +
                                o_.moves_left_loss_weight * losses.moves_left;
    if (last && pg_) {
      // Batch-norm statistics: every rank saw its own data; average them
      // while backward runs, so all ranks keep identical buffers.
      torch::NoGradGuard no_grad;
      buffers = float_buffers(net_);
      if (!buffers.empty()) {
        std::vector<torch::Tensor> flat_parts;
        for (auto& b : buffers) flat_parts.push_back(b.reshape({-1}));
        buffer_flat = torch::cat(flat_parts);
        std::vector<torch::Tensor> v{buffer_flat};
        try {
          buffer_work = pg_->allreduce(v);
        } catch (const std::exception& e) {
          return fail(std::string("batch-norm statistics all-reduce failed: ") + e.what());
        }
      }
    }
    (o_.accumulate > 1 ? total / double(o_.accumulate) : total).backward();
    loss_sums += torch::stack({losses.policy, losses.value, losses.material, losses.reply,
                               losses.moves_left})
                     .detach();
  }
  double comm_wait = 0;
  if (reducer_) {
    auto waited = reducer_->finish();
    if (!waited) return fail(waited.error());
    comm_wait = *waited;
  }
  if (buffer_work) {
    const auto t = Clock::now();
    if (auto r = wait_work(buffer_work, "batch-norm statistics all-reduce"); !r) return fail(r.error());
    comm_wait += seconds_since(t);
    torch::NoGradGuard no_grad;
    buffer_flat.div_(double(d_.world_size));
    std::int64_t offset = 0;
    for (auto& b : buffers) {
      b.copy_(buffer_flat.narrow(0, offset, b.numel()).view_as(b));
      offset += b.numel();
    }
  }
  if (o_.clip_norm > 0) torch::nn::utils::clip_grad_norm_(net_->parameters(), o_.clip_norm);
  opt_->step();
  restore.disarm();
  // The step is done on every rank from here (gradients and statistics were
  // all-reduced): a later failure leaves a consistent state to checkpoint.
  ++step_;
  const std::int64_t samples = std::int64_t(o_.batch_size) * d_.world_size;
  samples_total_ += std::uint64_t(samples);

  auto losses = loss_sums.to(torch::kCPU).to(torch::kFloat64) / double(o_.accumulate);
  if (pg_) {
    if (auto r = allreduce(*group_, losses, c10d::ReduceOp::SUM, "loss all-reduce"); !r)
      return fail(r.error());
    losses /= double(d_.world_size);
  }
  StepReport r;
  r.rank = d_.rank;
  r.step = step_;
  r.samples = samples;
  r.samples_total = samples_total_;
  r.policy_loss = losses[0].item<double>();
  r.value_loss = losses[1].item<double>();
  r.material_loss = losses[2].item<double>();
  r.reply_loss = losses[3].item<double>();
  r.moves_left_loss = losses[4].item<double>();
  r.total_loss = r.policy_loss + o_.value_loss_weight * r.value_loss +
                 o_.material_loss_weight * r.material_loss + o_.reply_loss_weight * r.reply_loss +
                 o_.moves_left_loss_weight * r.moves_left_loss;
  r.lr = lr;
  r.data_wait_seconds = data_wait;
  r.allreduce_seconds = comm_wait;
  r.step_seconds = seconds_since(start) + data_wait;
  r.samples_per_second = r.step_seconds > 0 ? double(samples) / r.step_seconds : 0;
  r.sample_reuse = gate_.reuse(samples_total_);
  return r;
}

nn::Checkpoint Run::snapshot(bool with_optimizer) {
  nn::ModelInfo info;
  info.step = step_;
  info.created_ms = nn::unix_millis_now();
  info.description = "chessrl-trainer step " + std::to_string(step_);
  nn::Checkpoint c = nn::to_checkpoint(net_, info);
  if (!with_optimizer) return c;
  TrainerState s;
  s.step = step_;
  s.samples_total = samples_total_;
  s.optimizer = optimizer_name(o_.optimizer);
  s.world_size = d_.world_size;
  c.optimizer_state = encode_state(s, save_optimizer(*opt_));
  return c;
}

Result<void> Run::check_hash() {
  const std::uint64_t h = weights_hash(snapshot()) & ((1ULL << 62) - 1);
  if (!pg_) return {};
  auto t = torch::tensor({std::int64_t(h), -std::int64_t(h)}, torch::kInt64);
  if (auto r = allreduce(*group_, t, c10d::ReduceOp::MAX, "weights hash check"); !r) return r;
  const std::int64_t hi = t[0].item<std::int64_t>(), lo = -t[1].item<std::int64_t>();
  if (hi != lo)
    return fail("weights differ between ranks after step " + std::to_string(step_) +
                " (hash check): this rank's hash is " + std::to_string(h));
  return {};
}

Result<void> Run::write_checkpoint() {
  // Step 0 is the seed's weights: nothing worth a file.
  if (d_.rank != 0 || o_.checkpoint_dir.empty() || last_checkpoint_step_ == step_ || step_ == 0)
    return {};
  const std::string path = checkpoint_path(o_.checkpoint_dir, step_);
  if (auto r = nn::save_checkpoint_file(snapshot(), path); !r) return r;
  last_checkpoint_step_ = step_;
  summary_.last_checkpoint = path;
  log("checkpoint at step " + std::to_string(step_) + ": " + path);
  auto all = list_checkpoints(o_.checkpoint_dir);
  if (all && all->size() > std::size_t(o_.keep_checkpoints)) {
    for (std::size_t i = 0; i + std::size_t(o_.keep_checkpoints) < all->size(); ++i) {
      std::error_code ec;
      std::filesystem::remove((*all)[i].second, ec);
    }
  }
  return {};
}

// Hands the weights to the background publisher: the step loop never waits on
// the registry (a slow one would hold every rank past its collective timeout).
void Run::publish() {
  if (!publisher_) return;
  publisher_->offer(snapshot(false), step_);
}

Result<TrainSummary> Run::run_steps() {
  const auto started = Clock::now();
  if (auto r = o_.validate(); !r) return fail(r.error());
  if (d_.world_size < 1 || d_.rank < 0 || d_.rank >= d_.world_size)
    return fail("rank " + std::to_string(d_.rank) + " is outside [0, " + std::to_string(d_.world_size) + ")");
  if (auto r = setup_device(); !r) return fail(r.error());
  if (d_.world_size > 1) {
    // The rendezvous ends by its own timeout; a minute more for the group's setup.
    beat("rendezvous: forming the group of " + std::to_string(d_.world_size) + " ranks",
         std::chrono::duration_cast<std::chrono::milliseconds>(d_.rendezvous_timeout) +
             std::chrono::minutes(1));
    DistributedConfig joining = d_;
    joining.stop = &stop_;
    auto g = join_group(
        joining, cuda_, [this](const std::string& l) { log(l); }, cuda_ ? device_.index() : 0);
    if (!g && stop_.load()) {
      // Asked to stop before the group formed: nothing was trained, nothing to save.
      log("stopped at the rendezvous, before the group formed (" + g.error() + ")");
      summary_.seconds = seconds_since(started);
      return summary_;
    }
    if (!g) return fail(g.error());
    group_ = std::move(*g);
    pg_ = group_->pg.get();
    log("joined " + std::to_string(d_.world_size) + " ranks over " + group_->backend);
  }
  beat("loading the starting weights");
  if (auto r = load_initial(); !r) return fail(r.error());
  summary_.start_step = step_;
  std::int64_t parameters = 0;
  for (const auto& p : net_->parameters()) parameters += p.numel();
  if (d_.rank == 0)
    log("training " + o_.network.name() + " (" + std::to_string(parameters) + " parameters) on " +
        (cuda_ ? device_.str() + (o_.mixed_precision ? " (bf16 autocast, TF32)" : "") : "cpu") +
        ", " + std::to_string(d_.world_size) + " rank(s), batch " + std::to_string(o_.batch_size) +
        " per rank in " + std::to_string(o_.accumulate) + " micro-batch(es), " +
        optimizer_name(o_.optimizer) + ", from step " + std::to_string(step_) +
        (o_.steps > 0 ? " to " + std::to_string(o_.steps) : ""));
  if (pg_) reducer_ = std::make_unique<GradReducer>(net_->parameters(), *pg_, o_.bucket_bytes, o_.overlap);
  cadence_ = PublishCadence(o_.publish_every, o_.publish_every_seconds, Clock::now());
  if (d_.rank == 0 && cb_.publish && cadence_.enabled())
    publisher_ = std::make_unique<BackgroundPublisher>(
        cb_.publish, [this](const std::string& l) { log(l); }, BackgroundPublisher::Options{},
        cb_.on_publish_outcome);

  Result<void> failure;
  bool peer_left = false;  // stopped: another rank left during the last step
  {
    Prefetcher prefetcher(source_, step_, d_.rank, d_.world_size, o_.batch_size,
                          o_.prefetch_batches, cuda_, [this](const std::string& l) { log(l); },
                          o_.value_q_ratio, o_.policy_legal_only);
    bool paused = false;
    double window_seconds = 0, window_wait = 0, window_comm = 0;
    std::int64_t window_samples = 0, window_steps = 0;
    while (o_.steps == 0 || step_ < o_.steps) {
      // Each pass is a step, or a look at the paused data gates (every second).
      beat(paused ? "paused at step " + std::to_string(step_) + " (data gates)"
                  : "training step " + std::to_string(step_ + 1));
      std::int64_t allowed = 0;
      bool go = true;
      if (auto r = agree(allowed, go); !r) {
        peer_left = group_broken_ = true;  // between steps: the state is whole, rank 0 checkpoints it
        // Told to stop, another rank left first (it stopped without data, or
        // after its step): the stop asked for, not a failure.
        if (stop_.load()) {
          log("stopping at step " + std::to_string(step_) + " (asked to stop; another rank left first: " +
              r.error() + ")");
          break;
        }
        failure = r;
        break;
      }
      if (!go) {
        log("stopping at step " + std::to_string(step_) + " (asked to stop)");
        break;
      }
      if (step_ >= allowed) {
        if (!paused) {
          paused = true;
          const std::string why = gate_.allowance(source_, step_, samples_total_, false).second;
          log("paused: " + (why.empty() ? std::string("another rank's data gate") : why));
          if (cb_.on_pause) cb_.on_pause(true, why);
        }
        for (int i = 0; i < 10 && !stop_.load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        gate_.invalidate();  // look again
        continue;
      }
      if (paused) {
        paused = false;
        log("resumed: the data gates allow training again");
        if (cb_.on_pause) cb_.on_pause(false, "");
      }
      const auto wait_start = Clock::now();
      // While the data source answers, failing or not, waiting for it is
      // progress; a fetch that never returns is not.
      std::uint64_t fetches_seen = prefetcher.fetches_returned();
      const auto waiting = [&] {
        const std::uint64_t now_returned = prefetcher.fetches_returned();
        if (now_returned == fetches_seen) return;
        fetches_seen = now_returned;
        beat("waiting for step " + std::to_string(step_ + 1) + "'s data (the source answers)");
      };
      // A rank that agreed to this step finishes it: the others wait for its
      // gradients. World of one: give up at once when stopped.
      auto batch = prefetcher.pop(stop_,
                                  d_.world_size > 1 ? std::chrono::milliseconds(o_.stop_data_grace_ms)
                                                    : std::chrono::milliseconds(0),
                                  waiting);
      const double waited = seconds_since(wait_start);
      if (!batch) {
        log("stopping at step " + std::to_string(step_) + " without data for the next step");
        break;
      }
      auto report = step(*batch, waited);
      if (!report) {
        // Told to stop, a rank without data leaves; the others' collective then
        // fails. That is the stop they were asked for, not a failure.
        if (stop_.load()) {
          log("stopping at step " + std::to_string(step_) + " (asked to stop; another rank left first: " +
              report.error() + ")");
          peer_left = group_broken_ = true;
          break;
        }
        // A collective failed (a peer died or timed out). The state is that of
        // the last step done on every rank: rank 0 still checkpoints it.
        failure = fail(report.error());
        peer_left = group_broken_ = true;
        break;
      }
      if (cb_.on_step) cb_.on_step(*report);
      window_seconds += report->step_seconds;
      window_wait += report->data_wait_seconds;
      window_comm += report->allreduce_seconds;
      window_samples += report->samples;
      ++window_steps;
      if (d_.rank == 0 && o_.log_every > 0 && step_ % o_.log_every == 0) {
        char heads[128];
        int used = std::snprintf(heads, sizeof heads, "policy %.4f, value %.4f, material %.4f",
                                 report->policy_loss, report->value_loss, report->material_loss);
        if (o_.network.reply_head)
          used += std::snprintf(heads + used, sizeof heads - std::size_t(used), ", reply %.4f",
                                report->reply_loss);
        if (o_.network.moves_left_head)
          std::snprintf(heads + used, sizeof heads - std::size_t(used), ", moves left %.4f",
                        report->moves_left_loss);
        char line[400];
        std::snprintf(line, sizeof line,
                      "step %lld%s  loss %.4f (%s)  lr %.5g  %.0f samples/s"
                      "  data wait %s  all-reduce wait %s",
                      static_cast<long long>(step_),
                      o_.steps > 0 ? ("/" + std::to_string(o_.steps)).c_str() : "",
                      report->total_loss, heads, report->lr,
                      window_seconds > 0 ? double(window_samples) / window_seconds : 0.0,
                      percent(window_wait, window_seconds).c_str(),
                      percent(window_comm, window_seconds).c_str());
        log(line);
        window_seconds = window_wait = window_comm = 0;
        window_samples = window_steps = 0;
      }
      if (o_.hash_every > 0 && step_ % o_.hash_every == 0)
        if (auto r = check_hash(); !r) {
          failure = r;
          break;
        }
      if (step_ % o_.checkpoint_every == 0)
        if (auto r = write_checkpoint(); !r) {
          failure = r;
          break;
        }
      if (publisher_ && cadence_.due(step_, Clock::now())) publish();
    }
    beat("stopping at step " + std::to_string(step_));
    prefetcher.stop();
    // A fetch in flight gives up now: the prefetcher's thread is joined below,
    // and the source's server may be gone (a call would wait out its deadline).
    source_.cancel();
  }
  if (publisher_) {
    // The queued model a bounded time to go out (a hung registry does not hold the stop).
    publisher_->finish(std::chrono::milliseconds(o_.publish_flush_ms));
    const PublisherCounts counts = publisher_->counts();
    summary_.published = counts.published;
    summary_.publish_skipped = counts.skipped;
    publisher_.reset();  // a call still in flight is abandoned
    summary_.publish_abandoned = counts.abandoned;
  }
  if (!failure) {
    // Rank 0 leaves the state it reached when a peer died or left: the work
    // since the last checkpoint is not lost with it.
    if (peer_left && d_.rank == 0 && !o_.checkpoint_dir.empty() && step_ > 0) {
      if (auto r = write_checkpoint(); r)  // none when the last one is of this step
        log("after the failure, the checkpoint of step " + std::to_string(step_) +
            " holds the state reached: " + checkpoint_path(o_.checkpoint_dir, step_));
      else
        log("no checkpoint after the failure: " + r.error());
    }
    return fail(failure.error());
  }
  // The final state: a checkpoint at the step reached (after a stop too).
  if (auto r = write_checkpoint(); !r) return fail(r.error());
  if (o_.hash_every > 0 && !peer_left)  // no collective without the other ranks
    if (auto r = check_hash(); !r) return fail(r.error());
  summary_.end_step = step_;
  summary_.samples_total = samples_total_;
  summary_.weights_hash = weights_hash(snapshot());
  summary_.seconds = seconds_since(started);
  if (d_.rank == 0)
    log("done: steps " + std::to_string(summary_.start_step) + " to " + std::to_string(step_) +
        " in " + std::to_string(int(summary_.seconds)) + " s");
  return summary_;
}

}  // namespace

Result<TrainSummary> train(const TrainerOptions& options, const DistributedConfig& distributed,
                           ExampleSource& source, const TrainerCallbacks& callbacks,
                           const std::atomic<bool>& stop) {
  // glibc's malloc hands the step's multi-megabyte activation buffers back to
  // the kernel (mmap threshold, heap trimming) and faults them in again on the
  // next step: that halved training speed against PyTorch from Python (see
  // docs/benchmarks.md). Keep them in the heap (32 MiB is mallopt's maximum).
  static std::once_flag malloc_tuned;
  std::call_once(malloc_tuned, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
  try {
    Run run(options, distributed, source, callbacks, stop);
    return run.run();
  } catch (const std::exception& e) {
    return fail(std::string("training failed: ") + e.what());
  }
}

}  // namespace chessrl::train
