#include "trainer_metrics.h"

namespace chessrl::trainer_service {

TrainerMetrics::TrainerMetrics(metrics::Registry& registry, int rank_value, int world_size_value,
                               double max_reuse_value, const nn::NetworkConfig& network)
    : steps_total(registry.counter("chessrl_trainer_steps_total",
                                   "Optimizer steps taken by this process")),
      samples_total(registry.counter("chessrl_trainer_samples_total",
                                     "Examples trained on, all ranks, by steps this process took")),
      policy_loss(registry.gauge("chessrl_trainer_loss", "Loss of the last step, averaged over ranks",
                                 {{"head", "policy"}})),
      value_loss(registry.gauge("chessrl_trainer_loss", "Loss of the last step, averaged over ranks",
                                {{"head", "value"}})),
      material_loss(registry.gauge("chessrl_trainer_loss",
                                   "Loss of the last step, averaged over ranks",
                                   {{"head", "material"}})),
      total_loss(registry.gauge("chessrl_trainer_loss", "Loss of the last step, averaged over ranks",
                                {{"head", "total"}})),
      step_seconds(registry.gauge("chessrl_trainer_step_seconds",
                                  "Wall time of the last step, data wait included")),
      step_seconds_total(registry.counter("chessrl_trainer_step_seconds_total",
                                          "Wall time spent in steps")),
      data_wait_seconds_total(registry.counter("chessrl_trainer_data_wait_seconds_total",
                                               "Time steps waited for the prefetch queue")),
      allreduce_seconds_total(
          registry.counter("chessrl_trainer_allreduce_seconds_total",
                           "Time steps waited for the gradient all-reduce after backward")),
      samples_per_second(registry.gauge("chessrl_trainer_samples_per_second",
                                        "Examples per second of the last step, all ranks")),
      learning_rate(registry.gauge("chessrl_trainer_learning_rate",
                                   "Learning rate of the last step")),
      sample_reuse(registry.gauge("chessrl_trainer_sample_reuse_ratio",
                                  "Samples trained per position self-play stored, since the "
                                  "start or the store's last reset (what --max-reuse caps)")),
      max_reuse(registry.gauge("chessrl_trainer_max_reuse",
                               "The trainer's --max-reuse cap on the sample reuse ratio (0: no "
                               "cap); an autoscaler's reuse band is a fraction of it")),
      step(registry.gauge("chessrl_trainer_step", "Steps done (the checkpoint step reached)")),
      paused(registry.gauge("chessrl_trainer_paused",
                            "1 while training waits (minimum window, reuse cap), else 0")),
      model_version(registry.gauge("chessrl_model_version",
                                   "Model version this trainer last published (rank 0)")),
      publish_failures_total(registry.counter(
          "chessrl_trainer_publish_failures_total",
          "Publish attempts that failed (rank 0; retried in the background, training goes on)")),
      rank(registry.gauge("chessrl_trainer_rank", "This process's rank")),
      world_size(registry.gauge("chessrl_trainer_world_size", "Ranks training together")) {
  if (network.reply_head)
    reply_loss = &registry.gauge("chessrl_trainer_loss",
                                 "Loss of the last step, averaged over ranks", {{"head", "reply"}});
  if (network.moves_left_head)
    moves_left_loss = &registry.gauge("chessrl_trainer_loss",
                                      "Loss of the last step, averaged over ranks",
                                      {{"head", "moves_left"}});
  rank.set(rank_value);
  world_size.set(world_size_value);
  max_reuse.set(max_reuse_value);
}

void TrainerMetrics::on_step(const train::StepReport& report) {
  steps_total.inc();
  if (report.samples > 0) samples_total.inc(static_cast<double>(report.samples));
  policy_loss.set(report.policy_loss);
  value_loss.set(report.value_loss);
  material_loss.set(report.material_loss);
  if (reply_loss) reply_loss->set(report.reply_loss);
  if (moves_left_loss) moves_left_loss->set(report.moves_left_loss);
  total_loss.set(report.total_loss);
  step_seconds.set(report.step_seconds);
  if (report.step_seconds > 0) step_seconds_total.inc(report.step_seconds);
  if (report.data_wait_seconds > 0) data_wait_seconds_total.inc(report.data_wait_seconds);
  if (report.allreduce_seconds > 0) allreduce_seconds_total.inc(report.allreduce_seconds);
  samples_per_second.set(report.samples_per_second);
  learning_rate.set(report.lr);
  if (report.sample_reuse > 0) sample_reuse.set(report.sample_reuse);
  step.set(static_cast<double>(report.step));
  paused.set(0);
}

void TrainerMetrics::on_pause(bool is_paused) { paused.set(is_paused ? 1 : 0); }

void TrainerMetrics::on_publish(std::uint64_t version) {
  model_version.set(static_cast<double>(version));
}

void TrainerMetrics::on_publish_failure() { publish_failures_total.inc(); }

}  // namespace chessrl::trainer_service
