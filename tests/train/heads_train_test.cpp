// The training-only heads in the trainer: the reply and moves-left targets in
// a batch, their losses and masks, the loss weights, each loss falling on a
// tiny fixed data set, the progress line, and checkpoints with and without
// the heads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "batch.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/train/trainer.h"
#include "records.h"

namespace chessrl::train {
namespace {

const std::vector<Example>& data() {
  static const std::vector<Example> examples = [] {
    std::vector<Example> out;
    for (const auto& r : testing::play_records(2))
      for (auto& e : examples_from_record(r).value_or_throw()) out.push_back(std::move(e));
    return out;
  }();
  return examples;
}

TrainerOptions tiny_options(bool heads) {
  TrainerOptions o;
  o.network = {.blocks = 2, .filters = 16, .se_ratio = 0, .value_channels = 8, .value_hidden = 32};
  o.network.reply_head = heads ? 1 : 0;
  o.network.moves_left_head = heads ? 1 : 0;
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

struct Quiet : TrainerCallbacks {
  std::vector<StepReport> reports;
  std::vector<std::string> lines;
  Quiet() {
    on_step = [this](const StepReport& r) { reports.push_back(r); };
    log = [this](const std::string& l) { lines.push_back(l); };
  }
};

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("chessrl-heads-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(HeadLosses, TargetsMasksAndValues) {
  std::vector<Example> examples(3, data()[0]);
  examples[0].reply = 100;
  examples[0].plies_left = 40;
  examples[1].reply = -1;  // the game ended: no reply
  examples[1].plies_left = 5;
  examples[2].reply = nn::kPolicySize - 1;
  examples[2].plies_left = -1;  // unknown
  const Batch b = make_batch(examples);
  EXPECT_EQ(b.reply[0].item<std::int64_t>(), 100);
  EXPECT_EQ(b.reply[2].item<std::int64_t>(), nn::kPolicySize - 1);
  EXPECT_TRUE(torch::equal(b.reply_weight, torch::tensor({1.0f, 0.0f, 1.0f})));
  EXPECT_NEAR(b.moves_left[0].item<float>(), 40 / nn::kMovesLeftScale, 1e-6);
  EXPECT_TRUE(torch::equal(b.moves_left_weight, torch::tensor({1.0f, 1.0f, 0.0f})));

  nn::NetworkOutput out{torch::zeros({3, nn::kPolicySize}), torch::zeros({3, 3}), torch::Tensor(),
                        torch::zeros({3, nn::kPolicySize}), torch::zeros({3})};
  LossTerms l = compute_losses(out, b);
  // Uniform reply logits: log(4672) over the two rows with a reply.
  EXPECT_NEAR(l.reply.item<double>(), std::log(double(nn::kPolicySize)), 1e-4);
  // Predicting 0 plies left: Huber (delta 0.5) of 2.0 and 0.25, the unknown
  // third not counted: (0.5 * (2 - 0.25) + 0.5 * 0.25^2) / 2.
  EXPECT_NEAR(l.moves_left.item<double>(), (0.875 + 0.03125) / 2, 1e-6);
  // Confident and right on the rows with targets, whatever the masked row says.
  out.reply[0][100] = 30;
  out.reply[1][7] = 30;
  out.reply[2][nn::kPolicySize - 1] = 30;
  out.moves_left = torch::tensor({2.0f, 0.25f, 9.0f});
  l = compute_losses(out, b);
  EXPECT_LT(l.reply.item<double>(), 1e-6);
  EXPECT_LT(l.moves_left.item<double>(), 1e-9);
  // Without the heads' outputs: 0.
  l = compute_losses(
      nn::NetworkOutput{out.policy, out.wdl, torch::Tensor(), torch::Tensor(), torch::Tensor()}, b);
  EXPECT_EQ(l.reply.item<float>(), 0.0f);
  EXPECT_EQ(l.moves_left.item<float>(), 0.0f);
  // No row with a target: 0, and still a function of the output (in the graph).
  Example no_targets = data()[0];
  no_targets.reply = -1;
  no_targets.plies_left = -1;
  const Batch none = make_batch(std::vector<Example>(2, no_targets));
  torch::Tensor reply = torch::zeros({2, nn::kPolicySize}, torch::requires_grad());
  l = compute_losses(nn::NetworkOutput{torch::zeros({2, nn::kPolicySize}), torch::zeros({2, 3}),
                                       torch::Tensor(), reply, torch::Tensor()},
                     none);
  EXPECT_EQ(l.reply.item<float>(), 0.0f);
  EXPECT_TRUE(l.reply.requires_grad());
  // A slice keeps its rows' targets.
  EXPECT_EQ(b.slice(2, 1).reply[0].item<std::int64_t>(), nn::kPolicySize - 1);
  EXPECT_EQ(b.slice(1, 1).moves_left_weight[0].item<float>(), 1.0f);

  TrainerOptions bad = tiny_options(true);
  bad.reply_loss_weight = -1;
  EXPECT_FALSE(bad.validate().ok());
  bad = tiny_options(true);
  bad.moves_left_loss_weight = std::nan("");
  EXPECT_FALSE(bad.validate().ok());
}

// On a tiny fixed set, a few dozen steps teach both heads their targets: each
// loss falls, and the progress line shows them.
TEST(HeadTraining, EachNewLossFallsOnATinyFixedSet) {
  ASSERT_GE(data().size(), 16u);
  std::vector<Example> tiny(data().begin(), data().begin() + 16);
  DatasetSource source(tiny, 3);
  TrainerOptions o = tiny_options(true);
  o.steps = 40;
  o.optimizer = OptimizerKind::kAdamW;
  o.lr = 3e-3;
  o.log_every = 20;
  Quiet cb;
  std::atomic<bool> stop{false};
  auto summary = train(o, {}, source, cb, stop);
  ASSERT_TRUE(summary.ok()) << summary.error();
  ASSERT_EQ(cb.reports.size(), 40u);
  auto mean = [&](std::size_t from, std::size_t to, double StepReport::*field) {
    double s = 0;
    for (std::size_t i = from; i < to; ++i) s += cb.reports[i].*field;
    return s / double(to - from);
  };
  std::printf("reply loss %.3f -> %.3f, moves-left loss %.3f -> %.3f\n",
              mean(0, 5, &StepReport::reply_loss), mean(35, 40, &StepReport::reply_loss),
              mean(0, 5, &StepReport::moves_left_loss), mean(35, 40, &StepReport::moves_left_loss));
  EXPECT_GT(mean(0, 5, &StepReport::reply_loss), 0.0);
  EXPECT_LT(mean(35, 40, &StepReport::reply_loss), 0.8 * mean(0, 5, &StepReport::reply_loss));
  EXPECT_GT(mean(0, 5, &StepReport::moves_left_loss), 0.0);
  EXPECT_LT(mean(35, 40, &StepReport::moves_left_loss),
            0.8 * mean(0, 5, &StepReport::moves_left_loss));
  // The total counts them with their weights.
  const StepReport& r = cb.reports.back();
  EXPECT_NEAR(r.total_loss,
              r.policy_loss + r.value_loss + r.material_loss + 0.15 * r.reply_loss +
                  0.1 * r.moves_left_loss,
              1e-9);
  std::vector<std::string> progress;
  for (const std::string& line : cb.lines)
    if (line.rfind("step ", 0) == 0) progress.push_back(line);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_NE(progress[0].find(", reply "), std::string::npos) << progress[0];
  EXPECT_NE(progress[0].find(", moves left "), std::string::npos) << progress[0];
}

// A network without the heads trains as before (its losses 0, its progress
// line without them) and resumes from its checkpoints; one with them keeps
// them through a checkpoint; the two do not load each other's, naming why.
TEST(HeadTraining, CheckpointsWithAndWithoutTheHeads) {
  TempDir plain_dir("plain"), heads_dir("heads");
  std::atomic<bool> stop{false};
  DatasetSource source(data(), 5);

  TrainerOptions plain = tiny_options(false);
  plain.checkpoint_dir = plain_dir.path.string();
  plain.steps = 2;
  plain.log_every = 1;
  Quiet a;
  ASSERT_TRUE(train(plain, {}, source, a, stop).ok());
  EXPECT_EQ(a.reports.back().reply_loss, 0.0);
  EXPECT_EQ(a.reports.back().moves_left_loss, 0.0);
  bool saw_progress = false;
  for (const std::string& line : a.lines)
    if (line.rfind("step ", 0) == 0) {
      saw_progress = true;
      EXPECT_EQ(line.find("reply"), std::string::npos) << line;
    }
  EXPECT_TRUE(saw_progress);
  plain.steps = 4;
  Quiet b;
  auto resumed = train(plain, {}, source, b, stop);
  ASSERT_TRUE(resumed.ok()) << resumed.error();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->end_step, 4);

  TrainerOptions heads = tiny_options(true);
  heads.checkpoint_dir = plain_dir.path.string();
  heads.steps = 6;
  Quiet c;
  auto refused = train(heads, {}, source, c, stop);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("reply_head 0 vs 1"), std::string::npos) << refused.error();

  heads.checkpoint_dir = heads_dir.path.string();
  heads.steps = 2;
  Quiet d;
  ASSERT_TRUE(train(heads, {}, source, d, stop).ok());
  auto ckpt = nn::load_checkpoint_file(checkpoint_path(heads.checkpoint_dir, 2)).value_or_throw();
  EXPECT_EQ(ckpt.info.config, heads.network);
  EXPECT_EQ(ckpt.info.config.name(), "2x16-reply-mlh");
  heads.steps = 3;
  Quiet e;
  auto again = train(heads, {}, source, e, stop);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->resumed);
  EXPECT_GT(e.reports.back().reply_loss, 0.0);
}

}  // namespace
}  // namespace chessrl::train
