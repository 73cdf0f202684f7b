// The replay service's handlers called at once from plain threads, without a
// gRPC server: pushers and samplers over one MemoryReplayStore,
// and a model publisher, readers, a best-setter and a watcher over one
// MemoryModelStore. PublishModel runs over grpc::testing's mock stream;
// GetModel and WatchModels (callback streams) through a real server with the
// same service. Run under ThreadSanitizer by `make tsan` (README.md, Tests), where
// the handlers, the stores and the metrics are instrumented and gRPC is not in
// the way (replay_service_test's threads meet inside libgrpc, which TSan cannot
// follow). Under TSan only the ReplayService test runs, without Stats: protobuf's
// map_field.h gives MapFieldBase two more members when compiled with TSan, so
// TSan-built code and the uninstrumented libprotobuf and generated .pb.cc
// disagree on the layout of any message with a map field (StatsReply crashes
// in Map::operator[]; ModelInfo's fields after `metadata` are read at the
// wrong offsets). The model registry test runs in the other builds.
#include <gmock/gmock.h>
#include <grpcpp/test/mock_stream.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/replay_service/replay_service.h"

namespace chessrl::replay_service {
namespace {

using ::testing::_;
using ::testing::Invoke;

v1::Game game(const std::string& id_prefix, std::uint64_t seed) {
  harness::SyntheticGameOptions options;
  options.max_plies = 24;
  return harness::make_synthetic_game(seed, options, id_prefix);
}

TEST(ReplayConcurrencyTest, PushersAndSamplersAtOnceStoreEveryIdOnce) {
  constexpr int kPushers = 4;
  constexpr int kBatches = 8;
  constexpr int kGamesPerBatch = 3;            // its own games, and one game every pusher sends
  replay::MemoryReplayStore store(1'000'000);  // nothing evicted: every id stays
  metrics::Registry registry;
  ReplayMetrics metrics(registry);
  const rpc::ServerAuth auth;
  ReplayServiceImpl service(store, metrics, ReplayServiceOptions{}, auth);

  // All ids pushed, and the shared ones every pusher sends too.
  std::set<std::string> all_ids;
  std::vector<std::vector<v1::PushGamesRequest>> requests(kPushers);
  for (int p = 0; p < kPushers; ++p) {
    for (int b = 0; b < kBatches; ++b) {
      v1::PushGamesRequest request;
      for (int g = 0; g < kGamesPerBatch; ++g) {
        *request.add_games() = game("p" + std::to_string(p) + "-",
                                    static_cast<std::uint64_t>(1000 * p + 10 * b + g + 1));
      }
      *request.add_games() = game("shared-", static_cast<std::uint64_t>(b + 1));
      for (const auto& g : request.games()) all_ids.insert(g.id());
      requests[static_cast<std::size_t>(p)].push_back(std::move(request));
    }
  }
  const int pushes_total = kPushers * kBatches * (kGamesPerBatch + 1);

  std::atomic<bool> pushing{true};
  std::mutex mutex;
  std::map<std::string, int> stored;  // id -> STORED answers, guarded by mutex
  int duplicates = 0;                 // guarded by mutex
  std::vector<std::string> failures;  // guarded by mutex
  auto fail = [&](std::string what) {
    std::lock_guard lock(mutex);
    failures.push_back(std::move(what));
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < kPushers; ++p) {
    threads.emplace_back([&, p] {
      for (const auto& request : requests[static_cast<std::size_t>(p)]) {
        grpc::ServerContext context;
        v1::PushGamesReply reply;
        const auto status = service.PushGames(&context, &request, &reply);
        if (!status.ok()) return fail("PushGames: " + status.error_message());
        if (reply.results_size() != request.games_size()) return fail("PushGames: result count");
        std::lock_guard lock(mutex);
        for (const auto& result : reply.results()) {
          if (result.status() == v1::STORED)
            ++stored[result.id()];
          else if (result.status() == v1::DUPLICATE)
            ++duplicates;
          else
            failures.push_back(result.id() + ": " + result.detail());
        }
      }
    });
  }
  std::atomic<int> positions_sampled{0};
  for (int s = 0; s < 2; ++s) {
    threads.emplace_back([&] {
      do {
        grpc::ServerContext context;
        v1::SampleRequest request;
        request.set_count(32);
        v1::SampleReply reply;
        const auto status = service.Sample(&context, &request, &reply);
        if (!status.ok()) return fail("Sample: " + status.error_message());
        for (const auto& position : reply.positions()) {
          if (!all_ids.contains(position.game_id())) fail("sampled unknown " + position.game_id());
          if (position.fen().empty() ||
              position.policy_moves_size() != position.policy_probs_size() ||
              position.result() < -1 || position.result() > 1) {
            fail("sampled a malformed position of " + position.game_id());
          }
        }
        positions_sampled += reply.positions_size();
      } while (pushing);
    });
  }
  for (int p = 0; p < kPushers; ++p) threads[static_cast<std::size_t>(p)].join();
  pushing = false;
  for (std::size_t t = kPushers; t < threads.size(); ++t) threads[t].join();

  EXPECT_THAT(failures, ::testing::IsEmpty());
  EXPECT_EQ(stored.size(), all_ids.size());
  for (const auto& [id, times] : stored) EXPECT_EQ(times, 1) << id << " stored more than once";
  EXPECT_EQ(duplicates, pushes_total - static_cast<int>(all_ids.size()));
  EXPECT_GT(positions_sampled.load(), 0);
  auto window = store.stats();
  ASSERT_TRUE(window.ok()) << window.error();
  EXPECT_EQ(window->games, all_ids.size());
  EXPECT_EQ(metrics.games_duplicate.value(), static_cast<double>(duplicates));
}

// The model of a version: its bytes follow from the version alone.
std::string blob_of(std::uint64_t version) {
  std::string blob(3000 + version * 7, '\0');
  for (std::size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<char>((i * 131 + version) % 251);
  return blob;
}

TEST(ReplayConcurrencyTest, PublisherReadersBestSetterAndWatcherAtOnce) {
#if defined(__SANITIZE_THREAD__)
  // ModelInfo has a map field (metadata): its layout differs between
  // TSan-built code and the system's libprotobuf (see the top of this file).
  GTEST_SKIP() << "protobuf map fields (ModelInfo.metadata) are not layout-compatible with an "
                  "uninstrumented libprotobuf under ThreadSanitizer";
#endif
  constexpr std::uint64_t kVersions = 16;
  replay::MemoryModelStore store;
  metrics::Registry registry;
  ReplayMetrics metrics(registry);
  const rpc::ServerAuth auth;
  ModelRegistryOptions options;
  options.chunk_bytes = 1000;  // several chunks per model
  options.keep_models = 4;     // pruning runs beside the readers
  options.watch_poll_ms = 50;
  ModelRegistryImpl service(store, metrics, options, auth);

  std::mutex mutex;
  std::vector<std::string> failures;  // guarded by mutex
  auto fail = [&](std::string what) {
    std::lock_guard lock(mutex);
    failures.push_back(std::move(what));
  };
  std::atomic<std::uint64_t> published{0};
  // GetModel and WatchModels are callback streams: they go through a real
  // server with the same service.
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_TRUE(server && port != 0);
  const auto download_stub = v1::ModelRegistry::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));

  std::thread publisher([&] {
    for (std::uint64_t version = 1; version <= kVersions; ++version) {
      const std::string blob = blob_of(version);
      std::vector<v1::ModelChunk> chunks;
      for (std::size_t offset = 0; offset < blob.size(); offset += 1200) {
        v1::ModelChunk chunk;
        if (offset == 0) {
          chunk.mutable_info()->set_version(version);
          chunk.mutable_info()->set_size_bytes(blob.size());
          chunk.mutable_info()->set_crc32(rpc::blob_crc32(blob));
        }
        chunk.set_data(blob.substr(offset, 1200));
        chunks.push_back(std::move(chunk));
      }
      grpc::testing::MockServerReader<v1::ModelChunk> reader;
      std::size_t next = 0;
      EXPECT_CALL(reader, Read(_)).WillRepeatedly(Invoke([&](v1::ModelChunk* chunk) {
        if (next == chunks.size()) return false;
        *chunk = chunks[next++];
        return true;
      }));
      grpc::ServerContext context;
      v1::ModelInfo reply;
      const auto status = service.publish_model(context, reader, reply);
      if (!status.ok()) return fail("PublishModel: " + status.error_message());
      published = version;
    }
  });
  // Readers and the best-setter work a fixed number of rounds beside the
  // publisher (spinning until it finishes starves it on 2 cores under TSan).
  constexpr int kRounds = 40;
  auto reader = [&] {
    for (int round = 0; round < kRounds; ++round) {
      grpc::ServerContext context;
      v1::LatestModelRequest latest_request;
      v1::ModelInfo latest;
      const auto latest_status = service.LatestModel(&context, &latest_request, &latest);
      if (latest_status.ok() && latest.version() > kVersions) fail("LatestModel: unknown version");
      std::string data;
      std::uint64_t version = 0;
      grpc::ClientContext download;
      download.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      v1::GetModelRequest request;  // version 0: the latest
      auto stream = download_stub->GetModel(&download, request);
      v1::ModelChunk chunk;
      while (stream->Read(&chunk)) {
        if (chunk.has_info()) version = chunk.info().version();
        data += chunk.data();
      }
      const auto status = stream->Finish();
      if (status.ok()) {
        if (data != blob_of(version))
          fail("GetModel: version " + std::to_string(version) + " damaged");
      } else if (status.error_code() != grpc::StatusCode::NOT_FOUND) {
        fail("GetModel: " + status.error_message());  // NOT_FOUND: none yet, or pruned meanwhile
      }
    }
  };
  std::thread reader1(reader);
  std::thread reader2(reader);
  std::thread best_setter([&] {
    for (int round = 0; round < kRounds; ++round) {
      const std::uint64_t version = published;
      if (version == 0) {
        std::this_thread::yield();
        continue;
      }
      grpc::ServerContext context;
      v1::SetBestRequest request;
      request.set_version(version);
      v1::ModelInfo reply;
      const auto status = service.SetBest(&context, &request, &reply);
      // NOT_FOUND: pruned between reading `published` and the call.
      if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) {
        fail("SetBest: " + status.error_message());
      }
      v1::BestModelRequest best_request;
      v1::ModelInfo best;
      if (service.BestModel(&context, &best_request, &best).ok() && best.version() > kVersions) {
        fail("BestModel: unknown version");
      }
    }
  });
  // The watcher: versions in increasing order, ending at the last one.
  std::mutex watch_mutex;
  std::condition_variable watch_cv;
  std::vector<std::uint64_t> watched;  // guarded by watch_mutex
  grpc::Status watch_status;
  std::thread watcher([&] {
    auto stub = v1::ModelRegistry::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    v1::WatchModelsRequest request;
    request.set_after_version(0);
    auto stream = stub->WatchModels(&context, request);
    v1::ModelInfo info;
    while (stream->Read(&info)) {
      {
        std::lock_guard lock(watch_mutex);
        watched.push_back(info.version());
      }
      watch_cv.notify_all();
    }
    watch_status = stream->Finish();
  });
  publisher.join();
  reader1.join();
  reader2.join();
  best_setter.join();
  {
    std::unique_lock lock(watch_mutex);
    EXPECT_TRUE(watch_cv.wait_for(lock, std::chrono::seconds(30),
                                  [&] { return !watched.empty() && watched.back() == kVersions; }))
        << "the watcher never saw version " << kVersions;
  }
  service.stop_watchers();
  watcher.join();
  server->Shutdown();

  EXPECT_THAT(failures, ::testing::IsEmpty());
  EXPECT_EQ(watch_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << watch_status.error_message();
  EXPECT_TRUE(std::is_sorted(watched.begin(), watched.end()) &&
              std::adjacent_find(watched.begin(), watched.end()) == watched.end())
      << "the watcher saw versions out of order or twice";
  auto kept = store.versions_after(0, 100);
  ASSERT_TRUE(kept.ok());
  EXPECT_LE(kept->size(), options.keep_models + 1);  // the newest keep_models and the best
  EXPECT_EQ(kept->back().version, kVersions);
}

}  // namespace
}  // namespace chessrl::replay_service
