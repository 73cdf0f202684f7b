// TrainerMetrics: the trainer's Prometheus series (chessrl_trainer_*) and the
// updates from the training loop's callbacks. Every rank keeps its own; the
// losses, rates and totals a StepReport carries are already over all ranks.
// Thread-safe (the series are atomics).
#pragma once

#include <cstdint>

#include "chessrl/metrics/registry.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/train/trainer.h"

namespace chessrl::trainer_service {

class TrainerMetrics {
 public:
  // `max_reuse`: the trainer's --max-reuse (0: no cap), set once. The loss
  // series of the training-only heads (reply, moves_left) exist only when
  // `network` has them.
  TrainerMetrics(metrics::Registry& registry, int rank, int world_size, double max_reuse,
                 const nn::NetworkConfig& network = {});

  // After every step (TrainerCallbacks::on_step).
  void on_step(const train::StepReport& report);
  // Training paused (minimum window, reuse cap) or resumed.
  void on_pause(bool paused);
  // Rank 0 published this model version.
  void on_publish(std::uint64_t version);
  // Rank 0's publish attempt failed (it is retried in the background).
  void on_publish_failure();

  metrics::Counter& steps_total;
  metrics::Counter& samples_total;
  metrics::Gauge& policy_loss;
  metrics::Gauge& value_loss;
  metrics::Gauge& material_loss;
  metrics::Gauge& total_loss;
  metrics::Gauge* reply_loss = nullptr;       // with a reply head
  metrics::Gauge* moves_left_loss = nullptr;  // with a moves-left head
  metrics::Gauge& step_seconds;
  metrics::Counter& step_seconds_total;
  metrics::Counter& data_wait_seconds_total;
  metrics::Counter& allreduce_seconds_total;
  metrics::Gauge& samples_per_second;
  metrics::Gauge& learning_rate;
  metrics::Gauge& sample_reuse;
  metrics::Gauge& max_reuse;
  metrics::Gauge& step;
  metrics::Gauge& paused;
  metrics::Gauge& model_version;
  metrics::Counter& publish_failures_total;
  metrics::Gauge& rank;
  metrics::Gauge& world_size;
};

}  // namespace chessrl::trainer_service
