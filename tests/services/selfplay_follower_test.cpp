// Self-play's ModelFollower against an in-process model registry (the replay
// service on in-memory stores) whose copy of one version is damaged (its bytes
// do not match the CRC the registry names: the client fails the download with
// DATA_LOSS): the version is skipped at once, logged, counted by reason and
// never downloaded again, self-play stays on the model playing, and the next
// good version is taken up. Before, the damaged version was downloaded again
// and again with backoff while it was the newest.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model_follower.h"
#include "chessrl/runtime/registry.h"
#include "model_registry_fixture.h"

namespace chessrl {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::tiny_model;

class ModelFollowerTest : public testing::InProcessRegistryTest {
 protected:
  // Straight into the store, as a damaged copy: the CRC it names is not its bytes'.
  void publish_damaged(std::uint64_t version) {
    const std::string blob = tiny_model(version);
    replay::ModelMeta meta;
    meta.version = version;
    meta.step = version * 100;
    meta.size_bytes = blob.size();
    meta.crc32 = rpc::blob_crc32(blob) ^ 1u;
    auto published = models_.publish(meta, blob);
    ASSERT_TRUE(published.ok()) << published.error();
  }
};

TEST_F(ModelFollowerTest, ADamagedVersionIsSkippedOnceAndTheNextGoodOneTakenUp) {
  publish(1);
  std::mutex skipped_mutex;
  std::map<std::string, int> skipped_by_reason;
  nn::TorchBackendOptions torch;
  torch.threads = 1;
  runtime::ModelFollower follower(
      testing::single_try_client(port()), torch, [this](const std::string& line) { log(line); }, {},
      [&](std::uint64_t, const std::string& reason) {
        std::lock_guard lock(skipped_mutex);
        ++skipped_by_reason[reason];
      });
  follower.wait_settled(20s);
  auto first = follower.take();
  ASSERT_TRUE(first.has_value()) << logged();
  EXPECT_EQ(first->model.version, 1u);

  publish_damaged(2);
  ASSERT_TRUE(eventually([&] {
    return logged().find("model version 2 cannot be downloaded") != std::string::npos;
  })) << logged();
  EXPECT_NE(logged().find("skipped, not fetched again (self-play stays on version 1)"),
            std::string::npos)
      << logged();
  EXPECT_NE(logged().find("(data_loss: GetModel: crc32 mismatch"), std::string::npos) << logged();
  EXPECT_EQ(follower.skipped(), std::vector<std::uint64_t>{2});
  {
    std::lock_guard lock(skipped_mutex);
    EXPECT_EQ(skipped_by_reason, (std::map<std::string, int>{{"data_loss", 1}}));
  }
  EXPECT_FALSE(follower.take().has_value()) << "self-play must stay on version 1";
  // Not downloaded again while it is the newest (the old backoff retried after 0.5 s).
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(downloads(), 2.0) << "versions 1 and 2, once each\n" << logged();

  publish(3);
  std::optional<runtime::ModelFollower::Pending> third;
  ASSERT_TRUE(eventually([&] { return (third = follower.take()).has_value(); })) << logged();
  EXPECT_EQ(third->model.version, 3u);
  EXPECT_EQ(downloads(), 3.0) << logged();
  EXPECT_TRUE(follower.refused().empty());
}

// fetch_model (the evaluator's path) classifies by status code: a version the
// registry does not have and a damaged copy are kMissing with their labels, a
// registry that does not answer is kUnavailable, and a good one builds.
TEST_F(ModelFollowerTest, FetchModelClassifiesByStatusCode) {
  publish(1);
  publish_damaged(2);
  rpc::ModelRegistryClient client(testing::single_try_client(port()));
  runtime::ModelOptions options;
  options.torch.threads = 1;
  runtime::ModelLoad good = runtime::fetch_model(client, 1, false, options);
  ASSERT_TRUE(good.ok()) << good.message;
  EXPECT_EQ(good.model->version, 1u);
  runtime::ModelLoad latest = runtime::fetch_model(client, 0, false, options);
  EXPECT_EQ(latest.error, runtime::ModelError::kMissing) << "the latest is the damaged v2";
  runtime::ModelLoad missing = runtime::fetch_model(client, 9, false, options);
  EXPECT_EQ(missing.error, runtime::ModelError::kMissing) << missing.message;
  EXPECT_EQ(missing.reason, "not_found");
  EXPECT_EQ(missing.message.rfind("v9: ", 0), 0u) << missing.message;
  runtime::ModelLoad damaged = runtime::fetch_model(client, 2, false, options);
  EXPECT_EQ(damaged.reason, "data_loss") << damaged.message;

  rpc::ClientOptions nowhere = testing::single_try_client(port());
  nowhere.address = "127.0.0.1:1";  // nothing listens on port 1
  nowhere.deadline = 2s;
  rpc::ModelRegistryClient down(nowhere);
  runtime::ModelLoad unavailable = runtime::fetch_model(down, 1, false, options);
  EXPECT_EQ(unavailable.error, runtime::ModelError::kUnavailable) << unavailable.message;
  EXPECT_EQ(unavailable.reason, "");
}

// The codes a version is skipped for, and those retried.
TEST(ModelFollowerSkip, PermanentCodesSkipAndTransientOnesRetry) {
  EXPECT_EQ(runtime::skip_reason(grpc::StatusCode::DATA_LOSS), "data_loss");
  EXPECT_EQ(runtime::skip_reason(grpc::StatusCode::NOT_FOUND), "not_found");
  EXPECT_EQ(runtime::skip_reason(grpc::StatusCode::RESOURCE_EXHAUSTED), "too_large");
  EXPECT_EQ(runtime::skip_reason(grpc::StatusCode::INVALID_ARGUMENT), "invalid");
  for (const auto code : {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::DEADLINE_EXCEEDED,
                          grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::PERMISSION_DENIED,
                          grpc::StatusCode::INTERNAL}) {
    EXPECT_EQ(runtime::skip_reason(code), "") << static_cast<int>(code);
  }
}

}  // namespace
}  // namespace chessrl
