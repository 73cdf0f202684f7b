// The registry's download queue (DownloadQueue: waiters in order, one
// withdrawn, one whose deadline would pass first told when to come back) and
// ModelView's next version, without a server.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay_service/model_cache.h"
#include "chessrl/replay_service/model_hub.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;

TEST(DownloadQueueTest, WaitersAreServedInOrderAndAWithdrawnOneIsNeverCalled) {
  metrics::Registry registry;
  auto& in_flight = registry.gauge("in_flight", "x");
  auto& waiting = registry.gauge("waiting", "x");
  DownloadQueue queue(1, &in_flight, &waiting);
  const auto forever = std::chrono::system_clock::time_point::max();
  std::vector<int> order;
  const auto waiter = [&](int i) {
    return [&order, i](bool granted, std::chrono::milliseconds) {
      EXPECT_TRUE(granted);
      order.push_back(i);
    };
  };
  EXPECT_EQ(queue.enter(100, forever, waiter(0)).kind, QueueTurn::Kind::kGranted);
  EXPECT_EQ(in_flight.value(), 1);
  std::vector<QueueTurn> turns;
  for (int i = 1; i <= 3; ++i) {
    turns.push_back(queue.enter(100, forever, waiter(i)));
    EXPECT_EQ(turns.back().kind, QueueTurn::Kind::kWaiting);
    EXPECT_EQ(turns.back().ahead, static_cast<std::size_t>(i - 1));
  }
  EXPECT_EQ(waiting.value(), 3);
  EXPECT_TRUE(queue.withdraw(turns[1].ticket));  // the second waiter's client left
  EXPECT_FALSE(queue.withdraw(turns[1].ticket));
  EXPECT_EQ(waiting.value(), 2);
  queue.leave(100, 10ms, true);
  queue.leave(100, 10ms, true);
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
  EXPECT_FALSE(queue.withdraw(turns[2].ticket)) << "its turn came already";
  queue.leave(100, 10ms, true);
  EXPECT_EQ(queue.in_flight(), 0u);
  EXPECT_EQ(in_flight.value(), 0);
  EXPECT_EQ(waiting.value(), 0);
}

TEST(DownloadQueueTest, AWaiterWhoseDeadlineWouldPassFirstIsRefusedWithTheEstimate) {
  DownloadQueue queue(2);
  const auto now = std::chrono::system_clock::now();
  const auto forever = std::chrono::system_clock::time_point::max();
  const auto never = [](bool, std::chrono::milliseconds) { ADD_FAILURE() << "not expected"; };
  // No download finished yet: nothing to estimate from, so everyone waits.
  EXPECT_FALSE(queue.estimate_wait().has_value());
  EXPECT_EQ(queue.enter(1000, forever, never).kind, QueueTurn::Kind::kGranted);
  EXPECT_EQ(queue.enter(1000, forever, never).kind, QueueTurn::Kind::kGranted);
  // One took 1 s for 1,000 bytes: a slot sends 1,000 bytes a second.
  queue.leave(1000, 1s, true);
  ASSERT_TRUE(queue.estimate_transfer(1000).has_value());
  EXPECT_NEAR(static_cast<double>(queue.estimate_transfer(1000)->count()), 1000, 1);
  EXPECT_EQ(queue.enter(1000, forever, never).kind, QueueTurn::Kind::kGranted);
  // Both slots send; 4,000 bytes queued ahead over 2 slots, after half of
  // the 2,000 in flight: (4,000 + 1,000) / 2 slots = 2.5 s, then 1 s to send.
  std::vector<QueueTurn> turns;
  int refused_later = 0;
  std::chrono::milliseconds told{0};
  for (int i = 0; i < 4; ++i) {
    turns.push_back(queue.enter(1000, forever, [&](bool granted, std::chrono::milliseconds wait) {
      if (!granted) {
        ++refused_later;
        told = wait;
      }
    }));
  }
  ASSERT_TRUE(queue.estimate_wait().has_value());
  EXPECT_NEAR(static_cast<double>(queue.estimate_wait()->count()), 2500, 1);
  const QueueTurn short_deadline = queue.enter(1000, now + 3s, never);
  EXPECT_EQ(short_deadline.kind, QueueTurn::Kind::kRefused);
  EXPECT_NEAR(static_cast<double>(short_deadline.wait.count()), 2500, 1);
  // A caller is let in when the estimate takes at most 3/4 of its time left.
  const QueueTurn long_enough = queue.enter(1000, std::chrono::system_clock::now() + 5s,
                                            [&](bool granted, std::chrono::milliseconds wait) {
                                              if (!granted) {
                                                ++refused_later;
                                                told = wait;
                                              }
                                            });
  EXPECT_EQ(long_enough.kind, QueueTurn::Kind::kWaiting);
  // Downloads turn slow (one took 50 s): at the next leave the last
  // waiter can no longer make its deadline and is told so, with the estimate.
  queue.leave(1000, 50s, true);
  EXPECT_EQ(refused_later, 1);
  EXPECT_GT(told, std::chrono::milliseconds(4000));
  EXPECT_EQ(queue.waiting(), 3u);  // the first of the four got the slot
}

TEST(ModelViewTest, NextAfterIsTheOldestNewerVersionOrTheNewestWhenTooFarBehind) {
  ModelView view;
  for (std::uint64_t v : {10, 11, 13}) {
    replay::ModelMeta meta;
    meta.version = v;
    view.recent.push_back(meta);
  }
  view.floor = 9;  // every version above 9 is in `recent`
  EXPECT_EQ(view.next_after(9)->version, 10u);
  EXPECT_EQ(view.next_after(10)->version, 11u);
  EXPECT_EQ(view.next_after(12)->version, 13u);
  EXPECT_EQ(view.next_after(13), nullptr);
  EXPECT_EQ(view.next_after(2)->version, 13u);  // below what memory holds: the newest
  EXPECT_EQ(view.find(11)->version, 11u);
  EXPECT_EQ(view.find(12), nullptr);
}

}  // namespace
}  // namespace chessrl::replay_service
