// The GamePusher against a fake push function: an outage, recovery, order,
// shedding, rejections, duplicates (a retry of its own push, or an id it
// never sent: counted apart), batches refused for good (split and the game
// that cannot be stored dropped and counted, never blocking those behind it),
// games the replay could not store (retried), the push interval, flush
// deadlines (what is left counted lost), the --acked-log lines, appended
// across restarts; an unopenable --acked-log refused at start-up.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/metrics/registry.h"
#include "game_pusher.h"
#include "pusher_test_options.h"
#include "selfplay_settings.h"

namespace chessrl::selfplay_service {
namespace {

using namespace std::chrono_literals;

// --- GamePusher against a fake replay service

class FakeReplay {
 public:
  rpc::RpcResult<v1::PushGamesReply> push(const v1::PushGamesRequest& request) {
    std::lock_guard lock(mutex_);
    ++calls_;
    call_times_.push_back(Clock::now());
    for (const auto& g : request.games()) ++offered_[g.id()];
    if (!up_) {
      return rpc::RpcFailure{"PushGames: UNAVAILABLE: the fake replay is down",
                             grpc::StatusCode::UNAVAILABLE};
    }
    if (max_games_ > 0 && request.games_size() > max_games_) {
      return rpc::RpcFailure{"PushGames: at most " + std::to_string(max_games_) + " games a call",
                             grpc::StatusCode::RESOURCE_EXHAUSTED};
    }
    for (const auto& g : request.games()) {
      if (auto it = refuse_.find(g.id()); it != refuse_.end()) {
        return rpc::RpcFailure{"PushGames: refused: game " + g.id() + " is poison", it->second};
      }
    }
    v1::PushGamesReply reply;
    for (const auto& g : request.games()) {
      v1::PushResult* r = reply.add_results();
      r->set_id(g.id());
      if (fail_once_.erase(g.id()) > 0) {
        r->set_status(v1::FAILED);
        r->set_reason("store_error");
        r->set_detail("made-up store failure");
      } else if (auto it = reject_.find(g.id()); it != reject_.end()) {
        r->set_status(v1::REJECTED);
        r->set_reason(it->second);
        r->set_detail("ply 3: made up");
      } else if (std::find(stored_.begin(), stored_.end(), g.id()) != stored_.end()) {
        r->set_status(v1::DUPLICATE);
      } else {
        r->set_status(v1::STORED);
        stored_.push_back(g.id());
      }
    }
    if (truncate_next_) {
      truncate_next_ = false;
      reply.mutable_results()->RemoveLast();
    }
    return reply;
  }
  PushFunction function() {
    return [this](const v1::PushGamesRequest& request, Clock::time_point) { return push(request); };
  }
  void set_up(bool up) {
    std::lock_guard lock(mutex_);
    up_ = up;
  }
  void reject(const std::string& id, const std::string& reason) {
    std::lock_guard lock(mutex_);
    reject_[id] = reason;
  }
  // Any push holding `id` fails as a whole with `code`.
  void refuse_batches_with(const std::string& id, grpc::StatusCode code) {
    std::lock_guard lock(mutex_);
    refuse_[id] = code;
  }
  // A push of more games fails with RESOURCE_EXHAUSTED (--max-push-games).
  void set_max_games(int n) {
    std::lock_guard lock(mutex_);
    max_games_ = n;
  }
  // The first push of `id` answers FAILED for it (not stored).
  void fail_store_once(const std::string& id) {
    std::lock_guard lock(mutex_);
    fail_once_.insert(id);
  }
  std::vector<Clock::time_point> call_times() {
    std::lock_guard lock(mutex_);
    return call_times_;
  }
  void pre_store(const std::string& id) {
    std::lock_guard lock(mutex_);
    stored_.push_back(id);
  }
  void truncate_next_reply() {
    std::lock_guard lock(mutex_);
    truncate_next_ = true;
  }
  std::vector<std::string> stored() {
    std::lock_guard lock(mutex_);
    return stored_;
  }
  int offered(const std::string& id) {
    std::lock_guard lock(mutex_);
    return offered_[id];
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  bool up_ = true;
  bool truncate_next_ = false;
  std::vector<std::string> stored_;
  std::map<std::string, std::string> reject_;
  std::map<std::string, int> offered_;
  std::map<std::string, grpc::StatusCode> refuse_;
  std::set<std::string> fail_once_;
  std::vector<Clock::time_point> call_times_;
  int max_games_ = 0;
  int calls_ = 0;
};

class Lines {
 public:
  LogFunction function() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  int count(const std::string& text) {
    std::lock_guard lock(mutex_);
    return int(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return l.find(text) != std::string::npos;
    }));
  }
  std::string all() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

v1::Game numbered(int i) {
  v1::Game g;
  g.set_id("game-" + std::to_string(i));
  return g;
}

std::vector<std::string> ids(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("game-" + std::to_string(i));
  return out;
}

template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

double value(metrics::Registry& registry, const std::string& name,
             const metrics::Labels& labels = {}) {
  return registry.counter(name, "x", labels).value();
}

// The backoff's jitter: waits within [min, max], each pusher (seed) its own,
// spread out at the ceiling rather than all equal to it.
TEST(RetryDelays, WaitsStayWithinMinAndMaxAndTwoSeedsDiffer) {
  RetryDelays a(100ms, 5000ms, 1), b(100ms, 5000ms, 2), a_again(100ms, 5000ms, 1);
  std::vector<std::chrono::milliseconds> waits_a, waits_b;
  for (int i = 0; i < 40; ++i) {
    waits_a.push_back(a.next());
    waits_b.push_back(b.next());
    EXPECT_EQ(a_again.next(), waits_a.back()) << "the same seed, the same waits";
  }
  for (const auto& waits : {waits_a, waits_b}) {
    for (const auto wait : waits) {
      EXPECT_GE(wait, 100ms);
      EXPECT_LE(wait, 5000ms);
    }
    EXPECT_LE(waits[0], 200ms);  // the first: between min and twice min
    EXPECT_GT(waits[0], 0ms);
  }
  EXPECT_NE(waits_a, waits_b);
  // At the ceiling (from the 7th wait on: 100 ms doubled 6 times is past 5 s),
  // waits are spread over [max / 2, max], not all at max.
  std::set<std::chrono::milliseconds::rep> at_ceiling;
  for (std::size_t i = 7; i < waits_a.size(); ++i) {
    EXPECT_GE(waits_a[i], 2500ms);
    at_ceiling.insert(waits_a[i].count());
  }
  EXPECT_GE(at_ceiling.size(), 20u) << "waits at the ceiling are not spread";
  // Two pushers' first waits after one refusal: over 100 pushers, spread too.
  std::set<std::chrono::milliseconds::rep> first_waits;
  for (std::uint64_t seed = 1; seed <= 100; ++seed)
    first_waits.insert(RetryDelays(100ms, 5000ms, seed).next().count());
  EXPECT_GE(first_waits.size(), 40u);
  // A reset starts from the bottom; a cap (a flush) bounds a wait.
  a.reset();
  EXPECT_LE(a.next(), 200ms);
  for (int i = 0; i < 10; ++i) EXPECT_LE(a.next(1000ms), 1000ms);
  // min == max: always that.
  RetryDelays fixed(50ms, 50ms, 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fixed.next(), 50ms);
}

// Two pushers refused at once retry at times of their own, never sooner than
// the minimum backoff.
TEST(GamePusher, TwoPushersRefusedAtOnceRetryAtDifferentTimes) {
  FakeReplay replay_a, replay_b;
  replay_a.set_up(false);
  replay_b.set_up(false);
  Lines log;
  metrics::Registry registry_a, registry_b;
  GamePusherOptions options = fast_pusher_options();
  options.backoff_min = 5ms;
  options.backoff_max = 40ms;
  options.jitter_seed = 11;
  GamePusher a(replay_a.function(), options, registry_a, log.function());
  options.jitter_seed = 12;
  GamePusher b(replay_b.function(), options, registry_b, log.function());
  for (int i = 0; i < 4; ++i) {  // a full batch each: both push at once
    a.add(numbered(i));
    b.add(numbered(i));
  }
  ASSERT_TRUE(eventually([&] { return replay_a.calls() >= 8 && replay_b.calls() >= 8; }));
  const auto gaps = [](const std::vector<Clock::time_point>& times) {
    std::vector<double> out;
    for (std::size_t i = 1; i < 8; ++i)
      out.push_back(std::chrono::duration<double, std::milli>(times[i] - times[i - 1]).count());
    return out;
  };
  const std::vector<double> gaps_a = gaps(replay_a.call_times());
  const std::vector<double> gaps_b = gaps(replay_b.call_times());
  for (const auto& g : {gaps_a, gaps_b}) {
    for (const double gap : g) EXPECT_GE(gap, 5.0);  // a wait is at least backoff_min
  }
  EXPECT_NE(gaps_a, gaps_b);
  replay_a.set_up(true);
  replay_b.set_up(true);
  ASSERT_TRUE(eventually([&] { return a.buffered() == 0 && b.buffered() == 0; }));
  EXPECT_EQ(replay_a.stored(), ids(0, 4));
  EXPECT_EQ(replay_b.stored(), ids(0, 4));
}

TEST(GamePusher, BuffersThroughAnOutageAndPushesEverythingOnceInOrder) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.set_up(false);
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 10; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().failures >= 4; }));
  EXPECT_EQ(pusher.buffered(), 10u);
  EXPECT_TRUE(replay.stored().empty());
  EXPECT_EQ(registry.gauge("chessrl_selfplay_games_buffered", "x").value(), 10.0);
  EXPECT_GE(value(registry, "chessrl_selfplay_push_failures_total"), 4.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 0.0);

  // Backoff: far fewer calls than the outage's milliseconds.
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(replay.calls(), 40) << "no exponential backoff";

  replay.set_up(true);
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }));
  EXPECT_EQ(replay.stored(), ids(0, 10));
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 10.0);
  EXPECT_EQ(registry.gauge("chessrl_selfplay_games_buffered", "x").value(), 0.0);
  // The outage is logged once when it starts and once when it ends.
  EXPECT_EQ(log.count("cannot push"), 1) << log.all();
  EXPECT_EQ(log.count("takes games again"), 1) << log.all();
  const GamePusherStats stats = pusher.stats();
  EXPECT_EQ(stats.stored, 10u);
  EXPECT_EQ(stats.shed, 0u);
  EXPECT_EQ(pusher.flush(1s), 0u);
}

TEST(GamePusher, ShedsTheOldestWhenFullCountedAndLogged) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o;
  o.buffer_games = 8;
  o.batch_games = 4;
  o.interval = std::chrono::hours(1);
  o.backoff_min = o.backoff_max = std::chrono::hours(1);  // one failed push, then quiet
  replay.set_up(false);
  GamePusher pusher(replay.function(), o, registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().failures == 1; }));
  for (int i = 4; i < 12; ++i) pusher.add(numbered(i));
  EXPECT_EQ(pusher.buffered(), 8u);
  EXPECT_EQ(pusher.stats().shed, 4u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_shed_total"), 4.0);
  EXPECT_GE(log.count("shed the oldest, game game-0"), 1) << log.all();

  replay.set_up(true);
  EXPECT_EQ(pusher.flush(5s), 0u);  // a flush retries at once, whatever the backoff
  EXPECT_EQ(replay.stored(), ids(4, 12));
}

TEST(GamePusher, CountsRejectionsByReasonAndDoesNotRetryThem) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.reject("game-2", "illegal_move");
  replay.reject("game-5", "something_new");
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 8; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().added == 8 && pusher.buffered() == 0; }));
  const GamePusherStats stats = pusher.stats();
  EXPECT_EQ(stats.rejected, 2u);
  EXPECT_EQ(stats.rejected_by_reason.at("illegal_move"), 1u);
  EXPECT_EQ(stats.rejected_by_reason.at("other"), 1u);
  EXPECT_EQ(stats.stored, 6u);
  EXPECT_EQ(stats.pushed(), 6u);
  EXPECT_EQ(replay.offered("game-2"), 1);
  EXPECT_EQ(replay.offered("game-5"), 1);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "illegal_move"}}),
            1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "other"}}), 1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "bad_policy"}}),
            0.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 6.0);
  EXPECT_EQ(log.count("rejected game game-2 (illegal_move)"), 1) << log.all();
  // Only the fixed reason labels (and "other") ever appear.
  EXPECT_EQ(registry.serialize().find("something_new"), std::string::npos);
  EXPECT_EQ(GamePusher::reason_label("bad_result"), "bad_result");
  EXPECT_EQ(GamePusher::reason_label("nonsense"), "other");
}

// A restarted process with an id the replay already holds (before ids carried
// a nonce: any restart with --seed): the game is not stored, and says so.
TEST(GamePusher, ADuplicateForAGameNeverSentIsCountedApartAndNotPushed) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.pre_store("game-1");
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.stats().added == 4 && pusher.buffered() == 0; }));
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 3.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_duplicate_total", {{"kind", "unexpected"}}),
            1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_duplicate_total", {{"kind", "retry"}}), 0.0);
  EXPECT_EQ(log.count("game with id game-1, which this process never pushed before"), 1)
      << log.all();
  EXPECT_EQ(pusher.stats().unexpected_duplicates, 1u);
  EXPECT_EQ(pusher.stats().pushed(), 3u);
}

// One game the replay refuses with a code that will not pass, at the head of
// the queue: the batch is halved until that game alone is refused; it is
// dropped, counted and logged, and every game behind it is stored, in order.
TEST(GamePusher, APoisonBatchDoesNotBlockTheGamesBehindIt) {
  for (const grpc::StatusCode code :
       {grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::DATA_LOSS}) {
    FakeReplay replay;
    Lines log;
    metrics::Registry registry;
    replay.refuse_batches_with("game-2", code);
    GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
    for (int i = 0; i < 10; ++i) pusher.add(numbered(i));
    ASSERT_TRUE(eventually([&] { return replay.stored().size() == 9 && pusher.buffered() == 0; }))
        << log.all();
    std::vector<std::string> expected = ids(0, 10);
    expected.erase(expected.begin() + 2);
    EXPECT_EQ(replay.stored(), expected);
    const std::string label = GamePusher::code_label(code);
    EXPECT_EQ(value(registry, "chessrl_selfplay_games_dropped_total", {{"reason", label}}), 1.0);
    EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 9.0);
    EXPECT_EQ(log.count("dropped game game-2"), 1) << log.all();
    EXPECT_LE(replay.offered("game-2"), 3);  // batches of 4, 2, 1
    EXPECT_EQ(pusher.stats().dropped_by_reason.at(label), 1u);
  }
  // UNAVAILABLE and the like say nothing about the games: retried, nothing dropped.
  EXPECT_FALSE(GamePusher::refused_for_its_games(grpc::StatusCode::UNAVAILABLE));
  EXPECT_FALSE(GamePusher::refused_for_its_games(grpc::StatusCode::PERMISSION_DENIED));
}

// More games a call than the service takes: smaller batches, nothing dropped.
TEST(GamePusher, BatchesOverTheServicesLimitAreSplitAndNothingIsDropped) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.set_max_games(1);
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 6; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return replay.stored().size() == 6 && pusher.buffered() == 0; }))
      << log.all();
  EXPECT_EQ(replay.stored(), ids(0, 6));
  EXPECT_EQ(pusher.stats().dropped, 0u);
  EXPECT_EQ(registry.serialize().find("resource_exhausted"), std::string::npos);
}

// FAILED: the store failed on that game alone; it is pushed again, not lost.
TEST(GamePusher, AGameTheStoreFailedOnIsPushedAgain) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.fail_store_once("game-1");
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return replay.stored().size() == 4 && pusher.buffered() == 0; }))
      << log.all();
  EXPECT_EQ(replay.stored(), (std::vector<std::string>{"game-0", "game-2", "game-3", "game-1"}));
  EXPECT_EQ(replay.offered("game-1"), 2);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_store_failed_total"), 1.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 4.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_rejected_total", {{"reason", "other"}}), 0.0);
}

TEST(GamePusher, RetriesABatchWhoseReplyDoesNotMatch) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.truncate_next_reply();
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 4; ++i) pusher.add(numbered(i));
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }));
  EXPECT_EQ(pusher.stats().failures, 1u);
  // The first push stored all four but its reply was cut short: the retry
  // finds them stored (DUPLICATE), and each is counted pushed once.
  EXPECT_EQ(replay.stored(), ids(0, 4));
  EXPECT_EQ(pusher.stats().duplicates, 4u);
  EXPECT_EQ(pusher.stats().unexpected_duplicates, 0u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_pushed_total"), 4.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_duplicate_total", {{"kind", "retry"}}), 4.0);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_duplicate_total", {{"kind", "unexpected"}}),
            0.0);
}

TEST(GamePusher, PushesASmallBatchAfterTheInterval) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o = fast_pusher_options();
  o.batch_games = 32;
  o.interval = 100ms;
  const Clock::time_point made = Clock::now();
  GamePusher pusher(replay.function(), o, registry, log.function());
  pusher.add(numbered(0));
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }, 2s));
  EXPECT_EQ(replay.stored(), ids(0, 1));
  // Neither a full batch nor the interval before: the one push came an interval
  // after the pusher started, however slow the machine.
  ASSERT_EQ(replay.call_times().size(), 1u);
  EXPECT_GE(replay.call_times()[0] - made, o.interval);

  // Again once the buffer has drained and the thread waits on an empty one.
  ASSERT_TRUE(
      eventually([&] { return replay.call_times().size() == 1 && pusher.buffered() == 0; }));
  pusher.add(numbered(1));
  ASSERT_TRUE(eventually([&] { return pusher.buffered() == 0; }, 2s));
  EXPECT_EQ(replay.stored(), ids(0, 2));
  ASSERT_EQ(replay.call_times().size(), 2u);
  EXPECT_GE(replay.call_times()[1] - replay.call_times()[0], o.interval);
}

TEST(GamePusher, FlushGivesUpAtItsDeadlineAndSaysHowManyAreLeft) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.set_up(false);
  GamePusher pusher(replay.function(), fast_pusher_options(), registry, log.function());
  for (int i = 0; i < 5; ++i) pusher.add(numbered(i));
  const auto start = Clock::now();
  EXPECT_EQ(pusher.flush(300ms), 5u);
  const auto took = Clock::now() - start;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 3s);
  EXPECT_TRUE(replay.stored().empty());
  // What is left is lost, and counted so once: a second flush adds nothing.
  EXPECT_EQ(pusher.stats().lost, 5u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_lost_total"), 5.0);
  EXPECT_EQ(pusher.flush(10ms), 5u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_lost_total"), 5.0);
}

TEST(GamePusher, FlushPushesEverythingWhenTheReplayAnswers) {
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  GamePusherOptions o = fast_pusher_options();
  o.interval = std::chrono::hours(1);
  o.batch_games = 16;
  GamePusher pusher(replay.function(), o, registry, log.function());
  for (int i = 0; i < 10; ++i) pusher.add(numbered(i));  // under a batch: waits for the interval
  // Exported from the start, so that a rise from 0 shows in the last scrape.
  EXPECT_NE(registry.serialize().find("\nchessrl_selfplay_games_lost_total 0\n"),
            std::string::npos);
  EXPECT_EQ(pusher.flush(5s), 0u);
  EXPECT_EQ(replay.stored(), ids(0, 10));
  EXPECT_EQ(pusher.stats().lost, 0u);
  EXPECT_EQ(value(registry, "chessrl_selfplay_games_lost_total"), 0.0);
}

// --- --acked-log

std::string temp_dir() {
  char pattern[] = "/tmp/chessrl-selfplay-unit-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  EXPECT_NE(made, nullptr);
  return made ? made : "/tmp";
}

std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(GamePusher, AppendsALinePerAnsweredGameToTheAckedLogAcrossRestarts) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/acked.log";
  FakeReplay replay;
  Lines log;
  metrics::Registry registry;
  replay.reject("game-2", "illegal_move");
  replay.reject("game-5", "something_new");
  replay.pre_store("game-6");
  const std::vector<std::string> first = {
      "game-0 stored", "game-1 stored",         "game-2 rejected illegal_move", "game-3 stored",
      "game-4 stored", "game-5 rejected other", "game-6 duplicate unexpected",  "game-7 stored"};
  {
    GamePusherOptions o = fast_pusher_options();
    o.acked_log = AckedLog::open(path).value_or_throw();
    GamePusher pusher(replay.function(), o, registry, log.function());
    for (int i = 0; i < 8; ++i) pusher.add(numbered(i));
    ASSERT_TRUE(eventually([&] { return pusher.stats().added == 8 && pusher.buffered() == 0; }));
    // In the file as the replies arrive, while the pusher still runs (no flush, no close).
    EXPECT_EQ(file_lines(path), first);
  }

  // A restarted pusher appends to the same file.
  GamePusherOptions o = fast_pusher_options();
  o.acked_log = AckedLog::open(path).value_or_throw();
  GamePusher pusher(replay.function(), o, registry, log.function());
  pusher.add(numbered(0));  // stored by the first, never sent by this one: DUPLICATE unexpected
  pusher.add(numbered(8));
  EXPECT_EQ(pusher.flush(5s), 0u);
  std::vector<std::string> both = first;
  both.insert(both.end(), {"game-0 duplicate unexpected", "game-8 stored"});
  EXPECT_EQ(file_lines(path), both);
  EXPECT_EQ(log.count("--acked-log"), 0) << log.all();
  std::filesystem::remove_all(dir);
}

TEST(GamePusher, AnAckedLogThatCannotBeOpenedNamesTheOptionAndThePath) {
  const std::string dir = temp_dir();
  for (const std::string& path : {std::string("/nonexistent-dir/x"), dir}) {
    auto opened = AckedLog::open(path);
    ASSERT_FALSE(opened.ok()) << path;
    EXPECT_NE(opened.error().find("--acked-log " + path + ": cannot open"), std::string::npos)
        << opened.error();
  }

  // Through the options: a start-up error from resolve() (the flag or CHESSRL_ACKED_LOG).
  auto resolved = [](std::vector<std::string> args) -> Result<Settings> {
    Settings settings;
    CLI::App app{"test"};
    add_options(app, settings);
    config::finish(app);
    std::vector<const char*> argv = {"chessrl-selfplay"};
    for (const auto& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    if (auto r = resolve(settings, app); !r.ok()) return fail(r.error());
    return settings;
  };
  auto none = resolved({"--replica", "r"});
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->push.acked_log, nullptr);
  auto bad = resolved({"--replica", "r", "--acked-log", dir + "/missing/acked.log"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--acked-log " + dir + "/missing/acked.log"), std::string::npos)
      << bad.error();
  ::setenv("CHESSRL_ACKED_LOG", (dir + "/acked.log").c_str(), 1);
  auto from_env = resolved({"--replica", "r"});
  ::unsetenv("CHESSRL_ACKED_LOG");
  ASSERT_TRUE(from_env.ok()) << from_env.error();
  ASSERT_NE(from_env->push.acked_log, nullptr);
  EXPECT_EQ(from_env->push.acked_log->path(), dir + "/acked.log");
  EXPECT_TRUE(std::filesystem::exists(dir + "/acked.log"));

  // --version-stats the same way: refused at start-up, naming the option and the path.
  auto stats = resolved({"--replica", "r", "--version-stats", dir + "/missing/v.jsonl"});
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().find("--version-stats: cannot open " + dir + "/missing/v.jsonl"),
            std::string::npos)
      << stats.error();
  auto good = resolved({"--replica", "r", "--version-stats", dir + "/v.jsonl"});
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->version_stats, dir + "/v.jsonl");
  std::filesystem::remove_all(dir);
}

TEST(GamePusher, RejectsABatchLargerThanTheBuffer) {
  GamePusherOptions o;
  o.buffer_games = 4;
  o.batch_games = 8;
  auto valid = o.validate();
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().find("--push-batch"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::selfplay_service
