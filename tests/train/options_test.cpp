#include <gtest/gtest.h>

#include <map>

#include "chessrl/train/distributed.h"
#include "chessrl/train/trainer.h"

namespace chessrl::train {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Distributed, HostnameOrdinal) {
  EXPECT_EQ(hostname_ordinal("chess-rl-trainer-2").value_or_throw(), 2);
  EXPECT_EQ(hostname_ordinal("trainer-0").value_or_throw(), 0);
  EXPECT_FALSE(hostname_ordinal("laptop").ok());
  EXPECT_FALSE(hostname_ordinal("trainer-").ok());
  EXPECT_FALSE(hostname_ordinal("trainer-x1").ok());
}

TEST(Distributed, TorchrunVariablesWin) {
  auto d = distributed_from_env({}, env_of({{"RANK", "1"}, {"WORLD_SIZE", "4"},
                                           {"MASTER_ADDR", "chess-rl-trainer-0.trainer"},
                                           {"MASTER_PORT", "29600"}}),
                                "chess-rl-trainer-3")
               .value_or_throw();
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.master_addr, "chess-rl-trainer-0.trainer");
  EXPECT_EQ(d.master_port, 29600);
}

TEST(Distributed, RankFromTheHostnameWhenRankIsMissing) {
  auto d = distributed_from_env({}, env_of({{"WORLD_SIZE", "4"}}), "chess-rl-trainer-3").value_or_throw();
  EXPECT_EQ(d.rank, 3);
  // A world of one needs no rank at all, whatever the hostname.
  auto one = distributed_from_env({}, env_of({}), "laptop").value_or_throw();
  EXPECT_EQ(one.rank, 0);
  EXPECT_EQ(one.world_size, 1);
}

TEST(Distributed, BadValuesAreNamed) {
  auto expect_error = [](std::map<std::string, std::string> vars, const std::string& host,
                         const std::string& needle) {
    auto d = distributed_from_env({}, env_of(vars), host);
    ASSERT_FALSE(d.ok()) << needle;
    EXPECT_NE(d.error().find(needle), std::string::npos) << d.error();
  };
  expect_error({{"RANK", "5"}, {"WORLD_SIZE", "2"}}, "h", "RANK=5: rank 5 is outside [0, 2)");
  expect_error({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "h", "RANK='x' is not an integer");
  expect_error({{"WORLD_SIZE", "0"}}, "h", "WORLD_SIZE=0");
  expect_error({{"WORLD_SIZE", "3"}}, "laptop", "RANK is not set");
  expect_error({{"MASTER_PORT", "70000"}}, "h", "MASTER_PORT=70000");
  expect_error({{"WORLD_SIZE", "3"}}, "chess-rl-trainer-7", "hostname 'chess-rl-trainer-7'");
}

TEST(Distributed, MasterPortZeroIsForRankZeroOnly) {
  // Rank 0 binds a port the kernel picks.
  auto d = distributed_from_env({}, env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                           {"MASTER_PORT", "0"}}), "h");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->master_port, 0);
  // Any other rank must be told rank 0's port, whether by MASTER_PORT ...
  auto one = distributed_from_env({}, env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"},
                                             {"MASTER_PORT", "0"}}), "h");
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().find("MASTER_PORT=0"), std::string::npos) << one.error();
  EXPECT_NE(one.error().find("rank 0 only"), std::string::npos) << one.error();
  // ... or by --master-port (`base`).
  DistributedConfig base;
  base.master_port = 0;
  auto flag = distributed_from_env(base, env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), "h");
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(flag.error().find("--master-port 0"), std::string::npos) << flag.error();
  // A world of one never uses the port.
  EXPECT_TRUE(distributed_from_env(base, env_of({}), "h").ok());
}

// One default: TrainerOptions{} holds the learning settings chessrl-trainer
// and every launcher train with (the binary takes them from here).
TEST(TrainerOptions, DefaultsAreTheLaunchersLearningSettings) {
  const TrainerOptions o;
  EXPECT_EQ(o.optimizer, OptimizerKind::kAdamW);
  EXPECT_DOUBLE_EQ(o.lr, 1e-3);
  EXPECT_DOUBLE_EQ(o.value_q_ratio, 0.3);
  EXPECT_STREQ(optimizer_name(o.optimizer), "adamw");
  EXPECT_STREQ(schedule_name(o.schedule), "constant");
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdamW})
    EXPECT_EQ(parse_optimizer(optimizer_name(kind)).value_or_throw(), kind);
  for (const auto kind : {ScheduleKind::kConstant, ScheduleKind::kCosine, ScheduleKind::kStep})
    EXPECT_EQ(parse_schedule(schedule_name(kind)).value_or_throw(), kind);
}

TEST(TrainerOptions, DefaultsAreValidAndBadFieldsAreNamed) {
  TrainerOptions o;
  EXPECT_TRUE(o.validate().ok());
  auto expect_bad = [](auto mutate, const std::string& field) {
    TrainerOptions t;
    mutate(t);
    auto r = t.validate();
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.error().find(field), std::string::npos) << r.error();
  };
  expect_bad([](TrainerOptions& t) { t.batch_size = 0; }, "batch_size");
  expect_bad([](TrainerOptions& t) { t.accumulate = 3; }, "accumulate");
  expect_bad([](TrainerOptions& t) { t.lr = 0; }, "lr");
  expect_bad([](TrainerOptions& t) { t.momentum = 1; }, "momentum");
  expect_bad([](TrainerOptions& t) { t.device = "tpu"; }, "device");
  expect_bad([](TrainerOptions& t) { t.max_reuse = -1; }, "max_reuse");
  expect_bad([](TrainerOptions& t) { t.network.blocks = 0; }, "network");
  expect_bad([](TrainerOptions& t) { t.checkpoint_every = 0; }, "checkpoint_every");
  // Item 6: cosine over no length was silently constant; refused, naming both.
  expect_bad([](TrainerOptions& t) { t.schedule = ScheduleKind::kCosine; }, "steps is 0");
  expect_bad([](TrainerOptions& t) { t.schedule = ScheduleKind::kCosine; }, "schedule_steps");
  TrainerOptions cosine;
  cosine.schedule = ScheduleKind::kCosine;
  cosine.schedule_steps = 100;  // until stopped, decaying over 100 steps: fine
  EXPECT_TRUE(cosine.validate().ok());
  // Item 5: one checkpoint leaves no fallback for a corrupt one.
  expect_bad([](TrainerOptions& t) { t.keep_checkpoints = 1; }, "keep_checkpoints");
  EXPECT_FALSE(parse_optimizer("adam").ok());
  EXPECT_EQ(parse_optimizer("adamw").value_or_throw(), OptimizerKind::kAdamW);
  EXPECT_EQ(parse_schedule("cosine").value_or_throw(), ScheduleKind::kCosine);
  EXPECT_FALSE(parse_schedule("linear").ok());
}

TEST(TrainerOptions, LearningRateSchedules) {
  TrainerOptions o;
  o.lr = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 12345), 0.1);
  o.warmup_steps = 10;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.01);
  EXPECT_DOUBLE_EQ(learning_rate(o, 4), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 0.1);
  o.schedule = ScheduleKind::kCosine;
  o.steps = 110;
  o.lr_min_factor = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 0.1);
  EXPECT_NEAR(learning_rate(o, 60), 0.1 * (0.1 + 0.9 * 0.5), 1e-12);
  EXPECT_NEAR(learning_rate(o, 110), 0.01, 1e-12);
  EXPECT_NEAR(learning_rate(o, 500), 0.01, 1e-12);
  o.schedule = ScheduleKind::kStep;
  o.warmup_steps = 0;
  o.decay_every = 100;
  o.decay_factor = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate(o, 99), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 100), 0.05);
  EXPECT_DOUBLE_EQ(learning_rate(o, 250), 0.025);
}

TEST(Checkpoints, PathsSortByStep) {
  EXPECT_EQ(checkpoint_path("/d", 42), "/d/ckpt-0000000042.chrl");
  EXPECT_EQ(latest_checkpoint("/nonexistent/chessrl").value_or_throw(), "");
}

}  // namespace
}  // namespace chessrl::train
