// GamePusher: the bounded buffer between the game runner and the replay
// service. add() takes each finished game; a thread of its own sends them in
// order, in batches of up to `batch_games` (or what is there every
// `interval`), through an injected push function. A failed push keeps its
// games and is retried forever with exponential backoff (ids make a repeated
// push store each game once); the start and the end of an outage are logged
// once each. A game the replay REJECTS is counted by reason, logged and not
// retried; DUPLICATE counts as pushed. When the buffer is full the oldest game
// not being sent is shed, counted and logged: no game is dropped silently.
// With an AckedLog (--acked-log), every answered game gets a line there as its
// reply arrives. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "chessrl/core/result.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/v1/replay.pb.h"

namespace chessrl::selfplay_service {

using Clock = std::chrono::steady_clock;

// Sends one batch; must give up by `deadline` (Clock::time_point::max(): its
// own deadline). A failure means nothing is known about the batch.
using PushFunction = std::function<Result<v1::PushGamesReply>(const v1::PushGamesRequest& request,
                                                              Clock::time_point deadline)>;
using LogFunction = std::function<void(const std::string& line)>;

// --acked-log: a file, opened for appending (created if missing, never
// truncated), that gets one line per game the replay service answered:
// "<id> stored", "<id> duplicate" or "<id> rejected <reason label>". Each
// append is one write() of whole lines, so what was appended survives a
// kill -9 of the process (not a crash of the machine: no fsync). Owns its
// descriptor; append() is not thread-safe.
class AckedLog {
 public:
  // The error names --acked-log and `path`.
  static Result<std::shared_ptr<AckedLog>> open(const std::string& path);
  ~AckedLog();
  AckedLog(const AckedLog&) = delete;
  AckedLog& operator=(const AckedLog&) = delete;

  Result<void> append(const std::string& lines);
  const std::string& path() const { return path_; }

 private:
  AckedLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

struct GamePusherOptions {
  std::size_t buffer_games = 4096;           // games held at most (sent or not yet acknowledged)
  std::size_t batch_games = 32;              // games per push at most
  std::chrono::milliseconds interval{1000};  // a smaller batch goes after this long
  std::chrono::milliseconds backoff_min{100};
  // A retry at most every 5 s: games flow again within seconds of the replay service's
  // return, even after a long outage (one small RPC per pod per 5 s meanwhile).
  std::chrono::milliseconds backoff_max{5000};
  std::shared_ptr<AckedLog> acked_log;  // null: none
  Result<void> validate() const;
};

// Counters since construction.
struct GamePusherStats {
  std::uint64_t added = 0;
  std::uint64_t stored = 0;      // acknowledged STORED
  std::uint64_t duplicates = 0;  // acknowledged DUPLICATE (already stored: a retried push)
  std::uint64_t rejected = 0;    // refused by the replay (see rejected_by_reason)
  std::uint64_t shed = 0;        // dropped, oldest first, because the buffer was full
  std::uint64_t failures = 0;    // push calls that failed (and were retried)
  std::size_t buffered = 0;      // held now
  std::map<std::string, std::uint64_t> rejected_by_reason;
  std::uint64_t pushed() const { return stored + duplicates; }
};

class GamePusher {
 public:
  // Registers chessrl_selfplay_games_buffered, _games_pushed_total,
  // _games_shed_total, _games_rejected_total{reason} and _push_failures_total
  // in `registry` (which must outlive the pusher) and starts the thread.
  GamePusher(PushFunction push, GamePusherOptions options, metrics::Registry& registry,
             LogFunction log);  // `log` is called with a lock held: it must not call back
  // Stops the thread (after the push in flight returns); what is still
  // buffered is lost: call flush() first.
  ~GamePusher();
  GamePusher(const GamePusher&) = delete;
  GamePusher& operator=(const GamePusher&) = delete;

  void add(v1::Game game);
  // Pushes what is buffered for up to `timeout` (retrying failures, with
  // pushes that give up by then), then stops the thread. Returns the games
  // that could not be pushed. A game added after that stays buffered, unsent.
  std::size_t flush(std::chrono::milliseconds timeout);

  GamePusherStats stats() const;
  std::size_t buffered() const;
  std::size_t capacity() const { return options_.buffer_games; }

  // The `reason` label for a REJECTED result's reason: one of the replay's
  // fixed labels, or "other".
  static std::string reason_label(const std::string& reason);

 private:
  void loop();
  // Called with mutex_ held: applies one reply to the front `n` games.
  void apply(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply);
  bool reply_matches(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply) const;
  void on_failure(const std::string& error);
  void update_gauge();

  PushFunction push_;
  GamePusherOptions options_;
  LogFunction log_;

  metrics::Gauge& buffered_gauge_;
  metrics::Counter& pushed_counter_;
  metrics::Counter& shed_counter_;
  metrics::Counter& failures_counter_;
  metrics::Registry& registry_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the thread: work, a flush, stop
  std::condition_variable drained_;  // flush(): the buffer emptied
  std::deque<v1::Game> buffer_;      // oldest first; the first in_flight_ are being sent
  std::size_t in_flight_ = 0;
  GamePusherStats stats_;
  bool stopping_ = false;
  bool flushing_ = false;
  Clock::time_point flush_deadline_ = Clock::time_point::max();
  Clock::time_point retry_at_{};  // no push before this (backoff)
  std::chrono::milliseconds backoff_{0};
  // The outage in progress, if any.
  bool outage_ = false;
  Clock::time_point outage_start_{};
  std::uint64_t outage_failures_ = 0;
  std::uint64_t outage_shed_before_ = 0;
  // Shedding is logged at once the first time, then at most every 10 s.
  Clock::time_point shed_logged_at_{};
  std::uint64_t shed_logged_ = 0;
  std::uint64_t rejections_logged_ = 0;
  std::uint64_t acked_log_failures_ = 0;
  std::thread thread_;
};

}  // namespace chessrl::selfplay_service
