#include "chessrl/replay_service/producer_gate.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace chessrl::replay_service {
namespace {

constexpr const char* kGamesName = "chessrl_replay_producer_games_total";
constexpr const char* kGamesHelp =
    "Pushed games by producer (at most --max-producers names at once, a name's series removed "
    "after --producer-idle-expiry without a push; the rest \"(other)\") and "
    "what became of them: stored, duplicate, rejected (validation), refused (the call refused "
    "whole: quarantined, over the rate or the positions per call)";
constexpr const char* kPositionsName = "chessrl_replay_producer_positions_total";
constexpr const char* kPositionsHelp =
    "Training positions stored, by producer (at most --max-producers names at once, a name's "
    "series removed after --producer-idle-expiry without a push; the rest \"(other)\")";
constexpr const char* kResults[] = {"stored", "duplicate", "rejected", "refused"};
constexpr const char* kRefusedName = "chessrl_replay_games_refused_total";
constexpr const char* kRefusedHelp =
    "Pushed games whose call was refused whole before validation, by reason: quarantined "
    "(--quarantine), rate_limited (--producer-rate), too_many_positions (--max-push-positions)";
constexpr const char* kRefusedReasons[] = {"quarantined", "rate_limited", "too_many_positions"};

// A name fit for a label value and a map key: what game ids allow, pod names included.
bool trackable(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

// Positions a game costs: one per training target, at least one (a game
// without positions still costs a validation).
double cost_of(const v1::Game& game) { return std::max(1, game.targets_size()); }

std::string count_text(double n) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", n);
  return text;
}

}  // namespace

ProducerGate::ProducerGate(ProducerOptions options, metrics::Registry& registry,
                           std::size_t min_burst, std::function<Clock::time_point()> now)
    : options_(std::move(options)),
      registry_(registry),
      capacity_(std::max(options_.rate * options_.burst_seconds, static_cast<double>(min_burst))),
      now_(std::move(now)) {
  for (const char* reason : kRefusedReasons)
    registry_.counter(kRefusedName, kRefusedHelp, {{"reason", reason}});
  std::lock_guard lock(mutex_);
  series_locked(kOtherProducers, now_());  // export zeros
  buckets_.emplace(std::string(kOtherProducers), Bucket{capacity_, now_()});
}

ProducerGate::Series& ProducerGate::series_locked(std::string_view producer,
                                                  Clock::time_point now) {
  expire_idle_locked(now);
  auto it = series_.find(producer);
  if (it == series_.end()) {
    const bool own = producer == kOtherProducers ||
                     (trackable(producer) && series_.size() < options_.max_tracked + 1);
    if (!own) return series_locked(kOtherProducers, now);
    const std::string name(producer);
    const auto games = [&](const char* result) {
      return &registry_.counter(kGamesName, kGamesHelp, {{"producer", name}, {"result", result}});
    };
    Series series{name,
                  now,
                  by_use_.end(),
                  games("stored"),
                  games("duplicate"),
                  games("rejected"),
                  games("refused"),
                  &registry_.counter(kPositionsName, kPositionsHelp, {{"producer", name}})};
    if (producer != kOtherProducers) series.order = by_use_.insert(by_use_.end(), name);
    it = series_.emplace(name, std::move(series)).first;
  } else if (it->second.order != by_use_.end()) {
    it->second.used = now;
    by_use_.splice(by_use_.end(), by_use_, it->second.order);  // now the most recent
  }
  return it->second;
}

void ProducerGate::expire_idle_locked(Clock::time_point now) {
  if (options_.idle_expiry_seconds <= 0) return;
  const auto expiry = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.idle_expiry_seconds));
  while (!by_use_.empty()) {
    const auto it = series_.find(by_use_.front());
    if (now - it->second.used < expiry) break;  // the rest were used later
    remove_series_locked(by_use_.front());
  }
}

void ProducerGate::remove_series_locked(const std::string& name) {
  const auto it = series_.find(name);
  for (const char* result : kResults)
    registry_.remove_counter(kGamesName, {{"producer", name}, {"result", result}});
  registry_.remove_counter(kPositionsName, {{"producer", name}});
  by_use_.erase(it->second.order);
  series_.erase(it);
}

std::string ProducerGate::label(std::string_view producer) {
  std::lock_guard lock(mutex_);
  return series_locked(producer, now_()).label;
}

void ProducerGate::refill(Bucket& bucket, Clock::time_point now) const {
  const double elapsed = std::chrono::duration<double>(now - bucket.at).count();
  if (elapsed > 0) bucket.tokens = std::min(capacity_, bucket.tokens + elapsed * options_.rate);
  bucket.at = std::max(bucket.at, now);
}

ProducerGate::Bucket& ProducerGate::bucket_locked(const std::string& producer,
                                                  Clock::time_point now) {
  const std::string_view key = trackable(producer) ? std::string_view(producer) : kOtherProducers;
  if (auto it = buckets_.find(key); it != buckets_.end()) return it->second;
  // One bucket per name for at most max_tracked names at once (admit() first
  // forgets those that have refilled); the other names share one.
  const bool room = key == kOtherProducers || buckets_.size() < options_.max_tracked + 1;
  return buckets_.emplace(std::string(room ? key : kOtherProducers), Bucket{capacity_, now})
      .first->second;
}

void ProducerGate::forget_full_buckets_locked(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    refill(it->second, now);
    const bool full = it->first != kOtherProducers && it->second.tokens >= capacity_;
    it = full ? buckets_.erase(it) : std::next(it);
  }
}

void ProducerGate::refused_locked(const v1::PushGamesRequest& request, std::string_view reason,
                                  Clock::time_point now) {
  registry_.counter(kRefusedName, kRefusedHelp, {{"reason", std::string(reason)}})
      .inc(request.games_size());
  for (const v1::Game& game : request.games()) series_locked(game.producer(), now).refused->inc();
}

void ProducerGate::refused(const v1::PushGamesRequest& request, std::string_view reason) {
  std::lock_guard lock(mutex_);
  refused_locked(request, reason, now_());
}

grpc::Status ProducerGate::admit(const v1::PushGamesRequest& request) {
  std::lock_guard lock(mutex_);
  for (const v1::Game& game : request.games()) {
    if (options_.quarantined.count(game.producer()) == 0) continue;
    refused_locked(request, "quarantined", now_());
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "PushGames: producer '" + game.producer() +
                            "' is quarantined (--quarantine): its games are refused; nothing "
                            "was stored");
  }
  if (options_.rate <= 0) return grpc::Status::OK;
  // What the call costs each bucket (names beyond the tracked ones share one).
  const Clock::time_point now = now_();
  if (buckets_.size() >= options_.max_tracked + 1) forget_full_buckets_locked(now);
  std::vector<std::pair<Bucket*, double>> costs;
  std::vector<std::string_view> names;
  for (const v1::Game& game : request.games()) {
    Bucket* bucket = &bucket_locked(game.producer(), now);
    auto it =
        std::find_if(costs.begin(), costs.end(), [&](const auto& c) { return c.first == bucket; });
    if (it == costs.end()) {
      costs.emplace_back(bucket, 0);
      names.push_back(game.producer());
      it = costs.end() - 1;
    }
    it->second += cost_of(game);
  }
  for (std::size_t i = 0; i < costs.size(); ++i) {
    auto& [bucket, cost] = costs[i];
    refill(*bucket, now);
    if (bucket->tokens >= cost) continue;
    refused_locked(request, "rate_limited", now);
    const bool shared = bucket == &buckets_.find(kOtherProducers)->second;
    const std::string who = shared ? "producer " + std::string(kOtherProducers) +
                                         " (the names beyond --max-producers, sharing one bucket)"
                                   : "producer '" + std::string(names[i]) + "'";
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        "PushGames: " + who + " is over its rate: the call has " + count_text(cost) +
            " training positions, the producer may push " + count_text(bucket->tokens) +
            " now (at most " + count_text(options_.rate) + " a second, --producer-rate, and " +
            count_text(capacity_) + " at once); nothing was stored; push again later");
  }
  for (auto& [bucket, cost] : costs) bucket->tokens -= cost;
  return grpc::Status::OK;
}

void ProducerGate::count(std::string_view producer, Result result, std::size_t positions) {
  std::lock_guard lock(mutex_);
  Series& series = series_locked(producer, now_());
  switch (result) {
    case Result::kStored:
      series.stored->inc();
      series.positions->inc(static_cast<double>(positions));
      break;
    case Result::kDuplicate:
      series.duplicate->inc();
      break;
    case Result::kRejected:
      series.rejected->inc();
      break;
  }
}

}  // namespace chessrl::replay_service
