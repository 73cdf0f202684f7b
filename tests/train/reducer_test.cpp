// The process group and the gradient reducer: two ranks as two threads of
// this process, over Gloo on loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <thread>

#include "../support/refusing_port.h"
#include "grad_reducer.h"
#include "listening_port.h"
#include "process_group.h"

namespace chessrl::train {
namespace {

DistributedConfig config(int rank, int world, int port) {
  DistributedConfig d;
  d.rank = rank;
  d.world_size = world;
  d.master_addr = "127.0.0.1";
  d.master_port = port;
  d.rendezvous_timeout = std::chrono::seconds(20);
  d.collective_timeout = std::chrono::seconds(20);
  return d;
}

void quiet(const std::string&) {}

// Rank r's parameters see loss = sum((r + 1) * k * w) over micro-batches k;
// the reducer must leave the average over ranks of each rank's total.
std::vector<float> reduce_on_rank(const DistributedConfig& d, bool overlap, int micro_batches,
                                  std::size_t bucket_bytes) {
  const int rank = d.rank;
  auto group = join_group(d, false, quiet);
  EXPECT_TRUE(group.ok()) << group.error();
  if (!group) return {};
  torch::manual_seed(1);
  std::vector<torch::Tensor> params{torch::randn({300}).requires_grad_(),
                                    torch::randn({7, 5}).requires_grad_(),
                                    torch::randn({1000}).requires_grad_()};
  GradReducer reducer(params, *group->pg, bucket_bytes, overlap);
  for (int k = 1; k <= micro_batches; ++k) {
    reducer.prepare(k == micro_batches);
    torch::Tensor loss = torch::zeros({});
    for (auto& p : params) loss = loss + (p * double((rank + 1) * k)).sum();
    loss.backward();
  }
  auto waited = reducer.finish();
  EXPECT_TRUE(waited.ok()) << waited.error();
  std::vector<float> grads;
  for (auto& p : params) {
    auto flat = p.grad().reshape({-1});
    grads.insert(grads.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return grads;
}

void expect_average(bool overlap, int micro_batches, std::size_t bucket_bytes) {
  ListeningPort port;
  auto r1 = std::async(std::launch::async, [&] {
    return reduce_on_rank(config(1, 2, port.get()), overlap, micro_batches, bucket_bytes);
  });
  auto g0 = reduce_on_rank(port.rank0(config(0, 2, 0)), overlap, micro_batches, bucket_bytes);
  auto g1 = r1.get();
  ASSERT_EQ(g0.size(), 300u + 35u + 1000u);
  // Rank r's gradient is (r + 1) * (1 + ... + m); the average of ranks 1 and 2
  // times that sum is 1.5 * m (m + 1) / 2.
  const float want = 1.5f * float(micro_batches * (micro_batches + 1)) / 2.0f;
  for (std::size_t i = 0; i < g0.size(); ++i) {
    ASSERT_EQ(g0[i], want) << "element " << i;
    ASSERT_EQ(g1[i], want) << "element " << i;
  }
}

TEST(GradReducer, AveragesOverRanksWhileBackwardRuns) { expect_average(true, 1, 4096); }
TEST(GradReducer, AveragesWithoutOverlap) { expect_average(false, 1, 4096); }
TEST(GradReducer, AddsEarlierMicroBatches) { expect_average(true, 3, 1 << 20); }
TEST(GradReducer, OneBucketPerParameterWhenBucketsAreSmall) { expect_average(true, 2, 1024); }

TEST(Rendezvous, TimeoutNamesTheMissingRanks) {
  DistributedConfig d = config(0, 3, 0);
  d.rendezvous_timeout = std::chrono::seconds(2);
  auto g = join_group(d, false, quiet);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("ranks 1, 2 of 3 never joined"), std::string::npos) << g.error();
}

// Port 0: rank 0's store binds a port the kernel picks and reports it (the
// callback and the log line) before it waits for rank 1, which joins on it.
TEST(Rendezvous, RankZeroOnPortZeroReportsTheBoundPortBeforeWaiting) {
  std::vector<std::string> lines;
  ListeningPort port;
  auto rank1 = std::async(std::launch::async, [&] {
    return join_group(config(1, 2, port.get()), false, quiet);
  });
  auto g0 = join_group(port.rank0(config(0, 2, 0)), false,
                       [&](const std::string& l) { lines.push_back(l); });
  auto g1 = rank1.get();
  ASSERT_TRUE(g0.ok()) << g0.error();
  ASSERT_TRUE(g1.ok()) << g1.error();
  const int bound = port.get(std::chrono::seconds(0));
  EXPECT_GT(bound, 0);
  EXPECT_LE(bound, 65535);
  const std::string said = "rendezvous: listening on port " + std::to_string(bound);
  EXPECT_NE(std::find(lines.begin(), lines.end(), said), lines.end())
      << "no line '" << said << "' among " << lines.size();
}

// Only rank 0 can bind a port the kernel picks; any other rank given 0 is
// refused at once, naming the setting.
TEST(Rendezvous, PortZeroOnAnotherRankIsRefused) {
  DistributedConfig d = config(1, 2, 0);
  const auto start = std::chrono::steady_clock::now();
  auto g = join_group(d, false, quiet);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("rank 0 only"), std::string::npos) << g.error();
  EXPECT_NE(g.error().find("MASTER_PORT"), std::string::npos) << g.error();
  EXPECT_NE(g.error().find("--master-port"), std::string::npos) << g.error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(Rendezvous, UnreachableMasterIsNamed) {
  const testing::RefusingPort nobody;  // bound, never listening: refused
  DistributedConfig d = config(1, 2, nobody.port());
  d.rendezvous_timeout = std::chrono::seconds(2);
  auto g = join_group(d, false, quiet);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("127.0.0.1:" + std::to_string(d.master_port)), std::string::npos)
      << g.error();
}

}  // namespace
}  // namespace chessrl::train
