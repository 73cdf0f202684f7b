// self-play's push function (replay_push) against a real gRPC replay service
// whose first reply is lost. Not among the ThreadSanitizer suites: gRPC's own
// threads report races in its libraries (tests/CMakeLists.txt).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/v1/replay.grpc.pb.h"
#include "game_pusher.h"
#include "pusher_test_options.h"
#include "selfplay_service.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

// A replay service whose first reply is lost: it stores the first PushGames'
// games and answers only after the caller's deadline has passed; later calls
// answer DUPLICATE for games it holds.
class LosingReplay final : public v1::ReplayService::Service {
 public:
  grpc::Status PushGames(grpc::ServerContext* context, const v1::PushGamesRequest* request,
                         v1::PushGamesReply* reply) override {
    const int call = ++calls_;
    {
      std::lock_guard lock(mutex_);
      for (const v1::Game& game : request->games()) {
        v1::PushResult* result = reply->add_results();
        result->set_id(game.id());
        result->set_status(stored_.insert(game.id()).second ? v1::STORED : v1::DUPLICATE);
      }
    }
    while (call == 1 && !context->IsCancelled()) std::this_thread::sleep_for(10ms);
    return grpc::Status::OK;
  }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
  std::mutex mutex_;
  std::set<std::string> stored_;
};

// One owner of the push retry: self-play's push function makes one attempt
// per call, so after a lost reply the pusher retries the games itself and
// their DUPLICATE counts as pushed (a retry), not as "unexpected" (an id
// taken by another). With the client also retrying inside the call, its
// second attempt met the first attempt's games as DUPLICATE before the pusher
// knew it had sent them.
TEST(GamePusher, ALostReplyIsRetriedByThePusherAndItsDuplicatesAreOurs) {
  LosingReplay service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  Settings settings;
  settings.replay = "127.0.0.1:" + std::to_string(port);
  settings.rpc_deadline_s = 1;
  metrics::Registry registry;
  const GamePusherOptions options = fast_pusher_options();
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  GamePusher pusher(replay_push(settings), options, registry, [&](const std::string& line) {
    std::lock_guard lock(lines_mutex);
    lines.push_back(line);
  });
  for (int i = 0; i < 3; ++i) {
    v1::Game game;
    game.set_id("game-" + std::to_string(i));
    pusher.add(game);
  }
  EXPECT_EQ(pusher.flush(20s), 0u);
  const GamePusherStats stats = pusher.stats();
  EXPECT_EQ(stats.unexpected_duplicates, 0u);
  EXPECT_EQ(stats.duplicates, 3u);
  EXPECT_EQ(stats.pushed(), 3u);
  EXPECT_EQ(service.calls(), 2) << "one lost call, then the pusher's retry";
  server->Shutdown(std::chrono::system_clock::now() + 2s);
}

}  // namespace
}  // namespace chessrl::selfplay_service
