// The model registry's distribution side in one chessrl-replay process, over
// a real gRPC server and an in-memory store that counts its calls: one store
// poll for any number of WatchModels streams, the refusal for capacity and
// its trailer, LatestModel from memory, one store read per version for many
// concurrent GetModels, the download queue (waiting its turn holding no
// thread, a deadline passing, a waiter told when to come back, shutdown) and
// the blob cache's byte bound. The queue and ModelView alone:
// model_queue_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/model_cache.h"
#include "chessrl/replay_service/model_hub.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;

// MemoryModelStore with its calls counted; read() can be held at a gate.
class CountingModelStore final : public replay::ModelStore {
 public:
  replay::StoreResult<replay::PublishStatus> publish(const replay::ModelMeta& meta,
                                                     std::string_view blob) override {
    return inner_.publish(meta, blob);
  }
  replay::StoreResult<std::optional<replay::ModelMeta>> latest() override {
    ++latest_calls;
    return inner_.latest();
  }
  replay::StoreResult<std::optional<replay::ModelMeta>> info(std::uint64_t version) override {
    ++info_calls;
    return inner_.info(version);
  }
  replay::StoreResult<std::optional<std::string>> read(std::uint64_t version) override {
    ++read_calls;
    {
      std::unique_lock lock(gate_mutex_);
      ++reads_at_gate_;
      gate_cv_.notify_all();
      gate_cv_.wait(lock, [&] { return gate_open_; });
    }
    return inner_.read(version);
  }
  replay::StoreResult<std::vector<replay::ModelMeta>> versions_after(std::uint64_t version,
                                                                     std::size_t limit) override {
    ++versions_after_calls;
    return inner_.versions_after(version, limit);
  }
  replay::StoreResult<std::optional<replay::ModelMeta>> best() override { return inner_.best(); }
  Result<bool> set_best(std::uint64_t version) override { return inner_.set_best(version); }
  Result<bool> lease(std::uint64_t version, std::chrono::milliseconds ttl) override {
    return inner_.lease(version, ttl);
  }
  Result<std::vector<std::uint64_t>> prune(std::size_t keep) override { return inner_.prune(keep); }

  void close_gate() {
    std::lock_guard lock(gate_mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(gate_mutex_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }
  bool wait_for_read_at_gate(std::chrono::milliseconds timeout) {
    std::unique_lock lock(gate_mutex_);
    return gate_cv_.wait_for(lock, timeout, [&] { return reads_at_gate_ > 0; });
  }
  std::uint64_t calls() const {
    return latest_calls + info_calls + read_calls + versions_after_calls;
  }

  std::atomic<std::uint64_t> latest_calls{0}, info_calls{0}, read_calls{0}, versions_after_calls{0};

 private:
  replay::MemoryModelStore inner_;
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  bool gate_open_ = true;
  int reads_at_gate_ = 0;
};

std::string blob_of(std::uint64_t version, std::size_t size = 5000) {
  std::string blob(size, '\0');
  for (std::size_t i = 0; i < size; ++i) blob[i] = static_cast<char>((i * 31 + version * 7) % 251);
  return blob;
}

replay::ModelMeta meta_of(std::uint64_t version, const std::string& blob) {
  replay::ModelMeta meta;
  meta.version = version;
  meta.size_bytes = blob.size();
  meta.crc32 = rpc::blob_crc32(blob);
  return meta;
}

class ModelRegistryTest : public ::testing::Test {
 protected:
  void start(ReplayServerOptions options = testing::fast_server_options()) {
    server_ = std::make_unique<ReplayServer>(games_, store_, registry_, options);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::ModelRegistry::NewStub(channel_);
  }
  // A store write as another replay process would make it (no local publish).
  void publish_elsewhere(std::uint64_t version, std::size_t size = 5000) {
    const std::string blob = blob_of(version, size);
    ASSERT_TRUE(store_.publish(meta_of(version, blob), blob).ok());
  }
  double metric(const std::string& line_start) {
    const std::string text = registry_.serialize();
    const auto at = text.find("\n" + line_start + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + line_start.size() + 2));
  }
  // GetModel on its own channel; the bytes, or the status.
  grpc::Status download(std::uint64_t version, std::string& data,
                        std::chrono::milliseconds deadline = 10s) {
    auto stub = v1::ModelRegistry::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::GetModelRequest request;
    request.set_version(version);
    auto reader = stub->GetModel(&context, request);
    v1::ModelChunk chunk;
    while (reader->Read(&chunk)) data += chunk.data();
    return reader->Finish();
  }

  replay::MemoryReplayStore games_{1000};
  CountingModelStore store_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ModelRegistry::Stub> stub_;
};

// One watch stream, read on a thread of its own.
struct Watch {
  Watch(v1::ModelRegistry::Stub& stub, std::uint64_t after) {
    v1::WatchModelsRequest request;
    request.set_after_version(after);
    reader = stub.WatchModels(&context, request);
    thread = std::thread([this] {
      v1::ModelInfo info;
      while (reader->Read(&info)) {
        std::lock_guard lock(mutex);
        seen.push_back(info.version());
      }
      status = reader->Finish();
      std::lock_guard lock(mutex);
      ended = true;
    });
  }
  ~Watch() {
    context.TryCancel();
    thread.join();
  }
  std::uint64_t last() {
    std::lock_guard lock(mutex);
    return seen.empty() ? 0 : seen.back();
  }
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::ModelInfo>> reader;
  std::thread thread;
  std::mutex mutex;
  std::vector<std::uint64_t> seen;
  grpc::Status status;
  bool ended = false;
};

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

TEST_F(ModelRegistryTest, ManyWatchersShareOneStorePollAndAllHearOfAVersionFromElsewhere) {
  constexpr int kWatchers = 200;
  auto options = testing::fast_server_options();
  options.models.watch_poll_ms = 100;
  publish_elsewhere(1);
  start(options);
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < kWatchers; ++i) watches.push_back(std::make_unique<Watch>(*stub_, 0));
  ASSERT_TRUE(eventually([&] {
    for (auto& w : watches)
      if (w->last() != 1) return false;
    return true;
  })) << "not every watcher got version 1";
  EXPECT_EQ(metric("chessrl_replay_model_watchers"), kWatchers);

  // A second of 200 open streams: the store is asked once a poll (every
  // 0.1 s), not once a stream.
  const std::uint64_t before = store_.calls();
  std::this_thread::sleep_for(1s);
  const std::uint64_t idle_calls = store_.calls() - before;
  EXPECT_LE(idle_calls, 13u) << "store calls in 1 s with " << kWatchers << " watchers";
  EXPECT_GE(idle_calls, 5u);

  // A version another process published reaches every stream at the next poll.
  const auto published = std::chrono::steady_clock::now();
  publish_elsewhere(2);
  ASSERT_TRUE(eventually([&] {
    for (auto& w : watches)
      if (w->last() != 2) return false;
    return true;
  })) << "not every watcher got version 2";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - published).count();
  EXPECT_LT(seconds, 2.0);
  std::printf("%d watchers notified of a version from elsewhere within %.3f s; %llu store calls "
              "in 1 s idle\n",
              kWatchers, seconds, static_cast<unsigned long long>(idle_calls));
  for (auto& w : watches) {
    std::lock_guard lock(w->mutex);
    EXPECT_EQ(w->seen, (std::vector<std::uint64_t>{1, 2}));
  }
  watches.clear();
  EXPECT_TRUE(eventually([&] { return metric("chessrl_replay_model_watchers") == 0; }));
}

TEST_F(ModelRegistryTest, AWatcherAfterAVersionGetsEveryLaterOneInOrderThenNewOnes) {
  for (std::uint64_t v = 1; v <= 5; ++v) publish_elsewhere(v);
  start();
  Watch behind(*stub_, 2);
  ASSERT_TRUE(eventually([&] { return behind.last() == 5; }));
  rpc::ModelRegistryClient client(testing::single_try_client(server_->port()));
  v1::ModelInfo info;
  info.set_version(6);
  ASSERT_TRUE(client.publish(info, blob_of(6)).ok());
  ASSERT_TRUE(eventually([&] { return behind.last() == 6; }));
  std::lock_guard lock(behind.mutex);
  EXPECT_EQ(behind.seen, (std::vector<std::uint64_t>{3, 4, 5, 6}));
}

TEST_F(ModelRegistryTest, AWatcherOverTheCapIsToldToTryAnotherReplica) {
  auto options = testing::fast_server_options();
  options.models.max_watchers = 2;
  publish_elsewhere(1);
  start(options);
  auto first = std::make_unique<Watch>(*stub_, 0);
  Watch second(*stub_, 0);
  ASSERT_TRUE(eventually([&] { return first->last() == 1 && second.last() == 1; }));

  grpc::ClientContext context;
  auto reader = stub_->WatchModels(&context, v1::WatchModelsRequest{});
  v1::ModelInfo info;
  EXPECT_FALSE(reader->Read(&info));
  const grpc::Status refused = reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("--max-watchers"), std::string::npos)
      << refused.error_message();
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kRetryElsewhereKey);
  ASSERT_NE(found, trailers.end()) << "no " << kRetryElsewhereKey << " trailer";
  EXPECT_EQ(std::string(found->second.data(), found->second.size()), "1");

  // One leaves: the next is taken.
  first.reset();
  ASSERT_TRUE(eventually([&] { return metric("chessrl_replay_model_watchers") == 1; }));
  Watch third(*stub_, 0);
  EXPECT_TRUE(eventually([&] { return third.last() == 1; }));
}

TEST_F(ModelRegistryTest, ShutdownEndsEveryStreamPromptly) {
  publish_elsewhere(1);
  start();
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < 20; ++i) watches.push_back(std::make_unique<Watch>(*stub_, 0));
  ASSERT_TRUE(eventually([&] {
    for (auto& w : watches)
      if (w->last() != 1) return false;
    return true;
  }));
  const auto start_time = std::chrono::steady_clock::now();
  server_->shutdown(5s);
  EXPECT_LT(std::chrono::steady_clock::now() - start_time, 2s);
  for (auto& w : watches) {
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lock(w->mutex);
      return w->ended;
    }));
    EXPECT_EQ(w->status.error_code(), grpc::StatusCode::UNAVAILABLE) << w->status.error_message();
  }
}

TEST_F(ModelRegistryTest, LatestModelIsAnsweredFromMemory) {
  publish_elsewhere(3);
  start();
  rpc::ModelRegistryClient client(testing::single_try_client(server_->port()));
  ASSERT_TRUE(eventually([&] {
    auto latest = client.latest();
    return latest.ok() && latest->has_value() && (*latest)->version() == 3;
  }));
  const std::uint64_t polls_before = server_->registry().hub().store_calls();
  const std::uint64_t before = store_.latest_calls;
  for (int i = 0; i < 200; ++i) {
    auto latest = client.latest();
    ASSERT_TRUE(latest.ok() && latest->has_value());
    EXPECT_EQ((*latest)->version(), 3u);
  }
  // Only the hub's own polls asked the store meanwhile.
  const std::uint64_t polls = server_->registry().hub().store_calls() - polls_before;
  EXPECT_LE(store_.latest_calls - before, polls + 1);
  // A local publish is seen at once (no waiting for a poll).
  v1::ModelInfo info;
  info.set_version(4);
  ASSERT_TRUE(client.publish(info, blob_of(4)).ok());
  auto latest = client.latest();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->version(), 4u);
}

TEST_F(ModelRegistryTest, ConcurrentDownloadsOfOneVersionReadTheStoreOnce) {
  constexpr int kDownloads = 16;
  publish_elsewhere(1, 300'000);
  start();
  ASSERT_TRUE(eventually([&] { return server_->registry().hub().view()->newest() != nullptr; }));
  store_.close_gate();  // the first read waits: every download arrives meanwhile
  std::vector<std::string> data(kDownloads);
  std::vector<grpc::Status> status(kDownloads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kDownloads; ++i)
    threads.emplace_back([&, i] { status[i] = download(i % 2 == 0 ? 1 : 0, data[i]); });
  ASSERT_TRUE(store_.wait_for_read_at_gate(10s));
  std::this_thread::sleep_for(300ms);
  store_.open_gate();
  for (auto& t : threads) t.join();
  for (int i = 0; i < kDownloads; ++i) {
    EXPECT_TRUE(status[i].ok()) << status[i].error_message();
    EXPECT_EQ(data[i], blob_of(1, 300'000)) << "download " << i;
  }
  EXPECT_EQ(store_.read_calls.load(), 1u);
  EXPECT_EQ(metric("chessrl_replay_model_blob_reads_total"), 1);
  EXPECT_EQ(metric("chessrl_replay_model_cache_hits_total"), kDownloads - 1);
  // Later downloads too, and after the version is pruned from the store: it
  // stays served from memory.
  ASSERT_TRUE(store_.set_best(1).ok());
  publish_elsewhere(2);
  ASSERT_TRUE(store_.set_best(2).ok());
  ASSERT_TRUE(store_.prune(1).ok());
  ASSERT_FALSE(store_.info(1)->has_value());
  std::string again;
  EXPECT_TRUE(download(1, again).ok());
  EXPECT_EQ(again, blob_of(1, 300'000));
  EXPECT_EQ(store_.read_calls.load(), 1u);
}

TEST_F(ModelRegistryTest, ADownloadWhoseDeadlinePassesInTheQueueIsDeadlineExceeded) {
  auto options = testing::fast_server_options();
  options.models.max_model_downloads = 1;
  publish_elsewhere(1);
  start(options);
  ASSERT_TRUE(eventually([&] { return server_->registry().hub().view()->newest() != nullptr; }));
  store_.close_gate();  // the first download holds the one slot in its read
  std::string first_data;
  grpc::Status first_status;
  std::thread first([&] { first_status = download(1, first_data); });
  ASSERT_TRUE(store_.wait_for_read_at_gate(10s));
  std::string late_data;
  const grpc::Status late = download(1, late_data, 300ms);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << late.error_message();
  EXPECT_TRUE(eventually([&] { return metric("chessrl_replay_model_downloads_waiting") == 0; }));
  store_.open_gate();
  first.join();
  EXPECT_TRUE(first_status.ok()) << first_status.error_message();
  EXPECT_EQ(first_data, blob_of(1));
}

// --max-model-downloads: a download holding the one slot (its read held at
// the gate); a second waits (counted as waiting, holding no thread) and is
// served in full once the first is done, the version read only once.
TEST_F(ModelRegistryTest, ADownloadBeyondTheSlotsWaitsItsTurnAndIsServed) {
  auto options = testing::fast_server_options();
  options.models.max_model_downloads = 1;
  options.models.chunk_bytes = 1000;
  publish_elsewhere(1);
  start(options);
  ASSERT_TRUE(eventually([&] { return server_->registry().hub().view()->newest() != nullptr; }));
  store_.close_gate();
  std::string first_data, second_data;
  grpc::Status first_status, second_status;
  std::thread first([&] { first_status = download(1, first_data); });
  ASSERT_TRUE(store_.wait_for_read_at_gate(10s));
  EXPECT_EQ(metric("chessrl_replay_model_downloads_in_flight"), 1);
  std::thread second([&] { second_status = download(1, second_data); });
  ASSERT_TRUE(eventually([&] { return server_->registry().downloads().waiting() == 1; }));
  EXPECT_EQ(metric("chessrl_replay_model_downloads_waiting"), 1);
  store_.open_gate();
  first.join();
  second.join();
  EXPECT_TRUE(first_status.ok()) << first_status.error_message();
  EXPECT_TRUE(second_status.ok()) << second_status.error_message();
  EXPECT_EQ(first_data, blob_of(1));
  EXPECT_EQ(second_data, blob_of(1));
  EXPECT_EQ(store_.read_calls.load(), 1u);
  EXPECT_EQ(metric("chessrl_replay_model_downloads_waiting"), 0);
  EXPECT_EQ(metric("chessrl_replay_model_downloads_in_flight"), 0);
}

// A waiter whose deadline would pass before its turn and its transfer (as
// estimated from a download that took about a second) is answered
// UNAVAILABLE before that deadline, with the trailer saying when to come back.
TEST_F(ModelRegistryTest, AWaiterThatCannotBeServedInTimeIsToldWhenToComeBack) {
  auto options = testing::fast_server_options();
  options.models.max_model_downloads = 1;
  publish_elsewhere(1, 5000);
  publish_elsewhere(2, 100000);
  start(options);
  ASSERT_TRUE(eventually([&] { return server_->registry().hub().view()->find(2) != nullptr; }));
  // The estimate: 5,000 bytes in about a second.
  store_.close_gate();
  std::string data;
  grpc::Status status;
  std::thread teach([&] { status = download(1, data); });
  ASSERT_TRUE(store_.wait_for_read_at_gate(10s));
  std::this_thread::sleep_for(1s);
  store_.open_gate();
  teach.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  // Version 2 (100,000 bytes: about 20 s at that pace) holds the slot in its read.
  store_.close_gate();
  std::string held_data;
  grpc::Status held_status;
  std::thread held([&] { held_status = download(2, held_data); });
  ASSERT_TRUE(eventually([&] { return store_.read_calls.load() == 2; }));
  // A caller with 3 s cannot wait ~10 s (half the download in flight) and
  // take ~20 s more.
  auto stub = v1::ModelRegistry::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  const auto begin = std::chrono::steady_clock::now();
  context.set_deadline(std::chrono::system_clock::now() + 3s);
  v1::GetModelRequest request;
  request.set_version(2);
  auto reader = stub->GetModel(&context, request);
  v1::ModelChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  const grpc::Status late = reader->Finish();
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(late.error_code(), grpc::StatusCode::UNAVAILABLE) << late.error_message();
  EXPECT_NE(late.error_message().find("--max-model-downloads"), std::string::npos)
      << late.error_message();
  EXPECT_LT(took, 2900ms) << "answered at its deadline, not before";
  EXPECT_GE(took, 1500ms) << "answered at once, not shortly before its deadline";
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kRetryAfterMsKey);
  ASSERT_NE(found, trailers.end());
  // Its turn comes in about 10 - 2 = 8 s from the answer; its transfer alone
  // is longer than its call, so it is told to come back at its turn.
  const long retry = std::stol(std::string(found->second.data(), found->second.size()));
  EXPECT_GT(retry, 5000);
  EXPECT_LT(retry, 10000);
  EXPECT_EQ(metric("chessrl_replay_model_downloads_deferred_total"), 1);
  EXPECT_EQ(server_->registry().downloads().waiting(), 0u);
  store_.open_gate();
  held.join();
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
  EXPECT_EQ(held_data, blob_of(2, 100000));
}

// Shutdown ends a download held in its read and one waiting for a slot at
// once (UNAVAILABLE), not after their deadline.
TEST_F(ModelRegistryTest, ShutdownEndsWaitingAndSendingDownloadsPromptly) {
  auto options = testing::fast_server_options();
  options.models.max_model_downloads = 1;
  publish_elsewhere(1);
  start(options);
  ASSERT_TRUE(eventually([&] { return server_->registry().hub().view()->newest() != nullptr; }));
  store_.close_gate();
  std::string first_data, second_data;
  grpc::Status first_status, second_status;
  std::thread first([&] { first_status = download(1, first_data, 60s); });
  ASSERT_TRUE(store_.wait_for_read_at_gate(10s));
  std::thread second([&] { second_status = download(1, second_data, 60s); });
  ASSERT_TRUE(eventually([&] { return server_->registry().downloads().waiting() == 1; }));
  const auto begin = std::chrono::steady_clock::now();
  server_->shutdown(5s);
  first.join();
  second.join();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 2s);
  EXPECT_EQ(first_status.error_code(), grpc::StatusCode::UNAVAILABLE) << first_status.error_message();
  EXPECT_EQ(second_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << second_status.error_message();
  EXPECT_NE(first_status.error_message().find("stopping"), std::string::npos)
      << first_status.error_message();
  EXPECT_NE(second_status.error_message().find("stopping"), std::string::npos)
      << second_status.error_message();
  store_.open_gate();  // the worker thread's read returns; nothing is sent
}

TEST(ModelBlobCacheTest, HoldsAtMostItsBytesAndStreamsALargerVersionWithoutKeepingIt) {
  CountingModelStore store;
  for (std::uint64_t v = 1; v <= 5; ++v) {
    const std::string blob = blob_of(v, 1000);
    ASSERT_TRUE(store.publish(meta_of(v, blob), blob).ok());
  }
  const std::string big = blob_of(9, 4000);
  ASSERT_TRUE(store.publish(meta_of(9, big), big).ok());
  ModelBlobCache cache(store, 2500);  // two versions of 1000 bytes
  for (std::uint64_t v = 1; v <= 5; ++v) {
    auto blob = cache.get(v);
    ASSERT_TRUE(blob.ok() && blob->has_value());
    EXPECT_EQ(*(*blob)->bytes, blob_of(v, 1000));
    EXPECT_LE(cache.bytes(), 2500u);
  }
  EXPECT_EQ(cache.versions(), 2u);
  EXPECT_EQ(cache.bytes(), 2000u);
  EXPECT_EQ(store.read_calls.load(), 5u);
  // The newest two are held; an evicted one is read again.
  ASSERT_TRUE(cache.get(5).ok());
  ASSERT_TRUE(cache.get(4).ok());
  EXPECT_EQ(store.read_calls.load(), 5u);
  ASSERT_TRUE(cache.get(1).ok());
  EXPECT_EQ(store.read_calls.load(), 6u);
  {
    // Larger than the bound: served, not kept (and nothing evicted for it).
    auto large = cache.get(9);
    ASSERT_TRUE(large.ok() && large->has_value());
    EXPECT_EQ(*(*large)->bytes, big);
    EXPECT_EQ(cache.bytes(), 2000u);
    EXPECT_FALSE(cache.cached_meta(9).has_value());
    // While a download still holds it, it is found again without a read.
    ASSERT_TRUE(cache.get(9).ok());
    EXPECT_EQ(store.read_calls.load(), 7u);
  }
  ASSERT_TRUE(cache.get(9).ok());
  EXPECT_EQ(store.read_calls.load(), 8u);
  // No such version: nullopt, not an error.
  auto missing = cache.get(77);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

}  // namespace
}  // namespace chessrl::replay_service
