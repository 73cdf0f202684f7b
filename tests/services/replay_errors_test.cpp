// Faults at the replay service, through real gRPC on a loopback port over the
// in-memory stores: a store failure answered with the code its kind calls for
// and retried by clients only when it is transient; PublishModel publishing
// nothing from a cancelled, short or unchecked upload; WatchModels from far
// behind; the client's watch() stopping promptly while it backs off.
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;
using replay::StoreErrorKind;
using testing::batch;

double calls(metrics::Registry& registry, const char* method, const char* code) {
  return registry
      .counter("chessrl_replay_rpc_requests_total", "x", {{"method", method}, {"code", code}})
      .value();
}

class ReplayErrorsTest : public ::testing::Test {
 protected:
  ReplayErrorsTest() : games_(100000) {
    server_ =
        std::make_unique<ReplayServer>(games_, models_, registry_, testing::fast_server_options());
  }
  // A client that would try `attempts` times, quickly.
  rpc::ClientOptions client(int attempts) const {
    auto options = testing::single_try_client(server_->port());
    options.attempts = attempts;
    options.backoff_min = 1ms;
    options.backoff_max = 2ms;
    return options;
  }
  double calls(const char* method, const char* code) {
    return replay_service::calls(registry_, method, code);
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
};

TEST_F(ReplayErrorsTest, DamagedStoredDataIsDataLossAndNotRetried) {
  ASSERT_TRUE(rpc::ReplayClient(client(1)).push_games(batch(1, 2)).ok());
  games_.set_failure("sample: a position in the window is missing", StoreErrorKind::kDataLoss);
  auto sampled = rpc::ReplayClient(client(4)).sample(10);
  ASSERT_FALSE(sampled.ok());
  EXPECT_EQ(sampled.code(), grpc::StatusCode::DATA_LOSS) << sampled.error();
  EXPECT_FALSE(sampled.transient());
  EXPECT_NE(sampled.error().find("a position in the window is missing"), std::string::npos);
  EXPECT_EQ(calls("Sample", "DATA_LOSS"), 1.0);  // one attempt of four

  v1::ModelInfo info;
  info.set_version(1);
  ASSERT_TRUE(rpc::ModelRegistryClient(client(1)).publish(info, "weights").ok());
  models_.set_failure("read model 1: stored data does not match its size and crc32",
                      StoreErrorKind::kDataLoss);
  auto got = rpc::ModelRegistryClient(client(4)).get(1);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.code(), grpc::StatusCode::DATA_LOSS) << got.error();
  // GetModel is a callback stream: the server counts the call when it is done
  // (OnDone), which may come just after the client has read the status.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (calls("GetModel", "DATA_LOSS") < 1.0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(50ms);  // a second (retried) call would be counted by now
  EXPECT_EQ(calls("GetModel", "DATA_LOSS"), 1.0);
}

TEST_F(ReplayErrorsTest, AnUnreachableStoreIsUnavailableAndRetried) {
  games_.set_failure("redis 127.0.0.1:6379: connection refused");
  auto sampled = rpc::ReplayClient(client(3)).sample(10);
  ASSERT_FALSE(sampled.ok());
  EXPECT_EQ(sampled.code(), grpc::StatusCode::UNAVAILABLE) << sampled.error();
  EXPECT_TRUE(sampled.transient());
  EXPECT_EQ(calls("Sample", "UNAVAILABLE"), 3.0);  // every attempt
}

TEST_F(ReplayErrorsTest, ARequestTheStoreCannotServeIsInvalidArgumentAndNotRetried) {
  games_.set_failure("sample: 70000 positions asked, at most 65536 per call",
                     StoreErrorKind::kInvalidArgument);
  auto sampled = rpc::ReplayClient(client(3)).sample(10);
  EXPECT_EQ(sampled.code(), grpc::StatusCode::INVALID_ARGUMENT) << sampled.error();
  EXPECT_EQ(calls("Sample", "INVALID_ARGUMENT"), 1.0);
}

TEST_F(ReplayErrorsTest, ClientCallsThatSucceedReportOk) {
  auto stats = rpc::ReplayClient(client(1)).stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats.code(), grpc::StatusCode::OK);
  EXPECT_FALSE(stats.transient());
  EXPECT_TRUE(rpc::transient(grpc::StatusCode::DEADLINE_EXCEEDED));
  for (const auto code : {grpc::StatusCode::DATA_LOSS, grpc::StatusCode::INVALID_ARGUMENT,
                          grpc::StatusCode::NOT_FOUND, grpc::StatusCode::PERMISSION_DENIED,
                          grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::RESOURCE_EXHAUSTED,
                          grpc::StatusCode::ALREADY_EXISTS}) {
    EXPECT_FALSE(rpc::transient(code)) << static_cast<int>(code);
  }
}

// ---------------------------------------------------------------- PublishModel

// One PublishModel call made by hand: `chunks` sent, then the stream closed.
grpc::Status publish_raw(int port, const std::vector<v1::ModelChunk>& chunks) {
  auto stub = v1::ModelRegistry::NewStub(rpc::make_channel(testing::single_try_client(port)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::ModelInfo reply;
  auto writer = stub->PublishModel(&context, &reply);
  for (const auto& chunk : chunks) {
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

v1::ModelChunk first_chunk(std::uint64_t version, const std::string& data, std::uint64_t size,
                           std::uint32_t crc) {
  v1::ModelChunk chunk;
  chunk.mutable_info()->set_version(version);
  chunk.mutable_info()->set_size_bytes(size);
  chunk.mutable_info()->set_crc32(crc);
  chunk.set_data(data);
  return chunk;
}

TEST_F(ReplayErrorsTest, AnUploadWithoutItsSizeOrCrcPublishesNothing) {
  const std::string data = "model weights";
  const std::uint32_t crc = rpc::blob_crc32(data);
  const grpc::Status no_size = publish_raw(server_->port(), {first_chunk(1, data, 0, crc)});
  EXPECT_EQ(no_size.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << no_size.error_message();
  EXPECT_NE(no_size.error_message().find("size_bytes"), std::string::npos)
      << no_size.error_message();
  const grpc::Status no_crc = publish_raw(server_->port(), {first_chunk(1, data, data.size(), 0)});
  EXPECT_EQ(no_crc.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << no_crc.error_message();
  EXPECT_NE(no_crc.error_message().find("crc32"), std::string::npos) << no_crc.error_message();
  EXPECT_FALSE(models_.latest()->has_value());
  // With both, it is published.
  EXPECT_TRUE(publish_raw(server_->port(), {first_chunk(1, data, data.size(), crc)}).ok());
  EXPECT_TRUE(models_.latest()->has_value());
}

TEST_F(ReplayErrorsTest, AnUploadEndingShortOrDamagedPublishesNothing) {
  const std::string data = "model weights";
  const std::uint32_t crc = rpc::blob_crc32(data);
  // The stream closes after 5 of the 13 bytes its info names.
  const grpc::Status short_upload =
      publish_raw(server_->port(), {first_chunk(1, data.substr(0, 5), data.size(), crc)});
  EXPECT_EQ(short_upload.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << short_upload.error_message();
  const grpc::Status damaged =
      publish_raw(server_->port(), {first_chunk(1, data, data.size(), crc ^ 1)});
  EXPECT_EQ(damaged.error_code(), grpc::StatusCode::DATA_LOSS) << damaged.error_message();
  EXPECT_FALSE(models_.latest()->has_value());
}

// Counts the messages the server's handlers receive: a test acts once the
// server holds what it sent (gRPC's experimental server interceptors).
struct Received {
  std::mutex mutex;
  std::condition_variable cv;
  int messages = 0;
};

class ReceivedInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ReceivedInterceptor(Received& received) : received_(received) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_MESSAGE)) {
      {
        std::lock_guard lock(received_.mutex);
        ++received_.messages;
      }
      received_.cv.notify_all();
    }
    methods->Proceed();
  }

 private:
  Received& received_;
};

class ReceivedInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ReceivedInterceptorFactory(Received& received) : received_(received) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new ReceivedInterceptor(received_);
  }

 private:
  Received& received_;
};

TEST(PublishModelCancelTest, AnUploadTheClientCancelledPublishesNothing) {
  replay::MemoryModelStore models;
  metrics::Registry registry;
  ReplayMetrics metrics(registry);
  const rpc::ServerAuth open;
  ModelRegistryImpl service(models, metrics, ModelRegistryOptions{}, open);
  Received received;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<ReceivedInterceptorFactory>(received));
  builder.experimental().SetInterceptorCreators(std::move(factories));
  auto server = builder.BuildAndStart();
  ASSERT_NE(port, 0);

  // The whole model, size and CRC right, in one chunk; then, once the server
  // has received it, the client cancels instead of closing the stream.
  const std::string data = "model weights";
  auto stub = v1::ModelRegistry::NewStub(rpc::make_channel(testing::single_try_client(port)));
  grpc::ClientContext context;
  v1::ModelInfo reply;
  auto writer = stub->PublishModel(&context, &reply);
  ASSERT_TRUE(writer->Write(first_chunk(1, data, data.size(), rpc::blob_crc32(data))));
  {
    std::unique_lock lock(received.mutex);
    ASSERT_TRUE(received.cv.wait_for(lock, 10s, [&] { return received.messages >= 1; }));
  }
  context.TryCancel();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The handler answers after the client left: wait until it has.
  const auto answered = [&] {
    return calls(registry, "PublishModel", "OK") + calls(registry, "PublishModel", "CANCELLED");
  };
  for (int i = 0; i < 1000 && answered() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(calls(registry, "PublishModel", "CANCELLED"), 1.0);
  EXPECT_FALSE(models.latest()->has_value());
  server->Shutdown(std::chrono::system_clock::now());
}

// ---------------------------------------------------------------- watching

TEST_F(ReplayErrorsTest, AWatcherFarBehindGetsTheNewestVersionFirst) {
  for (std::uint64_t v = 1; v <= 100; ++v) {
    const std::string blob = "model " + std::to_string(v);
    replay::ModelMeta meta;
    meta.version = v;
    meta.size_bytes = blob.size();
    meta.crc32 = rpc::blob_crc32(blob);
    ASSERT_TRUE(models_.publish(meta, blob).ok());
  }
  std::vector<std::uint64_t> seen;
  std::atomic<bool> stop{false};
  rpc::ModelRegistryClient(client(1)).watch(
      1,  // has version 1; 99 newer ones, more than a batch (64)
      [&](const v1::ModelInfo& info) {
        seen.push_back(info.version());
        return false;  // one is enough: what a follower loads first
      },
      stop);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], 100u);
}

TEST_F(ReplayErrorsTest, AWatchBackingOffStopsWithinASecond) {
  server_->shutdown(0ms);  // nothing answers: watch() backs off between tries
  auto options = client(1);
  options.backoff_min = 30s;  // the first pause alone outlasts the test
  options.backoff_max = 30s;
  rpc::ModelRegistryClient watcher(options);
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};
  std::thread thread([&] {
    watcher.watch(
        0, [](const v1::ModelInfo&) { return true; }, stop, 50ms);
    returned = true;
  });
  std::this_thread::sleep_for(300ms);  // into the first backoff
  const auto asked = std::chrono::steady_clock::now();
  stop = true;
  for (int i = 0; i < 500 && !returned; ++i) std::this_thread::sleep_for(10ms);
  const auto took = std::chrono::steady_clock::now() - asked;
  EXPECT_TRUE(returned.load());
  EXPECT_LT(took, 1s) << std::chrono::duration<double>(took).count() << " s";
  if (!returned) stop = true;
  thread.join();
}

}  // namespace
}  // namespace chessrl::replay_service
