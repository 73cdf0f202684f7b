// The data-parallel training loop. Each rank runs train(): it joins the
// process group (c10d TCPStore rendezvous; Gloo on CPU, NCCL on CUDA; none
// for a world of one), loads the latest checkpoint if there is one (else
// takes rank 0's initial weights by broadcast), and steps: prefetched batch ->
// forward -> losses -> backward with gradients all-reduced in buckets while
// the backward pass runs -> the same optimizer step on every rank. Rank 0
// writes checkpoints and publishes models. No LibTorch in this header.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/train/distributed.h"
#include "chessrl/train/source.h"

namespace chessrl::train {

enum class OptimizerKind { kSgd, kAdamW };
enum class ScheduleKind { kConstant, kCosine, kStep };

// "sgd" / "adamw", "constant" / "cosine" / "step", and back.
Result<OptimizerKind> parse_optimizer(std::string_view text);
Result<ScheduleKind> parse_schedule(std::string_view text);
const char* optimizer_name(OptimizerKind kind);
const char* schedule_name(ScheduleKind kind);

struct TrainerOptions {
  nn::NetworkConfig network;
  std::string device = "auto";  // "cpu", "cuda" or "auto" (CUDA when present)
  int batch_size = 256;         // examples per rank per optimizer step
  int accumulate = 1;           // micro-batches per step (batch_size divisible by it)
  std::int64_t steps = 0;       // stop once this many steps are done (0: until stopped)

  // The optimizer every launcher trains with (chessrl-trainer takes its
  // defaults from here; docs/learning.md): AdamW at 1e-3, the run of the first
  // gains. SGD (Nesterov, momentum below) was the earlier default, at 0.02.
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  double lr = 1e-3;
  double momentum = 0.9;  // SGD (Nesterov)
  double weight_decay = 1e-4;  // SGD: L2 added to the gradient; AdamW: decoupled
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  ScheduleKind schedule = ScheduleKind::kConstant;
  std::int64_t warmup_steps = 0;     // linear warm-up from 0 over these steps
  // cosine: steps to decay over (0: `steps`; one of them must be > 0)
  std::int64_t schedule_steps = 0;
  double lr_min_factor = 0.01;       // cosine: the final lr is lr * this
  std::int64_t decay_every = 100000; // step: multiply by decay_factor every this many steps
  double decay_factor = 0.1;

  double value_loss_weight = 1.0;  // total = policy + weight * value
  // ... + this weight * the material head's loss (a network without the head
  // has none; 0: the head is not trained).
  double material_loss_weight = 1.0;
  // ... + this weight * the reply head's loss (cross-entropy against the
  // opponent's next move; KataGo weighs its opponent-reply policy 0.15) and
  // + this weight * the moves-left head's (Huber on plies left / 20). Each
  // counts only for a network with the head (--net ...-reply, ...-mlh).
  double reply_loss_weight = 0.15;
  double moves_left_loss_weight = 0.1;
  // Value target: (1 - q) x the game's result + q x the search's root
  // win/draw/loss (Leela Chess Zero's q_ratio); 0: the result alone. 0.3:
  // docs/learning.md's run 4, what every launcher trains with.
  double value_q_ratio = 0.3;
  // true: the policy loss as a softmax over the position's legal moves only
  // (lczero-training's mask_legal_moves), as the search reads the priors.
  // false (default): over all 4,672 outputs, so the network also learns which
  // moves are legal; measured better for small networks (docs/learning.md:
  // the learning check scores 0.855 against its untrained start with it off,
  // 0.52-0.565 with it on).
  bool policy_legal_only = false;
  double clip_norm = 0;            // gradient clipping by global norm (0: off)
  bool mixed_precision = true;     // CUDA only: bf16 autocast and TF32

  std::uint64_t seed = 1;  // initial weights (rank 0's); per-rank seeds derive from it

  std::string checkpoint_dir;         // empty: no checkpoints, no resume
  std::int64_t checkpoint_every = 1000;
  int keep_checkpoints = 3;  // >= 2: the previous one is the fallback for a corrupt latest
  std::string init_checkpoint;        // start from these weights when checkpoint_dir has none
  std::int64_t publish_every = 0;     // rank 0 calls publish every this many steps (0: never)
  // Rank 0 also calls publish once this many seconds have passed since it
  // last did (or since training started), between step multiples (0: only by
  // steps). Either cadence alone, or both, whichever comes first.
  double publish_every_seconds = 0;
  // At the end, how long the last model queued for publishing may take to go out.
  std::int64_t publish_flush_ms = 10000;
  // Told to stop, a rank of several waits this long for the batch of the step
  // it agreed to (the others wait for its gradients) before it leaves.
  std::int64_t stop_data_grace_ms = 30000;
  // The longest a rank may go without progress (a step done, a paused data
  // gate polled, a data fetch returned, failed ones included) before it is
  // stalled: TrainerCallbacks::on_progress's bound. Longer than the
  // collective timeout, so that a dead peer is the collective's to report.
  std::int64_t stall_timeout_ms = 900000;

  std::uint64_t min_window = 0;  // positions the source must hold before training starts
  double max_reuse = 0;          // cap on samples trained / positions stored (0: none)

  int prefetch_batches = 4;             // ready batches queued per rank
  std::size_t bucket_bytes = 4u << 20;  // gradient all-reduce bucket size
  bool overlap = true;                  // all-reduce buckets while backward runs
  int threads = 0;                      // LibTorch intra-op threads (0: its default)
  std::int64_t hash_every = 0;  // check every rank's weights hash every N steps (0: off)
  std::int64_t log_every = 10;  // a progress line every N steps (0: never)

  // Every field in range; the error names the field.
  Result<void> validate() const;
};

// The learning rate of the step that follows `step` steps done: linear
// warm-up over warmup_steps, then the schedule.
double learning_rate(const TrainerOptions& options, std::int64_t step);

struct StepReport {
  int rank = 0;
  std::int64_t step = 0;            // steps done, after this one
  std::int64_t samples = 0;         // examples in this step, all ranks
  std::uint64_t samples_total = 0;  // examples trained, all ranks, since the first step
  double policy_loss = 0;           // averaged over ranks
  double value_loss = 0;
  double material_loss = 0;         // 0 without a material head
  double reply_loss = 0;            // 0 without a reply head
  double moves_left_loss = 0;       // 0 without a moves-left head
  double total_loss = 0;
  double lr = 0;
  double step_seconds = 0;       // wall time of the step, data wait included
  double data_wait_seconds = 0;  // of which waiting for the prefetch queue
  double allreduce_seconds = 0;  // of which waiting for gradient all-reduce after backward
  double samples_per_second = 0; // all ranks, this step
  // samples_total / positions the data source has stored: how often each
  // position was trained on so far (what max_reuse caps). 0 when the source's
  // status was not read (no data gates) or it stored nothing yet.
  double sample_reuse = 0;
};

struct TrainerCallbacks {
  std::function<void(const StepReport&)> on_step;  // every step, every rank
  std::function<void(const std::string&)> log;     // progress lines (default: stderr)
  // Rank 0, every publish_every steps (and every publish_every_seconds): ship the model (weights only, no
  // optimizer state) as a model version; returns the version. Called on a
  // background thread, never from the step loop: a newer model replaces one
  // not yet sent, a failure is retried with backoff, and training goes on.
  // At the end the queued model gets publish_flush_ms; a call still in flight
  // then is abandoned (TrainSummary::publish_abandoned), not waited for: the
  // function must own what it uses (capture by value or shared_ptr).
  std::function<Result<std::uint64_t>(const nn::Checkpoint&)> publish;
  // After each publish attempt, from the publishing thread (never after
  // train() returned): the version published, or nullopt when it failed.
  std::function<void(std::optional<std::uint64_t> version)> on_publish_outcome;
  // Training paused (why) or resumed (empty why): minimum window, reuse cap.
  std::function<void(bool paused, const std::string& why)> on_pause;
  // Progress (chessrl::Progress::beat): now doing `what`; the next call
  // comes within `within` unless the rank is stuck. From the training thread.
  std::function<void(const std::string& what, std::chrono::milliseconds within)> on_progress;
};

struct TrainSummary {
  std::int64_t start_step = 0;  // the step training began at (> 0 after a resume)
  std::int64_t end_step = 0;
  bool resumed = false;         // a checkpoint was loaded
  std::uint64_t samples_total = 0;
  std::string last_checkpoint;  // rank 0: the last checkpoint written ("" if none)
  std::uint64_t weights_hash = 0;  // of parameters and buffers at the end
  double seconds = 0;
  std::uint64_t published = 0;        // rank 0: models the registry took
  std::uint64_t publish_skipped = 0;  // rank 0: models replaced by newer ones before they went out
  // Rank 0: a publish call was still in flight at the end and was abandoned;
  // the process should exit without waiting for it (std::_Exit after its output).
  bool publish_abandoned = false;
};

// Runs until options.steps are done or `stop` becomes true on any rank (then
// rank 0 writes a checkpoint at the step reached and every rank returns).
// When a peer dies or leaves (a collective fails), rank 0 still writes a
// checkpoint at the last step every rank finished, then fails.
// Fails, naming the problem: options, rendezvous (the missing ranks), a
// checkpoint of another architecture, the data source, a collective timing
// out (a dead peer), diverged weights (hash_every).
Result<TrainSummary> train(const TrainerOptions& options, const DistributedConfig& distributed,
                           ExampleSource& source, const TrainerCallbacks& callbacks,
                           const std::atomic<bool>& stop);

// The checkpoints of a directory: "ckpt-<step, 10 digits>.chrl"; the latest is
// the highest step. Empty string when there is none.
std::string checkpoint_path(const std::string& dir, std::int64_t step);
Result<std::string> latest_checkpoint(const std::string& dir);

// The trainer's state in a checkpoint's optimizer section, readable without
// LibTorch: the step, samples trained and the optimizer's kind.
struct TrainerState {
  std::int64_t step = 0;
  std::uint64_t samples_total = 0;
  std::string optimizer;
  int world_size = 1;
};
Result<TrainerState> trainer_state(const nn::Checkpoint& checkpoint);

// A 64-bit hash of a checkpoint's tensors (names, shapes, bytes): equal
// weights give equal hashes. The trainer's weights_hash is this.
std::uint64_t weights_hash(const nn::Checkpoint& checkpoint);

}  // namespace chessrl::train
