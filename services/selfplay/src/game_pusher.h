// GamePusher: the bounded buffer between the game runner and the replay
// service. add() takes each finished game; a thread of its own sends them in
// order, in batches of up to `batch_games` (or what is there every
// `interval`), through an injected push function. A push that fails with a
// code that may pass (UNAVAILABLE, a deadline; also a bad token, INTERNAL:
// nothing about the games; also replay's admission refusal) keeps its games and
// is retried forever with jittered exponential backoff (RetryDelays, a Backoff: pushers
// refused at once come back spread out; ids make a repeated push store each
// game once); the
// start and the end of an outage are logged once each. A push refused for
// what it carries (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, OUT_OF_RANGE,
// FAILED_PRECONDITION, DATA_LOSS) is sent again in halves until the game
// refused alone is found: that game is dropped, counted by code and logged,
// and the games behind it go on (one game refused RESOURCE_EXHAUSTED is
// retried instead: a server short of memory says that too). Per game: STORED is final; REJECTED is
// counted by reason, logged and not retried; FAILED (the store failed on it)
// stays buffered and is pushed again after a backoff; DUPLICATE for a game
// this pusher sent before (a retry whose first reply was lost) counts as
// pushed, and DUPLICATE for one it never sent (its id was already taken: the
// game is not stored) is counted apart, logged with the id, and not pushed.
// When the buffer is full the oldest game not being sent is shed, counted and
// logged: no game is dropped silently. With an AckedLog (--acked-log), every
// answered game gets a line there as its reply arrives. Thread-safe.
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

#include "chessrl/core/backoff.h"
#include "chessrl/core/result.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/replay.pb.h"

namespace chessrl::selfplay_service {

using Clock = std::chrono::steady_clock;

// Sends one batch; must give up by `deadline` (Clock::time_point::max(): its
// own deadline). A failure means nothing is known about the batch; its gRPC
// code says whether the same games may be taken later.
using PushFunction = std::function<rpc::RpcResult<v1::PushGamesReply>(
    const v1::PushGamesRequest& request, Clock::time_point deadline)>;
using LogFunction = std::function<void(const std::string& line)>;

// --acked-log: a file, opened for appending (created if missing, never
// truncated), that gets one line per game the replay service answered:
// "<id> stored", "<id> duplicate" (a retry of its own push), "<id> duplicate
// unexpected" (an id it never sent was already stored: this game is not),
// "<id> rejected <reason label>" or "<id> dropped <code label>". Each
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

// The pusher's waits between failed pushes: chessrl::Backoff with equal
// jitter, its cap starting at twice `min` (at most `max`) and doubling after
// each wait up to `max`, each wait drawn uniformly from [cap / 2, cap] and never
// under `min`. A thousand pushers refused at the same moment so come back
// spread over time, not in step, and never sooner than `min` or later than
// `max`. Not thread-safe.
class RetryDelays {
 public:
  RetryDelays(std::chrono::milliseconds min, std::chrono::milliseconds max, std::uint64_t seed);
  // The wait before the next retry, at most `cap`; then the cap doubles.
  std::chrono::milliseconds next(std::chrono::milliseconds cap = std::chrono::milliseconds::max());
  // After a push that went through: the next failure starts from the bottom again.
  void reset() { backoff_.reset(); }

 private:
  std::chrono::milliseconds min_;
  Backoff backoff_;
};

struct GamePusherOptions {
  std::size_t buffer_games = 4096;           // games held at most (sent or not yet acknowledged)
  std::size_t batch_games = 32;              // games per push at most
  std::chrono::milliseconds interval{1000};  // a smaller batch goes after this long
  std::chrono::milliseconds backoff_min{100};
  // A retry at most every 5 s: games flow again within seconds of the replay service's
  // return, even after a long outage (one small RPC per pod per 5 s meanwhile).
  std::chrono::milliseconds backoff_max{5000};
  // Seeds the backoff's jitter; 0: drawn at random, so every pusher has its own.
  std::uint64_t jitter_seed = 0;
  std::shared_ptr<AckedLog> acked_log;  // null: none
  Result<void> validate() const;
};

// Counters since construction.
struct GamePusherStats {
  std::uint64_t added = 0;
  std::uint64_t stored = 0;      // acknowledged STORED
  std::uint64_t duplicates = 0;  // acknowledged DUPLICATE after an earlier push of it (a retry)
  // DUPLICATE for a game never sent before: its id was taken, it is not stored.
  std::uint64_t unexpected_duplicates = 0;
  std::uint64_t rejected = 0;      // refused by the replay (see rejected_by_reason)
  std::uint64_t dropped = 0;       // refused alone with a permanent code (see dropped_by_reason)
  std::uint64_t store_failed = 0;  // answered FAILED, kept and pushed again (each time counted)
  std::uint64_t shed = 0;          // dropped, oldest first, because the buffer was full
  std::uint64_t failures = 0;      // push calls that failed as a whole
  std::uint64_t lost = 0;          // still buffered when flush() gave up: never pushed
  std::size_t buffered = 0;        // held now
  std::map<std::string, std::uint64_t> rejected_by_reason;
  std::map<std::string, std::uint64_t> dropped_by_reason;  // by code label (invalid_argument, ...)
  std::uint64_t pushed() const { return stored + duplicates; }
};

class GamePusher {
 public:
  // Registers chessrl_selfplay_games_buffered, _games_pushed_total,
  // _games_shed_total, _games_rejected_total{reason},
  // _games_duplicate_total{kind=retry|unexpected}, _games_dropped_total{reason},
  // _games_store_failed_total, _games_lost_total and _push_failures_total in
  // `registry` (which must outlive the pusher) and starts the thread.
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
  // that could not be pushed, and counts them lost (stats().lost,
  // chessrl_selfplay_games_lost_total) the first time. A game added after
  // that stays buffered, unsent and uncounted.
  std::size_t flush(std::chrono::milliseconds timeout);

  GamePusherStats stats() const;
  std::size_t buffered() const;
  std::size_t capacity() const { return options_.buffer_games; }

  // The `reason` label for a REJECTED result's reason: one of the replay's
  // fixed labels, or "other".
  static std::string reason_label(const std::string& reason);
  // Whether a push that failed with `code` was refused for the games it
  // carries (the same games would be refused again), and the `reason` label
  // of chessrl_selfplay_games_dropped_total for it ("invalid_argument", ...).
  static bool refused_for_its_games(grpc::StatusCode code);
  static std::string code_label(grpc::StatusCode code);

 private:
  struct Buffered {
    v1::Game game;
    bool sent = false;  // in a push before: a DUPLICATE for it is that push's
  };
  void loop();
  // Called with mutex_ held: applies one reply to the front `n` games.
  void apply(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply);
  bool reply_matches(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply) const;
  void on_failure(const std::string& error);
  // A push of the front `n` games refused for what it carries: halve, or drop the one game.
  void on_refused(std::size_t n, grpc::StatusCode code, const std::string& error);
  void end_outage();
  void append_acked(const std::string& lines, int answered);
  void update_gauge();

  PushFunction push_;
  GamePusherOptions options_;
  LogFunction log_;

  metrics::Gauge& buffered_gauge_;
  metrics::Counter& pushed_counter_;
  metrics::Counter& shed_counter_;
  metrics::Counter& failures_counter_;
  metrics::Counter& duplicate_retry_counter_;
  metrics::Counter& duplicate_unexpected_counter_;
  metrics::Counter& store_failed_counter_;
  metrics::Counter& lost_counter_;
  metrics::Registry& registry_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the thread: work, a flush, stop
  std::condition_variable drained_;  // flush(): the buffer emptied
  std::deque<Buffered> buffer_;      // oldest first; the first in_flight_ are being sent
  std::size_t in_flight_ = 0;
  // Games per push now: batch_games, or less while a refused batch is split.
  std::size_t batch_limit_ = 0;
  GamePusherStats stats_;
  bool stopping_ = false;
  bool flushing_ = false;
  Clock::time_point flush_deadline_ = Clock::time_point::max();
  Clock::time_point retry_at_{};  // no push before this (backoff)
  RetryDelays retry_delays_;
  // The outage in progress, if any.
  bool outage_ = false;
  Clock::time_point outage_start_{};
  std::uint64_t outage_failures_ = 0;
  std::uint64_t outage_shed_before_ = 0;
  // Shedding is logged at once the first time, then at most every 10 s.
  Clock::time_point shed_logged_at_{};
  std::uint64_t shed_logged_ = 0;
  std::uint64_t rejections_logged_ = 0;
  std::uint64_t unexpected_logged_ = 0;
  std::uint64_t store_failed_logged_ = 0;
  std::uint64_t acked_log_failures_ = 0;
  std::thread thread_;
};

}  // namespace chessrl::selfplay_service
