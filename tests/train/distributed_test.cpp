// distributed_from_env under the launchers and operators that start a rank:
// torchrun, a Kubeflow PyTorchJob (RANK, WORLD_SIZE, MASTER_* per pod, PET_*
// beside them), a Kubeflow TrainJob (PET_* only), a StatefulSet (the hostname).
// The environments are the ones those set (docs/kubernetes.md, "Kubeflow:
// TrainJob or PyTorchJob").
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "chessrl/train/distributed.h"

namespace chessrl::train {
namespace {

using Vars = std::map<std::string, std::string>;

GetEnv env_of(Vars vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

DistributedConfig ok(const Vars& vars, const std::string& host = "h", DistributedConfig base = {}) {
  auto d = distributed_from_env(std::move(base), env_of(vars), host);
  EXPECT_TRUE(d.ok()) << d.error();
  return d.ok() ? *d : DistributedConfig{};
}

// The error, which must contain every one of `needles`.
void refused(const Vars& vars, std::initializer_list<std::string> needles,
             const std::string& host = "h") {
  auto d = distributed_from_env({}, env_of(vars), host);
  ASSERT_FALSE(d.ok()) << "accepted; wanted: " << *needles.begin();
  for (const auto& n : needles) EXPECT_NE(d.error().find(n), std::string::npos) << d.error();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DistributedEnv, PyTorchJobPodUsesTheOperatorsPerPodValues) {
  // A Worker pod of a PyTorchJob with Master x1 + Worker x2, nprocPerNode "1".
  auto d = ok({{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "train-master-0"},
               {"MASTER_PORT", "29500"}, {"PET_NNODES", "3"}, {"PET_NPROC_PER_NODE", "1"},
               {"PET_NODE_RANK", "2"}},
              "train-worker-1");
  EXPECT_EQ(d.rank, 2);  // not the hostname's 1
  EXPECT_EQ(d.world_size, 3);
  EXPECT_EQ(d.master_addr, "train-master-0");
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_TRUE(has(d.origin, "rank 2 (RANK=2) of 3 (WORLD_SIZE=3)")) << d.origin;
  EXPECT_TRUE(has(d.origin, "train-master-0:29500 (MASTER_ADDR, MASTER_PORT)")) << d.origin;
}

TEST(DistributedEnv, TrainJobNodeUsesThePetValuesOverHostnameAndFlags) {
  DistributedConfig flags;
  flags.master_addr = "10.9.9.9";
  flags.master_port = 1234;
  // JobSet pod names end in the pod's index, which here disagrees on purpose.
  auto d = ok({{"PET_NNODES", "4"}, {"PET_NPROC_PER_NODE", "1"}, {"PET_NODE_RANK", "3"},
               {"PET_MASTER_ADDR", "train-node-0-0.train"}, {"PET_MASTER_PORT", "29500"}},
              "train-node-0-1", flags);
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.master_addr, "train-node-0-0.train");
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_EQ(d.local_rank, 0);
  EXPECT_TRUE(has(d.origin, "rank 3 (PET_NODE_RANK=3) of 4 (PET_NNODES=4 x PET_NPROC_PER_NODE=1)"))
      << d.origin;
  EXPECT_TRUE(has(d.origin, "(PET_MASTER_ADDR, PET_MASTER_PORT)")) << d.origin;
  // Without PET_NPROC_PER_NODE a node is one process.
  auto two = ok({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}});
  EXPECT_EQ(two.world_size, 2);
  EXPECT_EQ(two.rank, 1);
}

TEST(DistributedEnv, TorchrunsPerProcessValuesBeatThePerNodeOnes) {
  // Process 1 of 2 on a node that c10d rendezvous numbered 2nd of 4 while
  // PET_NODE_RANK says 0, with the store on another host and port.
  auto d = ok({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
               {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "41000"}, {"PET_NNODES", "4"},
               {"PET_NPROC_PER_NODE", "2"}, {"PET_NODE_RANK", "0"},
               {"PET_MASTER_ADDR", "train-node-0-0.train"}, {"PET_MASTER_PORT", "29500"},
               {"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  EXPECT_EQ(d.rank, 5);
  EXPECT_EQ(d.world_size, 8);
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.master_addr, "10.0.0.7");
  EXPECT_EQ(d.master_port, 41000);
  EXPECT_TRUE(has(d.origin, "local rank 1 (LOCAL_RANK)")) << d.origin;
}

TEST(DistributedEnv, FlagsAndHostnameWhenNoVariableSaysOtherwise) {
  DistributedConfig flags;
  flags.master_addr = "10.1.1.1";
  flags.master_port = 29600;
  auto d = ok({{"WORLD_SIZE", "4"}}, "chess-rl-trainer-3", flags);
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.master_addr, "10.1.1.1");
  EXPECT_EQ(d.master_port, 29600);
  EXPECT_TRUE(has(d.origin, "(the ordinal of hostname 'chess-rl-trainer-3')")) << d.origin;
  EXPECT_TRUE(has(d.origin, "10.1.1.1:29600 (--master-addr, --master-port)")) << d.origin;
  auto one = ok({}, "laptop");
  EXPECT_TRUE(has(one.origin,
                  "rank 0 (the default) of 1 (neither WORLD_SIZE nor PET_NNODES is set); "
                  "no rendezvous"))
      << one.origin;
}

TEST(DistributedEnv, ElasticNodeRangesAreRefusedAndFixedOnesAccepted) {
  refused({{"PET_NNODES", "1:4"}}, {"PET_NNODES=1:4", "fixed world size"});
  // Also beside a PyTorchJob's RANK and WORLD_SIZE: the world could change.
  refused({{"PET_NNODES", "2:4"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}},
          {"PET_NNODES=2:4", "elastic range"});
  auto fixed = ok({{"PET_NNODES", "2:2"}, {"PET_NODE_RANK", "1"}});
  EXPECT_EQ(fixed.world_size, 2);
  refused({{"PET_NNODES", "1:x"}}, {"PET_NNODES='1:x' is neither a node count nor MIN:MAX"});
}

TEST(DistributedEnv, SeveralProcessesPerPodNeedALauncher) {
  // A TrainJob whose numProcPerNode is not 1: nothing gives each process a rank.
  refused({{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "4"}, {"PET_NODE_RANK", "0"}},
          {"PET_NPROC_PER_NODE=4 (4 processes per node) and RANK is not set", "launcher",
           "LOCAL_RANK", "numProcPerNode: 1"});
  for (const char* count : {"auto", "gpu", "cpu"})
    refused({{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", count}, {"PET_NODE_RANK", "0"}},
            {"PET_NPROC_PER_NODE=" + std::string(count) +
                 " (as many processes per node as it has devices) and RANK is not set",
             "nprocPerNode: \"1\""});
  // A PyTorchJob with nprocPerNode "2" and no torchrun: the operator's RANK is
  // the pod's, and WORLD_SIZE counts processes nobody started.
  refused({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "2"},
           {"PET_NODE_RANK", "1"}},
          {"PET_NPROC_PER_NODE=2", "RANK=1 but no LOCAL_RANK"});
  // A PyTorchJob's default nprocPerNode is auto; the operator counts it as one
  // process per pod in WORLD_SIZE, so a per-pod RANK stands.
  auto d = ok({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"PET_NNODES", "2"},
               {"PET_NPROC_PER_NODE", "auto"}, {"PET_NODE_RANK", "1"}});
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.world_size, 2);
  refused({{"RANK", "1"}, {"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "auto"}},
          {"PET_NNODES=2 with PET_NPROC_PER_NODE=auto gives no world size",
           "WORLD_SIZE is not set"});
}

TEST(DistributedEnv, WorldSizeMustAgreeWithNodesTimesProcesses) {
  refused({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "1"}},
          {"WORLD_SIZE=4 contradicts PET_NNODES=2 x PET_NPROC_PER_NODE=1 = 2"});
  refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"PET_NNODES", "2"},
           {"PET_NPROC_PER_NODE", "2"}},
          {"WORLD_SIZE=2 contradicts PET_NNODES=2 x PET_NPROC_PER_NODE=2 = 4"});
  auto agree = ok({{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"PET_NNODES", "3"}});
  EXPECT_EQ(agree.world_size, 3);
}

TEST(DistributedEnv, NonIntegersAreNamedWithTheirValues) {
  refused({{"PET_NNODES", "two"}}, {"PET_NNODES='two' is not an integer"});
  refused({{"PET_NPROC_PER_NODE", "x"}},
          {"PET_NPROC_PER_NODE='x' is not an integer, auto, cpu or gpu"});
  refused({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "one"}},
          {"PET_NODE_RANK='one' is not an integer"});
  refused({{"PET_MASTER_PORT", "http"}}, {"PET_MASTER_PORT='http' is not an integer"});
  refused({{"LOCAL_RANK", "a"}}, {"LOCAL_RANK='a' is not an integer"});
  refused({{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "b"}},
          {"LOCAL_WORLD_SIZE='b' is not an integer"});
  refused({{"PET_MASTER_ADDR", ""}}, {"PET_MASTER_ADDR is empty"});
}

TEST(DistributedEnv, OutOfRangeValuesAreNamed) {
  refused({{"PET_NNODES", "4"}, {"PET_NODE_RANK", "4"}},
          {"PET_NODE_RANK=4: rank 4 is outside [0, 4)", "world size from PET_NNODES=4"});
  refused({{"PET_NNODES", "4"}, {"PET_NODE_RANK", "-1"}}, {"PET_NODE_RANK=-1: rank -1 is outside"});
  refused({{"PET_NNODES", "0"}}, {"PET_NNODES=0 is outside 1..65536"});
  refused({{"PET_NPROC_PER_NODE", "0"}}, {"PET_NPROC_PER_NODE=0 is outside 1..65536"});
  refused({{"PET_MASTER_PORT", "70000"}}, {"PET_MASTER_PORT=70000 is outside 0..65535"});
  refused({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_PORT", "0"}},
          {"PET_MASTER_PORT=0", "rank 0 only"});
  refused({{"LOCAL_RANK", "-1"}}, {"LOCAL_RANK=-1 is outside 0..65535"});
  refused({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
          {"LOCAL_RANK=2 is outside [0, 2) (LOCAL_WORLD_SIZE=2)"});
  refused({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"PET_NNODES", "2"},
           {"PET_NPROC_PER_NODE", "2"}},
          {"LOCAL_RANK=2 is outside [0, 2) (PET_NPROC_PER_NODE=2)"});
  // RANK's value wins over PET_NODE_RANK, and must fit the world.
  refused({{"RANK", "3"}, {"WORLD_SIZE", "3"}, {"PET_NODE_RANK", "0"}},
          {"RANK=3: rank 3 is outside [0, 3) (world size from WORLD_SIZE=3)"});
}

TEST(DistributedEnv, LocalRankPicksTheDevice) {
  EXPECT_EQ(ok({{"LOCAL_RANK", "3"}}).local_rank, 3);
  EXPECT_EQ(ok({}).local_rank, 0);
}

TEST(DistributedEnv, TorchrunsAgentStoreIsRefused) {
  refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
           {"TORCHELASTIC_USE_AGENT_STORE", "True"}},
          {"TORCHELASTIC_USE_AGENT_STORE=True", "without torchrun"});
  // A world of one serves no store.
  EXPECT_EQ(ok({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
                .world_size,
            1);
}

}  // namespace
}  // namespace chessrl::train
