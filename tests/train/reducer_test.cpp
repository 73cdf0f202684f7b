// The process group and the gradient reducer: two ranks as two threads of
// this process, over Gloo on loopback.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "grad_reducer.h"
#include "process_group.h"

namespace chessrl::train {
namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

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
std::vector<float> reduce_on_rank(int rank, int port, bool overlap, int micro_batches,
                                  std::size_t bucket_bytes) {
  auto group = join_group(config(rank, 2, port), false, quiet);
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
  const int port = free_port();
  auto r1 = std::async(std::launch::async, reduce_on_rank, 1, port, overlap, micro_batches, bucket_bytes);
  auto g0 = reduce_on_rank(0, port, overlap, micro_batches, bucket_bytes);
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
  DistributedConfig d = config(0, 3, free_port());
  d.rendezvous_timeout = std::chrono::seconds(2);
  auto g = join_group(d, false, quiet);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("ranks 1, 2 of 3 never joined"), std::string::npos) << g.error();
}

TEST(Rendezvous, UnreachableMasterIsNamed) {
  DistributedConfig d = config(1, 2, free_port());
  d.rendezvous_timeout = std::chrono::seconds(2);
  auto g = join_group(d, false, quiet);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("127.0.0.1:" + std::to_string(d.master_port)), std::string::npos)
      << g.error();
}

}  // namespace
}  // namespace chessrl::train
