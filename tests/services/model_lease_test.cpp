// LeaseModel through a real gRPC client on a loopback port: only the
// evaluator's role may lease, bad requests are refused naming what is wrong,
// a leased version outlives --keep-models until the lease is ended, and the
// reply is the version's ModelInfo.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;

const std::string kSelfplay = "selfplay-token-0123456789abcdef";
const std::string kTrainer = "trainer-token-0123456789abcdef";
const std::string kEvaluator = "evaluator-token-0123456789abcdef";

class ModelLeaseTest : public ::testing::Test {
 protected:
  ModelLeaseTest() : games_(1000) {
    auto options = testing::fast_server_options();
    options.models.keep_models = 2;
    options.auth.add(rpc::Role::kSelfplay, kSelfplay);
    options.auth.add(rpc::Role::kTrainer, kTrainer);
    options.auth.add(rpc::Role::kEvaluator, kEvaluator);
    server_ = std::make_unique<ReplayServer>(games_, models_, registry_, options);
    trainer_ = client(kTrainer);
    evaluator_ = client(kEvaluator);
  }
  std::unique_ptr<rpc::ModelRegistryClient> client(const std::string& token) const {
    auto options = testing::single_try_client(server_->port());
    options.security.token = token;
    return std::make_unique<rpc::ModelRegistryClient>(options);
  }
  void publish(std::uint64_t version) {
    v1::ModelInfo info;
    info.set_version(version);
    info.set_step(version * 10);
    auto published = trainer_->publish(info, "model bytes " + std::to_string(version));
    ASSERT_TRUE(published.ok()) << published.error();
  }
  std::vector<std::uint64_t> kept() {
    std::vector<std::uint64_t> out;
    for (const auto& meta : models_.versions_after(0, 100).value_or_throw())
      out.push_back(meta.version);
    return out;
  }
  std::string calls(const std::string& code) const {
    const std::string text = registry_.serialize();
    const std::string series =
        "chessrl_replay_rpc_requests_total{code=\"" + code + "\",method=\"LeaseModel\"} ";
    const auto at = text.find(series);
    return at == std::string::npos
               ? "0"
               : text.substr(at + series.size(), text.find('\n', at) - at - series.size());
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<rpc::ModelRegistryClient> trainer_;
  std::unique_ptr<rpc::ModelRegistryClient> evaluator_;
};

TEST_F(ModelLeaseTest, ALeasedVersionOutlivesKeepModelsUntilItsLeaseEnds) {
  publish(1);
  auto leased = evaluator_->lease(1, 600s);
  ASSERT_TRUE(leased.ok()) << leased.error();
  EXPECT_EQ(leased->version(), 1u);
  EXPECT_EQ(leased->step(), 10u);
  EXPECT_EQ(leased->size_bytes(), std::string("model bytes 1").size());
  for (std::uint64_t v = 2; v <= 5; ++v) publish(v);
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{1, 4, 5}));  // 2 and 3 pruned, 1 leased
  auto renewed = evaluator_->lease(1, 600s);
  ASSERT_TRUE(renewed.ok()) << renewed.error();
  ASSERT_TRUE(evaluator_->set_best(1).ok());  // what the lease is for

  ASSERT_TRUE(evaluator_->set_best(5).ok());
  auto ended = evaluator_->lease(1, 0s);
  ASSERT_TRUE(ended.ok()) << ended.error();
  publish(6);
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{5, 6}));
  EXPECT_EQ(calls("OK"), "3");
}

TEST_F(ModelLeaseTest, BadRequestsAreRefusedNamingTheProblem) {
  publish(1);
  auto zero = evaluator_->lease(0, 60s);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(zero.error().find("version must be > 0"), std::string::npos) << zero.error();

  auto long_lease = evaluator_->lease(1, 7200s);
  ASSERT_FALSE(long_lease.ok());
  EXPECT_EQ(long_lease.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(long_lease.error().find("7200 s"), std::string::npos) << long_lease.error();
  EXPECT_NE(long_lease.error().find("3600 s"), std::string::npos) << long_lease.error();

  auto missing = evaluator_->lease(42, 60s);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(missing.error().find("no version 42"), std::string::npos) << missing.error();
  EXPECT_EQ(calls("INVALID_ARGUMENT"), "2");
  EXPECT_EQ(calls("NOT_FOUND"), "1");
}

TEST_F(ModelLeaseTest, OnlyTheEvaluatorsRoleMayLease) {
  publish(1);
  for (const std::string& token : {kSelfplay, kTrainer}) {
    auto refused = client(token)->lease(1, 600s);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error();
  }
  auto anonymous = client("")->lease(1, 600s);
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.code(), grpc::StatusCode::UNAUTHENTICATED) << anonymous.error();
  // Nothing was leased: version 1 goes with the next prune.
  for (std::uint64_t v = 2; v <= 3; ++v) publish(v);
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{2, 3}));
}

}  // namespace
}  // namespace chessrl::replay_service
