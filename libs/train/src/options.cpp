// Trainer options: parsing, validation and the learning-rate schedule (no LibTorch).
#include <cmath>
#include <string>

#include "chessrl/train/trainer.h"

namespace chessrl::train {

Result<OptimizerKind> parse_optimizer(std::string_view text) {
  if (text == "sgd") return OptimizerKind::kSgd;
  if (text == "adamw") return OptimizerKind::kAdamW;
  return fail("unknown optimizer '" + std::string(text) + "' (sgd or adamw)");
}

Result<ScheduleKind> parse_schedule(std::string_view text) {
  if (text == "constant") return ScheduleKind::kConstant;
  if (text == "cosine") return ScheduleKind::kCosine;
  if (text == "step") return ScheduleKind::kStep;
  return fail("unknown learning-rate schedule '" + std::string(text) + "' (constant, cosine or step)");
}

const char* optimizer_name(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW ? "adamw" : "sgd";
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kCosine:
      return "cosine";
    case ScheduleKind::kStep:
      return "step";
    case ScheduleKind::kConstant:
      break;
  }
  return "constant";
}

Result<void> TrainerOptions::validate() const {
  if (auto r = network.validate(); !r) return fail("network: " + r.error());
  auto bad = [](const std::string& field, const std::string& why) {
    return fail("trainer option " + field + " " + why);
  };
  if (device != "cpu" && device != "cuda" && device != "auto")
    return bad("device", "is '" + device + "' (cpu, cuda or auto)");
  if (batch_size < 1 || batch_size > (1 << 20)) return bad("batch_size", "must be 1..1048576");
  if (accumulate < 1 || batch_size % accumulate != 0)
    return bad("accumulate", "must be >= 1 and divide batch_size (" + std::to_string(batch_size) + ")");
  if (steps < 0) return bad("steps", "must be >= 0");
  if (!(lr > 0) || !std::isfinite(lr)) return bad("lr", "must be > 0");
  if (!(momentum >= 0 && momentum < 1)) return bad("momentum", "must be in [0, 1)");
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) return bad("weight_decay", "must be >= 0");
  if (!(adam_beta1 >= 0 && adam_beta1 < 1)) return bad("adam_beta1", "must be in [0, 1)");
  if (!(adam_beta2 >= 0 && adam_beta2 < 1)) return bad("adam_beta2", "must be in [0, 1)");
  if (!(adam_eps > 0)) return bad("adam_eps", "must be > 0");
  if (warmup_steps < 0) return bad("warmup_steps", "must be >= 0");
  if (schedule_steps < 0) return bad("schedule_steps", "must be >= 0");
  if (!(lr_min_factor >= 0 && lr_min_factor <= 1)) return bad("lr_min_factor", "must be in [0, 1]");
  if (decay_every < 1) return bad("decay_every", "must be >= 1");
  if (!(decay_factor > 0 && decay_factor <= 1)) return bad("decay_factor", "must be in (0, 1]");
  if (!(value_loss_weight >= 0) || !std::isfinite(value_loss_weight))
    return bad("value_loss_weight", "must be >= 0");
  if (!(material_loss_weight >= 0) || !std::isfinite(material_loss_weight))
    return bad("material_loss_weight", "must be >= 0");
  if (!(reply_loss_weight >= 0) || !std::isfinite(reply_loss_weight))
    return bad("reply_loss_weight", "must be >= 0");
  if (!(moves_left_loss_weight >= 0) || !std::isfinite(moves_left_loss_weight))
    return bad("moves_left_loss_weight", "must be >= 0");
  if (!(value_q_ratio >= 0 && value_q_ratio <= 1))
    return bad("value_q_ratio", "must be in [0, 1]");
  if (!(clip_norm >= 0) || !std::isfinite(clip_norm)) return bad("clip_norm", "must be >= 0 (0: off)");
  if (checkpoint_every < 1) return bad("checkpoint_every", "must be >= 1");
  if (keep_checkpoints < 2)
    return bad("keep_checkpoints",
               "must be >= 2 (the previous checkpoint is the fallback when the latest is corrupt)");
  if (schedule == ScheduleKind::kCosine && steps == 0 && schedule_steps == 0)
    return bad("schedule", "cosine needs a length to decay over: steps is 0 (train until stopped) "
                           "and schedule_steps is 0; set schedule_steps (or steps)");
  if (publish_flush_ms < 0) return bad("publish_flush_ms", "must be >= 0");
  if (stop_data_grace_ms < 0) return bad("stop_data_grace_ms", "must be >= 0");
  if (stall_timeout_ms < 1000) return bad("stall_timeout_ms", "must be >= 1000");
  if (publish_every < 0) return bad("publish_every", "must be >= 0 (0: never)");
  if (!(publish_every_seconds >= 0) || !std::isfinite(publish_every_seconds))
    return bad("publish_every_seconds", "must be >= 0 (0: only by steps)");
  if (!(max_reuse >= 0) || !std::isfinite(max_reuse)) return bad("max_reuse", "must be >= 0 (0: no cap)");
  if (prefetch_batches < 1 || prefetch_batches > 64) return bad("prefetch_batches", "must be 1..64");
  if (bucket_bytes < 1024) return bad("bucket_bytes", "must be >= 1024");
  if (threads < 0 || threads > 1024) return bad("threads", "must be 0..1024 (0: LibTorch's default)");
  if (hash_every < 0) return bad("hash_every", "must be >= 0 (0: off)");
  if (log_every < 0) return bad("log_every", "must be >= 0 (0: never)");
  return {};
}

double learning_rate(const TrainerOptions& o, std::int64_t step) {
  if (o.warmup_steps > 0 && step < o.warmup_steps)
    return o.lr * double(step + 1) / double(o.warmup_steps);
  switch (o.schedule) {
    case ScheduleKind::kConstant:
      return o.lr;
    case ScheduleKind::kCosine: {
      const std::int64_t horizon = o.schedule_steps > 0 ? o.schedule_steps : o.steps;
      if (horizon <= o.warmup_steps) return o.lr;
      const double t = std::min(1.0, double(step - o.warmup_steps) / double(horizon - o.warmup_steps));
      const double pi = std::acos(-1.0);
      return o.lr * (o.lr_min_factor + (1 - o.lr_min_factor) * 0.5 * (1 + std::cos(pi * t)));
    }
    case ScheduleKind::kStep:
      return o.lr * std::pow(o.decay_factor, double(step / o.decay_every));
  }
  return o.lr;
}


}  // namespace chessrl::train
