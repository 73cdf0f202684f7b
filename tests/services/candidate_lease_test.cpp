// The evaluator's CandidateLease over a scripted lease call: taken at once,
// renewed while held, ended (0 s) at the end; a registry without LeaseModel
// is logged once and never asked again; a version gone is not renewed; a
// failing renewal is logged once per streak and tried again.
#include "candidate_lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace chessrl::evaluator_service {
namespace {

using namespace std::chrono_literals;

// Answers lease calls from a script of codes (OK once it runs out) and
// records each call's length.
class FakeRegistry {
 public:
  explicit FakeRegistry(std::deque<grpc::StatusCode> script = {}) : script_(std::move(script)) {}
  LeaseCall call() {
    return [this](std::uint64_t version, std::chrono::seconds length)
               -> rpc::RpcResult<v1::ModelInfo> {
      std::lock_guard lock(mu_);
      lengths_.push_back(length.count());
      grpc::StatusCode code = grpc::StatusCode::OK;
      if (!script_.empty()) {
        code = script_.front();
        script_.pop_front();
      }
      if (code != grpc::StatusCode::OK) return rpc::RpcFailure{"LeaseModel: scripted", code};
      v1::ModelInfo info;
      info.set_version(version);
      return info;
    };
  }
  std::vector<std::int64_t> lengths() {
    std::lock_guard lock(mu_);
    return lengths_;
  }

 private:
  std::mutex mu_;
  std::deque<grpc::StatusCode> script_;
  std::vector<std::int64_t> lengths_;
};

class CandidateLeaseTest : public ::testing::Test {
 protected:
  std::function<void(const std::string&)> log() {
    return [this](const std::string& line) {
      std::lock_guard lock(mu_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  CandidateLeaseOptions fast() {
    CandidateLeaseOptions o;
    o.length = 120s;
    o.renew_every = 20ms;
    return o;
  }
  std::atomic<bool> unsupported_{false};
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_F(CandidateLeaseTest, TakenRenewedWhileHeldAndEndedAfter) {
  FakeRegistry registry;
  {
    CandidateLease lease(7, registry.call(), fast(), unsupported_, log());
    EXPECT_TRUE(lease.held());
    std::this_thread::sleep_for(150ms);
  }
  const auto lengths = registry.lengths();
  ASSERT_GE(lengths.size(), 4u);  // taken, renewed at least twice, ended
  for (std::size_t i = 0; i + 1 < lengths.size(); ++i) EXPECT_EQ(lengths[i], 120);
  EXPECT_EQ(lengths.back(), 0);
  EXPECT_TRUE(lines().empty());
}

TEST_F(CandidateLeaseTest, ARegistryWithoutLeaseModelIsLoggedOnceAndNotAskedAgain) {
  FakeRegistry registry({grpc::StatusCode::UNIMPLEMENTED});
  {
    CandidateLease first(7, registry.call(), fast(), unsupported_, log());
    EXPECT_FALSE(first.held());
    CandidateLease second(8, registry.call(), fast(), unsupported_, log());
    std::this_thread::sleep_for(60ms);
  }
  EXPECT_EQ(registry.lengths(), (std::vector<std::int64_t>{120}));
  EXPECT_TRUE(unsupported_.load());
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_NE(lines()[0].find("no LeaseModel"), std::string::npos) << lines()[0];
}

TEST_F(CandidateLeaseTest, AVersionGoneIsNeitherRenewedNorEnded) {
  FakeRegistry registry({grpc::StatusCode::NOT_FOUND});
  {
    CandidateLease lease(7, registry.call(), fast(), unsupported_, log());
    EXPECT_FALSE(lease.held());
    std::this_thread::sleep_for(60ms);
  }
  EXPECT_EQ(registry.lengths(), (std::vector<std::int64_t>{120}));
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_NE(lines()[0].find("v7: not leased"), std::string::npos) << lines()[0];
}

TEST_F(CandidateLeaseTest, AFailingRenewalIsLoggedOncePerStreakAndTriedAgain) {
  FakeRegistry registry({grpc::StatusCode::OK, grpc::StatusCode::UNAVAILABLE,
                         grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNAVAILABLE});
  {
    CandidateLease lease(7, registry.call(), fast(), unsupported_, log());
    ASSERT_TRUE(lease.held());
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(lease.held());  // renewed again after the failures
    EXPECT_GE(lease.granted(), 2);
  }
  EXPECT_GE(registry.lengths().size(), 6u);
  EXPECT_EQ(registry.lengths().back(), 0);
  const auto logged = lines();
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_NE(logged[0].find("v7: lease not renewed"), std::string::npos) << logged[0];
  EXPECT_NE(logged[1].find("v7: lease renewed again"), std::string::npos) << logged[1];
}

TEST_F(CandidateLeaseTest, LengthZeroLeasesNothing) {
  FakeRegistry registry;
  CandidateLeaseOptions off;
  off.length = 0s;
  { CandidateLease lease(7, registry.call(), off, unsupported_, log()); }
  EXPECT_TRUE(registry.lengths().empty());
}

}  // namespace
}  // namespace chessrl::evaluator_service
