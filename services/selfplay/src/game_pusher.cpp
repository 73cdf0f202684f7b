#include "game_pusher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "chessrl/record/validation.h"

namespace chessrl::selfplay_service {

namespace {

constexpr const char* kRejectedName = "chessrl_selfplay_games_rejected_total";
constexpr const char* kRejectedHelp =
    "Games the replay service refused (not retried), by its reason label";
constexpr const char* kDuplicateName = "chessrl_selfplay_games_duplicate_total";
constexpr const char* kDuplicateHelp =
    "Games the replay service answered DUPLICATE: kind=retry after an earlier push of the game "
    "(counted pushed), kind=unexpected for a game never sent before (its id was taken: not "
    "stored, not counted pushed)";
constexpr const char* kDroppedName = "chessrl_selfplay_games_dropped_total";
constexpr const char* kDroppedHelp =
    "Games dropped unstored because the replay service refused a push of that game alone with a "
    "code that does not pass (not retried), by the code";
constexpr grpc::StatusCode kRefusalCodes[] = {
    grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::RESOURCE_EXHAUSTED,
    grpc::StatusCode::OUT_OF_RANGE, grpc::StatusCode::FAILED_PRECONDITION,
    grpc::StatusCode::DATA_LOSS};
// Unexpected duplicates and store failures: the first few are all logged, then one in 100.
constexpr std::uint64_t kLoggedInFull = 20;
// Rejections are bugs in the producer; the first few are all logged, then one in 100.
constexpr std::uint64_t kRejectionsLoggedInFull = 20;
constexpr auto kShedLogInterval = std::chrono::seconds(10);
// While flushing at shutdown, retry at least once a second.
constexpr std::chrono::milliseconds kFlushBackoffMax{1000};
// Failed appends to --acked-log: the first few are all logged, then one in 100.
constexpr std::uint64_t kAckedLogFailuresLoggedInFull = 5;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

namespace {

BackoffPolicy retry_policy(std::chrono::milliseconds min, std::chrono::milliseconds max) {
  BackoffPolicy policy;
  policy.max = std::max(min, max);
  policy.initial = std::min(2 * min, policy.max);
  policy.jitter = BackoffPolicy::Jitter::kEqual;
  return policy;
}

}  // namespace

RetryDelays::RetryDelays(std::chrono::milliseconds min, std::chrono::milliseconds max,
                         std::uint64_t seed)
    : min_(min), backoff_(retry_policy(min, max), seed) {}

std::chrono::milliseconds RetryDelays::next(std::chrono::milliseconds cap) {
  const auto wait = std::max(min_, *backoff_.next());  // no deadline: always a wait
  return std::min(wait, cap);
}

Result<void> GamePusherOptions::validate() const {
  if (buffer_games < 1) return fail("--buffer-games must be at least 1");
  if (batch_games < 1) return fail("--push-batch must be at least 1");
  if (batch_games > buffer_games)
    return fail("--push-batch (" + std::to_string(batch_games) +
                ") must not exceed --buffer-games (" + std::to_string(buffer_games) + ")");
  if (interval.count() < 1) return fail("--push-interval-ms must be at least 1");
  if (backoff_min.count() < 1 || backoff_max < backoff_min)
    return fail("push backoff: need 1 ms <= minimum <= maximum");
  return {};
}

Result<std::shared_ptr<AckedLog>> AckedLog::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail("--acked-log " + path + ": cannot open for appending: " + std::strerror(errno));
  }
  return std::shared_ptr<AckedLog>(new AckedLog(path, fd));
}

AckedLog::~AckedLog() { ::close(fd_); }

Result<void> AckedLog::append(const std::string& lines) {
  // One write() normally; a short one (a full disk, a signal) goes on where it stopped.
  const char* p = lines.data();
  std::size_t left = lines.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot append to " + path_ + ": " + std::strerror(errno));
    p += n;
    left -= std::size_t(n);
  }
  return {};
}

bool GamePusher::refused_for_its_games(grpc::StatusCode code) {
  return std::find(std::begin(kRefusalCodes), std::end(kRefusalCodes), code) !=
         std::end(kRefusalCodes);
}

std::string GamePusher::code_label(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid_argument";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "out_of_range";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "failed_precondition";
    case grpc::StatusCode::DATA_LOSS:
      return "data_loss";
    default:
      return "other";
  }
}

std::string GamePusher::reason_label(const std::string& reason) {
  for (const record::RejectReason r : record::kAllRejectReasons) {
    if (record::reason_label(r) == reason) return reason;
  }
  return "other";
}

GamePusher::GamePusher(PushFunction push, GamePusherOptions options, metrics::Registry& registry,
                       LogFunction log)
    : push_(std::move(push)),
      options_(options),
      log_(std::move(log)),
      buffered_gauge_(registry.gauge("chessrl_selfplay_games_buffered",
                                     "Finished games waiting to be pushed to the replay service")),
      pushed_counter_(registry.counter(
          "chessrl_selfplay_games_pushed_total",
          "Games the replay service acknowledged (stored, or already stored by a retried push)")),
      shed_counter_(registry.counter(
          "chessrl_selfplay_games_shed_total",
          "Games dropped, oldest first, because the push buffer was full (replay unreachable)")),
      failures_counter_(registry.counter(
          "chessrl_selfplay_push_failures_total",
          "Pushes to the replay service that failed as a whole (retried; a batch refused for "
          "its games is split)")),
      duplicate_retry_counter_(
          registry.counter(kDuplicateName, kDuplicateHelp, {{"kind", "retry"}})),
      duplicate_unexpected_counter_(
          registry.counter(kDuplicateName, kDuplicateHelp, {{"kind", "unexpected"}})),
      store_failed_counter_(registry.counter(
          "chessrl_selfplay_games_store_failed_total",
          "Games the replay service answered FAILED (its store failed on them): kept and pushed "
          "again")),
      lost_counter_(registry.counter(
          "chessrl_selfplay_games_lost_total",
          "Finished games still buffered when a stop's flush ran out of time (--flush-timeout): "
          "never pushed to the replay service, lost")),
      registry_(registry),
      retry_delays_(options_.backoff_min, options_.backoff_max,
                    options_.jitter_seed != 0 ? options_.jitter_seed : random_backoff_seed()) {
  options_.validate().value_or_throw();
  batch_limit_ = options_.batch_games;
  for (const grpc::StatusCode code : kRefusalCodes) {
    if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) continue;  // never drops a game
    registry_.counter(kDroppedName, kDroppedHelp, {{"reason", code_label(code)}});
  }
  for (const record::RejectReason r : record::kAllRejectReasons) {
    registry_.counter(kRejectedName, kRejectedHelp,
                      {{"reason", std::string(record::reason_label(r))}});
  }
  registry_.counter(kRejectedName, kRejectedHelp, {{"reason", "other"}});
  thread_ = std::thread([this] { loop(); });
}

GamePusher::~GamePusher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GamePusher::add(v1::Game game) {
  std::lock_guard lock(mutex_);
  ++stats_.added;
  if (buffer_.size() >= options_.buffer_games) {
    std::string shed_id;
    if (buffer_.size() > in_flight_) {
      const auto oldest = buffer_.begin() + static_cast<std::ptrdiff_t>(in_flight_);
      shed_id = oldest->game.id();
      buffer_.erase(oldest);
      buffer_.push_back(Buffered{std::move(game)});
    } else {
      shed_id = game.id();  // everything held is being sent: the new game goes
    }
    ++stats_.shed;
    shed_counter_.inc();
    const Clock::time_point now = Clock::now();
    if (shed_logged_ == 0 || now - shed_logged_at_ >= kShedLogInterval) {
      log_("push buffer full (" + std::to_string(options_.buffer_games) +
           " games): shed the oldest, game " + shed_id + " (" +
           std::to_string(stats_.shed - shed_logged_) + " shed since the last such line, " +
           std::to_string(stats_.shed) + " in all)");
      shed_logged_at_ = now;
      shed_logged_ = stats_.shed;
    }
  } else {
    buffer_.push_back(Buffered{std::move(game)});
  }
  update_gauge();
  // A full batch goes now; the first game into an empty buffer starts the
  // interval (the thread waits without a deadline while the buffer is empty).
  if (buffer_.size() >= options_.batch_games || buffer_.size() == 1) wake_.notify_one();
}

std::size_t GamePusher::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (thread_.joinable() && !stopping_) {
    flushing_ = true;
    flush_deadline_ = Clock::now() + timeout;
    retry_at_ = Clock::time_point{};  // a retry now; the next waits at most kFlushBackoffMax
    wake_.notify_all();
    drained_.wait_until(lock, flush_deadline_, [this] { return buffer_.empty(); });
    stopping_ = true;
    wake_.notify_all();
    lock.unlock();
    thread_.join();
    lock.lock();
    // Nothing pushes them now: lost when this process exits.
    stats_.lost = buffer_.size();
    lost_counter_.inc(static_cast<double>(buffer_.size()));
  }
  return buffer_.size();
}

GamePusherStats GamePusher::stats() const {
  std::lock_guard lock(mutex_);
  GamePusherStats s = stats_;
  s.buffered = buffer_.size();
  return s;
}

std::size_t GamePusher::buffered() const {
  std::lock_guard lock(mutex_);
  return buffer_.size();
}

void GamePusher::update_gauge() { buffered_gauge_.set(static_cast<double>(buffer_.size())); }

void GamePusher::loop() {
  std::unique_lock lock(mutex_);
  Clock::time_point last_push = Clock::now();
  while (!stopping_) {
    if (buffer_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point now = Clock::now();
    Clock::time_point due =
        buffer_.size() >= batch_limit_ || flushing_ ? now : last_push + options_.interval;
    due = std::max(due, retry_at_);
    if (flushing_ && due >= flush_deadline_) {
      wake_.wait(lock);  // no time left: flush() stops the thread at its deadline
      continue;
    }
    if (now < due) {
      wake_.wait_until(lock, due);
      continue;
    }

    const std::size_t n = std::min(batch_limit_, buffer_.size());
    v1::PushGamesRequest request;
    for (std::size_t i = 0; i < n; ++i) *request.add_games() = buffer_[i].game;
    in_flight_ = n;
    const Clock::time_point deadline = flushing_ ? flush_deadline_ : Clock::time_point::max();
    lock.unlock();
    rpc::RpcResult<v1::PushGamesReply> reply = push_(request, deadline);
    lock.lock();
    last_push = Clock::now();
    in_flight_ = 0;
    // Games that may be stored now whatever the outcome: a DUPLICATE for them later is ours.
    const auto mark_sent = [&] {
      for (std::size_t i = 0; i < n; ++i) buffer_[i].sent = true;
    };
    // RESOURCE_EXHAUSTED: more games than the service takes in a call, or a server
    // short of memory; one game alone is never too many, so it is retried.
    const bool one_too_many = n == 1 && reply.code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    if (!reply.ok() && refused_for_its_games(reply.code()) && !one_too_many) {
      on_refused(n, reply.code(), reply.error());
    } else if (!reply.ok()) {
      mark_sent();
      on_failure(reply.error());
    } else if (!reply_matches(request, *reply)) {
      mark_sent();
      on_failure("the reply does not match the request (" + std::to_string(reply->results_size()) +
                 " results for " + std::to_string(n) + " games)");
    } else {
      apply(request, *reply);
    }
    update_gauge();
    if (buffer_.empty()) drained_.notify_all();
  }
}

bool GamePusher::reply_matches(const v1::PushGamesRequest& request,
                               const v1::PushGamesReply& reply) const {
  if (reply.results_size() != request.games_size()) return false;
  for (int i = 0; i < request.games_size(); ++i) {
    if (reply.results(i).id() != request.games(i).id()) return false;
  }
  return true;
}

void GamePusher::on_failure(const std::string& error) {
  const Clock::time_point now = Clock::now();
  ++stats_.failures;
  failures_counter_.inc();
  if (!outage_) {
    outage_ = true;
    outage_start_ = now;
    outage_failures_ = 0;
    outage_shed_before_ = stats_.shed;
    retry_delays_.reset();
    log_("cannot push to the replay service (" + error + "); keeping the " +
         std::to_string(buffer_.size()) +
         " buffered games and retrying with backoff until it answers");
  }
  ++outage_failures_;
  retry_at_ =
      now + retry_delays_.next(flushing_ ? kFlushBackoffMax : std::chrono::milliseconds::max());
}

void GamePusher::on_refused(std::size_t n, grpc::StatusCode code, const std::string& error) {
  ++stats_.failures;
  failures_counter_.inc();
  end_outage();  // the service answered
  if (n > 1) {
    // Halves until the game refused alone is found; the others go on meanwhile.
    if (batch_limit_ == options_.batch_games) {
      log_("the replay service refused a push of " + std::to_string(n) + " games (" + error +
           "); sending them in smaller batches to find the game it refuses");
    }
    batch_limit_ = std::max<std::size_t>(1, n / 2);
    return;
  }
  const std::string label = code_label(code);
  const std::string id = buffer_.front().game.id();
  ++stats_.dropped;
  ++stats_.dropped_by_reason[label];
  registry_.counter(kDroppedName, kDroppedHelp, {{"reason", label}}).inc();
  if (stats_.dropped <= kLoggedInFull || stats_.dropped % 100 == 0) {
    log_("dropped game " + id + ": the replay service refuses it (" + error + "); not retried [" +
         std::to_string(stats_.dropped) + " dropped in all]");
  }
  append_acked(id + " dropped " + label + "\n", 1);
  buffer_.pop_front();
  batch_limit_ = options_.batch_games;
}

void GamePusher::end_outage() {
  if (!outage_) return;
  const Clock::time_point now = Clock::now();
  char line[256];
  std::snprintf(line, sizeof line,
                "the replay service takes games again after %.1f s and %llu failed pushes; "
                "%zu games buffered, %llu shed during the outage",
                seconds_between(outage_start_, now),
                static_cast<unsigned long long>(outage_failures_), buffer_.size(),
                static_cast<unsigned long long>(stats_.shed - outage_shed_before_));
  log_(line);
  outage_ = false;
  retry_delays_.reset();
  retry_at_ = Clock::time_point{};
}

void GamePusher::append_acked(const std::string& lines, int answered) {
  if (!options_.acked_log || lines.empty()) return;
  // In the kernel before the next push: a kill -9 from here on loses no line.
  if (auto appended = options_.acked_log->append(lines); !appended.ok()) {
    ++acked_log_failures_;
    if (acked_log_failures_ <= kAckedLogFailuresLoggedInFull || acked_log_failures_ % 100 == 0) {
      log_("--acked-log: " + appended.error() + "; the lines of " + std::to_string(answered) +
           " answered games may be missing there [" + std::to_string(acked_log_failures_) +
           " failed appends in all]");
    }
  }
}

void GamePusher::apply(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply) {
  const auto n = static_cast<std::size_t>(request.games_size());
  std::uint64_t acknowledged = 0;
  std::string acked_lines;     // for --acked-log
  std::deque<Buffered> again;  // answered FAILED: pushed again, ahead of the rest
  std::string store_error;
  for (int i = 0; i < reply.results_size(); ++i) {
    const v1::PushResult& result = reply.results(i);
    Buffered& entry = buffer_[static_cast<std::size_t>(i)];
    if (result.status() == v1::STORED) {
      ++stats_.stored;
      ++acknowledged;
      acked_lines += result.id() + " stored\n";
    } else if (result.status() == v1::DUPLICATE && entry.sent) {
      // An earlier push of it stored it; its reply was lost.
      ++stats_.duplicates;
      ++acknowledged;
      duplicate_retry_counter_.inc();
      acked_lines += result.id() + " duplicate\n";
    } else if (result.status() == v1::DUPLICATE) {
      // Never sent before, yet its id is taken: this game is not stored.
      ++stats_.unexpected_duplicates;
      duplicate_unexpected_counter_.inc();
      acked_lines += result.id() + " duplicate unexpected\n";
      if (unexpected_logged_ < kLoggedInFull || stats_.unexpected_duplicates % 100 == 0) {
        ++unexpected_logged_;
        log_("the replay service already holds a game with id " + result.id() +
             ", which this process never pushed before: this game is not stored [" +
             std::to_string(stats_.unexpected_duplicates) + " such games in all]");
      }
    } else if (result.status() == v1::FAILED) {
      ++stats_.store_failed;
      store_failed_counter_.inc();
      if (store_error.empty())
        store_error = result.detail().empty() ? result.reason() : result.detail();
      entry.sent = true;
      again.push_back(std::move(entry));
    } else {
      // REJECTED (or a status this build does not know): final, never retried.
      const std::string label =
          result.status() == v1::REJECTED ? reason_label(result.reason()) : "other";
      acked_lines += result.id() + " rejected " + label + "\n";
      ++stats_.rejected;
      ++stats_.rejected_by_reason[label];
      registry_.counter(kRejectedName, kRejectedHelp, {{"reason", label}}).inc();
      if (rejections_logged_ < kRejectionsLoggedInFull || stats_.rejected % 100 == 0) {
        ++rejections_logged_;
        log_("the replay service rejected game " + result.id() + " (" +
             (result.reason().empty() ? label : result.reason()) + "): " + result.detail() + " [" +
             std::to_string(stats_.rejected) + " rejected in all]");
      }
    }
  }
  pushed_counter_.inc(static_cast<double>(acknowledged));
  append_acked(acked_lines, reply.results_size());
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  end_outage();
  if (!again.empty()) {
    // Not stored this time: first in line again, after a backoff.
    if (store_failed_logged_ < kLoggedInFull || stats_.store_failed % 100 == 0) {
      ++store_failed_logged_;
      log_("the replay service could not store " + std::to_string(again.size()) + " of " +
           std::to_string(n) + " games (" + store_error + "); pushing them again [" +
           std::to_string(stats_.store_failed) + " such answers in all]");
    }
    buffer_.insert(buffer_.begin(), std::make_move_iterator(again.begin()),
                   std::make_move_iterator(again.end()));
    retry_at_ = Clock::now() +
                retry_delays_.next(flushing_ ? kFlushBackoffMax : std::chrono::milliseconds::max());
  } else {
    retry_delays_.reset();
  }
}

}  // namespace chessrl::selfplay_service
