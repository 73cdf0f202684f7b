#include "game_pusher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "chessrl/replay/validation.h"

namespace chessrl::selfplay_service {

namespace {

constexpr const char* kRejectedName = "chessrl_selfplay_games_rejected_total";
constexpr const char* kRejectedHelp =
    "Games the replay service refused (not retried), by its reason label";
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

std::string GamePusher::reason_label(const std::string& reason) {
  for (const replay::RejectReason r : replay::kAllRejectReasons) {
    if (replay::reason_label(r) == reason) return reason;
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
      failures_counter_(
          registry.counter("chessrl_selfplay_push_failures_total",
                           "Pushes to the replay service that failed (and were retried)")),
      registry_(registry) {
  options_.validate().value_or_throw();
  for (const replay::RejectReason r : replay::kAllRejectReasons) {
    registry_.counter(kRejectedName, kRejectedHelp,
                      {{"reason", std::string(replay::reason_label(r))}});
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
      shed_id = oldest->id();
      buffer_.erase(oldest);
      buffer_.push_back(std::move(game));
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
    buffer_.push_back(std::move(game));
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
    retry_at_ = Clock::time_point{};
    backoff_ = std::min(backoff_, kFlushBackoffMax);
    wake_.notify_all();
    drained_.wait_until(lock, flush_deadline_, [this] { return buffer_.empty(); });
    stopping_ = true;
    wake_.notify_all();
    lock.unlock();
    thread_.join();
    lock.lock();
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
        buffer_.size() >= options_.batch_games || flushing_ ? now : last_push + options_.interval;
    due = std::max(due, retry_at_);
    if (flushing_ && due >= flush_deadline_) {
      wake_.wait(lock);  // no time left: flush() stops the thread at its deadline
      continue;
    }
    if (now < due) {
      wake_.wait_until(lock, due);
      continue;
    }

    const std::size_t n = std::min(options_.batch_games, buffer_.size());
    v1::PushGamesRequest request;
    for (std::size_t i = 0; i < n; ++i) *request.add_games() = buffer_[i];
    in_flight_ = n;
    const Clock::time_point deadline = flushing_ ? flush_deadline_ : Clock::time_point::max();
    lock.unlock();
    Result<v1::PushGamesReply> reply = push_(request, deadline);
    lock.lock();
    last_push = Clock::now();
    in_flight_ = 0;
    if (!reply.ok()) {
      on_failure(reply.error());
    } else if (!reply_matches(request, *reply)) {
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
    backoff_ = options_.backoff_min;
    log_("cannot push to the replay service (" + error + "); keeping the " +
         std::to_string(buffer_.size()) +
         " buffered games and retrying with backoff until it answers");
  } else {
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
  }
  if (flushing_) backoff_ = std::min(backoff_, kFlushBackoffMax);
  ++outage_failures_;
  retry_at_ = now + backoff_;
}

void GamePusher::apply(const v1::PushGamesRequest& request, const v1::PushGamesReply& reply) {
  const auto n = static_cast<std::size_t>(request.games_size());
  std::uint64_t acknowledged = 0;
  std::string acked_lines;  // for --acked-log
  for (int i = 0; i < reply.results_size(); ++i) {
    const v1::PushResult& result = reply.results(i);
    if (result.status() == v1::STORED) {
      ++stats_.stored;
      ++acknowledged;
      acked_lines += result.id() + " stored\n";
    } else if (result.status() == v1::DUPLICATE) {
      ++stats_.duplicates;
      ++acknowledged;
      acked_lines += result.id() + " duplicate\n";
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
  if (options_.acked_log && !acked_lines.empty()) {
    // In the kernel before the next push: a kill -9 from here on loses no line.
    if (auto appended = options_.acked_log->append(acked_lines); !appended.ok()) {
      ++acked_log_failures_;
      if (acked_log_failures_ <= kAckedLogFailuresLoggedInFull || acked_log_failures_ % 100 == 0) {
        log_("--acked-log: " + appended.error() + "; the lines of " +
             std::to_string(reply.results_size()) + " answered games may be missing there [" +
             std::to_string(acked_log_failures_) + " failed appends in all]");
      }
    }
  }
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  if (outage_) {
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
    backoff_ = std::chrono::milliseconds{0};
    retry_at_ = Clock::time_point{};
  }
}

}  // namespace chessrl::selfplay_service
