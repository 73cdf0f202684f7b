// The training loop in one process, world of one: learning, checkpoints and
// resume, stopping, the data gates. (Two ranks over Gloo as separate
// processes: tests/services/trainer_test.cpp.)
#include "chessrl/train/trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include "batch.h"
#include "chessrl/nn/checkpoint.h"
#include "records.h"

namespace chessrl::train {
namespace {

std::vector<Example> record_examples(int games) {
  std::vector<Example> out;
  for (const auto& r : testing::play_records(games))
    for (auto& e : examples_from_record(r).value_or_throw()) out.push_back(std::move(e));
  return out;
}

const std::vector<Example>& small_data() {
  static const std::vector<Example> data = record_examples(4);
  return data;
}

TrainerOptions tiny_options() {
  TrainerOptions o;
  o.network = {.blocks = 2, .filters = 16, .se_ratio = 0, .value_channels = 8, .value_hidden = 32};
  o.batch_size = 16;
  o.threads = 1;
  o.log_every = 0;
  // SGD at 0.02 on the game's result alone: what these tests were written
  // against (TrainerOptions' defaults are the launchers' AdamW at 1e-3 with
  // value_q_ratio 0.3).
  o.optimizer = OptimizerKind::kSgd;
  o.lr = 0.02;
  o.value_q_ratio = 0;
  o.prefetch_batches = 2;
  return o;
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("chessrl-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

struct Quiet : TrainerCallbacks {
  std::vector<StepReport> reports;
  std::vector<std::string> lines;
  Quiet() {
    on_step = [this](const StepReport& r) { reports.push_back(r); };
    log = [this](const std::string& l) { lines.push_back(l); };
  }
};

TEST(Losses, CrossEntropiesAgainstSoftAndClassTargets) {
  std::vector<Example> examples(2, small_data()[0]);
  examples[1].result = -1;
  Batch b = make_batch(examples);
  auto policy = torch::zeros({2, nn::kPolicySize});
  auto wdl = torch::zeros({2, 3});
  LossTerms l = compute_losses(policy, wdl, b);
  // Uniform logits: cross-entropy log(4672) and log(3), whatever the targets.
  EXPECT_NEAR(l.policy.item<double>(), std::log(double(nn::kPolicySize)), 1e-4);
  EXPECT_NEAR(l.value.item<double>(), std::log(3.0), 1e-5);
  // q_ratio 0: the result one-hot (win, draw, loss for the side to move).
  EXPECT_EQ(b.wdl[1][2].item<float>(), 1.0f);
  EXPECT_EQ(b.wdl[1].sum().item<float>(), 1.0f);
  // A confident correct value head costs almost nothing.
  wdl[0][b.wdl[0].argmax().item<std::int64_t>()] = 30;
  wdl[1][2] = 30;
  EXPECT_LT(compute_losses(policy, wdl, b).value.item<double>(), 1e-6);
}

TEST(Losses, ValueTargetMixesTheResultWithTheSearchByQRatio) {
  std::vector<Example> examples(1, small_data()[0]);
  examples[0].result = -1;          // lost
  examples[0].root_value = 0.4f;    // but the search thought: win 0.6, draw 0.2, loss 0.2
  examples[0].root_draw = 0.2f;
  const Batch result_only = make_batch(examples, false, 0.0);
  const Batch half = make_batch(examples, false, 0.5);
  const Batch search_only = make_batch(examples, false, 1.0);
  const auto row = [](const Batch& b, int k) { return double(b.wdl[0][k].item<float>()); };
  EXPECT_DOUBLE_EQ(row(result_only, 2), 1.0);
  EXPECT_NEAR(row(search_only, 0), 0.6, 1e-6);
  EXPECT_NEAR(row(search_only, 1), 0.2, 1e-6);
  EXPECT_NEAR(row(search_only, 2), 0.2, 1e-6);
  EXPECT_NEAR(row(half, 0), 0.3, 1e-6);
  EXPECT_NEAR(row(half, 1), 0.1, 1e-6);
  EXPECT_NEAR(row(half, 2), 0.6, 1e-6);
  // The value loss is the cross-entropy against that soft target: with logits
  // equal to the target's log, it is the target's entropy.
  auto logits = torch::log(half.wdl.clamp_min(1e-12));
  const double entropy = -(0.3 * std::log(0.3) + 0.1 * std::log(0.1) + 0.6 * std::log(0.6));
  EXPECT_NEAR(compute_losses(torch::zeros({1, nn::kPolicySize}), logits, half).value.item<double>(),
              entropy, 1e-5);
  // Out-of-range search values are clamped into a distribution.
  examples[0].root_value = 1.5f;
  examples[0].root_draw = -0.1f;
  const Batch clamped = make_batch(examples, false, 1.0);
  EXPECT_NEAR(clamped.wdl.sum().item<double>(), 1.0, 1e-6);
  EXPECT_GE(clamped.wdl.min().item<double>(), 0.0);
  TrainerOptions bad = tiny_options();
  bad.value_q_ratio = 1.5;
  EXPECT_FALSE(bad.validate().ok());
}

// The policy loss over the legal moves only: with uniform logits it is
// log(number of legal moves), not log(4672), and the illegal outputs get no
// gradient at all.
TEST(Losses, PolicyLossIsASoftmaxOverTheLegalMoves) {
  const Example& e = small_data()[0];
  ASSERT_FALSE(e.legal.empty());
  std::vector<Example> examples(1, e);
  const Batch masked = make_batch(examples, false, 0.0, true);
  ASSERT_TRUE(masked.legal.defined());
  EXPECT_EQ(masked.legal.sum().item<std::int64_t>(), std::int64_t(e.legal.size()));
  for (const auto& [index, p] : e.policy) EXPECT_TRUE(masked.legal[0][index].item<bool>());
  auto policy = torch::zeros({1, nn::kPolicySize}, torch::requires_grad());
  const auto wdl = torch::zeros({1, 3});
  LossTerms l = compute_losses(policy, wdl, masked);
  EXPECT_NEAR(l.policy.item<double>(), std::log(double(e.legal.size())), 1e-4);
  l.policy.backward();
  const auto illegal = masked.legal[0].logical_not();
  EXPECT_EQ(policy.grad()[0].masked_select(illegal).abs().max().item<float>(), 0.0f);
  // Unmasked (the old loss): log(4672), and the illegal outputs are pushed down.
  const Batch plain = make_batch(examples, false, 0.0, false);
  EXPECT_FALSE(plain.legal.defined());
  EXPECT_NEAR(compute_losses(torch::zeros({1, nn::kPolicySize}), wdl, plain).policy.item<double>(),
              std::log(double(nn::kPolicySize)), 1e-4);
  // Slices and copies keep the mask with their rows.
  EXPECT_TRUE(masked.slice(0, 1).legal.defined());
}

// The material head's target is tanh(lead / 4) where known; its loss is the
// mean squared error over those positions only.
TEST(Losses, MaterialLossOverThePositionsWithATarget) {
  std::vector<Example> examples(3, small_data()[0]);
  examples[0].material = 3;  // a minor piece up
  examples[0].has_material = true;
  examples[1].material = -9;
  examples[1].has_material = true;
  examples[2].material = 5;
  examples[2].has_material = false;  // unknown: no loss
  const Batch b = make_batch(examples);
  EXPECT_NEAR(b.material[0].item<float>(), std::tanh(3 / 4.0), 1e-6);
  EXPECT_NEAR(b.material[1].item<float>(), std::tanh(-9 / 4.0), 1e-6);
  EXPECT_EQ(b.material_weight[2].item<float>(), 0.0f);
  const auto policy = torch::zeros({3, nn::kPolicySize});
  const auto wdl = torch::zeros({3, 3});
  // Without the head's output: no material loss.
  EXPECT_EQ(compute_losses(policy, wdl, b).material.item<float>(), 0.0f);
  // Predicting 0: the mean of the two known targets' squares.
  const double expected = (std::pow(std::tanh(0.75), 2) + std::pow(std::tanh(2.25), 2)) / 2;
  EXPECT_NEAR(compute_losses(policy, wdl, b, torch::zeros({3})).material.item<double>(), expected,
              1e-5);
  // Predicting the targets exactly, whatever is said for the unknown one.
  auto exact = b.material.clone();
  exact[2] = 0.9f;
  EXPECT_NEAR(compute_losses(policy, wdl, b, exact).material.item<double>(), 0.0, 1e-9);
  // A slice keeps its rows' targets.
  EXPECT_NEAR(b.slice(1, 1).material[0].item<float>(), std::tanh(-9 / 4.0), 1e-6);
  TrainerOptions bad = tiny_options();
  bad.material_loss_weight = -1;
  EXPECT_FALSE(bad.validate().ok());
}

// Item 10: on a fixed small data set of self-play records, the loss falls.
TEST(Trainer, LossFallsOnAFixedSetOfSelfPlayRecords) {
  DatasetSource source(small_data(), 3);
  TrainerOptions o = tiny_options();
  o.steps = 60;
  o.optimizer = OptimizerKind::kAdamW;
  o.lr = 3e-3;
  Quiet cb;
  std::atomic<bool> stop{false};
  auto summary = train(o, {}, source, cb, stop);
  ASSERT_TRUE(summary.ok()) << summary.error();
  ASSERT_EQ(cb.reports.size(), 60u);
  auto mean = [&](std::size_t from, std::size_t to, auto field) {
    double s = 0;
    for (std::size_t i = from; i < to; ++i) s += cb.reports[i].*field;
    return s / double(to - from);
  };
  const double first = mean(0, 5, &StepReport::total_loss);
  const double last = mean(55, 60, &StepReport::total_loss);
  std::printf("%zu examples: total loss %.3f -> %.3f, policy %.3f -> %.3f, value %.3f -> %.3f\n",
              small_data().size(), first, last, mean(0, 5, &StepReport::policy_loss),
              mean(55, 60, &StepReport::policy_loss), mean(0, 5, &StepReport::value_loss),
              mean(55, 60, &StepReport::value_loss));
  EXPECT_LT(last, 0.7 * first);
  EXPECT_LT(mean(55, 60, &StepReport::policy_loss), mean(0, 5, &StepReport::policy_loss));
  EXPECT_LT(mean(55, 60, &StepReport::value_loss), mean(0, 5, &StepReport::value_loss));
  // The material head (on by default) learns its target too.
  EXPECT_GT(mean(0, 5, &StepReport::material_loss), 0.0);
  EXPECT_LT(mean(55, 60, &StepReport::material_loss), mean(0, 5, &StepReport::material_loss));
  EXPECT_EQ(summary->samples_total, 60u * 16u);
}

TEST(Trainer, ResumedRunEndsBitIdenticalToAStraightOne) {
  TempDir straight_dir("straight"), resumed_dir("resumed");
  TrainerOptions o = tiny_options();
  o.accumulate = 2;
  o.clip_norm = 5;
  o.schedule = ScheduleKind::kCosine;
  o.warmup_steps = 2;
  o.schedule_steps = 8;  // not --steps, which differs between the two halves
  o.steps = 8;
  o.checkpoint_every = 3;
  std::atomic<bool> stop{false};
  o.checkpoint_dir = straight_dir.path.string();
  DatasetSource a(small_data(), 5);
  Quiet cb_a;
  auto straight = train(o, {}, a, cb_a, stop).value_or_throw();
  EXPECT_EQ(straight.end_step, 8);
  EXPECT_FALSE(straight.resumed);

  o.checkpoint_dir = resumed_dir.path.string();
  o.steps = 5;
  DatasetSource b(small_data(), 5);
  Quiet cb_b;
  auto first = train(o, {}, b, cb_b, stop).value_or_throw();
  EXPECT_EQ(first.end_step, 5);
  EXPECT_EQ(first.last_checkpoint, checkpoint_path(o.checkpoint_dir, 5));
  o.steps = 8;
  Quiet cb_c;
  auto second = train(o, {}, b, cb_c, stop).value_or_throw();
  EXPECT_TRUE(second.resumed);
  EXPECT_EQ(second.start_step, 5);
  EXPECT_EQ(second.end_step, 8);
  EXPECT_EQ(second.samples_total, 8u * 16u);
  EXPECT_EQ(second.weights_hash, straight.weights_hash);
  // The learning rate picked up the schedule where it was.
  ASSERT_EQ(cb_c.reports.size(), 3u);
  EXPECT_DOUBLE_EQ(cb_c.reports[0].lr, cb_a.reports[5].lr);
  auto ckpt = nn::load_checkpoint_file(checkpoint_path(o.checkpoint_dir, 8)).value_or_throw();
  EXPECT_EQ(ckpt.info.step, 8);
  EXPECT_EQ(trainer_state(ckpt).value_or_throw().step, 8);
  EXPECT_EQ(trainer_state(ckpt).value_or_throw().optimizer, "sgd");
  // keep_checkpoints 3: steps 3 and 5 and 6 and 8 were written, 3 is gone.
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(o.checkpoint_dir, 3)));
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(o.checkpoint_dir, 5)));

  // Another optimizer or architecture is refused, naming the mismatch.
  TrainerOptions adam = o;
  adam.optimizer = OptimizerKind::kAdamW;
  adam.steps = 9;
  auto refused = train(adam, {}, b, cb_c, stop);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("sgd"), std::string::npos) << refused.error();
  TrainerOptions bigger = o;
  bigger.network.filters = 32;
  bigger.steps = 9;
  auto wrong_net = train(bigger, {}, b, cb_c, stop);
  ASSERT_FALSE(wrong_net.ok());
  EXPECT_NE(wrong_net.error().find("2x32"), std::string::npos) << wrong_net.error();
}

TEST(Trainer, StopWritesACheckpointAtTheStepReached) {
  TempDir dir("stop");
  TrainerOptions o = tiny_options();
  o.checkpoint_dir = dir.path.string();
  o.checkpoint_every = 1000;
  std::atomic<bool> stop{false};
  DatasetSource source(small_data(), 1);
  Quiet cb;
  cb.on_step = [&](const StepReport& r) {
    if (r.step == 3) stop = true;
  };
  auto s = train(o, {}, source, cb, stop).value_or_throw();
  EXPECT_EQ(s.end_step, 3);
  EXPECT_EQ(s.last_checkpoint, checkpoint_path(o.checkpoint_dir, 3));
  EXPECT_TRUE(std::filesystem::exists(s.last_checkpoint));
}

// A source that grows like a replay window: `stored` positions, not fixed.
class GrowingSource : public ExampleSource {
 public:
  explicit GrowingSource(std::uint64_t stored) : data_(small_data(), 9), stored_(stored) {}
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override {
    return data_.fetch(step, rank, world, count);
  }
  Result<DataStatus> status() override {
    std::lock_guard lock(mu_);
    ++status_calls;
    return DataStatus{stored_, stored_, false};
  }
  void set_stored(std::uint64_t n) {
    std::lock_guard lock(mu_);
    stored_ = n;
  }
  int status_calls = 0;

 private:
  DatasetSource data_;
  std::mutex mu_;
  std::uint64_t stored_;
};

TEST(Trainer, MinimumWindowHoldsTrainingBack) {
  GrowingSource source(100);
  TrainerOptions o = tiny_options();
  o.min_window = 1000;
  o.steps = 2;
  std::atomic<bool> stop{false};
  Quiet cb;
  std::vector<std::string> pauses;
  cb.on_pause = [&](bool paused, const std::string& why) {
    pauses.push_back(why);
    if (paused) source.set_stored(1000);  // self-play catches up
  };
  auto s = train(o, {}, source, cb, stop).value_or_throw();
  EXPECT_EQ(s.end_step, 2);
  ASSERT_EQ(pauses.size(), 2u);  // paused, then resumed
  EXPECT_NE(pauses[0].find("min_window 1000"), std::string::npos) << pauses[0];
  EXPECT_EQ(pauses[1], "");
}

TEST(Trainer, ReuseCapPausesUntilSelfPlayCatchesUp) {
  // 64 positions stored, reuse 2: 128 samples = 8 steps of 16, then a pause.
  GrowingSource source(64);
  TrainerOptions o = tiny_options();
  o.max_reuse = 2;
  std::atomic<bool> stop{false};
  Quiet cb;
  std::int64_t paused_at = -1;
  cb.on_step = [&](const StepReport& r) { cb.reports.push_back(r); };
  cb.on_pause = [&](bool paused, const std::string& why) {
    if (paused && paused_at < 0) {
      paused_at = cb.reports.empty() ? 0 : cb.reports.back().step;
      EXPECT_NE(why.find("max_reuse"), std::string::npos) << why;
      source.set_stored(96);  // 64 more samples allowed: 4 more steps
    } else if (paused) {
      stop = true;
    }
  };
  auto s = train(o, {}, source, cb, stop).value_or_throw();
  EXPECT_EQ(paused_at, 8);
  EXPECT_EQ(s.end_step, 12);
  // sample_reuse: samples trained / positions stored, never above the cap.
  ASSERT_EQ(cb.reports.size(), 12u);
  EXPECT_DOUBLE_EQ(cb.reports[0].sample_reuse, 16.0 / 64.0);
  EXPECT_DOUBLE_EQ(cb.reports[7].sample_reuse, 2.0);
  EXPECT_DOUBLE_EQ(cb.reports[11].sample_reuse, 192.0 / 96.0);
  for (const StepReport& r : cb.reports) EXPECT_LE(r.sample_reuse, 2.0) << r.step;
}

}  // namespace
}  // namespace chessrl::train
