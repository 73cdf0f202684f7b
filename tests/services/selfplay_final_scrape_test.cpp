// After a stop that lost games, chessrl-selfplay's wait for a scrape of the
// lost count (final_scrape.h), over a real loopback HTTP server: no wait when
// nothing was lost, with a wait of 0 or with metrics off; a wait that ends at
// a scrape holding the count; the line when none comes. Not among the
// ThreadSanitizer suites: civetweb's threads come from a library built
// without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/registry.h"
#include "child_process.h"
#include "final_scrape.h"
#include "game_pusher.h"
#include "pusher_test_options.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

struct Log {
  std::vector<std::string> lines;
  LogFunction function() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
  bool has(const std::string& text) const {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  }
};

// A GamePusher whose replay never answers, flushed with `games` buffered: all
// of them lost (counted in `registry`).
std::size_t lose_games(metrics::Registry& registry, int games) {
  GamePusher pusher(
      [](const v1::PushGamesRequest&, Clock::time_point) -> rpc::RpcResult<v1::PushGamesReply> {
        return rpc::RpcFailure{"down", grpc::StatusCode::UNAVAILABLE};
      },
      fast_pusher_options(), registry, [](const std::string&) {});
  for (int i = 0; i < games; ++i) {
    v1::Game game;
    game.set_id("lost-" + std::to_string(i));
    pusher.add(std::move(game));
  }
  return pusher.flush(0ms);
}

TEST(FinalScrape, NeverWaitsWhenNothingWasLostOrItIsOff) {
  metrics::Registry registry;
  metrics::Exposer exposer(registry, "127.0.0.1:0");
  Log log;
  // Nothing lost: no wait however long the limit (an hour would time the test out).
  EXPECT_EQ(wait_for_final_scrape(&exposer, 0, std::chrono::hours(1), log.function()),
            FinalScrape::kNothingLost);
  EXPECT_TRUE(log.lines.empty());
  // --final-scrape-wait 0: off.
  EXPECT_EQ(wait_for_final_scrape(&exposer, 3, 0ms, log.function()), FinalScrape::kOff);
  EXPECT_TRUE(log.lines.empty());
  // --metrics-listen off: nothing to wait for, and the log says so.
  EXPECT_EQ(wait_for_final_scrape(nullptr, 3, std::chrono::hours(1), log.function()),
            FinalScrape::kOff);
  EXPECT_TRUE(log.has("3 games lost; metrics are off")) << log.lines.size();
}

TEST(FinalScrape, WaitsForAScrapeThatReadsTheLostCount) {
  metrics::Registry registry;
  const std::size_t lost = lose_games(registry, 5);
  ASSERT_EQ(lost, 5u);
  metrics::Exposer exposer(registry, "127.0.0.1:0");
  std::atomic<bool> done{false};
  std::mutex mutex;
  std::string page;  // the latest scrape
  std::thread scraper([&] {
    while (!done) {
      const std::string response = testing::http_get(exposer.port(), "/metrics");
      {
        std::lock_guard lock(mutex);
        if (!response.empty()) page = response;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  Log log;
  const FinalScrape result =
      wait_for_final_scrape(&exposer, lost, std::chrono::hours(1), log.function());
  done = true;
  scraper.join();
  EXPECT_EQ(result, FinalScrape::kScraped);
  EXPECT_GE(exposer.scrapes(), 1u);
  EXPECT_NE(page.find("\nchessrl_selfplay_games_lost_total 5\n"), std::string::npos) << page;
  EXPECT_TRUE(log.has("5 games lost: waiting up to 3600 s for a scrape")) << log.lines.front();
  EXPECT_TRUE(log.has("lost counts scraped after ")) << log.lines.back();
}

TEST(FinalScrape, SaysWhenNoScrapeCame) {
  metrics::Registry registry;
  const std::size_t lost = lose_games(registry, 2);
  metrics::Exposer exposer(registry, "127.0.0.1:0");
  Log log;
  EXPECT_EQ(wait_for_final_scrape(&exposer, lost, 250ms, log.function()), FinalScrape::kNoScrape);
  EXPECT_EQ(exposer.scrapes(), 0u);
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[1], "no scrape within 0.25 s: the lost count may never reach Prometheus");
}

}  // namespace
}  // namespace chessrl::selfplay_service
