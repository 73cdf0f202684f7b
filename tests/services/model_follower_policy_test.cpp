// The model follower's policy against a scripted model registry (a gRPC server
// in this process whose answers each test sets): the injected loader, jittered
// download retries that differ between followers and never hold back a newer
// version, the announcement spread, and the watch refused for capacity
// (RESOURCE_EXHAUSTED with chessrl-retry-elsewhere): the follower comes back
// on a new connection and polls LatestModel meanwhile, so it still takes up
// new versions. Also the watch's stop: event-driven, no polling thread.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model_follower.h"

namespace chessrl {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A model registry whose answers the test scripts.
class ScriptedRegistry final : public v1::ModelRegistry::Service {
 public:
  ScriptedRegistry() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~ScriptedRegistry() override {
    {
      std::lock_guard lock(mutex_);
      shutting_down_ = true;
    }
    changed_.notify_all();
    server_->Shutdown(std::chrono::system_clock::now() + 1s);
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void publish(std::uint64_t version) {
    std::lock_guard lock(mutex_);
    latest_ = std::max(latest_, version);
    published_at_[version] = Clock::now();
    changed_.notify_all();
  }
  void refuse_watches(int n) {
    std::lock_guard lock(mutex_);
    refuse_watches_ = n;
  }
  void fail_gets(int n) {
    std::lock_guard lock(mutex_);
    fail_gets_ = n;
  }
  // The failed gets carry chessrl-retry-after-ms: `ms` (the registry's queue
  // naming when the caller's turn comes).
  // Every get waits this long before it answers (a turn in a queue).
  void delay_gets(std::chrono::milliseconds delay) {
    std::lock_guard lock(mutex_);
    get_delay_ = delay;
  }
  void retry_after(std::string ms) {
    std::lock_guard lock(mutex_);
    retry_after_ = std::move(ms);
  }
  std::vector<Clock::time_point> get_times() {
    std::lock_guard lock(mutex_);
    return get_times_;
  }
  std::vector<std::string> watch_peers() {
    std::lock_guard lock(mutex_);
    return watch_peers_;
  }
  int latest_calls() {
    std::lock_guard lock(mutex_);
    return latest_calls_;
  }
  int watches_refused() {
    std::lock_guard lock(mutex_);
    return watches_refused_;
  }
  Clock::time_point published_at(std::uint64_t version) {
    std::lock_guard lock(mutex_);
    return published_at_.at(version);
  }
  static std::string blob(std::uint64_t version) { return "model-" + std::to_string(version); }

  grpc::Status LatestModel(grpc::ServerContext*, const v1::LatestModelRequest*,
                           v1::ModelInfo* reply) override {
    std::lock_guard lock(mutex_);
    ++latest_calls_;
    if (latest_ == 0) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no model yet");
    *reply = info(latest_);
    return grpc::Status::OK;
  }

  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest* request,
                        grpc::ServerWriter<v1::ModelChunk>* writer) override {
    std::uint64_t version = request->version();
    {
      std::lock_guard lock(mutex_);
      get_times_.push_back(Clock::now());
      if (fail_gets_ > 0) {
        --fail_gets_;
        if (!retry_after_.empty()) context->AddTrailingMetadata(rpc::kRetryAfterMsKey, retry_after_);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted failure");
      }
      if (version == 0) version = latest_;
      if (version == 0 || version > latest_) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such version");
      }
    }
    std::chrono::milliseconds delay;
    {
      std::lock_guard lock(mutex_);
      delay = get_delay_;
    }
    std::this_thread::sleep_for(delay);
    v1::ModelChunk chunk;
    *chunk.mutable_info() = info(version);
    chunk.set_data(blob(version));
    writer->Write(chunk);
    return grpc::Status::OK;
  }

  grpc::Status WatchModels(grpc::ServerContext* context, const v1::WatchModelsRequest* request,
                           grpc::ServerWriter<v1::ModelInfo>* writer) override {
    std::unique_lock lock(mutex_);
    watch_peers_.push_back(context->peer());
    if (refuse_watches_ > 0) {
      --refuse_watches_;
      ++watches_refused_;
      context->AddTrailingMetadata(rpc::kRetryElsewhereKey, "1");
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "WatchModels: the most --max-watchers allows; try another replica");
    }
    std::uint64_t sent = request->after_version();
    while (!shutting_down_ && !context->IsCancelled()) {
      if (latest_ > sent) {
        sent = latest_;
        const v1::ModelInfo next = info(sent);
        lock.unlock();
        if (!writer->Write(next)) return grpc::Status::OK;
        lock.lock();
        continue;
      }
      changed_.wait_for(lock, 200ms);  // a publish wakes it; this is for a cancelled stream
    }
    return grpc::Status::OK;
  }

 private:
  static v1::ModelInfo info(std::uint64_t version) {
    v1::ModelInfo out;
    out.set_version(version);
    out.set_size_bytes(blob(version).size());
    out.set_crc32(rpc::blob_crc32(blob(version)));
    return out;
  }

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool shutting_down_ = false;
  std::uint64_t latest_ = 0;
  std::map<std::uint64_t, Clock::time_point> published_at_;
  int refuse_watches_ = 0;
  int watches_refused_ = 0;
  int fail_gets_ = 0;
  std::string retry_after_;
  std::chrono::milliseconds get_delay_{0};
  int latest_calls_ = 0;
  std::vector<Clock::time_point> get_times_;
  std::vector<std::string> watch_peers_;
};

// Follower options for tests: the scripted registry, a loader that builds no
// network (the bytes' version checked), quick waits, a log.
struct Harness {
  explicit Harness(const ScriptedRegistry& registry, std::uint64_t seed = 1) {
    options.registry.address = registry.address();
    options.registry.deadline = 5s;
    options.seed = seed;
    options.announce_spread = 0ms;
    options.poll_interval = 200ms;
    options.watch_held_after = 300ms;
    options.watch_backoff = {20ms, 50ms, 2, BackoffPolicy::Jitter::kFull, std::nullopt};
    options.download_backoff = {50ms, 200ms, 2, BackoffPolicy::Jitter::kFull, std::nullopt};
    options.loader = [this](const std::string& bytes, std::uint64_t version) {
      std::lock_guard lock(mutex);
      loaded.push_back(version);
      runtime::ModelLoad load;
      if (bytes != ScriptedRegistry::blob(version)) {
        load.error = runtime::ModelError::kUnusable;
        load.detail = "not the bytes published";
        return load;
      }
      load.model = runtime::uniform_model();
      return load;
    };
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mutex);
      log += line + "\n";
    };
    options.on_announced = [this](std::uint64_t version) {
      announced.emplace_back(version, Clock::now());  // called with the follower's lock held
    };
  }
  std::string logged() {
    std::lock_guard lock(mutex);
    return log;
  }
  // The version take() hands over next, within `timeout` (0: none came).
  std::uint64_t next_taken(runtime::ModelFollower& follower, std::chrono::milliseconds timeout) {
    std::optional<runtime::ModelFollower::Pending> pending;
    eventually([&] { return (pending = follower.take()).has_value(); }, timeout);
    return pending ? pending->model.version : 0;
  }

  runtime::ModelFollowerOptions options;
  std::mutex mutex;
  std::string log;
  std::vector<std::uint64_t> loaded;
  std::vector<std::pair<std::uint64_t, Clock::time_point>> announced;
};

TEST(ModelFollowerPolicy, TheInjectedLoaderMakesTheModel) {
  ScriptedRegistry registry;
  registry.publish(1);
  Harness h(registry);
  runtime::ModelFollower follower(h.options);
  follower.wait_settled(5s);
  auto first = follower.take();
  ASSERT_TRUE(first.has_value()) << h.logged();
  EXPECT_EQ(first->model.version, 1u) << "tagged with the registry's version";
  EXPECT_EQ(first->model.network, "") << "the loader's uniform model, no network built";
  registry.publish(2);
  EXPECT_EQ(h.next_taken(follower, 5s), 2u) << h.logged();
  follower.request_stop();
  std::lock_guard lock(h.mutex);
  EXPECT_EQ(h.loaded, (std::vector<std::uint64_t>{1, 2}));
  ASSERT_EQ(h.announced.size(), 2u);
  EXPECT_EQ(h.announced[0].first, 1u);
  EXPECT_EQ(h.announced[1].first, 2u);
}

// Two followers whose downloads keep failing retry with backoff, each at times
// of its own (their seeds differ), every wait under the doubling cap.
TEST(ModelFollowerPolicy, FailedDownloadsRetryWithJitterOfTheirOwn) {
  ScriptedRegistry a, b;
  std::vector<std::vector<double>> gaps;
  for (ScriptedRegistry* registry : {&a, &b}) {
    registry->publish(1);
    registry->fail_gets(1000);
  }
  {
    Harness ha(a, 11), hb(b, 12);
    std::atomic<int> failures{0};
    ha.options.on_download_failed = [&](std::uint64_t version, grpc::StatusCode code) {
      EXPECT_EQ(version, 1u);
      EXPECT_EQ(code, grpc::StatusCode::UNAVAILABLE);
      ++failures;
    };
    runtime::ModelFollower fa(ha.options), fb(hb.options);
    ASSERT_TRUE(eventually([&] { return a.get_times().size() >= 7 && b.get_times().size() >= 7; }));
    EXPECT_GE(failures.load(), 6);
    EXPECT_NE(ha.logged().find("cannot download model version 1"), std::string::npos)
        << ha.logged();
  }
  for (ScriptedRegistry* registry : {&a, &b}) {
    const auto times = registry->get_times();
    std::vector<double> g;
    for (std::size_t i = 1; i < 7; ++i) {
      const double ms = std::chrono::duration<double, std::milli>(times[i] - times[i - 1]).count();
      // Full jitter under a cap of 50, 100, 200, 200 ... ms (plus the call's own
      // time, generous on a loaded machine).
      EXPECT_LE(ms, std::min(50.0 * (1 << (i - 1)), 200.0) + 250) << "retry " << i;
      g.push_back(ms);
    }
    gaps.push_back(g);
  }
  int differ = 0;
  for (std::size_t i = 0; i < gaps[0].size(); ++i) differ += std::abs(gaps[0][i] - gaps[1][i]) > 5;
  EXPECT_GE(differ, 3) << "the two followers retry in step";
}

// A download the registry answers UNAVAILABLE with chessrl-retry-after-ms
// comes back after that long (plus at most a tenth), not after the follower's
// own backoff; a malformed hint is ignored (the backoff applies).
TEST(ModelFollowerPolicy, ADownloadComesBackWhenTheRegistrySays) {
  for (const std::string hint : {"600", "6x0"}) {
    ScriptedRegistry registry;
    Harness h(registry);
    h.options.download_backoff = {5s, 5s, 2, BackoffPolicy::Jitter::kNone, std::nullopt};
    registry.publish(1);
    registry.retry_after(hint);
    registry.fail_gets(1);
    runtime::ModelFollower follower(h.options);
    if (hint == "600") {
      EXPECT_EQ(h.next_taken(follower, 5s), 1u) << h.logged();
      const auto times = registry.get_times();
      ASSERT_EQ(times.size(), 2u);
      const double ms = std::chrono::duration<double, std::milli>(times[1] - times[0]).count();
      EXPECT_GE(ms, 600.0);
      EXPECT_LE(ms, 600.0 + 60.0 + 1000.0) << "the hint, a tenth of jitter, a loaded machine";
      EXPECT_EQ(h.logged().find("retrying with backoff"), std::string::npos)
          << "a turn named by the queue is no failure to log";
    } else {
      ASSERT_TRUE(eventually([&] { return registry.get_times().size() >= 1; }));
      std::this_thread::sleep_for(1500ms);
      EXPECT_EQ(registry.get_times().size(), 1u) << "a malformed hint falls back to the 5 s backoff";
    }
  }
}

// A download may take longer than the quick calls' deadline (its turn in the
// registry's queue): download_deadline, not registry.deadline, bounds it.
TEST(ModelFollowerPolicy, ADownloadMayWaitItsTurnPastTheQuickCallsDeadline) {
  ScriptedRegistry registry;
  Harness h(registry);
  h.options.registry.deadline = 300ms;
  h.options.download_deadline = 5s;
  registry.publish(1);
  registry.delay_gets(900ms);
  std::atomic<int> failures{0};
  h.options.on_download_failed = [&](std::uint64_t, grpc::StatusCode) { ++failures; };
  runtime::ModelFollower follower(h.options);
  EXPECT_EQ(h.next_taken(follower, 5s), 1u) << h.logged();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(registry.get_times().size(), 1u) << "served in its turn, not retried";
}

// A version published while the follower waits out a long retry of an older
// one is fetched at once, not after that retry.
TEST(ModelFollowerPolicy, ANewerVersionDoesNotWaitForAnOlderOnesRetry) {
  ScriptedRegistry registry;
  Harness h(registry);
  h.options.download_backoff = {10s, 10s, 2, BackoffPolicy::Jitter::kNone, std::nullopt};
  registry.publish(1);
  registry.fail_gets(1);
  runtime::ModelFollower follower(h.options);
  follower.wait_settled(5s);
  ASSERT_FALSE(follower.take().has_value()) << "v1's download failed";
  ASSERT_EQ(registry.get_times().size(), 1u);
  std::this_thread::sleep_for(100ms);
  registry.publish(2);
  const auto published = Clock::now();
  EXPECT_EQ(h.next_taken(follower, 3s), 2u) << h.logged();
  EXPECT_LT(Clock::now() - published, 3s);
  EXPECT_EQ(registry.get_times().size(), 2u) << "v2 once; v1 not again";
}

// The first GetModel of a version heard of waits U(0, announce_spread): within
// it, and not the same for every follower.
TEST(ModelFollowerPolicy, TheFirstDownloadIsSpreadOverTheAnnouncementSpread) {
  ScriptedRegistry registry;
  registry.publish(1);
  std::vector<std::unique_ptr<Harness>> harnesses;
  std::vector<std::unique_ptr<runtime::ModelFollower>> followers;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    harnesses.push_back(std::make_unique<Harness>(registry, seed));
    harnesses.back()->options.announce_spread = 600ms;
    followers.push_back(std::make_unique<runtime::ModelFollower>(harnesses.back()->options));
  }
  for (std::size_t i = 0; i < followers.size(); ++i) {
    followers[i]->wait_settled(5s);
    ASSERT_EQ(harnesses[i]->next_taken(*followers[i], 5s), 1u) << "start-up: no spread";
  }
  const std::size_t before = registry.get_times().size();
  registry.publish(2);
  for (std::size_t i = 0; i < followers.size(); ++i) {
    EXPECT_EQ(harnesses[i]->next_taken(*followers[i], 5s), 2u) << harnesses[i]->logged();
  }
  const auto published = registry.published_at(2);
  auto times = registry.get_times();
  ASSERT_EQ(times.size(), before + 8);
  times.erase(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(before));
  std::vector<double> delays;
  for (auto t : times) delays.push_back(std::chrono::duration<double, std::milli>(t - published).count());
  std::sort(delays.begin(), delays.end());
  EXPECT_GE(delays.front(), 0.0);
  EXPECT_LE(delays.back(), 600.0 + 600.0) << "the spread plus the watch's own delay";
  EXPECT_GE(delays.back() - delays.front(), 100.0) << "all at once: no spread";
}

// A watch refused for capacity (RESOURCE_EXHAUSTED, chessrl-retry-elsewhere)
// comes back on a new connection each time, and meanwhile the follower asks
// LatestModel: a version published while every watch is refused is taken up.
TEST(ModelFollowerPolicy, ARefusedWatchPollsLatestAndReconnectsOnANewConnection) {
  ScriptedRegistry registry;
  registry.publish(1);
  registry.refuse_watches(1000000);
  Harness h(registry);
  h.options.watch_backoff = {100ms, 100ms, 2, BackoffPolicy::Jitter::kNone, std::nullopt};
  runtime::ModelFollower follower(h.options);
  follower.wait_settled(5s);
  ASSERT_EQ(h.next_taken(follower, 5s), 1u);
  ASSERT_TRUE(eventually([&] { return registry.watches_refused() >= 3; }));
  registry.publish(2);
  EXPECT_EQ(h.next_taken(follower, 5s), 2u) << "learnt by polling\n" << h.logged();
  EXPECT_GE(registry.latest_calls(), 2) << "the start-up question and at least one poll";
  EXPECT_NE(h.logged().find("that replica is full"), std::string::npos) << h.logged();
  EXPECT_NE(h.logged().find("asking LatestModel every"), std::string::npos) << h.logged();
  const auto peers = registry.watch_peers();
  const std::set<std::string> distinct(peers.begin(), peers.end());
  EXPECT_EQ(distinct.size(), peers.size()) << "each refused watch came back on a new connection";

  // Room again: the watch is held, the polling stops, versions come by the watch.
  registry.refuse_watches(0);
  ASSERT_TRUE(eventually([&] { return h.logged().find("is back") != std::string::npos; }))
      << h.logged();
  const int polls = registry.latest_calls();
  registry.publish(3);
  EXPECT_EQ(h.next_taken(follower, 5s), 3u) << h.logged();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(registry.latest_calls(), polls) << "no polling while the watch is held";
}

// A watch stopped through its stop_token ends at once, wherever it waits
// (reading an idle stream, or backing off between streams).
TEST(ModelFollowerPolicy, AWatchStopsAtOnceWhenAsked) {
  ScriptedRegistry registry;
  registry.publish(1);
  rpc::ClientOptions options;
  options.address = registry.address();
  rpc::ModelRegistryClient client(options);
  for (bool refused : {false, true}) {
    registry.refuse_watches(refused ? 1000000 : 0);
    std::stop_source stop;
    std::atomic<int> seen{0}, ended{0};
    rpc::ModelRegistryClient::WatchHooks hooks;
    hooks.backoff = BackoffPolicy{30s, 30s, 2, BackoffPolicy::Jitter::kNone, std::nullopt};
    hooks.on_end = [&](const grpc::Status& status, bool elsewhere) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
      EXPECT_TRUE(elsewhere);
      ++ended;
    };
    std::atomic<bool> returned{false};
    std::thread watcher([&] {
      client.watch(0, [&](const v1::ModelInfo&) { return ++seen > 0; }, stop.get_token(), hooks);
      returned = true;
    });
    if (refused) {
      ASSERT_TRUE(eventually([&] { return ended.load() == 1; }));  // now in a 30 s backoff
    } else {
      ASSERT_TRUE(eventually([&] { return seen.load() == 1; }));  // now reading an idle stream
    }
    std::this_thread::sleep_for(100ms);
    const auto asked = Clock::now();
    stop.request_stop();
    EXPECT_TRUE(eventually([&] { return returned.load(); }, 2s));
    EXPECT_LT(Clock::now() - asked, 500ms) << (refused ? "backing off" : "reading");
    watcher.join();
  }
}

// GetModel's answer says whether the server named another replica.
TEST(ModelFollowerPolicy, TheRetryElsewhereTrailerIsSeenAndCountsAsTransient) {
  class Full final : public v1::ModelRegistry::Service {
    grpc::Status LatestModel(grpc::ServerContext* context, const v1::LatestModelRequest*,
                             v1::ModelInfo*) override {
      context->AddTrailingMetadata(rpc::kRetryElsewhereKey, "1");
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "full; try another replica");
    }
    grpc::Status BestModel(grpc::ServerContext*, const v1::BestModelRequest*,
                           v1::ModelInfo*) override {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "over a limit");
    }
  } service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  rpc::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  rpc::ModelRegistryClient client(options, rpc::make_fresh_channel(options));
  auto latest = client.latest();
  ASSERT_FALSE(latest.ok());
  EXPECT_TRUE(latest.retry_elsewhere());
  EXPECT_TRUE(latest.transient());
  auto best = client.best();
  ASSERT_FALSE(best.ok());
  EXPECT_FALSE(best.retry_elsewhere());
  EXPECT_FALSE(best.transient()) << "RESOURCE_EXHAUSTED alone stays final";
  server->Shutdown();
}

}  // namespace
}  // namespace chessrl
