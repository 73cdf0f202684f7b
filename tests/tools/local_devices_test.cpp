// `chessrl local --device/--gpus/--train-gpus`: which child gets which device,
// and the refusals that name the problem (tools/chessrl/local/devices.h). No GPU needed:
// the plan is what the children are started with.
#include "local/devices.h"

#include <gtest/gtest.h>

namespace chessrl::tool {
namespace {

DevicePlan plan(LocalOptions o, bool selfplay_given = false, bool trainers_given = false) {
  auto p = plan_devices(o, selfplay_given, trainers_given);
  if (!p.ok()) throw std::runtime_error(p.error());
  return *p;
}

std::string refusal(LocalOptions o, bool selfplay_given = false, bool trainers_given = false) {
  auto p = plan_devices(o, selfplay_given, trainers_given);
  return p.ok() ? std::string("(accepted)") : p.error();
}

TEST(LocalDevices, WithoutListsEveryChildKeepsItsDefaultOrTheGivenDevice) {
  LocalOptions o;
  o.selfplay = 2;
  o.trainers = 2;
  DevicePlan p = plan(o);
  ASSERT_EQ(p.selfplay.size(), 2u);
  ASSERT_EQ(p.trainers.size(), 2u);
  EXPECT_TRUE(device_args(p.selfplay[0]).empty());  // the binary's own default
  EXPECT_TRUE(p.trainers[1].visible.empty());
  o.device = "cpu";
  p = plan(o);
  EXPECT_EQ(device_args(p.trainers[0]), (std::vector<std::string>{"--device", "cpu"}));
  EXPECT_EQ(device_args(p.evaluator), (std::vector<std::string>{"--device", "cpu"}));
  std::vector<std::pair<std::string, std::string>> env;
  add_device_env(p.selfplay[1], env);
  EXPECT_TRUE(env.empty());
}

TEST(LocalDevices, OneSelfplayProcessPerGpuEachSeeingItsOwn) {
  LocalOptions o;
  o.gpus = "0,1,2,3";
  const DevicePlan p = plan(o);
  ASSERT_EQ(p.selfplay.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.selfplay[i].device, "cuda");
    EXPECT_EQ(p.selfplay[i].visible, std::to_string(i));
  }
  // One rank (the default) on the first GPU; the evaluator on the last.
  ASSERT_EQ(p.trainers.size(), 1u);
  EXPECT_EQ(p.trainers[0].visible, "0");
  EXPECT_EQ(p.evaluator.visible, "3");
  std::vector<std::pair<std::string, std::string>> env;
  add_device_env(p.selfplay[2], env);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "2"}));
}

TEST(LocalDevices, TrainerRanksOnTheTrainingGpusOneEach) {
  LocalOptions o;
  o.gpus = "0,1";
  o.train_gpus = "2,3,4";
  const DevicePlan p = plan(o);
  ASSERT_EQ(p.trainers.size(), 3u);  // sets --trainers
  EXPECT_EQ(p.trainers[0].visible, "2");
  EXPECT_EQ(p.trainers[2].visible, "4");
  EXPECT_EQ(p.trainers[1].device, "cuda");
  EXPECT_EQ(p.selfplay.size(), 2u);
  // Training GPUs alone: self-play as --selfplay says, on its default device.
  LocalOptions t;
  t.selfplay = 3;
  t.train_gpus = "1";
  const DevicePlan q = plan(t);
  EXPECT_EQ(q.selfplay.size(), 3u);
  EXPECT_TRUE(q.selfplay[0].visible.empty());
  EXPECT_EQ(q.trainers[0].visible, "1");
  EXPECT_EQ(q.evaluator.visible, "1");
  // Two ranks on --gpus take its first two GPUs.
  LocalOptions two;
  two.gpus = "5,6,7";
  two.trainers = 2;
  const DevicePlan r = plan(two, false, true);
  EXPECT_EQ(r.trainers[0].visible, "5");
  EXPECT_EQ(r.trainers[1].visible, "6");
}

TEST(LocalDevices, RefusalsNameTheProblem) {
  LocalOptions o;
  o.train_gpus = "1,1";
  EXPECT_NE(refusal(o).find("GPU 1 is listed twice (one trainer rank per GPU: NCCL refuses two "
                            "ranks on one GPU)"),
            std::string::npos)
      << refusal(o);
  o = LocalOptions{};
  o.gpus = "0,x";
  EXPECT_NE(refusal(o).find("--gpus 0,x: 'x' is not a GPU index"), std::string::npos) << refusal(o);
  o.gpus = "0,,1";
  EXPECT_NE(refusal(o).find("'' is not a GPU index"), std::string::npos) << refusal(o);
  o.gpus = "2048";
  EXPECT_NE(refusal(o).find("above"), std::string::npos) << refusal(o);
  o = LocalOptions{};
  o.gpus = "0,1";
  o.selfplay = 3;
  EXPECT_NE(refusal(o, true).find("--selfplay 3 and --gpus 0,1 disagree"), std::string::npos)
      << refusal(o, true);
  o = LocalOptions{};
  o.train_gpus = "0,1";
  o.trainers = 3;
  EXPECT_NE(refusal(o, false, true).find("--trainers 3 and --train-gpus 0,1 disagree"),
            std::string::npos)
      << refusal(o, false, true);
  o = LocalOptions{};
  o.gpus = "0";
  o.trainers = 2;
  EXPECT_NE(refusal(o, false, true).find("more ranks than GPUs"), std::string::npos)
      << refusal(o, false, true);
  o = LocalOptions{};
  o.gpus = "0";
  o.device = "cpu";
  EXPECT_NE(refusal(o).find("--device cpu and --gpus"), std::string::npos) << refusal(o);
}

}  // namespace
}  // namespace chessrl::tool
